// `olmo bench step`: throughput of one training step of a preset model on random data.
//
//   olmo bench step --preset NAME --seq S --batch B [--steps N] [--warmup N] [--optimizer]
//                   [--precision fp32|bf16_mixed|auto] [--profile] [--peak-seconds X]
//                   [--seed N] [--json]
//
// Builds the preset (padded vocab) with random init, draws random tokens (ids < 100278, targets
// = next token, last position ignored), and times `--steps` steps of zero_grad +
// forward_backward (+ an AdamW update with --optimizer) after `--warmup` untimed ones.
// Reports tokens/s, achieved GFLOP/s with FLOPs per token = model::flops_per_token (ours: 6 x
// matmul params + 12 x H x hd x average keys attended, causal/window discounted) and MFU =
// achieved / peak, where the peaks are measured right before and right after the timed steps
// (the machine is shared: a busy machine can only lower a probe, so the peak is the higher of
// the two, raised to the achieved rate if that is higher: kernels/peak_tracker.h, MFU <= 100%):
// the fp32 FMA peak (kernels::measure_fp32_peak_gflops) and the bf16 dot-product peak
// (measure_bf16_peak_gflops, VDPBF16PS; 0 without AVX512_BF16); the CPU's theoretical fp32 FMA
// peak is printed beside them where it is known (kernels/peak_theory.h). MFU is against the
// peak of the precision the matmuls run in: fp32, or bf16 under --precision bf16_mixed (auto:
// resolved as model.precision=auto is). With --optimizer the full step (fwd+bwd+AdamW) is
// reported too: its tokens/s and MFU over the wall time of the timed steps (a stopwatch around
// the loop), still counting only the model's FLOPs. --profile turns the step profiler (core/profile.h) on for the timed
// steps and prints its table (time per op class and GEMM shape, share of the step, GFLOP/s).
#include <nlohmann/json.hpp>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/timer.h"
#include "kernels/peak.h"
#include "kernels/peak_theory.h"
#include "kernels/peak_tracker.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/optimizer_setup.h"

namespace {

using olmo::now_seconds;

// CPU seconds (user + system) this process has used so far, all threads.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The flags of `olmo bench step`.
struct StepArgs {
  std::string name, precision = "fp32";
  int64_t S = 2048, B = 1, steps = 3, warmup = 1;
  double peak_s = 0.3;
  uint64_t seed = 1;
  bool use_opt = false, json = false, print_clock = false, profile = false;
};

void declare_step(CLI::App& step, StepArgs& a) {
  step.add_option("--preset", a.name, "the model preset")->required();
  step.add_option("--seq", a.S, "sequence length")->check(olmo::cli::positive());
  step.add_option("--batch", a.B, "sequences per step")->check(olmo::cli::positive());
  step.add_option("--steps", a.steps, "timed steps")->check(olmo::cli::positive());
  step.add_option("--warmup", a.warmup, "untimed steps first")->check(olmo::cli::non_negative());
  step.add_flag("--optimizer", a.use_opt, "also time an AdamW update per step");
  step.add_option("--precision", a.precision, "the matmul precision (auto: as "
                                              "model.precision=auto resolves)")
      ->check(CLI::IsMember(olmo::train::choice_field("model.precision")->values));
  step.add_flag("--profile", a.profile, "time per op class / GEMM shape over the timed steps (a "
                                        "table)");
  step.add_option("--peak-seconds", a.peak_s, "duration of each peak measurement")
      ->check(olmo::cli::positive());
  step.add_option("--seed", a.seed, "init and token seed");
  step.add_flag("--json", a.json, "one JSON object");
  step.add_flag("--print-clock", a.print_clock,
                "print the CLOCK_MONOTONIC window of the timed steps to stderr (for `perf record "
                "-k CLOCK_MONOTONIC` + `perf report --time`)");
}

int run_step(const StepArgs& a) {
  using namespace olmo::model;
  const std::string& name = a.name;
  const int64_t S = a.S, B = a.B, steps = a.steps, warmup = a.warmup;
  const double peak_s = a.peak_s;
  const uint64_t seed = a.seed;
  const bool use_opt = a.use_opt, json = a.json, print_clock = a.print_clock, profile = a.profile;
  olmo::train::Config pc;
  olmo::train::apply_override(pc, "model.precision=" + a.precision);
  pc.origin["model.precision"] = "--precision";
  const auto choice = olmo::train::choose_precision(pc);
  const bool bf16 = choice.precision == Precision::bf16_mixed;
  if (bf16) olmo::train::report_attention_choice();  // the pick and why, once (stderr)

  ModelConfig cfg = preset(name, true);
  cfg.precision = choice.precision;
  OLMO_CHECK(S <= cfg.max_seq_len, "--seq ", S, " exceeds max_seq_len ", cfg.max_seq_len,
             " of preset '", name, "'");
  Olmo3 m(cfg);
  m.init_weights(seed);
  const int64_t N = B * S;
  std::vector<int32_t> tokens(static_cast<size_t>(N)), targets(static_cast<size_t>(N));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(std::min(cfg.vocab_size, kVocabHF) - 1));
  for (auto& t : tokens) t = tok(rng);
  int64_t counted = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t) {
      bool last = t + 1 == S;
      targets[size_t(b * S + t)] = last ? -100 : tokens[size_t(b * S + t + 1)];
      counted += !last;
    }
  const olmo::train::OptimSection optim;  // OLMo 3's: weight decay 0.1, embedding 0, (0.9, 0.95)
  std::unique_ptr<olmo::optim::AdamW> opt;
  if (use_opt) opt = std::make_unique<olmo::optim::AdamW>(
        m.num_params(), olmo::train::param_groups(m, optim), olmo::train::adamw_config(optim));

  const float grad_scale = 1.0f / float(std::max<int64_t>(counted, 1));
  double loss = 0;
  auto fwd_bwd = [&] {
    m.zero_grad();
    auto s = m.forward_backward(tokens.data(), targets.data(), nullptr, B, S, grad_scale, 1e-5f);
    loss = (s.ce_sum + 1e-5 * s.z_sum) / double(std::max<int64_t>(counted, 1));
  };
  for (int64_t i = 0; i < warmup; ++i) {
    fwd_bwd();
    if (opt) opt->step(m.params(), m.grads(), 3e-4);
  }
  const double peak_before = olmo::kernels::measure_fp32_peak_gflops(peak_s);
  const double bpeak_before = olmo::kernels::measure_bf16_peak_gflops(peak_s, 0);
  if (profile) {
    olmo::profile::enable(true);
    olmo::profile::reset();
  }
  std::vector<double> t_fb, t_opt;
  const double cpu0 = cpu_seconds(), wall0 = now_seconds();
  if (print_clock) std::fprintf(stderr, "timed steps begin at monotonic %.6f\n", wall0);
  for (int64_t i = 0; i < steps; ++i) {
    double t0 = now_seconds();
    fwd_bwd();
    double t1 = now_seconds();
    t_fb.push_back(t1 - t0);
    if (opt) {
      opt->step(m.params(), m.grads(), 3e-4);
      t_opt.push_back(now_seconds() - t1);
    }
  }
  const double wall1 = now_seconds();
  olmo::profile::enable(false);
  if (print_clock) std::fprintf(stderr, "timed steps end at monotonic %.6f\n", wall1);
  // Share of the timed wall time our threads actually ran: well below 1 means the (shared)
  // machine was busy with other work and the figures understate the code.
  const double cpu_util = (cpu_seconds() - cpu0) / ((wall1 - wall0) * omp_get_max_threads());
  const double peak_after = olmo::kernels::measure_fp32_peak_gflops(peak_s);
  const double bpeak_after = olmo::kernels::measure_bf16_peak_gflops(peak_s, 0);
  olmo::kernels::PeakTracker fpeaks, bpeaks;
  fpeaks.probe(peak_before);
  fpeaks.probe(peak_after);
  bpeaks.probe(bpeak_before);
  bpeaks.probe(bpeak_after);
  OLMO_CHECK(!bf16 || bpeaks.peak() > 0, "bench step: bf16_mixed but the bf16 peak probe returned 0");
  olmo::kernels::PeakTracker& peaks = bf16 ? bpeaks : fpeaks;  // the matmuls' precision
  const olmo::kernels::FmaPeakTheory theory = olmo::kernels::theoretical_fp32_peak();

  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / double(v.size());
  };
  const double fpt = flops_per_token(cfg, S);
  const double fb_s = mean(t_fb), opt_s = mean(t_opt), best_fb = *std::min_element(t_fb.begin(), t_fb.end());
  const double tps = double(N) / fb_s, gflops = fpt * double(N) / fb_s * 1e-9;
  const double mfu = peaks.mfu(gflops) / 100;  // may raise the peak to the achieved rate
  // The full step over the wall time of the timed loop (fwd+bwd and AdamW, and what lies
  // between them), per step.
  const double wall_s = wall1 - wall0, full_s = wall_s / double(steps), full_tps = double(N) / full_s;
  const double full_mfu = peaks.mfu(fpt * full_tps * 1e-9) / 100;
  const double peak = peaks.peak(), fpeak = fpeaks.peak(), bpeak = bpeaks.peak();
  const bool raised = peaks.raises() > 0;

  if (json) {
    nlohmann::json j;
    j["preset"] = name;
    j["seq"] = S;
    j["batch"] = B;
    j["tokens_per_step"] = N;
    j["threads"] = omp_get_max_threads();
    j["steps"] = steps;
    j["warmup"] = warmup;
    j["flops_per_token"] = fpt;
    j["fwd_bwd_seconds"] = t_fb;
    j["fwd_bwd_seconds_mean"] = fb_s;
    j["tokens_per_second"] = tps;
    j["gflops"] = gflops;
    j["precision"] = olmo::model::precision_name(cfg.precision);
    j["precision_why"] = choice.why;
    j["peak_fp32_gflops_before"] = peak_before;
    j["peak_fp32_gflops_after"] = peak_after;
    j["peak_fp32_gflops"] = fpeak;
    j["peak_bf16_gflops_before"] = bpeak_before;
    j["peak_bf16_gflops_after"] = bpeak_after;
    j["peak_bf16_gflops"] = bpeak;
    j["peak_gflops"] = peak;  // the one MFU is against
    j["peak_raised"] = raised;  // to the achieved rate (above both probes)
    j["peak_fp32_theoretical_gflops"] = theory.gflops > 0 ? nlohmann::json(theory.gflops)
                                                          : nlohmann::json(nullptr);
    j["peak_fp32_theoretical"] = theory.text;
    j["mfu"] = mfu;
    j["mfu_vs_fp32_peak"] = gflops / fpeak;
    j["wall_seconds"] = wall_s;
    j["cpu_utilisation"] = cpu_util;
    j["loss"] = loss;
    if (opt) {
      j["optimizer_seconds"] = t_opt;
      j["optimizer_seconds_mean"] = opt_s;
      j["full_step_tokens_per_second"] = full_tps;
      j["full_step_mfu"] = full_mfu;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("bench step: %s seq=%lld batch=%lld (%lld tokens/step), %d threads\n",
                name.c_str(), (long long)S, (long long)B, (long long)N, omp_get_max_threads());
    std::printf("  flops/token      %.4g (ours: causal/window-discounted attention)\n", fpt);
    std::printf("  fwd+bwd          %.3f s/step mean, %.3f s best over %lld steps (loss %.4f)\n",
                fb_s, best_fb, (long long)steps, loss);
    std::printf("  tokens/s         %.1f\n", tps);
    std::printf("  GFLOP/s          %.1f\n", gflops);
    std::printf("  precision        %s (%s)\n", olmo::model::precision_name(cfg.precision),
                choice.why.c_str());
    std::printf("  fp32 peak GFLOP/s %.1f before, %.1f after (highest %.1f)%s\n", peak_before,
                peak_after, fpeaks.highest_probe(), bf16 ? "" : "  <- MFU");
    std::printf("  bf16 peak GFLOP/s %.1f before, %.1f after (highest %.1f)%s\n", bpeak_before,
                bpeak_after, bpeaks.highest_probe(), bf16 ? "  <- MFU" : "");
    std::printf("  fp32 theoretical %s\n", theory.text.c_str());
    if (raised)
      std::printf("  peak raised to the achieved %.1f GFLOP/s (the higher %s probe, %.1f, ran "
                  "while the machine was busy)\n", peaks.first_raise().to, bf16 ? "bf16" : "fp32",
                  peaks.first_raise().from);
    std::printf("  MFU              %.1f%% (against the %s peak of %.1f GFLOP/s)\n", 100 * mfu,
                bf16 ? "bf16" : "fp32", peak);
    std::printf("  CPU utilisation  %.0f%% of %d threads x wall during the timed steps\n",
                100 * cpu_util, omp_get_max_threads());
    if (opt) {
      std::printf("  AdamW            %.3f s/step\n", opt_s);
      std::printf("  full step        %.3f s, %.1f tokens/s, MFU %.1f%% (wall time of the "
                  "%lld timed steps: %.3f s)\n", full_s, full_tps, 100 * full_mfu,
                  (long long)steps, wall_s);
    }
  }
  if (profile) {
    // Over the timed steps (fwd+bwd, and AdamW with --optimizer); to stderr under --json.
    double total = 0;
    for (double t : t_fb) total += t;
    for (double t : t_opt) total += t;
    std::fprintf(json ? stderr : stdout, "profile (%s, per step, %lld timed steps):\n%s",
                 olmo::model::precision_name(cfg.precision), (long long)steps,
                 olmo::profile::table(total, steps).c_str());
  }
  return 0;
}

int run_bench(int argc, char** argv) {
  auto app = olmo::cli::make_app("bench", "Benchmarks of the training step.");
  app->require_subcommand(1);
  StepArgs a;
  auto* step = app->add_subcommand(
      "step",
      "Times forward+backward (and AdamW with --optimizer) of a preset model on random tokens; "
      "prints tokens/s, GFLOP/s and MFU against the peak of the matmul precision (fp32 FMA or "
      "bf16 VDPBF16PS) measured just before and after the timed steps. Threads: "
      "OMP_NUM_THREADS.");
  declare_step(*step, a);
  olmo::cli::parse(*app, argc, argv);
  return run_step(a);
}

}  // namespace

OLMO_COMMAND("bench", "training-step throughput, GFLOP/s and MFU against the measured peak",
             run_bench);
