// Complete training state <-> checkpoint directory (see trainer.h).
// Checkpoint content (src/ckpt format):
//   tensors  "<hf name>"                      fp32 weights, HF shapes (rank 0 writes them;
//                                             dist.zero_stage 3: the shards' pieces, as below)
//            "optim.exp_avg/<hf name>"        AdamW first moment, in the pieces each rank's
//            "optim.exp_avg_sq/<hf name>"     ZeRO shard cuts out of the tensor (flat_range.h);
//                                             any other world size reads its own pieces back
//   json     "model"      the model configuration, every field of model/config_fields.h
//            "fingerprint" layout-independent fingerprints of every tensor and of the trainer,
//                         schedule, loader, skip-step and optimizer state
//                         (Trainer::state_fingerprint);
//                         every load recomputes them from memory and refuses a mismatch
//            "trainer"    {step, tokens_seen, total_steps, t_max, lr0, lr, scheduler{...}}
//            "optim"      AdamW groups and fp32 step counts (AdamW::state_json)
//            "skip_step"  the rolling loss / grad-norm window
//            "loader"     OLMo-core data-loader state (seed, epoch, batches/tokens processed,
//                         dataset fingerprint)
//            "rng"        every RNG of the run: the init seed and the data-order seed/epoch
//                         (the loop itself draws no random numbers: no dropout)
//            "callbacks"  state of callbacks that keep any
//            "config"     the resolved YAML of the run that wrote it
//            "recipe"     the value of every field that changes the trajectory
//                         (train/recipe_check.h); a resume refuses a change unless allowed
#include <algorithm>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "audit/ledger.h"
#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/flat_range.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/timer.h"
#include "distributed/fixed_point.h"
#include "model/config_json.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "train/async_checkpoint.h"
#include "train/checkpoint_verify.h"
#include "train/progress.h"
#include "train/recipe_check.h"
#include "train/train_module.h"
#include "train/trainer.h"

using nlohmann::json;

namespace olmo::train {

// The architecture fields that must agree to load weights (max_seq_len and YaRN may differ on a
// phase start: stage 3 extends the context). A resume continues the same model: every
// architecture field of the description must agree (precision may differ: the checkpoint holds
// fp32 master weights under either).
static void check_same_model(const model::ModelConfig& want, const json& have,
                             const std::string& dir, bool resume) {
  const json w = model::model_config_to_json(want);
  std::vector<std::string> keys = {"d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim",
                                   "ffn_hidden", "vocab_size"};
  if (resume)
    for (const std::string& k : model::model_config_field_names())
      if (k != "name" && k != "precision" &&
          std::find(keys.begin(), keys.end(), k) == keys.end())
        keys.push_back(k);
  for (const std::string& k : keys)
    OLMO_CHECK(have.contains(k) && have[k] == w[k], dir, ": checkpoint model field '", k, "' is ",
               have.contains(k) ? have[k].dump() : "missing", " but this config has ", w[k].dump(),
               resume ? " (a resume must continue the same model)" : "");
}

// Layout-independent fingerprints (ckpt/fingerprint.h) of everything that determines the next
// update: every global tensor (weights, both AdamW moments) and the trainer, schedule, loader,
// skip-step and optimizer state. Collective: every rank contributes partial sums, one integer
// all-reduce adds them, so the value does not depend on the world size or shard layout. At a
// save (w given) the partial sums are the ones the writer computed while writing this rank's
// pieces (rank 0 wrote the weights), no extra pass over memory; after a load (w null) every rank
// fingerprints the elements of its ZeRO shard [lo, hi) of the flat buffer, weights included
// (one pass over 3 x P / W floats per rank).
json Trainer::state_fingerprint(const ckpt::CheckpointWriter* w, const json* state_part) {
  const auto& infos = model_->params_info();
  std::vector<dist::i128> part(3 * infos.size(), 0);
  const char* prefix[3] = {"", "optim.exp_avg/", "optim.exp_avg_sq/"};
  if (w) {  // computed by the writer while it wrote this rank's pieces (no extra pass)
    for (size_t t = 0; t < infos.size(); ++t)
      for (int k = 0; k < 3; ++k) {
        auto it = w->fingerprints().find(prefix[k] + infos[t].name);
        if (it != w->fingerprints().end()) part[3 * t + k] = dist::i128(it->second);
      }
  } else {
    const size_t lo = module_->optimizer().shard_begin(), hi = module_->optimizer().shard_end();
    // The weights of [lo, hi): the model's full buffer, or (ZeRO-3) the shard itself.
    const float* shard = module_->param_shard();
    const float* p = shard ? nullptr : model_->params();
    for (size_t t = 0; t < infos.size(); ++t) {
      const auto& info = infos[t];
      const size_t a = std::max(lo, info.offset), b = std::min(hi, info.offset + info.numel);
      if (a >= b) continue;
      const size_t n = b - a, begin = a - info.offset;
      part[3 * t + 0] =
          dist::i128(ckpt::fingerprint_partial(shard ? shard + (a - lo) : p + a, n, begin));
      part[3 * t + 1] = dist::i128(ckpt::fingerprint_partial(module_->optimizer().exp_avg() + (a - lo), n, begin));
      part[3 * t + 2] =
          dist::i128(ckpt::fingerprint_partial(module_->optimizer().exp_avg_sq() + (a - lo), n, begin));
    }
  }
  comm_->allreduce(part.data(), part.size(), dist::Type::i128, dist::Op::sum);
  json tensors = json::object();
  for (size_t t = 0; t < infos.size(); ++t)
    for (int k = 0; k < 3; ++k)  // the sum mod 2^64
      tensors[prefix[k] + infos[t].name] = hex64(uint64_t(part[3 * t + k]));
  return json{{"version", 1}, {"tensors", tensors},
              {"state", state_part ? *state_part : state_part_fingerprint()}};
}

// The non-tensor part of the fingerprint: trainer, schedule, loader, skip-step, optimizer state.
json Trainer::state_part_fingerprint() const {
  return state_section_fingerprints(trainer_section(), loader_->state(),
                                    module_->skip_step().state_json(), module_->optimizer().state_json());
}

// The checkpoint's "trainer" section: position, and the schedule that gives every later LR.
json Trainer::trainer_section() const {
  return json{{"step", step_},
              {"tokens_seen", tokens_seen_},
              {"total_steps", total_steps_},
              {"t_max", t_max_},
              {"lr0", cfg_.optim.lr},
              {"lr", step_ > 0 ? lr_at(step_) : 0.0},
              {"world", world_},
              {"dist_reduce", choice_name(cfg_.dist.reduce)},
              {"scheduler", optim::schedule_config_to_json(module_->schedule().config())}};
}

// After a load: the fingerprint of the state now in memory must equal the one recorded at save
// time, for the parts that were loaded. Every rank computes the same values, so every rank
// throws alike.
void Trainer::verify_loaded(const ckpt::CheckpointReader& r, bool optim_state, bool trainer_state,
                            bool resume) {
  if (!r.has_json("fingerprint")) {
    if (rank_ == 0)
      warnings_.push_back(cat(r.dir(), ": no fingerprint section (written by an older olmo.cpp); "
                              "the loaded state is not verified"));
    return;
  }
  const json& want = r.json("fingerprint");
  const json have = state_fingerprint();
  OLMO_CHECK(want.value("version", 0) == 1 && want.contains("tensors") && want.contains("state"),
             r.dir(), "/state.json: malformed fingerprint section");
  for (auto it = have["tensors"].begin(); it != have["tensors"].end(); ++it) {
    const bool moment = it.key().rfind("optim.", 0) == 0;
    if (moment && !optim_state) continue;
    OLMO_CHECK(want["tensors"].contains(it.key()), r.dir(), ": fingerprint has no entry for tensor '",
               it.key(), "'");
    OLMO_CHECK(want["tensors"][it.key()] == *it, r.dir(), ": tensor '", it.key(),
               "' loaded into memory does not match the state that was saved (fingerprint ",
               it->get<std::string>(), ", saved ", want["tensors"][it.key()].dump(),
               "); refusing to continue from a state that differs from the saved one");
  }
  // The schedule: a resume continues the run's schedule. A changed trainer.max_steps / max_tokens
  // (t_max), optim.lr or scheduler.* would silently change the LR of every later step (the
  // trajectory leaves the one of the run that never stopped); a phase start (load_path) sets a
  // new schedule by design. Every input of the schedule is a recipe field, so with a "recipe"
  // section (check_resume_recipe, before the load) a schedule that differs is one the recipe
  // check allowed; without one (an older checkpoint) the schedule fields must be allowed here.
  if (resume && want["state"].value("schedule", "") != have["state"]["schedule"]) {
    const json& t = r.json("trainer");
    const json now = trainer_section();
    std::string what;
    for (const char* k : {"t_max", "lr0", "scheduler"})
      if (!t.contains(k) || t[k] != now[k])
        what += cat(what.empty() ? "" : ", ", k, " ", t.contains(k) ? t[k].dump() : "?", " -> ",
                    now[k].dump());
    OLMO_CHECK(r.has_json("recipe") ? recipe_change_ != nullptr : schedule_allowed(cfg_),
               r.dir(), ": this resume would change the learning-rate schedule the run was "
               "trained with (", what, "): every later step would get another LR than the run "
               "that never stopped. To stop a run early and continue it on the same schedule, "
               "keep trainer.max_steps (or max_tokens) and use trainer.hard_stop_steps; to change "
               "the schedule on purpose: olmo train ... --allow-recipe-change schedule");
    if (!recipe_change_)
      recipe_change_ = std::make_unique<json>(json{{"kind", "info"}, {"event", "recipe_change"},
                                                   {"step", step_}, {"changed", what},
                                                   {"changes", json::array()}, {"from", r.dir()}});
  }
  std::vector<std::string> sections;
  if (optim_state) sections.push_back("optim");
  if (trainer_state) sections.insert(sections.end(), {"trainer", "loader", "skip_step"});
  for (const std::string& k : sections)
    OLMO_CHECK(want["state"].contains(k) && want["state"][k] == have["state"][k], r.dir(),
               ": the ", k, " state loaded into memory does not match the state that was saved "
               "(fingerprint ", have["state"][k].get<std::string>(), ", saved ",
               want["state"].contains(k) ? want["state"][k].dump() : std::string("none"),
               "); refusing to continue");
}

// Every rank writes the moments of its shard; rank 0 also the weights and the JSON state, and
// commits after every shard is durable (see ckpt/checkpoint.h for the protocol).
// Inside a non-finite streak (the last step was skipped as NaN/Inf) nothing is written: the
// checkpoint is deferred to the next finite step (or the end of the run, see trainer.h), and the
// newest complete checkpoint's dir is returned. The writer itself refuses NaN/Inf tensors.
// Asynchronous (wait = false, trainer.async_checkpoint): everything the checkpoint holds is
// taken here, at the step boundary -- the tensor pieces copied into the staging buffer, the JSON
// sections and the fingerprint's state part computed -- and finish_checkpoint() commits it.
std::string Trainer::save_checkpoint(bool wait) {
  finish_checkpoint();  // at most one in flight: the previous one is committed first
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
  auto p = std::make_shared<PendingCheckpoint>();
  p->t0 = now_seconds();
  p->step = step_;
  // Free space: the whole checkpoint (weights + both moments, every rank's part) must fit in the
  // run dir's file system before anything is written (the old ones go only after the commit).
  // Rank 0 decides, every rank throws alike.
  std::string no_space;
  if (rank_ == 0) {
    try {
      ckpt::check_free_space(cfg_.trainer.run_dir, 3 * sizeof(float) * model_->num_params(),
                             cat("checkpoint of step ", step_));
    } catch (const Error& e) {
      no_space = e.what();
    }
  }
  comm_->broadcast(no_space, 0);
  OLMO_CHECK(no_space.empty(), no_space);
  if (rank_ == 0) p->writer = std::make_unique<ckpt::CheckpointWriter>(cfg_.trainer.run_dir, step_, 0, world_);
  comm_->barrier();  // stepN-tmp exists
  if (rank_ > 0) p->writer = std::make_unique<ckpt::CheckpointWriter>(cfg_.trainer.run_dir, step_, rank_, world_);
  // Weights: rank 0 writes them whole, or (ZeRO-3: no rank holds them whole) every rank the
  // pieces of its shard, as the moments; a reader assembles either.
  std::vector<CkptPiece> pieces;
  const float* shard = module_->param_shard();
  if (rank_ == 0 && !shard)
    for (auto& info : model_->params_info())
      pieces.push_back({info.name, model_->params() + info.offset, info.shape, {}, {}});
  const size_t lo = module_->optimizer().shard_begin(), hi = module_->optimizer().shard_end();
  for (auto& info : model_->params_info()) {
    const size_t a = std::max(lo, info.offset), b = std::min(hi, info.offset + info.numel);
    if (a >= b) continue;
    for (const ckpt::FlatBlock& blk : ckpt::flat_range_blocks(info.shape, a - info.offset, b - info.offset)) {
      const size_t at = info.offset + blk.flat_begin - lo;
      if (shard) pieces.push_back({info.name, shard + at, info.shape, blk.offset, blk.local_shape});
      pieces.push_back({"optim.exp_avg/" + info.name, module_->optimizer().exp_avg() + at, info.shape,
                        blk.offset, blk.local_shape});
      pieces.push_back({"optim.exp_avg_sq/" + info.name, module_->optimizer().exp_avg_sq() + at,
                        info.shape, blk.offset, blk.local_shape});
    }
  }
  for (CkptPiece& pc : pieces)
    if (pc.local_shape.empty()) pc.local_shape = pc.shape, pc.offset.assign(pc.shape.size(), 0);
  // The JSON state of this step boundary (rank 0 writes it at the commit).
  if (rank_ == 0) {
    auto add = [&](const char* k, json v) { p->sections.push_back(json::array({k, std::move(v)})); };
    add("model", model::model_config_to_json(model_->config()));
    add("trainer", trainer_section());
    add("optim", module_->optimizer().state_json());
    add("skip_step", module_->skip_step().state_json());
    // The exact reduction's scales for the next step (distributed/scaled_fixed.h): part of
    // what decides the next update's bits.
    add("reduce", module_->data_parallel().state_json());
    add("loader", loader_->state());
    add("rng", json{{"init_seed", cfg_.trainer.init_seed},
                    {"data_seed", loader_->seed()},
                    {"data_epoch", loader_->epoch()}});
    json cbs = json::object();
    for (auto& cb : callbacks_) {
      json st = cb->save();
      if (!st.is_null()) cbs[cb->name()] = st;
    }
    add("callbacks", cbs);
    add("config", to_yaml(cfg_));
    add("recipe", recipe());
  }
  p->state_fp = state_part_fingerprint();
  p->async = cfg_.trainer.async_checkpoint && !wait && !finishing_;
  if (p->async) {
    if (!stager_) stager_ = std::make_shared<CheckpointStager>();
    p->copy_s = stager_->start(*p->writer, pieces, rank_ == 0);
    p->staged_bytes = stager_->staged_bytes();
    // The checkpoint-data point of this step (test_faults.h's "ckpt" kills / holds land here,
    // with the write under way on the writer thread).
    for (auto& cb : callbacks_) cb->on_checkpoint_written(*this);
  } else {
    write_pieces(*p->writer, pieces, rank_ == 0);
  }
  p->snapshot_s = now_seconds() - p->t0;
  pending_ = std::move(p);
  if (!pending_->async) return finish_checkpoint();
  return cat(cfg_.trainer.run_dir, "/step", pending_->step);
}

void Trainer::poll_checkpoint() {
  // Before the first asynchronous save: the staging buffer is allocated and its pages touched
  // on a background thread (this rank's pieces: rank 0's whole weights unless sharded, the
  // weight shard under ZeRO-3, both moments' shard; one alignment pad per tensor and kind).
  if (!stager_ && cfg_.trainer.async_checkpoint && cfg_.trainer.save_interval > 0) {
    stager_ = std::make_shared<CheckpointStager>();
    const size_t shard = module_->optimizer().shard_end() - module_->optimizer().shard_begin();
    const size_t whole = rank_ == 0 && !module_->param_shard() ? model_->num_params() : 0;
    const size_t zero3 = module_->param_shard() ? shard : 0;
    // Padding: up to 16 floats per piece, up to 3 pieces (flat_range_blocks) per tensor and kind;
    // an underestimate only makes start() grow the buffer.
    const size_t pads = 16 * 3 * 3 * model_->params_info().size();
    stager_->reserve_async(CheckpointStager::floats_for({whole, zero3, shard, shard}) + pads);
  }
  if (!pending_) return;
  const bool busy = pending_->async && stager_ && stager_->running() && !stager_->done();
  if (!comm_->any(busy)) finish_checkpoint();
}

// The commit of the checkpoint in flight, once every rank's part is durable: a write that failed
// on any rank (its thread's error) fails the commit on every rank, and nothing is committed.
std::string Trainer::finish_checkpoint() {
  if (!pending_) return "";
  std::shared_ptr<PendingCheckpoint> p = std::move(pending_);
  pending_.reset();
  const double tc = now_seconds();
  std::string err;
  if (p->async) err = stager_->join();
  const bool failed = comm_->any(!err.empty());
  OLMO_CHECK(!failed, err.empty() ? cat("checkpoint of step ", p->step, ": the write failed on "
                                        "another rank (see its error); nothing was committed")
                                  : err);
  if (!p->async)  // (asynchronous: called at the save's own step, after the staging copy)
    for (auto& cb : callbacks_) cb->on_checkpoint_written(*this);
  const double tf = now_seconds();
  const json fingerprint = state_fingerprint(p->writer.get(), &p->state_fp);  // collective
  // Wall-time share: the collective part, the fingerprinting done inline while writing and the
  // waits for the helper thread; CPU time: everything the fingerprint computed.
  const ckpt::CheckpointWriter::FingerprintTime& ft = p->writer->fingerprint_time();
  const double collective = now_seconds() - tf;
  comm_->barrier();  // every shard durable (each rank's thread fsynced its data before joining)
  std::string dir;
  if (rank_ == 0) {
    for (const json& kv : p->sections) {
      p->writer->add_json(kv[0].get<std::string>(), kv[1]);
      if (kv[0] == "model") p->writer->add_json("fingerprint", fingerprint);
    }
    dir = p->writer->commit();
    ckpt::keep_last(cfg_.trainer.run_dir, int(cfg_.trainer.keep_last), p->step);
  }
  comm_->barrier();  // committed: no rank runs ahead of the rename
  comm_->broadcast(dir, 0);
  SaveTiming& s = last_save_;
  s = SaveTiming{};
  s.seconds = now_seconds() - p->t0;
  s.fingerprint_seconds = collective + ft.inline_s + ft.wait_s;
  s.fingerprint_cpu_seconds = collective + ft.inline_s + ft.helper_s;
  s.snapshot_s = p->snapshot_s;
  s.copy_s = p->copy_s;
  s.commit_s = now_seconds() - tc;
  s.stall_s = s.snapshot_s + s.commit_s;
  s.write_s = p->async ? stager_->write_seconds() : p->snapshot_s - p->copy_s;
  s.staged_bytes = p->staged_bytes;
  s.async = p->async;
  s.step = p->step;
  p.reset();
  for (auto& cb : callbacks_) cb->post_checkpoint(*this, dir);
  return dir;
}

// This rank's shard [lo, hi) of the flat tensors "<prefix><hf name>" into base[hi - lo], from
// whatever pieces the writer's world size produced.
void Trainer::read_shard(const ckpt::CheckpointReader& r, const std::string& prefix, float* base) {
  const size_t lo = module_->optimizer().shard_begin(), hi = module_->optimizer().shard_end();
  for (auto& info : model_->params_info()) {
    const size_t a = std::max(lo, info.offset), b = std::min(hi, info.offset + info.numel);
    if (a >= b) continue;
    const std::string name = prefix + info.name;
    OLMO_CHECK(r.has_tensor(name) && r.shape(name) == info.shape, r.dir(), ": tensor '", name,
               "' missing or of another shape");
    for (const ckpt::FlatBlock& blk :
         ckpt::flat_range_blocks(info.shape, a - info.offset, b - info.offset))
      r.read_slice(name, ckpt::DType::f32, base + (info.offset + blk.flat_begin - lo),
                   blk.offset, blk.local_shape);
  }
}

void Trainer::read_moments(const ckpt::CheckpointReader& r) {
  read_shard(r, "optim.exp_avg/", module_->optimizer().exp_avg());
  read_shard(r, "optim.exp_avg_sq/", module_->optimizer().exp_avg_sq());
}

// The recipe of this run (recipe_check.h), with the precision the model computes in.
json Trainer::recipe() const {
  return recipe_json(cfg_, model::precision_name(model_->config().precision));
}

void Trainer::restore(const std::string& dir, bool weights, bool optim_state, bool trainer_state,
                      bool resume) {
  ckpt::CheckpointReader r(dir);
  r.verify();
  // A resume continues the recipe: every difference is refused before anything is loaded unless
  // allowed (then recorded below, once the loaded state is verified). A checkpoint of an older
  // olmo.cpp has no recipe section: only the model and the schedule are compared.
  std::vector<RecipeChange> changes;
  if (resume && r.has_json("recipe")) changes = check_recipe(r.json("recipe"), recipe(), cfg_, dir);
  check_same_model(model_->config(), r.json("model"), dir, resume);
  if (weights) {
    if (float* shard = module_->param_shard()) {  // ZeRO-3: this rank's pieces only
      read_shard(r, "", shard);
    } else {
      float* p = model_->params();
      for (auto& info : model_->params_info()) r.read_tensor(info.name, p + info.offset, info.shape);
    }
  }
  if (optim_state) {
    read_moments(r);
    module_->optimizer().load_state_json(r.json("optim"));
  }
  if (trainer_state) {
    const json& t = r.json("trainer");
    step_ = t.at("step").get<int64_t>();
    tokens_seen_ = t.at("tokens_seen").get<int64_t>();
    // An allowed change of a data.* field continues at the loader's position over this run's
    // dataset (its fingerprint, which such a change alters, is then not compared).
    const bool data_changed =
        std::any_of(changes.begin(), changes.end(),
                    [](const RecipeChange& ch) { return ch.key.rfind("data.", 0) == 0; });
    loader_->load_state(r.json("loader"), data_changed);
    module_->skip_step().load_state_json(r.json("skip_step"));
    // The exact reduction's scales (a checkpoint without them: the next step measures them).
    if (r.has_json("reduce"))
      module_->data_parallel().load_state_json(r.json("reduce"), r.dir() + "/state.json");
    if (r.has_json("callbacks")) callback_state_ = std::make_unique<json>(r.json("callbacks"));
  }
  if (!changes.empty()) {
    json list = json::array();
    for (const RecipeChange& ch : changes)
      list.push_back({{"key", ch.key}, {"from", ch.from}, {"to", ch.to},
                      {"class", recipe_class_name(ch.recipe)}});
    recipe_change_ = std::make_unique<json>(
        json{{"kind", "info"}, {"event", "recipe_change"}, {"step", step_},
             {"changed", recipe_changes_text(changes)}, {"changes", list}, {"from", dir}});
  }
  verify_loaded(r, optim_state, trainer_state, resume);
  // The loader's state carries the seed and wins over the config's (OLMo-core's
  // load_state_dict): an allowed data.seed change takes effect only here, once the state as saved
  // is verified; the rest of the epoch follows the new seed's order from the same position.
  for (const RecipeChange& ch : changes)
    if (ch.key == "data.seed" && trainer_state) {
      json st = r.json("loader");
      st["seed"] = cfg_.data.seed;
      loader_->load_state(st, /*ignore_fingerprint_mismatch=*/true);
    }
  // The allowed change goes into the run's batch ledger (kept with the records of this step,
  // dropped by a later resume from an earlier checkpoint), where `olmo audit` reports it.
  if (recipe_change_ && rank_ == 0) {
    audit::LedgerWriter ledger(audit::ledger_path(cfg_.trainer.run_dir), step_);
    const json& e = *recipe_change_;
    ledger.append(audit::RecipeChangeRecord{
        step_, json{{"changes", e["changes"]}, {"changed", e["changed"]}, {"from", dir}}.dump()});
  }
}

}  // namespace olmo::train
