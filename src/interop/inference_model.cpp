// load_model_for_inference (see inference_model.h).
#include "interop/inference_model.h"

#include <filesystem>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "model/config_json.h"
#include "model/hf_io.h"

namespace fs = std::filesystem;

namespace olmo::train {

std::unique_ptr<model::Olmo3> load_model_for_inference(const std::string& path) {
  std::string dir = path;
  if (fs::exists(fs::path(dir) / "config.json"))
    return std::make_unique<model::Olmo3>(model::load_hf(dir));
  if (!ckpt::is_committed(dir)) {
    auto l = ckpt::latest_complete(dir);
    OLMO_CHECK(l, path, ": neither a checkpoint (stepN), a run dir with one, nor an HF model dir");
    dir = *l;
  }
  ckpt::CheckpointReader r(dir);
  // The trained architecture, YaRN included; inference runs the fp32 master weights in fp32.
  model::ModelConfig mc = model::model_config_from_json(r.json("model"), r.sections_file());
  mc.precision = model::Precision::fp32;
  auto m = std::make_unique<model::Olmo3>(mc);
  for (auto& info : m->params_info()) r.read_tensor(info.name, m->params() + info.offset, info.shape);
  return m;
}

}  // namespace olmo::train
