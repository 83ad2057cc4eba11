// `olmo info`: parameter counts, training FLOPs per token and the training memory plan of a
// preset, an HF config.json or a checkpoint (its model section), as text or JSON; every field of
// the model configuration (model/config_fields.h) is printed. --config-reference prints the
// reference of every training config key (train/config_reference.h; docs/config.md); --runtime
// the process's resolved runtime context (core/runtime.h); --plan what each preset trains at on
// 2 cores .. 256 nodes (train/capacity_plan.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "ckpt/checkpoint.h"
#include "core/file_io.h"
#include "core/format.h"
#include "core/runtime.h"
#include "distributed/zero.h"
#include "model/config.h"
#include "model/config_json.h"
#include "model/flops.h"
#include "train/capacity_plan.h"
#include "train/config.h"
#include "train/config_reference.h"
#include "train/memory_plan.h"
#include "train/model_setup.h"

namespace {

using olmo::commas;
double gib(int64_t b) { return double(b) / double(1ll << 30); }

// The valid values of a flag that sets a config choice field (train/config.cpp choice_fields).
std::vector<std::string> choices(const char* key) { return olmo::train::choice_field(key)->values; }

int run_info(int argc, char** argv) {
  using namespace olmo::model;
  auto app = olmo::cli::make_app(
      "info",
      "Prints total and non-embedding parameters, training FLOPs per token (ours and "
      "OLMo-core's 6N + 12*L*H*hd*S) and the fp32 training memory plan, per activation-"
      "checkpointing mode with the smallest process count that fits 256 / 512 GiB nodes.");
  std::string preset_name, hf_config, checkpoint, vocab = "padded", reduce = "exact";
  std::string acc_arg = "auto";
  int64_t S = 0, mb = 1, W = 1, K = 1;
  int zs = 2;
  bool json = false, reference = false, runtime = false, capacity = false;
  olmo::train::CapacityAssumptions assume;
  auto* source = app->add_option_group("model", "exactly one of");
  source->add_option("--preset", preset_name,
                    "a preset: " + CLI::detail::join(preset_names(), ", "));
  source->add_option("--config", hf_config, "an HF config.json");
  source->add_option("--checkpoint", checkpoint,
                    "a checkpoint (RUN_DIR/stepN) or run dir (its newest complete checkpoint): "
                    "the model configuration it was trained with (YaRN, precision included)");
  source->add_flag("--config-reference", reference,
                  "print every training config key instead (as docs/config.md)");
  source->add_flag("--runtime", runtime,
                  "print this process's resolved runtime context instead: CPU, ISA, threads, "
                  "model.precision=auto's pick (running its probe) and bf16 attention's, every "
                  "environment setting with its source (core/runtime.h)");
  source->add_flag("--plan", capacity,
                  "print instead what you can train: presets 190M-32B on 2 cores .. 256 nodes -> "
                  "tokens/s, days per billion tokens, memory per process, bytes sent per step "
                  "(predicted from the FLOP model and the measured MFU; assumptions printed)");
  source->require_option(1);
  app->add_option("--core-gflops", assume.core_gflops, "--plan: fp32 peak GFLOP/s of one core")
      ->check(olmo::cli::positive());
  app->add_option("--mfu", assume.mfu, "--plan: fraction of the peak a step reaches")
      ->check(olmo::cli::positive());
  app->add_option("--net-gbytes", assume.net_gbytes_s, "--plan: network GB/s per node")
      ->check(olmo::cli::positive());
  app->add_option("--vocab", vocab, "padded (100352) or hf (100278); presets only")
      ->check(CLI::IsMember({"padded", "hf"}));
  auto* seq_opt = app->add_option("--seq", S, "sequence length for FLOPs/activations (default: "
                                              "the model's max_seq_len)")
                      ->check(olmo::cli::positive());
  app->add_option("--batch", mb, "micro-batch size (sequences) for the activation memory")
      ->check(olmo::cli::positive());
  app->add_option("--processes", W, "data-parallel processes: the per-rank ZeRO plan and the "
                                    "bytes each rank moves per step")
      ->check(olmo::cli::positive());
  app->add_option("--reduce", reduce, "gradient reduction (src/distributed/zero.h)")
      ->check(CLI::IsMember(choices("dist.reduce")));
  app->add_option("--micro-batches", K, "micro-batches per rank per step")
      ->check(olmo::cli::positive());
  app->add_option("--exact-accumulator", acc_arg,
                  "auto: dist::local_accumulator, sharded above 8 processes or at one "
                  "micro-batch per rank; local: 8 B/param, one reduction per step; sharded: 8 "
                  "B/param / N, one per micro-batch")
      ->check(CLI::IsMember(choices("dist.exact_accumulator")));
  app->add_option("--zero-stage", zs, "2: full parameters per process (the ZeRO-3 table is "
                                      "printed too); 3: parameters sharded (dist.zero_stage=3)")
      ->check(CLI::IsMember({2, 3}));
  app->add_flag("--json", json, "print JSON");
  olmo::cli::parse(*app, argc, argv);
  if (capacity) {
    std::printf("%s", olmo::train::capacity_markdown(assume).c_str());
    return 0;
  }
  if (reference) {
    std::printf("%s", olmo::train::config_reference_markdown().c_str());
    return 0;
  }
  if (runtime) {
    // Resolve what a training run would decide here (the probes run), then print the record.
    olmo::train::Config pc;
    olmo::train::apply_override(pc, "model.precision=auto");
    pc.origin["model.precision"] = "olmo info --runtime";
    if (olmo::train::choose_precision(pc).precision == Precision::bf16_mixed)
      olmo::train::report_attention_choice();
    std::printf("%s", olmo::runtime_report().c_str());
    return 0;
  }
  ModelConfig c;
  if (!preset_name.empty()) {
    c = preset(preset_name, vocab == "padded");
  } else if (!hf_config.empty()) {
    c = config_from_hf_json(hf_config);
  } else {
    std::string dir = checkpoint;
    if (!olmo::ckpt::is_committed(dir)) {
      auto l = olmo::ckpt::latest_complete(dir);
      OLMO_CHECK(l, dir, ": neither a checkpoint (stepN) nor a run dir with one");
      dir = *l;
    }
    olmo::ckpt::CheckpointReader r(dir);
    c = model_config_from_json(r.json("model"), olmo::ckpt::state_file(dir));
  }
  if (!seq_opt->count()) S = c.max_seq_len;
  ParamCounts p = count_params(c);
  const double f = flops_per_token(c, S), fo = olmo_core_flops_per_token(c, S);
  const bool exact = olmo::dist::parse_reduce_mode(reduce) == olmo::dist::ReduceMode::exact;
  const std::string acc = olmo::dist::local_accumulator(acc_arg, W, K) ? "local" : "sharded";
  if (zs == 3 && !exact) olmo::cli::usage_error(*app, "--zero-stage 3 needs --reduce exact");
  MemoryPlan m = memory_plan(c, S, mb, W, exact, K, acc == "local", zs);
  olmo::train::PlanInputs plan_in{S, mb, W, exact, acc_arg, 0, K};
  plan_in.zero_stage = zs;
  int64_t full = 0;
  for (int64_t w : c.layer_window) full += w == 0;

  if (json) {
    nlohmann::json j;
    j["model"] = c.name;
    j["config"] = model_config_to_json(c);
    j["d_model"] = c.d_model, j["n_layers"] = c.n_layers, j["n_heads"] = c.n_heads;
    j["n_kv_heads"] = c.n_kv_heads, j["head_dim"] = c.head_dim, j["ffn_hidden"] = c.ffn_hidden;
    j["vocab_size"] = c.vocab_size, j["layer_window"] = c.layer_window;
    j["seq_len"] = S;
    j["params_total"] = p.total;
    j["params_non_embedding"] = p.non_embedding;
    j["params_embedding"] = p.embedding;
    j["params_lm_head"] = p.lm_head;
    j["params_per_layer"] = p.per_layer;
    j["flops_per_token"] = f;
    j["olmo_core_flops_per_token"] = fo;
    j["memory"] = {{"processes", m.processes},
                   {"zero_stage", zs},
                   {"reduce", reduce},
                   {"exact_accumulator", acc},
                   {"weights_bytes", m.weights},
                   {"grads_bytes", m.grads},
                   {"adam_moments_bytes", m.adam_moments},
                   {"grad_shard_bytes", m.grad_shard},
                   {"reduce_accumulator_bytes", m.reduce_accumulator},
                   {"comm_bytes_per_step", m.comm_bytes_per_step},
                   {"activations_bytes_per_token", m.activations_per_token},
                   {"scratch_bytes_per_token", m.scratch_per_token},
                   {"micro_batch_tokens", m.micro_batch_tokens},
                   {"activations_bytes", m.activations},
                   {"total_bytes", m.total}};
    for (const olmo::train::ModeRow& r : olmo::train::plan_modes(c, plan_in))
      j["activation_checkpointing"].push_back(
          {{"mode", r.label}, {"checkpointed_blocks", r.checkpointed},
           {"activations_bytes", r.plan.activations}, {"total_bytes", r.plan.total},
           {"recompute_pct", r.recompute_pct}, {"min_processes_256_512_gib", r.min_processes}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model %s: d_model %lld, %lld layers (%lld full attention, %lld sliding), heads %lld"
              " / kv %lld, head_dim %lld, ffn %lld, vocab %lld\n",
              c.name.c_str(), (long long)c.d_model, (long long)c.n_layers, (long long)full,
              (long long)(c.n_layers - full), (long long)c.n_heads, (long long)c.n_kv_heads,
              (long long)c.head_dim, (long long)c.ffn_hidden, (long long)c.vocab_size);
  std::printf("configuration:\n%s", model_config_text(c).c_str());
  std::printf("params_total          %s\n", commas(p.total).c_str());
  std::printf("params_non_embedding  %s   (total - input embedding, OLMo-core's definition)\n",
              commas(p.non_embedding).c_str());
  std::printf("  embedding %s, lm_head %s, per layer %s, final norm %s\n",
              commas(p.embedding).c_str(), commas(p.lm_head).c_str(),
              commas(p.per_layer).c_str(), commas(p.final_norm).c_str());
  std::printf("flops_per_token       %.4e   (ours at seq %lld: 6 x matmul params + 12 x H x hd x "
              "avg keys attended, + 6 x lm_head)\n", f, (long long)S);
  std::printf("olmo_core_flops       %.4e   (OLMo-core: 6 N_non_embedding + 12 L H hd S)\n", fo);
  std::printf("memory plan per process (fp32, seq %lld x micro-batch %lld, %lld process%s, "
              "%s, reduce %s%s):\n", (long long)S, (long long)mb, (long long)W,
              W == 1 ? "" : "es", zs == 3 ? "ZeRO-3" : "ZeRO-1/2", reduce.c_str(),
              exact ? (acc == "local" ? ", local accumulator" : ", sharded accumulator") : "");
  std::printf("  weights %.2f GiB, grads %.2f GiB%s, AdamW moments %.2f GiB (1/%lld)\n",
              gib(m.weights), gib(m.grads),
              zs == 3 ? " (1/N shard + one parameter unit; one unit)" : "", gib(m.adam_moments),
              (long long)W);
  std::printf("  reduced-gradient shard %.2f GiB, exact accumulator %.2f GiB\n",
              gib(m.grad_shard), gib(m.reduce_accumulator));
  if (exact)  // distributed/scaled_fixed.h: int64 per element, one scale per tensor; zero.h
    std::printf("  exact reduction: %.2f accumulator bytes per parameter beyond the fp32 gradient, "
                "%s on the wire (fast: 4 per step)\n",
                double(m.reduce_accumulator) / double(p.total),
                acc == "local" || W == 1 ? "8 bytes per parameter per step"
                : zs == 3 ? "8 bytes per parameter per micro-batch"
                          : "4 bytes per parameter per micro-batch (fp32, converted by its owner)");
  std::printf("  activations %s bytes/token stored + %s bytes/token scratch = %.2f GiB per "
              "micro-batch\n", commas(m.activations_per_token).c_str(),
              commas(m.scratch_per_token).c_str(), gib(m.activations));
  std::printf("  total %.2f GiB\n", gib(m.total));
  if (W > 1)
    std::printf("communication per step per rank: %.2f GiB (%lld micro-batch rounds)\n",
                gib(m.comm_bytes_per_step), (long long)K);
  std::printf("%s", olmo::train::plan_text(c, plan_in).c_str());
  return 0;
}

}  // namespace

OLMO_COMMAND("info", "parameter counts, FLOPs per token and memory plan of a model", run_info);
