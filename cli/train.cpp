// `olmo train CONFIG [key=value ...] [--dry-run]`: trains (or resumes) the run a YAML config
// describes; --dry-run prints the resolved config, the parameter count, the memory plan and the
// number of steps without touching data or the run dir.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/format.h"
#include "monitor/callbacks.h"
#include "train/config.h"
#include "train/memory_plan.h"
#include "train/preempt_stop.h"
#include "train/resize_stop.h"
#include "train/run_plan.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace {

double gib(int64_t b) { return double(b) / double(1ll << 30); }

// Prints train::plan (src/train/run_plan.h).
void dry_run(const olmo::train::Config& c) {
  using namespace olmo;
  const train::RunPlan p = train::plan(c);
  const model::ModelConfig& mc = p.model;
  std::printf("# resolved config (");
  for (size_t i = 0; i < c.files.size(); ++i) std::printf("%s%s", i ? " <- " : "", c.files[i].c_str());
  std::printf(")\n%s\n", train::to_yaml(c).c_str());

  const model::ParamCounts& pc = p.params;
  std::printf("# model %s: d_model %lld, %lld layers, %lld/%lld heads of %lld, ffn %lld, vocab %lld\n",
              mc.name.c_str(), (long long)mc.d_model, (long long)mc.n_layers, (long long)mc.n_heads,
              (long long)mc.n_kv_heads, (long long)mc.head_dim, (long long)mc.ffn_hidden,
              (long long)mc.vocab_size);
  std::printf("layer windows (0 = full):");
  for (auto w : mc.layer_window) std::printf(" %lld", (long long)w);
  std::printf("\nparameters: %s total, %s embedding, %s non-embedding\n", commas(pc.total).c_str(),
              commas(pc.embedding).c_str(), commas(pc.non_embedding).c_str());
  std::printf("training FLOPs/token at seq %lld: %.4g (ours), %.4g (OLMo-core 6N+12LHdS)\n",
              (long long)c.data.seq_len, p.flops_per_token, p.olmo_core_flops_per_token);

  const int64_t micro = p.micro_instances, W = p.processes;
  const model::MemoryPlan& mp = p.memory;
  std::printf("# memory plan per process (fp32, micro-batch %lld x %lld tokens, %lld process%s "
              "(data.processes; 0 = the launched world), %s, dist.reduce %s%s)\n",
              (long long)micro, (long long)c.data.seq_len, (long long)W, W == 1 ? "" : "es",
              c.dist.zero_stage == 3 ? "ZeRO-3" : "ZeRO-1/2",
              train::choice_name(c.dist.reduce).c_str(),
              p.exact ? (p.local_accumulator ? ", local accumulator" : ", sharded accumulator") : "");
  std::printf("weights %.3f GiB, grads %.3f GiB, AdamW moments %.3f GiB, gradient shard %.3f "
              "GiB, exact accumulator %.3f GiB, activations %.3f GiB, total %.3f GiB\n",
              gib(mp.weights), gib(mp.grads), gib(mp.adam_moments), gib(mp.grad_shard),
              gib(mp.reduce_accumulator), gib(mp.activations), gib(mp.total));
  if (W > 1)
    std::printf("communication per step per rank: %.3f GiB\n", gib(mp.comm_bytes_per_step));
  std::printf("plan bytes: weights %lld, grads %lld, moments %lld, grad_shard %lld, "
              "accumulator %lld, activations %lld, total %lld, sent_per_step %lld\n",
              (long long)mp.weights, (long long)mp.grads, (long long)mp.adam_moments,
              (long long)mp.grad_shard, (long long)mp.reduce_accumulator,
              (long long)mp.activations, (long long)mp.total, (long long)mp.comm_bytes_per_step);

  const int64_t G = p.global_instances, t_max = p.schedule_steps, run = p.run_steps;
  train::PlanInputs plan_in{c.data.seq_len, micro, W, p.exact,
                            train::choice_name(c.dist.exact_accumulator), G / micro};
  plan_in.zero_stage = int(c.dist.zero_stage);
  std::printf("%s", train::plan_text(mc, plan_in).c_str());
  std::printf("# steps\n");
  std::printf("global batch: %lld instances x %lld = %s tokens; %lld micro-batches of %lld "
              "instances per process x %lld processes\n",
              (long long)G, (long long)c.data.seq_len, commas(c.data.global_batch_tokens).c_str(),
              (long long)p.micro_batches, (long long)micro, (long long)W);
  std::printf("schedule %s: t_max %s steps (%s tokens)\n", optim::schedule_name(*c.scheduler.name),
              commas(t_max).c_str(), commas(t_max * c.data.global_batch_tokens).c_str());
  std::printf("this run: %s steps = %s tokens%s\n", commas(run).c_str(),
              commas(run * c.data.global_batch_tokens).c_str(),
              c.trainer.hard_stop_epochs > 0 && p.batches_per_epoch == 0
                  ? " (epoch hard stop needs the data)"
                  : "");
  if (!p.mix_note.empty()) std::printf("data: %s\n", p.mix_note.c_str());
  if (!p.data_note.empty()) std::printf("data: %s\n", p.data_note.c_str());
  if (!c.trainer.load_path.empty())
    std::printf("start from: %s (optimizer state %s, trainer state %s)%s\n",
                c.trainer.load_path.c_str(), c.trainer.load_optim_state ? "loaded" : "fresh",
                c.trainer.load_trainer_state ? "loaded" : "reset",
                fs::exists(c.trainer.load_path) ? "" : " [not found: needed to train]");
  if (mc.yarn.enabled())
    std::printf("YaRN RoPE scaling: factor %g, old context %lld, variant %s\n", mc.yarn.factor,
                (long long)mc.yarn.old_context_len, model::yarn_variant_name(mc.yarn.variant));
}

int run_train(int argc, char** argv) {
  using namespace olmo;
  auto app = cli::make_app(
      "train",
      "Trains the run described by CONFIG (configs/*.yaml). A run dir holding a complete "
      "checkpoint is resumed from the newest one.");
  std::string config, allow;
  std::vector<std::string> overrides;
  bool dry = false;
  app->add_option("CONFIG", config, "the YAML config")->required();
  app->add_option("overrides", overrides,
                  "key=value: override any field (dotted keys, YAML values: optim.lr=1e-3 "
                  "model.window_pattern=[64,64,64,-1]); every key, its type and default: "
                  "docs/config.md, or olmo info --config-reference");
  app->add_flag("--dry-run", dry,
                "print the resolved config, parameters, memory plan and steps; no training");
  auto* allow_opt = app->add_option("--allow-recipe-change", allow,
                  "a,b: a resume may change these recipe fields (keys, sections, unique leaf "
                  "names or schedule; = trainer.allow_recipe_change=[a,b]); any other change of "
                  "a field that alters the trajectory is refused");
  app->footer(cat(
      "Data parallel: mpirun -np N build/olmo train CONFIG (dist.reduce=exact: any N up to the "
      "instances of a step, the same bits for every N; fast: an N that divides the "
      "micro-batches of a step).\n"
      "SIGTERM, SIGINT or SIGUSR1 (a scheduler's preemption notice) stops the run after the "
      "current step with a checkpoint of it.\n"
      "exit: 0 done (or stopped for a resize by olmo launch), 1 error, 2 usage, ",
      train::kExitPreempted,
      " preempted: a checkpoint of the stop step was written; the same command resumes from it"));
  cli::parse(*app, argc, argv);
  if (allow_opt->count()) overrides.push_back("trainer.allow_recipe_change=[" + allow + "]");
  train::Config c = train::load_config(config, overrides);
  if (dry) {
    dry_run(c);
    return 0;
  }
  train::Trainer t(c);
  train::add_default_callbacks(t);
  train::add_resize_stop(t);  // only under `olmo launch` (OLMO_RESIZE_REQUEST)
  train::add_preempt_stop(t);  // SIGTERM / SIGINT / SIGUSR1: checkpoint, exit kExitPreempted
  try {
    t.fit();
  } catch (const train::ResizeStop& s) {
    if (t.rank() == 0)
      std::printf("train: stopped at step %lld for a resize by olmo launch (checkpoint %s/step%lld)\n",
                  (long long)s.step, t.run_dir().c_str(), (long long)s.step);
    return 0;
  } catch (const train::Preempted& p) {
    if (t.rank() == 0)
      std::printf("train: preempted: stopped after step %lld, checkpoint %s (exit %d; the same "
                  "command resumes)\n", (long long)p.step, p.checkpoint.c_str(), train::kExitPreempted);
    return train::kExitPreempted;
  }
  if (t.rank() == 0)
    std::printf("train: done at step %lld (%s tokens seen); run dir %s\n", (long long)t.step(),
              commas(t.tokens_seen()).c_str(), t.run_dir().c_str());
  return 0;
}

OLMO_COMMAND("train", "train / resume a model from a YAML config (configs/*.yaml)", run_train);

}  // namespace
