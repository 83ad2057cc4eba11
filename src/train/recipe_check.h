// The recipe is part of the checkpoint: the value of every config field whose class (Recipe,
// declared with the field in the one field table, config.cpp visit_fields) is trajectory,
// schedule, rounding or model is recorded in the checkpoint's "recipe" section, and a resume
// compares this run's recipe with it. A difference is refused, naming each field, its old and
// new value and the allow-list entry that permits it (trainer.allow_recipe_change,
// `olmo train --allow-recipe-change a,b`); an allowed change is logged (metrics.jsonl) and
// written to the batch ledger (audit/ledger.h), where `olmo audit` reports it with its step.
// Fields of class none (intervals, reporting, world size, layout) and start (read only when a
// run starts) are not recorded and never refused. Model fields can never be allowed on resume
// (the weights are the architecture's; a new phase from trainer.load_path changes them).
// Cost: one pass over the ~110 fields, a JSON object of ~70 short strings per checkpoint.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/config.h"

namespace olmo::train {

// {"version": 1, "fields": {key: value}} for every recorded field (config.h FieldValue).
// `precision` is the resolved matmul precision (model.precision auto resolves per machine; the
// recipe holds what the run computes with, fp32 or bf16_mixed).
nlohmann::json recipe_json(const Config& c, const std::string& precision);

// The keys the allow list names: trainer.allow_recipe_change entries (a key, a section such as
// `optim`, a leaf name that is unique among the recorded fields such as `lr`, or `schedule` =
// every field of class schedule) plus [schedule] when trainer.allow_schedule_change is set.
// Throws olmo::Error naming an entry that names no recorded field, names several (an ambiguous
// leaf), a model field, or a field that is never refused.
std::set<std::string> allowed_recipe_keys(const Config& c);

// Every field of class schedule is allowed (an older checkpoint without a recipe section: the
// schedule fingerprint can only tell that the schedule changed, not which field).
bool schedule_allowed(const Config& c);

struct RecipeChange {
  std::string key, from, to;  // from: the checkpoint's value; to: this run's (JSON text)
  Recipe recipe = Recipe::trajectory;
  bool allowed = false;
};

// The fields whose value differs between the checkpoint's recipe section and this run's
// (fields the checkpoint did not record, written by an older olmo.cpp, are not compared).
std::vector<RecipeChange> recipe_changes(const nlohmann::json& saved, const nlohmann::json& now,
                                         const Config& c);

// Throws olmo::Error (naming `dir`, every refused field with old and new value, and the allow
// flag) when a change is not allowed; returns the changes otherwise (all allowed).
std::vector<RecipeChange> check_recipe(const nlohmann::json& saved, const nlohmann::json& now,
                                       const Config& c, const std::string& dir);

// "optim.lr 0.003 -> 0.002, data.seed 7 -> 8": the changes, one line.
std::string recipe_changes_text(const std::vector<RecipeChange>& changes);

}  // namespace olmo::train
