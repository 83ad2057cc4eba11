// The setup of a run and the Trainer constructor (see trainer_builder.h).
#include "train/trainer_builder.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/runtime.h"
#include "distributed/zero.h"
#include "kernels/attention_bf16.h"
#include "model/flops.h"
#include "model/hf_io.h"
#include "train/metrics_log.h"
#include "train/model_setup.h"
#include "train/progress.h"
#include "train/resource_limits.h"
#include "train/step_profiler.h"
#include "train/trainer.h"
#include "train/training_data.h"

namespace fs = std::filesystem;

namespace olmo::train {

// Threads per process when nothing says otherwise: the cores shared among this node's ranks.
static int default_threads(int world) {
  if (world <= 1 || runtime().env("OMP_NUM_THREADS")) return 0;
  const std::optional<std::string> local = runtime().env("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local ? std::max(1, std::atoi(local->c_str())) : world;
  return std::max(1, omp_get_num_procs() / ranks_here);
}

// Sets this process's OpenMP threads (trainer.threads, else default_threads) and records the
// count and its source in core/runtime.h as setting "threads".
static void set_threads(const Config& cfg, int world) {
  const int threads = cfg.trainer.threads > 0 ? int(cfg.trainer.threads) : default_threads(world);
  if (threads > 0) omp_set_num_threads(threads);
  Setting s{"threads", std::to_string(omp_get_max_threads()), Source::default_value,
            "OpenMP: one per core", "", {}};
  if (cfg.trainer.threads > 0) {
    s.source = Source::config, s.origin = "trainer.threads";
  } else if (threads > 0) {
    s.origin = cat(omp_get_num_procs(), " cores / ", world > 1 ? "the ranks on this node" : "1");
  } else if (runtime().env("OMP_NUM_THREADS")) {
    s.source = Source::env, s.origin = "OMP_NUM_THREADS";
  }
  runtime().set(std::move(s));
}

// The ranks agreed on fp32 for `name` ("precision", "attention"): the runtime record says so,
// keeping this process's own pick and its figures in the note.
static void agreed_fp32(const std::string& name, int world) {
  std::optional<Setting> s = runtime().find(name);
  if (!s || s->value == "fp32") return;
  s->note = cat("fp32 on all ", world, " processes (another rank's CPU or probe chose it); this "
                "process's own pick: ", s->value, ": ", s->note);
  s->value = "fp32";
  runtime().set(std::move(*s));
}

// Processes of this job on this node (mpirun's local size; 1 without mpirun).
static int64_t local_processes() {
  const std::optional<std::string> local = runtime().env("OMPI_COMM_WORLD_LOCAL_SIZE");
  return local ? std::max(1, std::atoi(local->c_str())) : 1;
}

// The most bytes the exact reduction may keep for a rescale's replay (dist::DataParallel's kept
// micro-batch gradients): this process's share of the available memory, a quarter of it
// spare, less what the memory plan needs; no limit where the available memory is unknown.
// Only whether a rescale re-converts or recomputes depends on it, never the bits.
static size_t keep_limit(const Config& cfg, const model::ModelConfig& mc, int world,
                         int64_t micro_instances, bool exact, int64_t micro_batches,
                         bool exact_local) {
  const int64_t avail = available_memory().bytes;
  if (avail < 0) return std::numeric_limits<size_t>::max();
  const model::MemoryPlan mp =
      model::memory_plan(mc, cfg.data.seq_len, micro_instances, world, exact, micro_batches,
                         exact_local, int(cfg.dist.zero_stage));
  const double left = double(avail) / double(local_processes()) * 0.75 - double(mp.total);
  return left > 0 ? size_t(left) : 0;
}

// The memory plan of this process against the available memory; returns the accumulator choice
// (dist.exact_accumulator auto may fall back to the sharded one).
static bool check_memory(const Config& cfg, dist::Communicator& comm, const model::ModelConfig& mc,
                         int64_t micro_instances, bool exact, int64_t micro_batches,
                         bool exact_local) {
  const int world = comm.world();
  const int zs = int(cfg.dist.zero_stage);
  model::MemoryPlan mp = model::memory_plan(mc, cfg.data.seq_len, micro_instances, world, exact,
                                            micro_batches, exact_local, zs);
  const int64_t here = local_processes();
  // dist.exact_accumulator auto: the sharded accumulator (8 B per parameter / W) where the
  // local one (8 B per parameter) would not fit; the same bits either way.
  // Decided together (ranks on different nodes may see different memory).
  const int64_t avail = available_memory().bytes;
  if (exact && exact_local && world > 1 && cfg.dist.exact_accumulator == dist::AccumulatorSetting::automatic &&
      comm.any(avail >= 0 && double(mp.total) * double(here) > double(avail))) {
    exact_local = false;
    mp = model::memory_plan(mc, cfg.data.seq_len, micro_instances, world, exact, micro_batches,
                            false, zs);
    if (comm.rank() == 0)
      std::fprintf(stderr, "dist.exact_accumulator auto: the local accumulator does not fit the "
                           "available memory, using the sharded one\n");
  }
  auto mib = [](int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
    return std::string(buf);
  };
  check_memory_plan(mp.total, here,
                    cat("weights ", mib(mp.weights), ", gradients ", mib(mp.grads),
                        ", AdamW moments ", mib(mp.adam_moments), ", gradient shard ",
                        mib(mp.grad_shard), ", exact accumulator ", mib(mp.reduce_accumulator),
                        ", activations ", mib(mp.activations), " for micro-batches of ",
                        micro_instances, " x ", cfg.data.seq_len, " tokens"));
  return exact_local;
}

TrainerParts build_trainer_parts(Config cfg) {
  TrainerParts p;
  p.comm = &dist::world_communicator();
  dist::Communicator& comm = *p.comm;
  const int rank = p.rank = comm.rank();
  const int world = p.world = comm.world();
  validate(cfg, /*check_files=*/true);
  if (cfg.dist.zero_stage == 3) {
    // In-loop evaluation runs on rank 0 with the full parameters, which no rank holds under
    // ZeRO-3 (zero3_params.h): refused here, before any step, rather than at its first pass.
    const char* needs = !cfg.eval.sets.empty()              ? "eval.sets"
                        : cfg.validation.interval > 0 && !cfg.validation.sets.empty() ? "validation.sets"
                        : benchmarks_enabled(cfg)           ? "benchmarks.suites / canaries"
                        : !cfg.benchmarks.tasks.empty()     ? "benchmarks.tasks"
                                                            : nullptr;
    OLMO_CHECK(needs == nullptr, "config key 'dist.zero_stage' = 3: in-loop evaluation (", needs,
               ") needs the full parameters on rank 0, which ZeRO-3 does not keep; turn it off "
               "(eval.sets={} validation.interval=0 or validation.sets={}, benchmarks.suites={} benchmarks.canaries='' "
               "benchmarks.tasks=[]) and evaluate the checkpoints with `olmo evaluate`");
  }
  OLMO_CHECK(cfg.data.processes == 0 || cfg.data.processes == world,
             "config key 'data.processes' = ", cfg.data.processes, " but the job runs ", world,
             " process", world == 1 ? "" : "es", " (mpirun -np ", world,
             "); set data.processes=0 (the launched world) or ", world);
  cfg.data.processes = world;
  set_threads(cfg, world);
  // precision: auto on a resume continues the checkpoint's precision (rank 0 reads it, so every
  // rank takes the same); only a fresh run probes.
  std::string resumed;
  if (cfg.model.precision == PrecisionSetting::automatic) {
    if (rank == 0) resumed = resumed_precision(cfg);
    comm.broadcast(resumed, 0);
  }
  model::ModelConfig mc = model_config_for_this_cpu(cfg, resumed);
  // precision: auto on a fresh run is probed in each process; all ranks must run one precision
  // (the reduction and the trajectory assume it), so bf16_mixed only where every rank chose it.
  if (world > 1 && cfg.model.precision == PrecisionSetting::automatic && resumed.empty()) {
    const bool fp32_somewhere = comm.any(mc.precision != model::Precision::bf16_mixed);
    if (fp32_somewhere) {
      if (rank == 0 && mc.precision == model::Precision::bf16_mixed)
        std::fprintf(stderr, "precision: auto -> fp32 on all %d processes (another rank's CPU "
                     "or probe chose fp32)\n", world);
      mc.precision = model::Precision::fp32;
      agreed_fp32("precision", world);
    }
  }
  // bf16_mixed's attention kernels are chosen per process by a start-up probe
  // (kernels::attention_bf16_chosen, reported by report_attention_choice); every rank must run
  // the same ones, so bf16 attention only where every rank chose it.
  if (mc.precision == model::Precision::bf16_mixed) report_attention_choice();
  if (world > 1 && mc.precision == model::Precision::bf16_mixed &&
      comm.any(!kernels::attention_bf16_chosen())) {
    if (rank == 0 && kernels::attention_bf16_chosen())
      std::fprintf(stderr, "attention: fp32 kernels on all %d processes (another rank's CPU or "
                   "probe chose them)\n", world);
    kernels::set_attention_bf16_override(0);
    agreed_fp32("attention", world);
  }
  // exact: one instance per forward/backward, any world size up to the instances of a step
  // (ranks hold ceil or floor of G / W); fast: micro-batches of micro_batch_tokens, W | M.
  const dist::ReduceMode mode = cfg.dist.reduce;
  const bool exact = mode == dist::ReduceMode::exact;
  const int64_t micro_instances = forward_instances(cfg);
  const int64_t G = batch_instances(cfg);
  const int64_t M = G / micro_instances;  // micro-batches (exact: instances) per global batch
  OLMO_CHECK(world <= G, "mpirun -np ", world, ": more processes than instances in a global ",
             "batch (data.global_batch_tokens / data.seq_len = ", G, ")");
  OLMO_CHECK(exact || M % world == 0, "mpirun -np ", world, " does not divide the ", M,
             " micro-batches of a step (data.global_batch_tokens / data.micro_batch_tokens = ",
             cfg.data.global_batch_tokens, " / ", cfg.data.micro_batch_tokens,
             "): under dist.reduce=fast every process must run the same number of "
             "micro-batches (dist.reduce=exact runs on any number up to ", G, ")");
  OLMO_CHECK(!exact || G <= dist::kMaxMicroBatches,
             "config key 'dist.reduce' = exact supports at most ", dist::kMaxMicroBatches,
             " instances per step, this config has ", G, " (use dist.reduce=fast)");
  const int64_t per_rank = micro_batches(cfg);  // the largest rank's (cfg.data.processes set)

  bool exact_local = dist::local_accumulator(cfg.dist.exact_accumulator, world, per_rank);
  // Memory plan vs available memory, before the run dir or any large buffer is touched.
  if (cfg.trainer.check_memory)
    exact_local = check_memory(cfg, comm, mc, micro_instances, exact, per_rank, exact_local);
  p.faults = TestFaults::from_env(cfg, rank);

  // Rank 0 holds the run-dir lock for the whole job.
  if (rank == 0) p.lock = std::make_unique<ckpt::RunDirLock>(cfg.trainer.run_dir);
  comm.barrier();

  // Data.
  data::DatasetSpec spec = dataset_spec(cfg, uint32_t(mc.vocab_size));  // train/training_data.h
  const LossNormalization ln = cfg.trainer.loss_normalization;
  TrainModuleOptions o;
  o.dp.per_rank_loss = ln == LossNormalization::per_rank ||
                    (ln == LossNormalization::automatic && cfg.data.dataset == DatasetKind::packed_fsl);
  p.doc_mask = cfg.data.generate_doc_lengths;
  try {
    p.dataset = data::open_instance_source(spec);
  } catch (const Error& e) {
    throw Error(cat("config key 'data.mix' (", cfg.data.mix, "): ", e.what()));
  }
  OLMO_CHECK(p.dataset->size() >= G, "config key 'data.mix' (", cfg.data.mix, "): ",
             p.dataset->size(), " instances of ", cfg.data.seq_len,
             " tokens, fewer than one global batch (", G, ")");
  p.loader = std::make_unique<data::DataLoader>(*p.dataset, G, uint64_t(cfg.data.seed), rank,
                                                world);
  // fast: whole micro-batches per rank (micro-batch j of the global batch is the same instances
  // for every world size); exact: instance by instance (OLMo-core's slicing, uneven ranks).
  p.loader->set_rank_chunk(micro_instances);
  if (cfg.trainer.hard_stop_epochs > 0) p.loader->set_max_epochs(cfg.trainer.hard_stop_epochs);

  p.t_max = train::schedule_steps(cfg);
  p.total_steps = run_steps(cfg, p.loader->batches_per_epoch());

  // ZeRO-3: no full parameter or gradient buffer, ever (the shard is the master copy).
  p.model = std::make_unique<model::Olmo3>(mc, /*own_storage=*/cfg.dist.zero_stage != 3);
  p.flops_per_token = model::flops_per_token(mc, cfg.data.seq_len);
  o.micro_instances = micro_instances;
  o.dp.reduce = mode;
  o.dp.exact_local = exact_local;
  o.dp.bucket_elems = size_t(cfg.dist.bucket_mb) * (1u << 20) / sizeof(float);
  o.t_max = p.t_max;
  o.dp.zero_stage = int(cfg.dist.zero_stage);
  o.dp.overlap = cfg.dist.overlap;
  o.dp.keep_limit_bytes =
      keep_limit(cfg, mc, world, micro_instances, exact, per_rank, exact_local);
  p.module = std::make_unique<TrainModule>(*p.model, comm, cfg, o);
  p.module->shard_parameters();
  p.cfg = std::move(cfg);
  return p;
}

Trainer::Trainer(Config cfg) {
  TrainerParts p = build_trainer_parts(std::move(cfg));
  cfg_ = std::move(p.cfg);
  comm_ = p.comm;
  rank_ = p.rank;
  world_ = p.world;
  lock_ = std::move(p.lock);
  dataset_ = std::move(p.dataset);
  loader_ = std::move(p.loader);
  model_ = std::move(p.model);
  module_ = std::move(p.module);
  doc_mask_ = p.doc_mask;
  t_max_ = p.t_max;
  total_steps_ = p.total_steps;
  flops_per_token_ = p.flops_per_token;
  if (p.faults) add_callback(std::move(p.faults));
  if (cfg_.trainer.profile) add_callback(std::make_unique<StepProfiler>());
  start();
}

void Trainer::start() {
  // Starting state: resume > phase start (load_path) > HF weights > fresh init. Rank 0 chooses
  // (so every rank restores the same checkpoint) and tells the others.
  std::string latest, phase_dir;
  if (rank_ == 0) {
    auto l = ckpt::latest_complete(cfg_.trainer.run_dir, &warnings_);
    if (l) latest = *l;
    if (!l && !cfg_.trainer.load_path.empty()) {
      phase_dir = cfg_.trainer.load_path;
      if (!ckpt::is_committed(phase_dir)) {
        auto ph = ckpt::latest_complete(phase_dir, &warnings_);
        phase_dir = ph ? *ph : "";
      }
    }
  }
  comm_->broadcast(latest, 0);
  comm_->broadcast(phase_dir, 0);
  if (!latest.empty()) {
    restore(latest, true, true, true, /*resume=*/true);
    start_ = StartKind::resume;
    start_from_ = latest;
  } else if (!cfg_.trainer.load_path.empty()) {
    OLMO_CHECK(!phase_dir.empty(), "config key 'trainer.load_path': no complete checkpoint in ",
               cfg_.trainer.load_path);
    restore(phase_dir, true, cfg_.trainer.load_optim_state, cfg_.trainer.load_trainer_state,
            /*resume=*/false);
    start_ = StartKind::phase;
    start_from_ = phase_dir;
  } else if (!cfg_.trainer.init_from_hf.empty()) {
    model::load_hf_weights(*model_, cfg_.trainer.init_from_hf);
    start_ = StartKind::hf_init;
    start_from_ = cfg_.trainer.init_from_hf;
  } else if (float* shard = module_->param_shard()) {  // ZeRO-3: this rank's part only
    const size_t lo = module_->optimizer().shard_begin(), hi = module_->optimizer().shard_end();
    model_->init_weights_range(uint64_t(cfg_.trainer.init_seed), shard, lo, hi);
  } else {
    model_->init_weights(uint64_t(cfg_.trainer.init_seed));
  }
  for (auto& cb : callbacks_) cb->on_resume(*this);
  resumed_callbacks_ = callbacks_.size();
  measure_peak();
  const std::string mpath = (fs::path(cfg_.trainer.run_dir) / "metrics.jsonl").string();
  metrics_ = std::make_unique<MetricsLog>(rank_ == 0 ? mpath : std::string());
  metrics_->set_clock([this] { return clock_.unix_time(clock_.seconds()); });  // one clock
  // Records of steps that will be (re)run are dropped: on a resume from step N those after N
  // (records of N were written before its checkpoint); otherwise (no checkpoint: an earlier
  // attempt that was killed before its first one) those from the starting step on.
  metrics_->truncate_after(start_ == StartKind::resume ? step_ : step_ - 1);
  if (recipe_change_) {
    metrics_->write(*recipe_change_);
    warnings_.push_back(cat("the recipe changed at this resume (allowed: ",
                            "trainer.allow_recipe_change): ",
                            (*recipe_change_)["changed"].get<std::string>()));
  }
  progress_ = std::make_unique<Progress>(total_steps_, rank_ == 0 ? cfg_.trainer.progress : ProgressMode::silent,
                                         cfg_.trainer.log_interval);
}

}  // namespace olmo::train
