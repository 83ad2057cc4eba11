// `olmo ckpt verify` and the shared state-section fingerprints (see checkpoint_verify.h).
#include "train/checkpoint_verify.h"

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "model/config_json.h"

namespace olmo::train {

using nlohmann::json;

json state_section_fingerprints(const json& trainer, const json& loader, const json& skip_step,
                                const json& optim) {
  auto fp = [](const json& j) { return hex64(ckpt::fingerprint_json(j)); };
  json groups = json::array();  // the layout a load checks (offset, numel), not the settings
  for (const json& g : optim.at("groups"))
    groups.push_back({{"offset", g.at("offset")}, {"numel", g.at("numel")}});
  return {{"trainer", fp({{"step", trainer.at("step")}, {"tokens_seen", trainer.at("tokens_seen")}})},
          {"schedule", fp({{"t_max", trainer.at("t_max")},
                           {"lr0", trainer.at("lr0")},
                           {"scheduler", trainer.at("scheduler")}})},
          {"loader", fp({{"seed", loader.at("seed")},
                         {"epoch", loader.at("epoch")},
                         {"tokens_processed", loader.at("tokens_processed")}})},
          {"skip_step", fp({{"rolling_interval_length", skip_step.at("rolling_interval_length")},
                            {"losses", skip_step.at("losses")},
                            {"grad_norms", skip_step.at("grad_norms")}})},
          {"optim", fp({{"numel", optim.at("numel")}, {"steps", optim.at("steps")}, {"groups", groups}})}};
}

VerifyReport verify_checkpoint(const std::string& path) {
  VerifyReport rep;
  rep.dir = path;
  if (!file_exists(path + "/COMMITTED")) {
    std::vector<std::string> warnings;
    auto l = ckpt::latest_complete(path, &warnings);
    OLMO_CHECK(l, path, ": neither a checkpoint (a stepN dir with COMMITTED) nor a run dir with a "
               "complete one", warnings.empty() ? std::string() : cat(" (", warnings[0], ")"));
    rep.dir = *l;
  }
  ckpt::CheckpointReader r(rep.dir);  // marker, index and state.json checksums, file sizes
  rep.step = r.step();
  r.verify();                          // every piece's checksum
  rep.lines.push_back(cat("checksums: ", r.tensors().size(), " pieces in ", rep.dir, " ok"));
  const model::ModelConfig mc = model::model_config_from_json(r.json("model"), rep.dir + "/state.json");
  rep.lines.push_back(cat("model section: ", mc.name, ", ", mc.n_layers, " layers, d_model ",
                          mc.d_model, mc.yarn.enabled() ? cat(", YaRN x", mc.yarn.factor) : std::string()));
  OLMO_CHECK(r.has_json("fingerprint"), rep.dir, "/state.json: no fingerprint section (written "
             "by an older olmo.cpp): nothing to verify the state against");
  const json& want = r.json("fingerprint");
  OLMO_CHECK(want.value("version", 0) == 1 && want.contains("tensors") && want.contains("state"),
             rep.dir, "/state.json: malformed fingerprint section");
  const auto have = ckpt::checkpoint_tensor_fingerprints(r);
  for (auto it = want["tensors"].begin(); it != want["tensors"].end(); ++it) {
    auto h = have.find(it.key());
    OLMO_CHECK(h != have.end(), rep.dir, ": tensor '", it.key(),
               "' has a saved fingerprint but is not in index.json");
    OLMO_CHECK(hex64(h->second) == it->get<std::string>(), rep.dir, ": tensor '", it.key(),
               "': the stored pieces fingerprint to ", hex64(h->second), " but the state saved had ",
               it->get<std::string>());
    ++rep.tensors;
  }
  for (const auto& [name, f] : have)
    OLMO_CHECK(want["tensors"].contains(name), rep.dir, ": tensor '", name,
               "' is in index.json but has no saved fingerprint");
  rep.lines.push_back(cat("tensors: ", rep.tensors, " fingerprints match (weights and both AdamW moments)"));
  const json got = state_section_fingerprints(r.json("trainer"), r.json("loader"),
                                              r.json("skip_step"), r.json("optim"));
  for (auto it = got.begin(); it != got.end(); ++it) {
    OLMO_CHECK(want["state"].contains(it.key()) && want["state"][it.key()] == *it, rep.dir,
               "/state.json: section '", it.key(), "' fingerprints to ", it->get<std::string>(),
               " but the state saved had ",
               want["state"].contains(it.key()) ? want["state"][it.key()].dump() : std::string("none"));
  }
  rep.lines.push_back("state: trainer, schedule, loader, skip_step and optim sections match");
  return rep;
}

}  // namespace olmo::train
