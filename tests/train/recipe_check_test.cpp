// The recipe check (src/train/recipe_check.h) at the config level, for every field of the one
// field table (config.cpp visit_fields): every field is classified; each recorded field of
// tests/configs/tiny.yaml, changed alone, is the one change found and is refused with a message that
// names it, its old and new value and the allow flag (model fields: that a resume cannot change
// them), and is accepted once allowed; a field that is not recorded never shows up as a change;
// the allow list resolves keys, sections, unique leaves and `schedule` and refuses bad entries.
// End to end (olmo train resumes, the ledger and olmo audit): tests/train/recipe_resume_test.py.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "train/config.h"
#include "train/recipe_check.h"

using namespace olmo::train;
using nlohmann::json;

namespace {

Config tiny() {
  return load_config(std::string(OLMO_SOURCE_DIR) + "/tests/configs/tiny.yaml",
                     {"trainer.run_dir=/tmp/recipe_check_test"});
}

json recipe(const Config& c) { return recipe_json(c, choice_name(c.model.precision)); }

bool recorded(Recipe r) { return r != Recipe::none && r != Recipe::start; }

// Another valid-looking value of the same type: a number moved, a bool flipped, another choice,
// a string extended, a list's first element moved.
json mutate(const std::string& key, const json& v) {
  auto num = [](const json& x) -> json {
    if (x.is_number_integer()) return x.get<int64_t>() == -1 ? 1 : x.get<int64_t>() + 1;
    return x.get<double>() + 0.5;
  };
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number()) return num(v);
  if (v.is_string()) {
    if (const ChoiceField* ch = choice_field(key))
      for (const std::string& s : ch->values)
        if (s != v.get<std::string>()) return s;
    return v.get<std::string>() + "_x";
  }
  if (v.is_array()) {
    json w = v;
    if (w.empty()) return json::array({3});
    w[0] = num(w[0]);
    return w;
  }
  if (v.is_object()) return json{{"x", "y"}};  // a map of label: path
  ADD_FAILURE() << key << ": no mutation for " << v.dump();
  return v;
}

TEST(RecipeCheck, EveryFieldIsClassified) {
  size_t recorded_fields = 0;
  for (const FieldValue& f : field_values(tiny())) {
    EXPECT_NE(f.recipe, Recipe::unclassified)
        << f.key << " has no Recipe class in config.cpp visit_fields: say whether a change on "
        << "resume changes the trajectory";
    recorded_fields += recorded(f.recipe);
  }
  EXPECT_EQ(recipe(tiny())["fields"].size(), recorded_fields);
  // The classes the issue names (and the measured ones).
  auto cls = [](const std::string& k) {
    for (const FieldValue& f : field_values(tiny()))
      if (f.key == k) return f.recipe;
    ADD_FAILURE() << "no field " << k;
    return Recipe::unclassified;
  };
  for (const char* k : {"optim.betas", "optim.eps", "optim.weight_decay",
                        "optim.embedding_weight_decay", "optim.max_grad_norm",
                        "trainer.z_loss_multiplier", "data.global_batch_tokens", "data.mix", "data.seed", "model.precision", "trainer.loss_normalization"})
    EXPECT_EQ(cls(k), Recipe::trajectory) << k;
  for (const char* k : {"optim.lr", "trainer.max_steps", "scheduler.name"})
    EXPECT_EQ(cls(k), Recipe::schedule) << k;
  for (const char* k : {"trainer.log_interval", "trainer.save_interval", "eval.interval",
                        "data.processes", "dist.exact_accumulator", "dist.zero_stage",
                        "dist.overlap", "trainer.threads"})
    EXPECT_EQ(cls(k), Recipe::none) << k;
  EXPECT_EQ(cls("model.d_model"), Recipe::model);
  EXPECT_EQ(cls("data.seq_len"), Recipe::model);  // the model's max_seq_len
  for (const char* k : {"data.micro_batch_tokens", "dist.reduce"})
    EXPECT_EQ(cls(k), Recipe::rounding) << k;
}

TEST(RecipeCheck, EachRecordedFieldChangedAloneIsRefusedNamedAndAllowable) {
  const Config base = tiny();
  const json saved = recipe(base);
  ASSERT_EQ(saved["fields"]["dist.reduce"], "exact");
  int checked = 0, free_exact = 0;
  for (const FieldValue& f : field_values(base)) {
    if (f.key.rfind("trainer.allow_", 0) == 0) continue;  // the allow list itself
    Config c = base;
    const json to = mutate(f.key, f.value);
    apply_override(c, f.key + "=" + to.dump());
    const json now = recipe(c);
    const std::vector<RecipeChange> ch = recipe_changes(saved, now, c);
    if (f.key == "data.micro_batch_tokens") {  // tiny is exact: free (next test: fast refuses)
      EXPECT_TRUE(ch.empty()) << f.key << " refused between two dist.reduce=exact runs";
      ++free_exact;
      continue;
    }
    if (!recorded(f.recipe)) {
      EXPECT_TRUE(ch.empty()) << f.key << " (class " << recipe_class_name(f.recipe)
                              << ") shows up as a recipe change";
      continue;
    }
    ++checked;
    ASSERT_EQ(ch.size(), 1u) << f.key << " -> " << to.dump();
    EXPECT_EQ(ch[0].key, f.key);
    EXPECT_EQ(ch[0].from, f.value.dump());
    EXPECT_EQ(ch[0].to, now["fields"][f.key].dump());
    EXPECT_FALSE(ch[0].allowed);
    try {
      check_recipe(saved, now, c, "RUN/step2");
      ADD_FAILURE() << f.key << " changed on resume but not refused";
    } catch (const olmo::Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("RUN/step2: this resume changes the recipe"), std::string::npos) << m;
      EXPECT_NE(m.find("  " + f.key + ": " + f.value.dump() + " (checkpoint) -> " +
                       now["fields"][f.key].dump() + " (this run)"),
                std::string::npos)
          << m;
      if (f.recipe == Recipe::model)
        EXPECT_NE(m.find("a resume cannot change it"), std::string::npos) << m;
      else
        EXPECT_NE(m.find("allow with --allow-recipe-change " + f.key), std::string::npos) << m;
      // The hint to stop early with hard_stop_steps only where the run's length changed.
      const bool horizon = f.key == "trainer.max_steps" || f.key == "trainer.max_tokens";
      EXPECT_EQ(m.find("hard_stop_steps") != std::string::npos, horizon) << m;
    }
    c.trainer.allow_recipe_change = {f.key};
    if (f.recipe == Recipe::model) {
      EXPECT_THROW(allowed_recipe_keys(c), olmo::Error) << f.key;
      continue;
    }
    const std::vector<RecipeChange> ok = check_recipe(saved, now, c, "RUN/step2");
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_TRUE(ok[0].allowed) << f.key;
  }
  EXPECT_EQ(free_exact, 1);
  EXPECT_EQ(size_t(checked + free_exact), saved["fields"].size());  // every recorded field
}

// data.micro_batch_tokens is rounding under dist.reduce=fast (refused on resume), free between
// two exact runs (one instance per forward/backward), and listed when the mode changes too.
TEST(RecipeCheck, MicroBatchFreeOnlyBetweenExactRuns) {
  auto run = [](const std::string& reduce, int64_t micro) {
    Config c = tiny();
    apply_override(c, "dist.reduce=" + reduce);
    apply_override(c, "data.micro_batch_tokens=" + std::to_string(micro));
    return c;
  };
  const int64_t m = tiny().data.micro_batch_tokens, half = m / 2;
  ASSERT_EQ(half % tiny().data.seq_len, 0);
  EXPECT_TRUE(check_recipe(recipe(run("exact", m)), recipe(run("exact", half)),
                           run("exact", half), "RUN/step2").empty());
  EXPECT_THROW(check_recipe(recipe(run("fast", m)), recipe(run("fast", half)), run("fast", half),
                            "RUN/step2"),
               olmo::Error);
  const std::vector<RecipeChange> both =
      recipe_changes(recipe(run("exact", m)), recipe(run("fast", half)), run("fast", half));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].key, "data.micro_batch_tokens");
  EXPECT_EQ(both[1].key, "dist.reduce");
}

TEST(RecipeCheck, AllowListEntries) {
  Config c = tiny();
  auto allowed = [&](std::vector<std::string> e) {
    c.trainer.allow_recipe_change = std::move(e);
    return allowed_recipe_keys(c);
  };
  EXPECT_EQ(allowed({"lr"}), std::set<std::string>{"optim.lr"});
  EXPECT_EQ(allowed({"seed"}), std::set<std::string>{"data.seed"});
  const std::set<std::string> sched = allowed({"schedule"});
  EXPECT_TRUE(sched.count("optim.lr") && sched.count("trainer.max_steps") &&
              sched.count("trainer.max_tokens") && sched.count("scheduler.warmup_steps"));
  EXPECT_FALSE(sched.count("optim.eps"));
  const std::set<std::string> optim = allowed({"optim"});
  EXPECT_TRUE(optim.count("optim.eps") && optim.count("optim.lr") && !optim.count("data.seed"));
  c.trainer.allow_recipe_change.clear();
  c.trainer.allow_schedule_change = true;  // the alias
  EXPECT_EQ(allowed_recipe_keys(c), sched);
  EXPECT_TRUE(schedule_allowed(c));
  c.trainer.allow_schedule_change = false;
  EXPECT_FALSE(schedule_allowed(c));
  auto refused = [&](const std::string& e, const std::string& want) {
    c.trainer.allow_recipe_change = {e};
    try {
      allowed_recipe_keys(c);
      ADD_FAILURE() << "'" << e << "' accepted";
    } catch (const olmo::Error& err) {
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  };
  refused("batch", "'batch' names no recipe field");
  refused("name", "never refused");  // the run name (optim.name, scheduler.name: the keys)
  refused("trainer.log_interval", "never refused");
  refused("model.d_model", "is a model field");
  refused("d_model", "is a model field");
  // validate() refuses a bad entry for every run, fresh ones too.
  Config v = tiny();
  v.trainer.allow_recipe_change = {"batch"};
  EXPECT_THROW(validate(v, false), olmo::Error);
}

TEST(RecipeCheck, OlderCheckpointFieldsAreNotCompared) {
  const Config c = tiny();
  json saved = recipe(c);
  saved["fields"].erase("optim.eps");  // written before optim.eps was recorded
  Config d = c;
  d.optim.eps = 1e-6;
  EXPECT_TRUE(recipe_changes(saved, recipe(d), d).empty());
  EXPECT_THROW(recipe_changes(json{{"version", 2}}, recipe(d), d), olmo::Error);
}

}  // namespace
