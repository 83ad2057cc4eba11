// capacity_rows / capacity_markdown (capacity_plan.h): the "what you can train" table.
#include "train/capacity_plan.h"

#include <cstdio>

#include "core/format.h"
#include "model/config.h"
#include "model/flops.h"

namespace olmo::train {

namespace {

struct Machine {
  const char* label;
  int64_t nodes, cores_per_node;
};
constexpr Machine kMachines[] = {
    {"2 cores", 1, 2}, {"1 node x 64 cores", 1, 64}, {"16 nodes x 64", 16, 64},
    {"256 nodes x 64", 256, 64}};
constexpr const char* kPresets[] = {"olmo3-190m", "olmo3-1b", "olmo3-7b", "olmo3-32b"};

constexpr double kGiB = double(1ll << 30);

// "1,234", "12.3", "0.123": three significant figures at most, thousands separated.
std::string fig(double x) {
  char buf[64];
  if (x >= 1000) return commas(int64_t(x + 0.5));
  std::snprintf(buf, sizeof buf, x >= 100 ? "%.0f" : x >= 10 ? "%.1f" : x >= 1 ? "%.2f" : "%.3f",
                x);
  return buf;
}

}  // namespace

std::vector<CapacityRow> capacity_rows(const CapacityAssumptions& a) {
  std::vector<CapacityRow> rows;
  const int64_t instances = a.global_batch_tokens / a.seq_len;
  for (const char* p : kPresets) {
    const model::ModelConfig c = model::preset(p, true);
    for (const Machine& m : kMachines) {
      CapacityRow r;
      r.preset = p, r.machine = m.label, r.nodes = m.nodes;
      r.cores = m.nodes * m.cores_per_node, r.processes = m.nodes;
      const int64_t K = instances / r.processes;  // micro-batches of one instance per rank
      // The local accumulator (one int64 reduction per step) where its plan fits the node, else
      // the sharded one (a reduction per micro-batch, 1/W of the accumulator's memory).
      model::MemoryPlan mp = model::memory_plan(c, a.seq_len, 1, r.processes, true, K, true, 2);
      r.local_accumulator = r.processes == 1 || double(mp.total) <= a.node_gib * kGiB;
      if (!r.local_accumulator)
        mp = model::memory_plan(c, a.seq_len, 1, r.processes, true, K, false, 2);
      r.flops_per_token = model::flops_per_token(c, a.seq_len);
      r.compute_s = double(a.global_batch_tokens) * r.flops_per_token /
                    (double(r.cores) * a.core_gflops * 1e9 * a.mfu);
      r.comm_bytes_per_step = r.processes > 1 ? mp.comm_bytes_per_step : 0;
      r.comm_s = double(r.comm_bytes_per_step) / (a.net_gbytes_s * 1e9);
      r.tokens_per_s = double(a.global_batch_tokens) / (r.compute_s + r.comm_s);
      r.days_per_billion = 1e9 / r.tokens_per_s / 86400.0;
      r.memory_bytes = mp.total;
      rows.push_back(r);
    }
  }
  return rows;
}

std::string capacity_markdown(const CapacityAssumptions& a) {
  std::string out;
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "Predicted, not measured (src/train/capacity_plan.h): tokens/s = step tokens / (compute + "
      "communication), compute = step tokens x training FLOPs per token (src/model/flops.h, seq "
      "%lld) / (cores x an fp32 peak of %.0f GFLOP per second per core x MFU %.1f%%), "
      "communication = the bytes each process sends per step (dist.reduce=exact, ZeRO-2; the "
      "local accumulator where the plan fits a %.0f GiB node, else the sharded one) / %.1f GB/s, "
      "not overlapped; %s tokens per step (%lld instances of %lld, micro-batch 1), one process per "
      "node; memory per process from the memory plan (fp32, no activation checkpointing: `olmo "
      "info --preset P --processes N` shows the checkpointing modes and ZeRO-3). Peak and MFU: "
      "the 2-core olmo3-190m step of bench/results/step.md (`olmo bench step`); other figures: "
      "`olmo info --plan "
      "--core-gflops X --mfu Y --net-gbytes Z`.\n\n",
      (long long)a.seq_len, a.core_gflops, a.mfu * 100, a.node_gib, a.net_gbytes_s,
      commas(a.global_batch_tokens).c_str(), (long long)(a.global_batch_tokens / a.seq_len),
      (long long)a.seq_len);
  out += buf;
  out += "| preset | machine | tokens/s | days per 1B tokens | memory per process | sent per step "
         "per process | step: compute + communication |\n";
  out += "|---|---|---:|---:|---:|---:|---:|\n";
  for (const CapacityRow& r : capacity_rows(a)) {
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %s GiB | %s | %s s + %s s |\n",
                  r.preset.c_str(), r.machine.c_str(), fig(r.tokens_per_s).c_str(),
                  fig(r.days_per_billion).c_str(), fig(double(r.memory_bytes) / kGiB).c_str(),
                  r.comm_bytes_per_step
                      ? (fig(double(r.comm_bytes_per_step) / kGiB) + " GiB" +
                         (r.local_accumulator ? "" : " (sharded)")).c_str()
                      : "-",
                  fig(r.compute_s).c_str(), fig(r.comm_s).c_str());
    out += buf;
  }
  return out;
}

}  // namespace olmo::train
