// "What you can train": for the presets olmo3-190m, 1b, 7b and 32b on four machines (2 cores;
// one 64-core node; 16 and 256 such nodes, one process per node), the training speed the FLOP
// model predicts, the days per billion tokens, the memory per process and the bytes each
// process sends per step. Printed by `olmo info --plan`; docs/training.md quotes that output
// (the cli_info_plan_docs test keeps them equal).
//
// The model, per row (W processes = nodes, C cores in all, G tokens per step, S the sequence):
//   compute_s = G * flops_per_token(S) / (C * core_gflops * 1e9 * mfu)   (model/flops.h)
//   comm_s    = comm_bytes_per_step / (net_gbytes_s * 1e9)   (model::memory_plan's bytes each
//               rank sends per step under dist.reduce=exact, ZeRO-2, micro-batch 1 x S, the
//               local accumulator where the plan fits a node_gib node, else the sharded one;
//               not overlapped with compute)
//   tokens/s  = G / (compute_s + comm_s); days per 1e9 tokens = 1e9 / tokens/s / 86400
//   memory    = model::memory_plan(...).total at W, no activation checkpointing (fp32)
// The assumptions (CapacityAssumptions) are printed with the table; their defaults name the
// bench/ records they come from. A prediction, not a measurement: only the 2-core 190M row has
// a measured counterpart (bench/results/step.md).
// Cost: 16 memory plans, microseconds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace olmo::train {

struct CapacityAssumptions {
  // fp32 peak of one core, GFLOP/s: the project machine's measured 2-core peak 218-223 GFLOP/s
  // (bench/results/step.md, measure_fp32_peak_gflops) halved.
  double core_gflops = 110;
  // The fraction of that peak a training step reaches: olmo3-190m fwd+bwd at seq 2048 on 2
  // cores, 76.9% (bench/results/step.md); assumed the same for larger models and more cores.
  double mfu = 0.769;
  // Per-node network, GB/s each way: 100 Gb/s Ethernet; communication is not overlapped.
  double net_gbytes_s = 12.5;
  // Memory of a node, GiB: the local exact accumulator (8 B/param, one reduction per step) where
  // the plan fits it, else the sharded one (a reduction of every micro-batch).
  double node_gib = 256;
  int64_t seq_len = 4096;
  // Tokens per optimizer step: OLMo 3 7B stage 1's 4,194,304 (configs/olmo3-7b-stage1.yaml).
  int64_t global_batch_tokens = 4194304;
};

struct CapacityRow {
  std::string preset, machine;
  int64_t nodes = 1, cores = 2, processes = 1;
  double flops_per_token = 0, compute_s = 0, comm_s = 0, tokens_per_s = 0, days_per_billion = 0;
  int64_t memory_bytes = 0;      // per process
  int64_t comm_bytes_per_step = 0;  // sent by each process per step
  bool local_accumulator = true;
};

// The 16 rows: presets olmo3-190m, olmo3-1b, olmo3-7b, olmo3-32b (padded vocab) x machines.
std::vector<CapacityRow> capacity_rows(const CapacityAssumptions& a);
// The rows as a Markdown table with the assumptions written above it.
std::string capacity_markdown(const CapacityAssumptions& a);

}  // namespace olmo::train
