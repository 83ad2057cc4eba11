// Complete training state <-> checkpoint directory, and model loading for inference
// (checkpoint, run dir or HF dir; see trainer.h).
// Checkpoint content (src/ckpt format):
//   tensors  "<hf name>"                      fp32 weights, HF shapes (rank 0 writes them)
//            "optim.exp_avg/<hf name>"        AdamW first moment, in the pieces each rank's
//            "optim.exp_avg_sq/<hf name>"     ZeRO shard cuts out of the tensor (flat_range.h);
//                                             any other world size reads its own pieces back
//   json     "model"      architecture (model_config_json)
//            "trainer"    {step, tokens_seen, total_steps, t_max, lr, scheduler{...}}
//            "optim"      AdamW groups and fp32 step counts (AdamW::state_json)
//            "skip_step"  the rolling loss / grad-norm window
//            "loader"     OLMo-core data-loader state (seed, epoch, batches/tokens processed,
//                         dataset fingerprint)
//            "rng"        every RNG of the run: the init seed and the data-order seed/epoch
//                         (the loop itself draws no random numbers: no dropout)
//            "callbacks"  state of callbacks that keep any
//            "config"     the resolved YAML of the run that wrote it
#include <algorithm>
#include <filesystem>
#include <optional>

#include "ckpt/checkpoint.h"
#include "ckpt/flat_range.h"
#include "core/error.h"
#include "core/file_io.h"
#include "model/hf_io.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace olmo::train {

json model_config_json(const model::ModelConfig& c) {
  return json{{"name", c.name},           {"d_model", c.d_model},       {"n_layers", c.n_layers},
              {"n_heads", c.n_heads},     {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
              {"ffn_hidden", c.ffn_hidden}, {"vocab_size", c.vocab_size},
              {"rope_theta", c.rope_theta}, {"norm_eps", c.norm_eps},
              {"layer_window", c.layer_window}, {"max_seq_len", c.max_seq_len}};
}

model::ModelConfig model_config_from_json(const json& j, const std::string& where) {
  model::ModelConfig c;
  try {
    c.name = j.at("name").get<std::string>();
    c.d_model = j.at("d_model");
    c.n_layers = j.at("n_layers");
    c.n_heads = j.at("n_heads");
    c.n_kv_heads = j.at("n_kv_heads");
    c.head_dim = j.at("head_dim");
    c.ffn_hidden = j.at("ffn_hidden");
    c.vocab_size = j.at("vocab_size");
    c.rope_theta = j.at("rope_theta");
    c.norm_eps = j.at("norm_eps");
    c.layer_window = j.at("layer_window").get<std::vector<int64_t>>();
    c.max_seq_len = j.at("max_seq_len");
  } catch (const json::exception& e) {
    throw Error(cat(where, ": bad model section: ", e.what()));
  }
  model::validate(c, where);
  return c;
}

// The architecture fields that must agree to load weights (max_seq_len may differ: stage 3).
static void check_same_model(const model::ModelConfig& want, const json& have,
                             const std::string& dir) {
  json w = model_config_json(want);
  for (const char* k : {"d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden",
                        "vocab_size"})
    OLMO_CHECK(have.contains(k) && have[k] == w[k], dir, ": checkpoint model field '", k, "' is ",
               have.contains(k) ? have[k].dump() : "missing", " but this config has ", w[k].dump());
}

// Every rank writes the moments of its shard; rank 0 also the weights and the JSON state, and
// commits after every shard is durable (see ckpt/checkpoint.h for the protocol).
// Inside a non-finite streak (the last step was skipped as NaN/Inf) nothing is written: the
// checkpoint is deferred to the next finite step (or the end of the run, see trainer.h), and the
// newest complete checkpoint's dir is returned. The writer itself refuses NaN/Inf tensors.
std::string Trainer::save_checkpoint() {
  if (nonfinite_streak_ > 0 && !finishing_) {
    ckpt_deferred_ = true;
    std::string newest;
    if (rank_ == 0) {
      const auto steps = ckpt::list_checkpoints(cfg_.trainer.run_dir);
      newest = steps.empty() ? "" : cat(cfg_.trainer.run_dir, "/step", steps.back());
      progress_->message(cat("checkpoint of step ", step_, " deferred: step ", step_,
                             " was non-finite (skipped); newest complete checkpoint: ",
                             newest.empty() ? std::string("none") : newest));
    }
    comm_->broadcast(newest, 0);
    return newest;
  }
  ckpt_deferred_ = false;
  std::optional<ckpt::CheckpointWriter> w;
  if (rank_ == 0) w.emplace(cfg_.trainer.run_dir, step_, 0, world_);
  comm_->barrier();  // stepN-tmp exists
  if (rank_ > 0) w.emplace(cfg_.trainer.run_dir, step_, rank_, world_);
  const float* p = model_->params();
  if (rank_ == 0)
    for (auto& info : model_->params_info()) w->add_tensor(info.name, p + info.offset, info.shape);
  const size_t lo = adamw_->shard_begin(), hi = adamw_->shard_end();
  for (auto& info : model_->params_info()) {
    const size_t a = std::max(lo, info.offset), b = std::min(hi, info.offset + info.numel);
    if (a >= b) continue;
    for (const ckpt::FlatBlock& blk : ckpt::flat_range_blocks(info.shape, a - info.offset, b - info.offset)) {
      const size_t at = info.offset + blk.flat_begin - lo;
      w->add_tensor("optim.exp_avg/" + info.name, adamw_->exp_avg() + at, info.shape, blk.offset,
                    blk.local_shape);
      w->add_tensor("optim.exp_avg_sq/" + info.name, adamw_->exp_avg_sq() + at, info.shape,
                    blk.offset, blk.local_shape);
    }
  }
  maybe_test_kill("ckpt");
  if (rank_ > 0) w->close_shard();
  comm_->barrier();  // every shard durable
  std::string dir;
  if (rank_ == 0) {
    w->add_json("model", model_config_json(model_->config()));
    w->add_json("trainer", json{{"step", step_},
                               {"tokens_seen", tokens_seen_},
                               {"total_steps", total_steps_},
                               {"t_max", t_max_},
                               {"lr", step_ > 0 ? lr_at(step_) : 0.0},
                               {"world", world_},
                               {"dist_reduce", cfg_.dist.reduce},
                               {"scheduler", optim::schedule_config_to_json(schedule_->config())}});
    w->add_json("optim", adamw_->state_json());
    w->add_json("skip_step", skip_->state_json());
    w->add_json("loader", loader_->state());
    w->add_json("rng", json{{"init_seed", cfg_.trainer.init_seed},
                           {"data_seed", loader_->seed()},
                           {"data_epoch", loader_->epoch()}});
    json cbs = json::object();
    for (auto& cb : callbacks_) {
      json s = cb->save();
      if (!s.is_null()) cbs[cb->name()] = s;
    }
    w->add_json("callbacks", cbs);
    w->add_json("config", to_yaml(cfg_));
    dir = w->commit();
    ckpt::keep_last(cfg_.trainer.run_dir, int(cfg_.trainer.keep_last));
  }
  comm_->barrier();  // committed: no rank runs ahead of the rename
  comm_->broadcast(dir, 0);
  return dir;
}

// This rank's shard of the moments, from whatever pieces the writer's world size produced.
void Trainer::read_moments(const ckpt::CheckpointReader& r) {
  const size_t lo = adamw_->shard_begin(), hi = adamw_->shard_end();
  for (auto& info : model_->params_info()) {
    const size_t a = std::max(lo, info.offset), b = std::min(hi, info.offset + info.numel);
    if (a >= b) continue;
    for (const char* key : {"optim.exp_avg/", "optim.exp_avg_sq/"}) {
      const std::string name = key + info.name;
      OLMO_CHECK(r.has_tensor(name) && r.shape(name) == info.shape, r.dir(), ": tensor '", name,
                 "' missing or of another shape");
      float* base = std::string(key) == "optim.exp_avg/" ? adamw_->exp_avg() : adamw_->exp_avg_sq();
      for (const ckpt::FlatBlock& blk :
           ckpt::flat_range_blocks(info.shape, a - info.offset, b - info.offset))
        r.read_slice(name, ckpt::DType::f32, base + (info.offset + blk.flat_begin - lo),
                     blk.offset, blk.local_shape);
    }
  }
}

void Trainer::restore(const std::string& dir, bool weights, bool optim_state, bool trainer_state) {
  ckpt::CheckpointReader r(dir);
  r.verify();
  check_same_model(model_->config(), r.json("model"), dir);
  if (weights) {
    float* p = model_->params();
    for (auto& info : model_->params_info()) r.read_tensor(info.name, p + info.offset, info.shape);
  }
  if (optim_state) {
    read_moments(r);
    adamw_->load_state_json(r.json("optim"));
  }
  if (trainer_state) {
    const json& t = r.json("trainer");
    step_ = t.at("step").get<int64_t>();
    tokens_seen_ = t.at("tokens_seen").get<int64_t>();
    loader_->load_state(r.json("loader"));
    skip_->load_state_json(r.json("skip_step"));
    if (r.has_json("callbacks")) callback_state_ = r.json("callbacks");
  }
}

std::unique_ptr<model::Olmo3> load_model_for_inference(const std::string& path) {
  std::string dir = path;
  if (fs::exists(fs::path(dir) / "config.json"))
    return std::make_unique<model::Olmo3>(model::load_hf(dir));
  if (!fs::exists(fs::path(dir) / "COMMITTED")) {
    auto l = ckpt::latest_complete(dir);
    OLMO_CHECK(l, path, ": neither a checkpoint (stepN), a run dir with one, nor an HF model dir");
    dir = *l;
  }
  ckpt::CheckpointReader r(dir);
  auto m = std::make_unique<model::Olmo3>(model_config_from_json(r.json("model"), dir));
  for (auto& info : m->params_info()) r.read_tensor(info.name, m->params() + info.offset, info.shape);
  return m;
}

}  // namespace olmo::train
