// Offline proof that a checkpoint holds the state that was saved: `olmo ckpt verify DIR`.
// Recomputes, from the stored pieces alone (whatever world size wrote them), the
// layout-independent fingerprint of every tensor (ckpt/fingerprint.h) and of every fingerprint
// group of the state sections (ckpt/state_io.h: the trainer, schedule, loader, skip-step and
// optimizer groups, as recorded with the checkpoint), and compares them with the "fingerprint"
// section recorded from memory at save time: the values a resume recomputes from memory.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace olmo::train {

struct VerifyReport {
  std::string dir;                  // the stepN dir verified
  int64_t step = 0;
  size_t tensors = 0;               // tensors whose fingerprint matched
  std::vector<std::string> lines;   // one line per check, for people
};

// Throws olmo::Error naming the checkpoint and the first tensor / section / file that does not
// match (checksums, shard coverage, model section, fingerprints). `path`: a stepN dir, or a run
// dir (its newest complete checkpoint). A checkpoint without a fingerprint section is an error.
VerifyReport verify_checkpoint(const std::string& path);

}  // namespace olmo::train
