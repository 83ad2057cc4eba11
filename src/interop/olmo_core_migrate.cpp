// OLMo-core <-> olmo.cpp checkpoints and HF <-> OLMo-core runs (see olmo_core_migrate.h).
#include "interop/olmo_core_migrate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/state_io.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/runtime.h"
#include "data/loader.h"
#include "interop/hf_export.h"
#include "model/hf_io.h"
#include "model/safetensors.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/optimizer_setup.h"
#include "train/train_module.h"
#include "train/train_state.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

namespace {

// (moved from cli/ckpt_migrate.cpp; OLMO_PYTHON is read through core/runtime.h)
std::string python() {
  if (auto p = runtime().env("OLMO_PYTHON"); p && !p->empty()) return *p;
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  return olmo::file_exists(py) ? py : "python3";
}

// Runs scripts/olmo_core_ckpt.py with args; throws with its exit status on failure (its stderr
// is passed through).
void run_helper(std::vector<std::string> args) {
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/olmo_core_ckpt.py";
  OLMO_CHECK(file_exists(script), "missing ", script);
  args.insert(args.begin(), {python(), script});
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  OLMO_CHECK(pid >= 0, "cannot fork");
  if (pid == 0) {
    execvp(cargs[0], cargs.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  OLMO_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "scripts/olmo_core_ckpt.py ", args[2],
             " failed (exit ", WIFEXITED(st) ? WEXITSTATUS(st) : -1, ")");
}

// An OLMo-core stepN dir, or the newest one inside a run dir.
std::string olmo_core_step_dir(const std::string& src, const std::string& what) {
  OLMO_CHECK(fs::exists(src), what, ": not found: ", src);
  if (fs::is_directory(fs::path(src) / "model_and_optim")) return src;
  int64_t best = -1;
  if (fs::is_directory(src))
    for (auto& e : fs::directory_iterator(src)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("step", 0) != 0 || n.size() == 4 ||
          n.find_first_not_of("0123456789", 4) != std::string::npos)
        continue;
      if (fs::is_directory(e.path() / "model_and_optim"))
        best = std::max<int64_t>(best, std::stoll(n.substr(4)));
    }
  OLMO_CHECK(best >= 0, what, ": ", src,
             " is neither an OLMo-core checkpoint (stepN/model_and_optim) nor a dir holding one");
  return (fs::path(src) / cat("step", best)).string();
}

// The olmo.cpp config: o.config (else `fallback`) with o.overrides and trainer.run_dir = dst.
Config migrate_config(const MigrateOptions& o, const std::string& fallback, const std::string& dst) {
  std::vector<std::string> over = o.overrides;
  over.push_back("trainer.run_dir=" + dst);
  const std::string path = o.config.empty() ? fallback : o.config;
  OLMO_CHECK(!path.empty() && fs::exists(path), "no config: ", path.empty() ? "none given" : path,
             path.empty() ? "" : " not found", " (give --config CONFIG.yaml)");
  return load_config(path, over);
}

// The state objects of one run outside a Trainer (built from a config as the trainer builds
// them), visited like Trainer::visit_state: the importers' and exporters' form of a checkpoint.
struct RunState {
  Config cfg;
  model::Olmo3 model;
  std::unique_ptr<optim::AdamW> opt;
  optim::SkipStep skip;
  TrainerPosition pos;
  json loader;  // OLMo-core's data-loader state dict (data/loader.h)

  explicit RunState(const Config& c)
      : cfg(c), model(model_config(c)), skip(int(c.optim.rolling_interval_length), c.optim.sigma_factor) {
    pos.t_max = schedule_steps(c);
    pos.lr0 = c.optim.lr;
    pos.scheduler = optim::schedule_config_to_json(schedule_config(c));
    pos.dist_reduce = choice_name(c.dist.reduce);
  }
  // The optimizer: the config's groups and constants unless given (an importer's: the source's).
  void init_optimizer(std::vector<optim::ParamGroup> groups = {},
                      std::optional<optim::AdamWConfig> ac = std::nullopt) {
    if (groups.empty()) groups = param_groups(model, cfg.optim);
    opt = std::make_unique<optim::AdamW>(model.num_params(), groups, ac ? *ac : adamw_config(cfg.optim));
  }
  ckpt::FlatLayout layout() const { return param_layout(model); }
  void visit(StateVisitor& v, const std::string& where) {
    visit_model_section(v, model.config(), false, where);
    v.flat_replicated("", model.params());
    opt->visit_state(v);
    pos.visit_state(v);
    data::visit_loader_state(v, loader);
    skip.visit_state(v);
    if (v.loading()) return;
    {
      StateVisitor::Section s(v, "rng");
      v.info("init_seed", cfg.trainer.init_seed);
      v.info("data_seed", loader.at("seed"));
      v.info("data_epoch", loader.at("epoch"));
    }
    {
      StateVisitor::Section s(v, "callbacks");
      json none = json::object();
      v.whole(none, {});
    }
    StateVisitor::Section s(v, "config");
    json y = to_yaml(cfg);
    v.whole(y, {});
  }
  ckpt::StateFn fn(const std::string& where) {
    return [this, where](StateVisitor& v) { visit(v, where); };
  }
};

// HF-named safetensors in dir -> m's weights; a mismatch is "another architecture".
void load_weights(model::Olmo3& m, const std::string& dir, const std::string& what,
                  const std::string& src) {
  try {
    model::load_hf_weights(m, dir);
  } catch (const Error& e) {
    throw Error(cat(what, ": ", src, " does not fit the config's model (another architecture?): ",
                    e.what()));
  }
}

// The interchange dir of olmo_core_migrate.h from s (trainer: with the trainer state; else OLMo-core
// starts fresh).
void write_interchange(const std::string& dir, RunState& s, bool trainer) {
  fs::create_directories(dir);
  const auto& infos = s.model.params_info();
  model::SafetensorsWriter w, o;
  for (const auto& p : infos) {
    w.add(p.name, model::DType::F32, p.shape, s.model.params() + p.offset);
    o.add("exp_avg/" + p.name, model::DType::F32, p.shape, s.opt->exp_avg() + p.offset);
    o.add("exp_avg_sq/" + p.name, model::DType::F32, p.shape, s.opt->exp_avg_sq() + p.offset);
  }
  w.set_metadata("format", "pt");
  w.write(dir + "/model.safetensors");
  o.write(dir + "/optim.safetensors");
  json steps = json::object(), groups = json::object(), tensor_steps = json::object();
  const auto& gs = s.opt->groups();
  for (size_t i = 0; i < gs.size(); ++i) {
    steps[gs[i].name] = s.opt->steps()[i];
    groups[gs[i].name] = {{"betas", {s.opt->config().beta1, s.opt->config().beta2}},
                          {"eps", s.opt->config().eps},
                          {"weight_decay", gs[i].weight_decay}};
    for (const auto& p : infos)
      if (p.offset >= gs[i].offset && p.offset < gs[i].offset + gs[i].numel)
        tensor_steps[p.name] = s.opt->steps()[i];
  }
  json st = {{"steps", steps}, {"groups", groups}, {"tensor_steps", tensor_steps},
             {"sections", ckpt::state_sections(s.fn(dir))}};
  if (trainer)
    st["trainer"] = {{"global_step", s.pos.step}, {"tokens_seen", s.pos.tokens_seen},
                     {"loader", s.loader}};
  write_file_atomic(dir + "/interchange.json", st.dump(1));
}

// A fresh sibling dir for the interchange files of `dst`.
std::string scratch_dir(const std::string& dst, const char* tag) {
  const fs::path d = fs::absolute(fs::path(dst)).lexically_normal();
  const std::string t = (d.parent_path() / cat(".", d.filename().string(), ".", tag)).string();
  fs::remove_all(t);
  return t;
}

}  // namespace

MigrateResult import_olmo_core(const std::string& src_in, const std::string& dst,
                               const MigrateOptions& o) {
  const std::string src = olmo_core_step_dir(src_in, "import-olmo-core");
  Config c = migrate_config(o, (fs::path(src).parent_path() / "config.yaml").string(), dst);
  validate(c, false);
  fs::create_directories(dst);
  const std::string tmp = scratch_dir(dst, "import-olmo-core");
  run_helper({"to-safetensors", src, tmp});
  const json st = json::parse(read_file(tmp + "/interchange.json"));
  // OLMo-core's groups (as its own load does): weight decay per group, betas and eps.
  RunState s(c);
  std::vector<optim::ParamGroup> groups = param_groups(s.model, c.optim);
  optim::AdamWConfig ac = adamw_config(c.optim);
  for (optim::ParamGroup& g : groups) {
    const json& h = st.at("groups").at(g.name);
    g.weight_decay = h.at("weight_decay").get<double>();
    ac.beta1 = h.at("betas")[0].get<double>();
    ac.beta2 = h.at("betas")[1].get<double>();
    ac.eps = h.at("eps").get<double>();
  }
  s.init_optimizer(groups, ac);
  load_weights(s.model, tmp, "import-olmo-core", src);
  model::SafetensorsFile opt(tmp + "/optim.safetensors");
  for (const auto& p : s.model.params_info())
    for (auto [fam, buf] : {std::pair{"exp_avg/", s.opt->exp_avg()}, std::pair{"exp_avg_sq/", s.opt->exp_avg_sq()}}) {
      const std::string name = fam + p.name;
      OLMO_CHECK(opt.has(name), src, ": no optimizer moment ", name);
      OLMO_CHECK(opt.get(name).numel() == p.numel, src, ": moment ", name, " has ",
                 opt.get(name).numel(), " elements, the parameter ", p.numel);
      opt.read_f32(name, buf + p.offset);
    }
  for (size_t i = 0; i < groups.size(); ++i) s.opt->steps()[i] = st.at("steps").at(groups[i].name).get<float>();
  const json& tr = st.at("trainer");
  s.pos.step = tr.at("global_step").get<int64_t>();
  s.pos.tokens_seen = tr.at("tokens_seen").get<int64_t>();
  s.pos.imported_from = src;
  s.loader = tr.at("loader");
  // A null epoch (OLMo-core before its first reshuffle) is epoch 1, as DataLoader::load_state
  // and OLMo-core's own load take it.
  if (s.loader.at("epoch").is_null()) s.loader["epoch"] = 1;
  // (OLMo-core never checkpoints the skip-step window: it starts empty)
  MigrateResult r;
  r.out = ckpt::save_state(dst, s.pos.step, s.fn(dst), s.layout());
  fs::remove_all(tmp);
  r.step = s.pos.step;
  r.params = s.model.num_params();
  r.detail = cat("AdamW steps ", json(s.opt->steps()).dump());
  return r;
}

MigrateResult export_olmo_core(const std::string& src_in, const std::string& dst,
                               const MigrateOptions& o) {
  std::string src = src_in;
  if (!ckpt::is_committed(src)) {
    auto l = ckpt::latest_complete(src);
    OLMO_CHECK(l, "export-olmo-core: ", src, " is neither an olmo.cpp checkpoint nor a run dir "
               "holding one");
    src = *l;
  }
  fs::create_directories(dst);
  ckpt::CheckpointReader r(src);
  r.verify();
  // The config: --config (+ overrides), else the one stored in the checkpoint.
  const std::string cfg_path = (fs::path(dst) / "config.yaml").string();
  if (o.config.empty()) write_file_atomic(cfg_path, r.json("config").get<std::string>());
  Config c = migrate_config(o, cfg_path, dst);
  write_file_atomic(cfg_path, to_yaml(c));
  RunState s(c);
  s.init_optimizer();
  ckpt::load_state(r, s.fn(src), s.layout());
  const std::string tmp = scratch_dir(dst, "export-olmo-core");
  write_interchange(tmp, s, true);
  run_helper({"from-interchange", tmp, dst, cfg_path});
  fs::remove_all(tmp);
  MigrateResult m;
  m.out = (fs::path(dst) / cat("step", s.pos.step)).string();
  m.step = s.pos.step;
  m.params = s.model.num_params();
  return m;
}

MigrateResult hf_to_olmo_core(const std::string& hf_dir, const std::string& dst,
                              const MigrateOptions& o) {
  OLMO_CHECK(!o.config.empty(), "hf-to-olmo-core: give --config CONFIG.yaml (the run's training "
             "recipe; its model must fit ", hf_dir, ")");
  OLMO_CHECK(fs::is_directory(hf_dir), "hf-to-olmo-core: ", hf_dir, ": not a directory");
  Config c = migrate_config(o, "", dst);
  validate(c, false);
  RunState s(c);  // a fresh optimizer (zero moments, step counts 0) and trainer position
  s.init_optimizer();
  load_weights(s.model, hf_dir, "hf-to-olmo-core", hf_dir);
  fs::create_directories(dst);
  const std::string cfg_path = (fs::path(dst) / "config.yaml").string();
  write_file_atomic(cfg_path, to_yaml(c));
  const std::string tmp = scratch_dir(dst, "hf-to-olmo-core");
  s.loader = json::object({{"seed", c.data.seed}, {"epoch", 1}});  // (only the interchange's record)
  write_interchange(tmp, s, false);
  run_helper({"from-interchange", tmp, dst, cfg_path});
  fs::remove_all(tmp);
  MigrateResult m;
  m.out = (fs::path(dst) / "step0").string();
  m.params = s.model.num_params();
  m.detail = "config " + cfg_path;
  return m;
}

MigrateResult olmo_core_to_hf(const std::string& src_in, const std::string& dst,
                              const MigrateOptions& o) {
  const std::string src = olmo_core_step_dir(src_in, "olmo-core-to-hf");
  Config c = migrate_config(o, (fs::path(src).parent_path() / "config.yaml").string(), dst);
  const std::string tmp = scratch_dir(dst, "olmo-core-to-hf");
  run_helper({"to-safetensors", src, tmp});
  model::Olmo3 m(model_config(c));
  load_weights(m, tmp, "olmo-core-to-hf", src);
  const json st = json::parse(read_file(tmp + "/interchange.json"));
  fs::remove_all(tmp);
  model::HfExportOptions opt;
  const std::vector<std::string> files = model::export_hf(m, dst, opt);
  MigrateResult r;
  r.out = dst;
  r.step = st.at("trainer").at("global_step").get<int64_t>();
  r.params = m.num_params();
  for (const std::string& f : files) r.detail += (r.detail.empty() ? "" : " ") + f;
  return r;
}

}  // namespace olmo::train
