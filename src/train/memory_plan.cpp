// Memory planner over activation-checkpointing modes and node sizes (see memory_plan.h).
#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "distributed/zero.h"

namespace olmo::train {

namespace {

constexpr double kGiB = double(int64_t(1) << 30);

// The accumulator the trainer would take at W: the setting's (auto: dist::local_accumulator),
// and for auto the sharded one where the local plan exceeds `limit` bytes.
model::MemoryPlan plan_for(const model::ModelConfig& mc, const PlanInputs& in, int64_t W,
                           double limit) {
  const int64_t K = in.global_micro_batches > 0
                        ? std::max<int64_t>(1, in.global_micro_batches / W)
                        : in.micro_batches_per_rank;
  const bool local = dist::local_accumulator(in.exact_accumulator, W, K);
  model::MemoryPlan p =
      model::memory_plan(mc, in.seq_len, in.micro_batch, W, in.exact, K, local, in.zero_stage);
  if (in.exact && local && in.exact_accumulator == "auto" && W > 1 && double(p.total) > limit)
    p = model::memory_plan(mc, in.seq_len, in.micro_batch, W, in.exact, K, false, in.zero_stage);
  return p;
}

std::vector<int64_t> candidates(const PlanInputs& in) {
  std::vector<int64_t> w;
  for (int64_t n = 1; n <= in.max_processes; ++n)
    if (in.global_micro_batches <= 0 || in.global_micro_batches % n == 0) w.push_back(n);
  return w;
}

std::string label_of(const model::ActCheckpointing& a) {
  char buf[64];
  switch (a.mode) {
    case model::AcMode::selected_blocks:
      std::snprintf(buf, sizeof buf, "selected_blocks %lld", (long long)a.block_interval);
      return buf;
    case model::AcMode::budget:
      std::snprintf(buf, sizeof buf, "budget %g", a.budget);
      return buf;
    default:
      return model::ac_mode_name(a.mode);
  }
}

}  // namespace

std::vector<ModeRow> plan_modes(const model::ModelConfig& mc, const PlanInputs& in) {
  using model::AcMode;
  std::vector<model::ActCheckpointing> modes = {{AcMode::none, 0, 1.0},
                                                {AcMode::selected_blocks, 4, 1.0},
                                                {AcMode::selected_blocks, 2, 1.0},
                                                {AcMode::budget, 0, 0.5},
                                                {AcMode::full, 0, 1.0}};
  const model::ActCheckpointing& own = mc.act_ckpt;
  bool listed = false;
  for (auto& m : modes) listed = listed || label_of(m) == label_of(own);
  if (!listed) modes.push_back(own);
  const std::vector<int64_t> ws = candidates(in);
  std::vector<ModeRow> rows;
  for (const auto& ac : modes) {
    model::ModelConfig c = mc;
    c.act_ckpt = ac;
    ModeRow r;
    const bool mine = own.mode != model::AcMode::none && label_of(ac) == label_of(own);
    r.label = label_of(ac) + (mine ? " (this run)" : "");
    r.ac = ac;
    for (char b : model::checkpointed_blocks(c)) r.checkpointed += b;
    r.plan = plan_for(c, in, in.processes, 1e300);
    r.recompute_pct = 100.0 * model::recompute_flops_per_token(c, in.seq_len) /
                      model::flops_per_token(c, in.seq_len);
    for (int64_t gib : in.node_gib) {
      const double limit = double(gib) * kGiB;
      int64_t found = -1;
      for (int64_t w : ws)
        if (double(plan_for(c, in, w, limit).total) <= limit) {
          found = w;
          break;
        }
      r.min_processes.push_back(found);
    }
    rows.push_back(r);
  }
  return rows;
}

namespace {
std::string stage_text(const model::ModelConfig& mc, const PlanInputs& in) {
  const std::vector<ModeRow> rows = plan_modes(mc, in);
  const bool z3 = in.zero_stage == 3;
  std::string out;
  char buf[512];
  const model::MemoryPlan& p0 = rows.front().plan;
  std::snprintf(buf, sizeof buf,
                "# activation checkpointing plan (%s, micro-batch %lld x %lld, %s, "
                "reduce %s, accumulator %s; GiB per process at %lld process%s: weights %.2f, "
                "grads %.2f, AdamW moments %.2f, gradient shard %.2f, exact accumulator %.2f)\n",
                mc.name.c_str(), (long long)in.micro_batch, (long long)in.seq_len,
                z3 ? "ZeRO-3 (dist.zero_stage=3)" : "ZeRO-1/2",
                in.exact ? "exact" : "fast", in.exact_accumulator.c_str(),
                (long long)in.processes, in.processes == 1 ? "" : "es", p0.weights / kGiB,
                p0.grads / kGiB, p0.adam_moments / kGiB, p0.grad_shard / kGiB,
                p0.reduce_accumulator / kGiB);
  out += buf;
  out += "# min processes: smallest data-parallel count (one process per node) whose plan fits "
         "the node";
  out += in.global_micro_batches > 0 ? " (counts that split the global batch evenly)\n" : "\n";
  std::snprintf(buf, sizeof buf, "%-28s %7s %12s %10s %11s", "mode", "blocks", "activations",
                "total", "recompute");
  out += buf;
  for (int64_t g : in.node_gib) {
    std::snprintf(buf, sizeof buf, " %14s", (std::to_string(g) + " GiB node").c_str());
    out += buf;
  }
  out += "\n";
  bool any_no_fit = false;
  for (const ModeRow& r : rows) {
    std::snprintf(buf, sizeof buf, "%-28s %3lld/%-3lld %8.2f GiB %6.2f GiB %9.1f %%",
                  r.label.c_str(), (long long)r.checkpointed, (long long)mc.n_layers,
                  r.plan.activations / kGiB, r.plan.total / kGiB, r.recompute_pct);
    out += buf;
    for (int64_t w : r.min_processes) {
      std::snprintf(buf, sizeof buf, " %14s",
                    w < 0 ? "no fit" : (std::to_string(w) + " proc").c_str());
      out += buf;
      any_no_fit = any_no_fit || w < 0;
    }
    out += "\n";
  }
  if (!any_no_fit) return out;  // the legend of "no fit" only where a row has one
  if (z3)
    std::snprintf(buf, sizeof buf,
                  "# no fit: above %lld processes, or two parameter units + activations alone "
                  "exceed the node\n", (long long)in.max_processes);
  else
    std::snprintf(buf, sizeof buf,
                  "# no fit: above %lld processes, or weights + grads + activations alone "
                  "exceed the node (ZeRO-1/2 does not shard them)\n",
                  (long long)in.max_processes);
  out += buf;
  return out;
}
}  // namespace

std::string plan_text(const model::ModelConfig& mc, const PlanInputs& in) {
  std::string out = stage_text(mc, in);
  if (in.zero_stage == 2 && in.exact) {  // what sharding the parameters too would give
    PlanInputs z3 = in;
    z3.zero_stage = 3;
    out += stage_text(mc, z3);
  }
  return out;
}

}  // namespace olmo::train
