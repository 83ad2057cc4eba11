// `olmo train CONFIG [key=value ...] [--dry-run]`: trains (or resumes) the run a YAML config
// describes; --dry-run prints the resolved config, the parameter count, the memory plan and the
// number of steps without touching data or the run dir.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "data/fsl_dataset.h"
#include "distributed/zero.h"
#include "model/flops.h"
#include "train/callbacks.h"
#include "train/config.h"
#include "train/memory_plan.h"
#include "train/model_setup.h"
#include "train/resize_stop.h"
#include "train/trainer.h"
#include "train/training_data.h"

namespace fs = std::filesystem;

namespace {

std::string commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return v < 0 ? "-" + r : r;
}
double gib(int64_t b) { return double(b) / double(1ll << 30); }

void dry_run(const olmo::train::Config& c) {
  using namespace olmo;
  train::validate(c, false);
  model::ModelConfig mc = train::model_config_for_this_cpu(c);
  std::printf("# resolved config (");
  for (size_t i = 0; i < c.files.size(); ++i) std::printf("%s%s", i ? " <- " : "", c.files[i].c_str());
  std::printf(")\n%s\n", train::to_yaml(c).c_str());

  model::ParamCounts pc = model::count_params(mc);
  std::printf("# model %s: d_model %lld, %lld layers, %lld/%lld heads of %lld, ffn %lld, vocab %lld\n",
              mc.name.c_str(), (long long)mc.d_model, (long long)mc.n_layers, (long long)mc.n_heads,
              (long long)mc.n_kv_heads, (long long)mc.head_dim, (long long)mc.ffn_hidden,
              (long long)mc.vocab_size);
  std::printf("layer windows (0 = full):");
  for (auto w : mc.layer_window) std::printf(" %lld", (long long)w);
  std::printf("\nparameters: %s total, %s embedding, %s non-embedding\n", commas(pc.total).c_str(),
              commas(pc.embedding).c_str(), commas(pc.non_embedding).c_str());
  std::printf("training FLOPs/token at seq %lld: %.4g (ours), %.4g (OLMo-core 6N+12LHdS)\n",
              (long long)c.data.seq_len, model::flops_per_token(mc, c.data.seq_len),
              model::olmo_core_flops_per_token(mc, c.data.seq_len));

  int64_t micro = c.data.micro_batch_tokens / c.data.seq_len;
  const int64_t W = std::max<int64_t>(1, c.data.processes);
  const bool exact = dist::parse_reduce_mode(c.dist.reduce) == dist::ReduceMode::exact;
  const bool local_acc = dist::local_accumulator(c.dist.exact_accumulator, W, train::micro_batches(c));
  model::MemoryPlan mp = model::memory_plan(mc, c.data.seq_len, micro, W, exact,
                                            train::micro_batches(c), local_acc);
  std::printf("# memory plan per process (fp32, micro-batch %lld x %lld tokens, %lld process%s "
              "(data.processes; 0 = the launched world), ZeRO-1/2, dist.reduce %s%s)\n",
              (long long)micro, (long long)c.data.seq_len, (long long)W, W == 1 ? "" : "es",
              c.dist.reduce.c_str(),
              exact ? (local_acc ? ", local accumulator" : ", sharded accumulator") : "");
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

  std::printf("%s", train::plan_text(mc, {c.data.seq_len, micro, W, exact,
                                           c.dist.exact_accumulator,
                                           train::batch_instances(c) / micro}).c_str());

  int64_t bpe = 0;
  std::string data_note, mix_note;
  bool have_files = false;
  try {
    train::NamedMixStatus nm = train::named_mix_status(c);
    if (!nm.name.empty()) {
      const auto& n = nm.census;
      mix_note = cat("mix ", nm.name, " (OLMo-core 3.0.0 list, ", commas(n.files),
                     " token files) under data.root ", c.data.root, ": ", commas(n.present),
                     " of ", commas(n.files), " files present, ", commas(int64_t(n.tokens)),
                     " tokens",
                     n.present == n.files ? std::string()
                                          : cat("; first missing: ", n.first_missing));
      have_files = n.present == n.files;
    } else {
      have_files = fs::exists(c.data.mix);
    }
  } catch (const Error& e) {
    mix_note = cat("data.mix '", c.data.mix, "': ", e.what());
  }
  if (have_files) {
    try {
      data::FslOptions opt;
      opt.validate = false;
      data::FslDataset ds(train::training_paths(c), c.data.seq_len, uint32_t(mc.vocab_size), opt);
      bpe = ds.size() / train::batch_instances(c);
      data_note = cat(commas(ds.size()), " instances, ", commas(bpe), " batches per epoch",
                      c.data.dataset == "packed_fsl"
                          ? " (as fixed-length windows; packing makes somewhat more instances)"
                          : "");
    } catch (const Error& e) {
      data_note = cat("cannot open: ", e.what());
    }
  } else if (mix_note.empty()) {
    data_note = cat("data.mix not found (", c.data.mix, "): needed to train");
  } else if (mix_note.rfind("mix ", 0) == 0) {
    data_note = "needed to train: every token file of the mix";
  }
  int64_t G = train::batch_instances(c), t_max = train::schedule_steps(c),
          run = train::run_steps(c, bpe);
  std::printf("# steps\n");
  std::printf("global batch: %lld instances x %lld = %s tokens; %lld micro-batches of %lld "
              "instances per process x %lld processes\n",
              (long long)G, (long long)c.data.seq_len, commas(c.data.global_batch_tokens).c_str(),
              (long long)train::micro_batches(c), (long long)micro, (long long)W);
  std::printf("schedule %s: t_max %s steps (%s tokens)\n", c.scheduler.name.c_str(),
              commas(t_max).c_str(), commas(t_max * c.data.global_batch_tokens).c_str());
  std::printf("this run: %s steps = %s tokens%s\n", commas(run).c_str(),
              commas(run * c.data.global_batch_tokens).c_str(),
              c.trainer.hard_stop_epochs > 0 && bpe == 0 ? " (epoch hard stop needs the data)" : "");
  if (!mix_note.empty()) std::printf("data: %s\n", mix_note.c_str());
  if (!data_note.empty()) std::printf("data: %s\n", data_note.c_str());
  if (!c.trainer.load_path.empty())
    std::printf("start from: %s (optimizer state %s, trainer state %s)%s\n",
                c.trainer.load_path.c_str(), c.trainer.load_optim_state ? "loaded" : "fresh",
                c.trainer.load_trainer_state ? "loaded" : "reset",
                fs::exists(c.trainer.load_path) ? "" : " [not found: needed to train]");
  if (c.model.yarn_factor > 0)
    std::printf("YaRN RoPE scaling: factor %g, old context %lld, variant %s\n", c.model.yarn_factor,
                (long long)c.model.yarn_old_context_len, c.model.yarn_variant.c_str());
}

int run_train(int argc, char** argv) {
  using namespace olmo;
  cli::Args a(argc, argv, {"--dry-run"});
  if (a.has("--help") || a.positional().empty()) {
    std::printf(
        "usage: olmo train CONFIG.yaml [key=value ...] [--dry-run]\n"
        "Trains the run described by CONFIG (configs/*.yaml); key=value overrides any field\n"
        "(dotted keys, YAML values: optim.lr=1e-3 model.window_pattern=[64,64,64,-1]).\n"
        "A run dir holding a complete checkpoint is resumed from the newest one.\n"
        "Data parallel: mpirun -np N build/olmo train CONFIG (any N that divides the\n"
        "micro-batches of a step; dist.reduce=exact gives the same bits for every N).\n"
        "  --dry-run   print the resolved config, parameters, memory plan and steps; no training\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--dry-run"});
  std::vector<std::string> overrides(a.positional().begin() + 1, a.positional().end());
  train::Config c = train::load_config(a.positional()[0], overrides);
  if (a.has("--dry-run")) {
    dry_run(c);
    return 0;
  }
  train::Trainer t(c);
  train::add_default_callbacks(t);
  train::add_resize_stop(t);  // only under `olmo launch` (OLMO_RESIZE_REQUEST)
  try {
    t.fit();
  } catch (const train::ResizeStop& s) {
    if (t.rank() == 0)
      std::printf("train: stopped at step %lld for a resize by olmo launch (checkpoint %s/step%lld)\n",
                  (long long)s.step, t.run_dir().c_str(), (long long)s.step);
    return 0;
  }
  if (t.rank() == 0)
    std::printf("train: done at step %lld (%s tokens seen); run dir %s\n", (long long)t.step(),
              commas(t.tokens_seen()).c_str(), t.run_dir().c_str());
  return 0;
}

OLMO_COMMAND("train", "train / resume a model from a YAML config (configs/*.yaml)", run_train);

}  // namespace
