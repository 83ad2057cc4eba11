// Replay half of tests/optim/olmo_core_parity.py: reads DIR/{meta.json,init.bin,grads.bin},
// replays the optimizer trajectory with olmo::optim (clip -> skip-step -> schedule -> AdamW, the
// order of OLMo-core's TransformerTrainModule) and evaluates every schedule case, then writes
// DIR/{traj,m,v}_MODE.bin and DIR/out_MODE.json for the script to compare.
// Usage: optim_parity_replay DIR torch_norm|own_norm
//   torch_norm: clip with the grad norm OLMo-core computed (isolates AdamW/skip/schedule)
//   own_norm:   compute the norm with olmo::optim::total_grad_norm
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"

using namespace olmo;
using namespace olmo::optim;

static std::vector<float> read_f32(const std::string& path, size_t n) {
  std::string s = read_file(path);
  OLMO_CHECK(s.size() == n * 4, path, ": expected ", n * 4, " bytes, got ", s.size());
  std::vector<float> v(n);
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

static void write_f32(const std::string& path, const std::vector<float>& v) {
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * 4));
}

int main(int argc, char** argv) try {
  OLMO_CHECK(argc == 3, "usage: optim_parity_replay DIR torch_norm|own_norm");
  const std::string dir = argv[1], mode = argv[2];
  OLMO_CHECK(mode == "torch_norm" || mode == "own_norm", "bad mode ", mode);
  const nlohmann::json meta = nlohmann::json::parse(read_file(dir + "/meta.json"));
  const size_t numel = meta["numel"], steps = meta["steps"];
  const int64_t t_max = meta["t_max"];
  const double lr0 = meta["lr0"];
  std::vector<float> params = read_f32(dir + "/init.bin", numel);
  const std::vector<float> grads = read_f32(dir + "/grads.bin", numel * steps);
  std::vector<ParamGroup> groups;
  for (const auto& g : meta["groups"])
    groups.push_back({g["offset"].get<size_t>(), g["numel"].get<size_t>(), g["weight_decay"].get<double>(),
                      g["name"].get<std::string>()});
  AdamW opt(numel, groups, AdamWConfig{0.9, 0.95, 1e-8});
  SkipStep skip(128, 6.0);
  auto sched = make_schedule(schedule_config_from_json(meta["schedule"]));

  std::vector<float> traj;
  traj.reserve(numel * steps);
  nlohmann::json lrs = nlohmann::json::array(), norms = nlohmann::json::array(), skipped = nlohmann::json::array();
  std::vector<float> g(numel);
  for (size_t s = 1; s <= steps; ++s) {
    std::copy(grads.begin() + (s - 1) * numel, grads.begin() + s * numel, g.begin());
    float norm;
    if (mode == "torch_norm") {
      norm = meta["torch_norms"][s - 1].get<float>();
      clip_grads_with_norm(g.data(), numel, 1.0, norm);
    } else {
      norm = clip_grad_norm(g.data(), numel, 1.0);
    }
    const bool proceed = skip.record(meta["losses"][s - 1].get<float>(), norm);
    const double lr = sched->get_lr(lr0, static_cast<int64_t>(s), t_max);
    opt.step(params.data(), g.data(), lr, !proceed);
    traj.insert(traj.end(), params.begin(), params.end());
    lrs.push_back(lr);
    norms.push_back(static_cast<double>(norm));
    skipped.push_back(proceed ? 0 : 1);
  }
  write_f32(dir + "/traj_" + mode + ".bin", traj);
  write_f32(dir + "/m_" + mode + ".bin", std::vector<float>(opt.exp_avg(), opt.exp_avg() + numel));
  write_f32(dir + "/v_" + mode + ".bin", std::vector<float>(opt.exp_avg_sq(), opt.exp_avg_sq() + numel));

  nlohmann::json sres = nlohmann::json::array();
  for (const auto& job : meta["schedules"]) {
    auto sc = make_schedule(schedule_config_from_json(job["config"]));
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : job["points"]) out.push_back(sc->get_lr(job["lr0"].get<double>(), c.get<int64_t>(), job["t_max"].get<int64_t>()));
    sres.push_back(out);
  }
  nlohmann::json steps_out = nlohmann::json::array();
  for (float st : opt.steps()) steps_out.push_back(static_cast<double>(st));
  const nlohmann::json out = {{"lrs", lrs}, {"norms", norms}, {"skipped", skipped}, {"steps", steps_out},
                              {"schedules", sres}};
  write_file_atomic(dir + "/out_" + mode + ".json", out.dump());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "optim_parity_replay: " << e.what() << "\n";
  return 1;
}
