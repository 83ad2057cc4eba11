// `olmo ckpt verify` (see checkpoint_verify.h).
#include "monitor/checkpoint_verify.h"

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/state_io.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "model/config_json.h"

namespace olmo::train {

using nlohmann::json;

VerifyReport verify_checkpoint(const std::string& path) {
  VerifyReport rep;
  rep.dir = path;
  if (!ckpt::is_committed(path)) {
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
  const model::ModelConfig mc = model::model_config_from_json(r.json("model"), r.sections_file());
  rep.lines.push_back(cat("model section: ", mc.name, ", ", mc.n_layers, " layers, d_model ",
                          mc.d_model, mc.yarn.enabled() ? cat(", YaRN x", mc.yarn.factor) : std::string()));
  OLMO_CHECK(r.has_json("fingerprint"), r.sections_file(), ": no fingerprint section (written "
             "by an older olmo.cpp): nothing to verify the state against");
  const json& want = r.json("fingerprint");
  OLMO_CHECK(want.value("version", 0) == 1 && want.contains("tensors") && want.contains("state"),
             r.sections_file(), ": malformed fingerprint section");
  const auto have = ckpt::checkpoint_tensor_fingerprints(r);
  for (auto it = want["tensors"].begin(); it != want["tensors"].end(); ++it) {
    auto h = have.find(it.key());
    OLMO_CHECK(h != have.end(), rep.dir, ": tensor '", it.key(),
               "' has a saved fingerprint but is not among the stored tensors");
    OLMO_CHECK(hex64(h->second) == it->get<std::string>(), rep.dir, ": tensor '", it.key(),
               "': the stored pieces fingerprint to ", hex64(h->second), " but the state saved had ",
               it->get<std::string>());
    ++rep.tensors;
  }
  for (const auto& [name, f] : have)
    OLMO_CHECK(want["tensors"].contains(name), rep.dir, ": tensor '", name,
               "' is stored but has no saved fingerprint");
  rep.lines.push_back(cat("tensors: ", rep.tensors, " fingerprints match (weights and both AdamW moments)"));
  const json got = ckpt::stored_state_fingerprints(r);
  for (auto it = got.begin(); it != got.end(); ++it) {
    OLMO_CHECK(want["state"].contains(it.key()) && want["state"][it.key()] == *it,
               r.sections_file(), ": section '", it.key(), "' fingerprints to ", it->get<std::string>(),
               " but the state saved had ",
               want["state"].contains(it.key()) ? want["state"][it.key()].dump() : std::string("none"));
  }
  std::string groups;
  for (auto it = got.begin(); it != got.end(); ++it) groups += (groups.empty() ? "" : ", ") + it.key();
  rep.lines.push_back(cat("state: ", groups, " sections match"));
  return rep;
}

}  // namespace olmo::train
