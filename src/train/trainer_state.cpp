// Complete training state <-> checkpoint directory (see trainer.h). Every part is saved, loaded
// and fingerprinted by its owner's visit_state (core/state_visitor.h) through ckpt/state_io.h,
// the one path also used by the importers (interop/olmo_core_migrate.h); Trainer::visit_state
// lists the parts. Checkpoint content (src/ckpt format):
//   tensors  "<hf name>"                      fp32 weights, HF shapes (rank 0 writes them;
//                                             dist.zero_stage 3: the shards' pieces, as below)
//            "optim.exp_avg/<hf name>"        AdamW first moment, in the pieces each rank's
//            "optim.exp_avg_sq/<hf name>"     ZeRO shard cuts out of the tensor (flat_range.h);
//                                             any other world size reads its own pieces back
//   json     "model"      the model configuration, every field of model/config_fields.h
//            "fingerprint" layout-independent fingerprints of every tensor and of the trainer,
//                         schedule, loader, skip-step and optimizer state groups, with the
//                         fields each group holds (ckpt/state_io.h);
//                         every load recomputes them from memory and refuses a mismatch
//            "trainer"    {step, tokens_seen, total_steps, t_max, lr0, lr, scheduler{...}}
//            "optim"      AdamW groups and fp32 step counts (AdamW::visit_state)
//            "skip_step"  the rolling loss / grad-norm window
//            "loader"     OLMo-core data-loader state (seed, epoch, batches/tokens processed,
//                         dataset fingerprint)
//            "rng"        every RNG of the run: the init seed and the data-order seed/epoch
//                         (the loop itself draws no random numbers: no dropout)
//            "callbacks"  state of callbacks that keep any
//            "peak"       the run's highest fp32 / bf16 peak (GFLOP/s per process: probes and
//                         achieved rates; the threads and ISA they hold for), so a resume keeps it
//                         (trainer_throughput.cpp); a measurement: never fingerprinted
//            "config"     the resolved YAML of the run that wrote it
//            "recipe"     the value of every field that changes the trajectory
//                         (train/recipe_check.h); a resume refuses a change unless allowed
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "audit/ledger.h"
#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/state_io.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/timer.h"
#include "distributed/fixed_point.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "train/async_checkpoint.h"
#include "train/progress.h"
#include "train/recipe_check.h"
#include "train/train_module.h"
#include "train/train_state.h"
#include "train/trainer.h"

using nlohmann::json;

namespace olmo::train {

// Every part of the run's state, in checkpoint order. A load restores only the parts asked for.
void Trainer::visit_state(StateVisitor& v, const StateParts& parts) {
  const bool load = v.loading();
  visit_model_section(v, model_->config(), parts.resume, parts.dir);
  if (!load || parts.weights) {
    const size_t lo = module_->optimizer().shard_begin(), hi = module_->optimizer().shard_end();
    // ZeRO-3: no rank holds the weights whole, every rank its shard's pieces (as the moments);
    // otherwise rank 0 saves them whole and every rank loads them whole.
    if (float* shard = module_->param_shard()) v.flat("", shard, lo, hi);
    else v.flat_replicated("", model_->params());
  }
  if (!load || parts.optim) module_->optimizer().visit_state(v);
  if (load && !parts.trainer) return;
  TrainerPosition pos = position();
  pos.visit_state(v);
  step_ = pos.step;
  tokens_seen_ = pos.tokens_seen;
  // An allowed change of a data.* field continues at the loader's position over this run's
  // dataset (its fingerprint, which such a change alters, is then not compared).
  loader_->visit_state(v, parts.data_changed);
  module_->skip_step().visit_state(v);
  // The exact reduction's scales for the next step (distributed/scaled_fixed.h): part of what
  // decides the next update's bits (a checkpoint without them: the next step measures them).
  module_->data_parallel().visit_state(v);
  {  // every RNG of the run: the init seed and the data order's (restored by the loader)
    StateVisitor::Section s(v, "rng");
    v.info("init_seed", cfg_.trainer.init_seed);
    v.info("data_seed", loader_->seed());
    v.info("data_epoch", loader_->epoch());
  }
  // (the callbacks' state, the peak, the config and the recipe enter no fingerprint)
  if (v.mode() == StateVisitor::Mode::fingerprint) return;
  if (!load && rank_ != 0) return;  // (rank 0 writes the sections)
  if (!load || v.has_section("callbacks")) {
    StateVisitor::Section s(v, "callbacks");
    json cbs = json::object();
    if (!load)
      for (auto& cb : callbacks_) {
        json st = cb->save();
        if (!st.is_null()) cbs[cb->name()] = st;
      }
    v.whole(cbs, {});
    if (load) callback_state_ = std::make_unique<json>(cbs);
  }
  visit_peak(v);  // the run's highest peaks (trainer_throughput.cpp)
  if (load) return;  // the config and the recipe are read by the recipe check, before the load
  {
    StateVisitor::Section s(v, "config");
    json y = to_yaml(cfg_);
    v.whole(y, {});
  }
  StateVisitor::Section s(v, "recipe");
  json rj = recipe();
  v.whole(rj, {});
}

// Sums this rank's partial tensor fingerprints over the ranks (mod 2^64): one integer
// all-reduce, so the value does not depend on the world size or shard layout. Every rank holds
// the same names (ckpt/state_io.h).
static std::map<std::string, uint64_t> sum_over_ranks(dist::Communicator& comm,
                                                      const std::map<std::string, uint64_t>& part) {
  std::vector<dist::i128> v;
  for (const auto& [name, f] : part) v.push_back(dist::i128(f));
  comm.allreduce(v.data(), v.size(), dist::Type::i128, dist::Op::sum);
  std::map<std::string, uint64_t> out;
  size_t i = 0;
  for (const auto& [name, f] : part) out[name] = uint64_t(v[i++]);
  return out;
}

// Layout-independent fingerprints (ckpt/fingerprint.h) of the state in memory: every global
// tensor (weights, both AdamW moments) and every fingerprint group. Collective: after a load
// every rank fingerprints the elements of its ZeRO shard [lo, hi) of the flat buffer, weights
// included (one pass over 3 x P / W floats per rank).
json Trainer::state_fingerprint(const ckpt::FusedTensorFingerprint* fused) {
  const ckpt::StateFingerprint f = ckpt::fingerprint_state(
      [&](StateVisitor& v) { visit_state(v, {}); }, train::param_layout(*model_), rank_,
      module_->optimizer().shard_begin(), module_->optimizer().shard_end(), fused);
  json tensors = json::object();
  for (const auto& [name, sum] : sum_over_ranks(*comm_, f.tensor_partials)) tensors[name] = hex64(sum);
  return json{{"version", 1}, {"tensors", tensors}, {"state", f.state}};
}

uint64_t Trainer::state_digest(const ckpt::FusedTensorFingerprint* fused) {
  json f = state_fingerprint(fused);
  f.erase("version");
  return ckpt::fingerprint_json(f);
}

// The checkpoint's "trainer" section: position, and the schedule that gives every later LR.
TrainerPosition Trainer::position() const {
  TrainerPosition p;
  p.step = step_;
  p.tokens_seen = tokens_seen_;
  p.total_steps = total_steps_;
  p.t_max = t_max_;
  p.lr0 = cfg_.optim.lr;
  p.lr = step_ > 0 ? lr_at(step_) : 0.0;
  p.world = world_;
  p.dist_reduce = choice_name(cfg_.dist.reduce);
  p.scheduler = optim::schedule_config_to_json(module_->schedule().config());
  return p;
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
             r.sections_file(), ": malformed fingerprint section");
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
    TrainerPosition pos = position();
    const json now = state_to_json([&](StateVisitor& v) { pos.visit_state(v); }).at("trainer");
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
  // Everything the checkpoint holds, taken at this step boundary: this rank's tensor pieces
  // (pointers into the state), the JSON sections (rank 0 writes them at the commit) and the
  // fingerprint groups.
  p->snap = ckpt::snapshot_state([&](StateVisitor& v) { visit_state(v, {}); },
                                 train::param_layout(*model_), rank_);
  const std::vector<CkptPiece>& pieces = p->snap.pieces;
  p->async = cfg_.trainer.async_checkpoint && !wait && !finishing_;
  if (p->async) {
    if (!stager_) stager_ = std::make_shared<CheckpointStager>();
    p->copy_s = stager_->start(*p->writer, pieces, rank_ == 0, step_);
    p->staged_bytes = stager_->staged_bytes();
    // The checkpoint-data point of this step (test_faults.h's "ckpt" kills / holds land here,
    // with the write under way on the writer thread).
    for (auto& cb : callbacks_) cb->on_checkpoint_written(*this);
  } else {
    ckpt::write_pieces(*p->writer, pieces, rank_ == 0);
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
  // The tensor fingerprints: the partial sums the writer computed while it wrote this rank's
  // pieces (no extra pass over memory), summed over the ranks.
  const double tf = now_seconds();
  std::map<std::string, uint64_t> part;
  for (const std::string& n : p->snap.tensor_names) {
    auto it = p->writer->fingerprints().find(n);
    part[n] = it == p->writer->fingerprints().end() ? 0 : it->second;
  }
  const std::map<std::string, uint64_t> sums = sum_over_ranks(*comm_, part);  // collective
  // Wall-time share: the collective part, the fingerprinting done inline while writing and the
  // waits for the helper thread; CPU time: everything the fingerprint computed.
  const ckpt::CheckpointWriter::FingerprintTime& ft = p->writer->fingerprint_time();
  const double collective = now_seconds() - tf;
  comm_->barrier();  // every shard durable (each rank's thread fsynced its data before joining)
  std::string dir;
  if (rank_ == 0) {
    dir = ckpt::commit_state(*p->writer, p->snap, sums);
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
  StateParts parts;
  parts.weights = weights;
  parts.optim = optim_state;
  parts.trainer = trainer_state;
  parts.resume = resume;
  parts.dir = dir;
  parts.data_changed =
      std::any_of(changes.begin(), changes.end(),
                  [](const RecipeChange& ch) { return ch.key.rfind("data.", 0) == 0; });
  ckpt::load_state(r, [&](StateVisitor& v) { visit_state(v, parts); }, train::param_layout(*model_));
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
