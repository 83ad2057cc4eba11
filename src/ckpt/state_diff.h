// The first difference between the states two checkpoints hold, bit for bit (`olmo verify`,
// monitor/run_verify.h): every global tensor (weights, both AdamW moments) compared element by
// element whatever world size wrote either one (pieces assembled, ckpt/checkpoint.h), then the
// fingerprint groups of the state sections (ckpt/state_io.h: trainer, schedule, optim, loader,
// skip-step, recomputed from each checkpoint's stored sections) and the exact reduction's scales
// (section "reduce"). Not compared: what is not state (the config, the callbacks' records, the
// recipe, the world size the trainer section notes).
// Cost: one read of both checkpoints' tensor bytes (checksums checked on the way); memory: the
// largest tensor twice.
#pragma once
#include <cstdint>
#include <string>

namespace olmo::ckpt {

class CheckpointReader;

struct StateDiff {
  bool same = true;
  std::string tensor;    // the first tensor that differs (checkpoint index order), or ""
  int64_t element = -1;  // its first differing element (flat, row-major), or -1
  std::string section;   // else the first state group / section that differs
  std::string what;      // one line for people: what differs, both values
};

// `want`: the reference checkpoint (the published run's), `have`: the re-executed one. A tensor
// missing on either side, of another shape or dtype is a difference. Throws olmo::Error on a
// read failure of either (a piece whose bytes do not match its checksum included: check
// want.verify() first to tell a damaged reference apart).
StateDiff diff_state(const CheckpointReader& want, const CheckpointReader& have);

}  // namespace olmo::ckpt
