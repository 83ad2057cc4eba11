// Markdown reference of the config keys, one table per section, from describe_fields().
#include "train/config_reference.h"

#include <map>
#include <vector>

#include "train/config.h"

namespace olmo::train {

namespace {

// A table cell: '|' escaped, so a value or doc cannot break the row.
std::string cell(const std::string& s) {
  std::string r;
  for (char ch : s) r += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return r;
}

std::string section_of(const std::string& key) {
  auto dot = key.find('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

// What a resume does with a change of the field (its Recipe class, train/recipe_check.h).
std::string on_resume(Recipe r) {
  switch (r) {
    case Recipe::none: return "free";
    case Recipe::start: return "not read";
    case Recipe::model: return "never (model)";
    default: return std::string("refused (") + recipe_class_name(r) + ")";
  }
}

// One table row: key, type (a choice field lists its values), default, doc string, resume.
std::string row(const FieldInfo& f) {
  std::string type = f.type;
  if (!f.choices.empty()) {
    type = "one of ";
    for (size_t i = 0; i < f.choices.size(); ++i) type += (i ? ", `" : "`") + f.choices[i] + "`";
  }
  return "| `" + cell(f.key) + "` | " + cell(type) + " | `" + cell(f.default_value) + "` | " +
         cell(f.doc) + " | " + on_resume(f.recipe) + " |\n";
}

}  // namespace

std::string config_reference_markdown() {
  std::string out =
      "# Training config reference\n\n"
      "Every key of a training config (`olmo train CONFIG.yaml [key=value ...]`), generated from\n"
      "the field table in src/train/config.cpp (`visit_fields`, `choice_fields`). Do not edit by\n"
      "hand: regenerate with `make docs` (or `build/olmo info --config-reference > "
      "docs/config.md`);\nthe ctest `train_config_reference` fails when this file is stale.\n\n"
      "Keys are dotted (`section.key`) on the command line and nested maps in YAML; `base:` names\n"
      "a config this one extends. Defaults are those of a config that sets nothing.\n\n"
      "The last column says what a resume does with a changed value (src/train/recipe_check.h):\n"
      "`free` (the field does not change the trajectory), `refused (class)` unless allowed with\n"
      "`olmo train --allow-recipe-change KEY` (classes: trajectory, schedule, rounding = the same\n"
      "math in other bits), `never (model)` (the architecture: a new phase from\n"
      "`trainer.load_path` can change it) or `not read` (used only when a run starts).\n";
  // Sections in the order of their first key (the top-level keys are not contiguous).
  std::vector<std::string> order;
  std::map<std::string, std::vector<FieldInfo>> by_section;
  for (FieldInfo& f : describe_fields()) {
    std::string sec = section_of(f.key);
    if (!by_section.count(sec)) order.push_back(sec);
    by_section[sec].push_back(std::move(f));
  }
  for (const std::string& sec : order) {
    out += "\n## " + (sec.empty() ? std::string("Top level") : "`" + sec + "`") + "\n\n";
    out += "| key | type | default | description | on resume |\n|---|---|---|---|---|\n";
    for (const FieldInfo& f : by_section[sec]) out += row(f);
  }
  return out;
}

}  // namespace olmo::train
