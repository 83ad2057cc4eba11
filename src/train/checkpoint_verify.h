// Offline proof that a checkpoint holds the state that was saved: `olmo ckpt verify DIR`.
// Recomputes, from the stored pieces alone (whatever world size wrote them), the
// layout-independent fingerprint of every tensor (ckpt/fingerprint.h) and of the trainer,
// loader, skip-step and optimizer sections, and compares them with the "fingerprint" section the
// trainer recorded from memory at save time. The same section fingerprints are what a resume
// recomputes from memory (Trainer::state_fingerprint), through state_section_fingerprints.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace olmo::train {

// Fingerprints of the state sections: {"trainer","schedule","loader","skip_step","optim"} ->
// hex64. trainer {step, tokens_seen}; schedule {t_max, lr0, scheduler}: the learning rate of
// every later step; loader {seed, epoch, tokens_processed}; skip-step {window length, losses,
// grad norms}; optimizer {numel, step counts, group layout}. Only what a load restores enters
// (a phase start may change betas, weight decay or sigma on purpose). `trainer` is the checkpoint's "trainer" section (or the same
// fields from memory).
nlohmann::json state_section_fingerprints(const nlohmann::json& trainer,
                                          const nlohmann::json& loader,
                                          const nlohmann::json& skip_step,
                                          const nlohmann::json& optim);

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
