// The recipe section of a checkpoint and its check on resume (see recipe_check.h).
#include "train/recipe_check.h"

#include <algorithm>

#include "core/error.h"

namespace olmo::train {

using nlohmann::json;

namespace {

// Recorded in the checkpoint and compared on resume (an unclassified field is compared too:
// refusing is the safe default, and tests/train/recipe_check_test.cpp fails on it).
bool recorded(Recipe r) { return r != Recipe::none && r != Recipe::start; }

std::string section_of(const std::string& key) {
  auto dot = key.find('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}
std::string leaf_of(const std::string& key) { return key.substr(key.rfind('.') + 1); }

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

json recipe_json(const Config& c, const std::string& precision) {
  json fields = json::object();
  for (const FieldValue& f : field_values(c))
    if (recorded(f.recipe)) fields[f.key] = f.key == "model.precision" ? json(precision) : f.value;
  return json{{"version", 1}, {"fields", fields}};
}

std::set<std::string> allowed_recipe_keys(const Config& c) {
  const std::vector<FieldValue> all = field_values(c);
  std::vector<std::string> entries = c.trainer.allow_recipe_change;
  if (c.trainer.allow_schedule_change) entries.push_back("schedule");
  auto allowable = [](const FieldValue& f) {
    return recorded(f.recipe) && f.recipe != Recipe::model;
  };
  std::set<std::string> out;
  for (const std::string& e : entries) {
    const std::string where = cat("trainer.allow_recipe_change (--allow-recipe-change): '", e, "'");
    auto model_error = [&](const std::string& key) {
      return Error(cat(where, ": ", key, " is a model field; the weights are the architecture's, "
                       "a resume cannot change it (start a new phase from the checkpoint with "
                       "trainer.load_path)"));
    };
    std::vector<const FieldValue*> hit;
    auto named =
        std::find_if(all.begin(), all.end(), [&](const FieldValue& f) { return f.key == e; });
    const bool section = std::any_of(all.begin(), all.end(),
                                     [&](const FieldValue& f) { return section_of(f.key) == e; });
    if (e == "schedule") {
      for (const FieldValue& f : all)
        if (f.recipe == Recipe::schedule) hit.push_back(&f);
    } else if (named != all.end()) {
      if (named->recipe == Recipe::model) throw model_error(e);
      OLMO_CHECK(recorded(named->recipe), where, " does not change the trajectory (class ",
                 recipe_class_name(named->recipe), "): it is never refused, nothing to allow");
      hit.push_back(&*named);
    } else if (section) {
      for (const FieldValue& f : all)
        if (section_of(f.key) == e && allowable(f)) hit.push_back(&f);
    } else {  // a leaf name, unique among the recorded fields
      for (const FieldValue& f : all)
        if (recorded(f.recipe) && leaf_of(f.key) == e) hit.push_back(&f);
      if (hit.size() > 1) {
        std::vector<std::string> keys;
        for (const FieldValue* f : hit) keys.push_back(f->key);
        throw Error(cat(where, " is ambiguous: the leaf of ", join(keys), "; name the key"));
      }
      if (hit.size() == 1 && hit[0]->recipe == Recipe::model) throw model_error(hit[0]->key);
    }
    if (hit.empty()) {
      std::vector<std::string> keys;
      for (const FieldValue& f : all)
        if (allowable(f)) keys.push_back(f.key);
      throw Error(cat(where, " names no recipe field a resume may change; an entry is a key, "
                      "a section, a unique leaf name or 'schedule' (recipe fields: ", join(keys),
                      ")"));
    }
    for (const FieldValue* f : hit) out.insert(f->key);
  }
  return out;
}

bool schedule_allowed(const Config& c) {
  const std::set<std::string> allowed = allowed_recipe_keys(c);
  for (const FieldValue& f : field_values(c))
    if (f.recipe == Recipe::schedule && !allowed.count(f.key)) return false;
  return true;
}

// data.micro_batch_tokens is of class rounding under dist.reduce=fast only: the exact
// reduction runs one instance per forward/backward (the unit of its exactness), so the
// micro-batch size never reaches its bits. Free when the checkpoint and this run are both exact.
static bool free_under_exact(const std::string& key, const json& saved, const json& now) {
  auto exact = [](const json& r) {
    return r["fields"].value("dist.reduce", std::string()) == "exact";
  };
  return key == "data.micro_batch_tokens" && exact(saved) && exact(now);
}

std::vector<RecipeChange> recipe_changes(const json& saved, const json& now, const Config& c) {
  OLMO_CHECK(saved.value("version", 0) == 1 && saved.contains("fields"),
             "malformed recipe section (version ", saved.value("version", 0), ")");
  const std::set<std::string> allowed = allowed_recipe_keys(c);
  std::vector<RecipeChange> out;
  for (const FieldValue& f : field_values(c)) {
    if (!now["fields"].contains(f.key) || !saved["fields"].contains(f.key)) continue;
    if (free_under_exact(f.key, saved, now)) continue;
    const json& from = saved["fields"][f.key];
    const json& to = now["fields"][f.key];
    if (from != to)
      out.push_back({f.key, from.dump(), to.dump(), f.recipe, allowed.count(f.key) > 0});
  }
  return out;
}

std::vector<RecipeChange> check_recipe(const json& saved, const json& now, const Config& c,
                                       const std::string& dir) {
  std::vector<RecipeChange> changes;
  try {
    changes = recipe_changes(saved, now, c);
  } catch (const Error& e) {
    throw Error(cat(dir, ": the saved recipe: ", e.what()));
  }
  std::string lines;
  std::vector<std::string> to_allow;
  bool horizon = false;  // the run's length changed: stopping early is what was meant, likely
  for (const RecipeChange& ch : changes) {
    if (ch.allowed) continue;
    lines += cat("\n  ", ch.key, ": ", ch.from, " (checkpoint) -> ", ch.to, " (this run)");
    if (ch.recipe == Recipe::model) {
      lines += "; the architecture: a resume cannot change it (a new phase can: trainer.load_path)";
      continue;
    }
    if (ch.recipe == Recipe::rounding) lines += "; the same math in other bits (rounding)";
    lines += cat("; allow with --allow-recipe-change ", ch.key);
    to_allow.push_back(ch.key);
    horizon = horizon || ch.key == "trainer.max_steps" || ch.key == "trainer.max_tokens";
  }
  if (lines.empty()) return changes;
  throw Error(cat(
      dir, ": this resume changes the recipe the run was trained with, so every later step would "
      "leave the trajectory of the run that never stopped; refused, nothing was written:", lines,
      to_allow.empty() ? std::string()
                       : cat("\nTo change ", to_allow.size() == 1 ? "it" : "them",
                             " on purpose: olmo train ... --allow-recipe-change ",
                             join(to_allow, ","),
                             " (config: trainer.allow_recipe_change=[", join(to_allow, ","), "])."),
      horizon ? " To stop early and continue on the same schedule, keep trainer.max_steps (or "
                 "max_tokens) and use trainer.hard_stop_steps."
               : ""));
}

std::string recipe_changes_text(const std::vector<RecipeChange>& changes) {
  std::vector<std::string> parts;
  for (const RecipeChange& ch : changes) parts.push_back(cat(ch.key, " ", ch.from, " -> ", ch.to));
  return join(parts);
}

}  // namespace olmo::train
