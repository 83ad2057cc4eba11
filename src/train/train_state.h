// The training state's checkpoint parts that live in train/ (core/state_visitor.h): the
// trainer's position and schedule (section "trainer"), the model's architecture (section
// "model") and the layout of the flat parameter buffer the weights and moments are stored by.
// Used by the Trainer (trainer_state.cpp) and by the importers (olmo_core_migrate.h), which build
// the same objects and save through the same ckpt::save_state path.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ckpt/state_io.h"
#include "core/state_visitor.h"
#include "model/config.h"
#include "model/olmo3.h"

namespace olmo::train {

// Section "trainer": the position (restored: step, tokens_seen; fingerprint group "trainer") and
// the schedule that gives every later LR (t_max, lr0, scheduler; group "schedule": a resume
// compares it, the schedule itself comes from the config).
struct TrainerPosition {
  int64_t step = 0, tokens_seen = 0, t_max = 0;
  int64_t total_steps = -1;  // -1: unknown (an importer's), not saved
  double lr0 = 0, lr = -1;   // lr: this step's; -1: unknown, not saved
  int64_t world = 1;
  std::string dist_reduce;
  nlohmann::json scheduler;
  std::string imported_from;  // an importer's source (saved when set, never restored)
  void visit_state(StateVisitor& v);
};

// Section "model": the model configuration (every field of model/config_fields.h). Load: the
// checkpoint's architecture must agree with `cfg` (resume: every architecture field; else the
// fields that shape the weights); errors name `where`.
void visit_model_section(StateVisitor& v, const model::ModelConfig& cfg, bool resume,
                         const std::string& where);

// The flat parameter buffer as named global tensors (params_info order).
ckpt::FlatLayout param_layout(const model::Olmo3& m);

}  // namespace olmo::train
