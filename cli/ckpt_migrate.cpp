// `olmo ckpt import-olmo-core` / `export-olmo-core` (see ckpt_migrate.h).
//
// import-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]
//   SRC: an OLMo-core checkpoint (stepN/ with model_and_optim/ and train/rank0.pt) or a run dir
//   holding such stepN dirs (the newest is taken). CONFIG: the olmo.cpp config of the run (default
//   SRC's run dir config.yaml, as scripts/olmo_core_run.py writes it); trainer.run_dir = DST.
//   scripts/olmo_core_ckpt.py to-safetensors reads SRC with OLMo-core's helpers; this writes
//   DST/stepN (src/ckpt format, as Trainer::save_checkpoint): the weights, both AdamW moments,
//   the optimizer's step counts, betas, eps and weight decay per group (from SRC, as OLMo-core's
//   own load does), the trainer step and tokens seen, the data-loader state (same fields in both
//   frameworks), an empty skip-step window (OLMo-core never checkpoints it) and the config.
//   `olmo train CONFIG trainer.run_dir=DST` then resumes there.
// export-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]
//   SRC: an olmo.cpp checkpoint or run dir (newest checkpoint); CONFIG default: the config stored
//   in that checkpoint. scripts/olmo_core_ckpt.py from-olmo-cpp builds OLMo-core's train module
//   and Trainer for that config, loads the state and saves DST/stepN with OLMo-core's own
//   checkpointer, so `scripts/olmo_core_run.py CONFIG --run-dir DST` resumes it.
// Errors name the file: not a checkpoint, another architecture (tensor names or shapes), a
// failed helper.
#include "ckpt_migrate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ckpt/checkpoint.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "model/config_json.h"
#include "model/hf_io.h"
#include "model/safetensors.h"
#include "optim/schedule.h"
#include "train/checkpoint_verify.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/train_module.h"

namespace fs = std::filesystem;
using nlohmann::json;
using olmo::cat;

namespace {

std::string python() {
  if (const char* p = std::getenv("OLMO_PYTHON"); p && *p) return p;
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  return olmo::file_exists(py) ? py : "python3";
}

// Runs scripts/olmo_core_ckpt.py with args; throws with its exit status on failure (its stderr
// is passed through).
void run_helper(std::vector<std::string> args) {
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/olmo_core_ckpt.py";
  OLMO_CHECK(olmo::file_exists(script), "missing ", script);
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
std::string olmo_core_step_dir(const std::string& src) {
  OLMO_CHECK(fs::exists(src), "import-olmo-core: not found: ", src);
  if (fs::is_directory(fs::path(src) / "model_and_optim")) return src;
  int64_t best = -1;
  for (auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step", 0) != 0 || n.size() == 4 ||
        n.find_first_not_of("0123456789", 4) != std::string::npos)
      continue;
    if (fs::is_directory(e.path() / "model_and_optim")) best = std::max<int64_t>(best, std::stoll(n.substr(4)));
  }
  OLMO_CHECK(best >= 0, "import-olmo-core: ", src,
             " is neither an OLMo-core checkpoint (stepN/model_and_optim) nor a dir holding one");
  return (fs::path(src) / cat("step", best)).string();
}

olmo::train::Config load_cfg(const olmo::cli::Args& a, const std::string& fallback,
                             const std::string& dst) {
  std::vector<std::string> over(a.positional().begin() + 2, a.positional().end());
  over.push_back("trainer.run_dir=" + dst);
  const std::string path = a.has("--config") ? a.get("--config") : fallback;
  OLMO_CHECK(fs::exists(path), "no config: ", path, " not found (give --config CONFIG.yaml)");
  return olmo::train::load_config(path, over);
}

}  // namespace

int run_ckpt_import_olmo_core(int argc, char** argv) {
  using namespace olmo;
  cli::Args a(argc, argv);
  if (a.has("--help") || a.positional().size() < 2) {
    std::printf("usage: olmo ckpt import-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]\n"
                "OLMo-core checkpoint SRC (stepN or its run dir) -> olmo.cpp checkpoint DST/stepN\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--config"});
  const std::string src = olmo_core_step_dir(a.positional()[0]), dst = a.positional()[1];
  train::Config c = load_cfg(a, (fs::path(src).parent_path() / "config.yaml").string(), dst);
  train::validate(c, false);
  fs::create_directories(dst);
  const std::string tmp = (fs::path(dst) / ".import-olmo-core").string();
  fs::remove_all(tmp);
  run_helper({"to-safetensors", src, tmp});

  model::Olmo3 m(train::model_config(c));
  try {
    model::load_hf_weights(m, tmp);
  } catch (const Error& e) {
    throw Error(cat("import-olmo-core: ", src, " does not fit the config's model (another "
                    "architecture?): ", e.what()));
  }
  const json st = json::parse(read_file(tmp + "/state.json"));
  model::SafetensorsFile opt(tmp + "/optim.safetensors");
  std::vector<float> exp_avg(m.num_params()), exp_avg_sq(m.num_params());
  for (auto& p : m.params_info()) {
    for (auto [fam, buf] : {std::pair{"exp_avg/", &exp_avg}, std::pair{"exp_avg_sq/", &exp_avg_sq}}) {
      const std::string name = fam + p.name;
      OLMO_CHECK(opt.has(name), src, ": no optimizer moment ", name);
      OLMO_CHECK(opt.get(name).numel() == p.numel, src, ": moment ", name, " has ",
                 opt.get(name).numel(), " elements, the parameter ", p.numel);
      opt.read_f32(name, buf->data() + p.offset);
    }
  }
  // Groups as Trainer::build_optimizer: contiguous runs of [embedding | everything else].
  const json& tr = st.at("trainer");
  const int64_t step = tr.at("global_step").get<int64_t>();
  json groups = json::array(), steps = json::array();
  double beta1 = c.optim.betas[0], beta2 = c.optim.betas[1], eps = c.optim.eps;
  for (auto& p : m.params_info()) {
    const std::string g = p.is_embedding ? "embeddings" : "default";
    if (!groups.empty() && groups.back()["name"] == g &&
        groups.back()["offset"].get<size_t>() + groups.back()["numel"].get<size_t>() == p.offset) {
      groups.back()["numel"] = groups.back()["numel"].get<size_t>() + p.numel;
      continue;
    }
    const json& h = st.at("groups").at(g);
    groups.push_back({{"name", g}, {"offset", p.offset}, {"numel", p.numel},
                      {"weight_decay", h.at("weight_decay").get<double>()}});
    steps.push_back(st.at("steps").at(g).get<double>());
    beta1 = h.at("betas")[0].get<double>();
    beta2 = h.at("betas")[1].get<double>();
    eps = h.at("eps").get<double>();
  }
  const json& loader = tr.at("loader");
  ckpt::CheckpointWriter w(dst, step);
  for (auto& p : m.params_info()) w.add_tensor(p.name, m.params() + p.offset, p.shape);
  for (auto& p : m.params_info()) {
    w.add_tensor("optim.exp_avg/" + p.name, exp_avg.data() + p.offset, p.shape);
    w.add_tensor("optim.exp_avg_sq/" + p.name, exp_avg_sq.data() + p.offset, p.shape);
  }
  w.add_json("model", model::model_config_to_json(m.config()));
  const json trainer = {{"step", step},
                        {"tokens_seen", tr.at("tokens_seen").get<int64_t>()},
                        {"t_max", train::schedule_steps(c)},
                        {"lr0", c.optim.lr},
                        {"scheduler", optim::schedule_config_to_json(train::schedule_config(c))},
                        {"world", 1},
                        {"dist_reduce", train::choice_name(c.dist.reduce)},
                        {"imported_from", src}};
  const json optim_state = {{"steps", steps}, {"groups", groups}, {"beta1", beta1},
                            {"beta2", beta2}, {"eps", eps}, {"numel", m.num_params()}};
  const json skip = {{"rolling_interval_length", c.optim.rolling_interval_length},
                     {"sigma_factor", c.optim.sigma_factor},
                     {"losses", json::array()}, {"grad_norms", json::array()}};
  w.add_json("trainer", trainer);
  w.add_json("optim", optim_state);
  w.add_json("skip_step", skip);
  w.add_json("loader", loader);
  // The fingerprint a resume verifies (train/checkpoint_verify.h): the writer's tensor sums (one
  // piece per tensor here) and the state sections as written.
  json tensors = json::object();
  for (const auto& [name, f] : w.fingerprints()) tensors[name] = hex64(f);
  json loaded = loader;  // as DataLoader::load_state leaves it: a null epoch keeps epoch 1
  if (loaded.at("epoch").is_null()) loaded["epoch"] = 1;
  w.add_json("fingerprint", json{{"version", 1},
                                 {"tensors", tensors},
                                 {"state", train::state_section_fingerprints(
                                               trainer, loaded, skip, optim_state)}});
  w.add_json("rng", json{{"init_seed", c.trainer.init_seed}, {"data_seed", loader.at("seed")},
                         {"data_epoch", loader.at("epoch")}});
  w.add_json("callbacks", json::object());
  w.add_json("config", train::to_yaml(c));
  const std::string out = w.commit();
  fs::remove_all(tmp);
  std::printf("import-olmo-core: %s -> %s (step %lld, %zu parameters, AdamW steps %s)\n",
              src.c_str(), out.c_str(), (long long)step, m.num_params(), steps.dump().c_str());
  return 0;
}

int run_ckpt_export_olmo_core(int argc, char** argv) {
  using namespace olmo;
  cli::Args a(argc, argv);
  if (a.has("--help") || a.positional().size() < 2) {
    std::printf("usage: olmo ckpt export-olmo-core SRC DST [--config CONFIG.yaml] [key=value ...]\n"
                "olmo.cpp checkpoint SRC (stepN or its run dir) -> OLMo-core checkpoint DST/stepN\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--config"});
  std::string src = a.positional()[0];
  if (!fs::exists(fs::path(src) / "COMMITTED")) {
    auto l = ckpt::latest_complete(src);
    OLMO_CHECK(l, "export-olmo-core: ", src, " is neither an olmo.cpp checkpoint nor a run dir "
               "holding one");
    src = *l;
  }
  const std::string dst = a.positional()[1];
  fs::create_directories(dst);
  // The config: --config (+ overrides), else the one stored in the checkpoint.
  std::string cfg_path = (fs::path(dst) / "config.yaml").string();
  if (a.has("--config")) {
    train::Config c = load_cfg(a, "", dst);
    write_file_atomic(cfg_path, train::to_yaml(c));
  } else {
    ckpt::CheckpointReader r(src);
    write_file_atomic(cfg_path, r.json("config").get<std::string>());
    train::Config c = load_cfg(a, cfg_path, dst);
    write_file_atomic(cfg_path, train::to_yaml(c));
  }
  run_helper({"from-olmo-cpp", src, dst, cfg_path});
  return 0;
}
