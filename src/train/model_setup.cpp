// Builds model::ModelConfig from the YAML config (see model_setup.h).
#include "train/model_setup.h"

#include <sstream>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/runtime.h"
#include "kernels/attention_bf16.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"

namespace olmo::train {

namespace {
std::string precision_key(const Config& c) {
  auto it = c.origin.find("model.precision");
  return it == c.origin.end() ? std::string("config key 'model.precision'")
                              : cat(it->second, ": key 'model.precision'");
}
}  // namespace

std::string resumed_precision(const Config& c) {
  if (c.trainer.run_dir.empty()) return "";
  // The newest committed checkpoint whose index reads: its recipe only (no tensor is verified
  // here; Trainer::start verifies the one it resumes, and the recipe check refuses a mismatch).
  const std::vector<int64_t> steps = ckpt::list_checkpoints(c.trainer.run_dir);
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    const std::string dir = cat(c.trainer.run_dir, "/step", *s);
    std::optional<ckpt::CheckpointReader> r;
    try {
      r.emplace(dir);
    } catch (const Error&) {
      continue;  // damaged: Trainer::start reports and skips it too
    }
    if (!r->has_json("recipe")) return "";
    const nlohmann::json& recipe = r->json("recipe");
    const nlohmann::json fields = recipe.is_object() ? recipe.value("fields", nlohmann::json())
                                                     : nlohmann::json();
    if (!fields.is_object() || !fields.contains("model.precision") ||
        !fields["model.precision"].is_string())
      return "";
    const std::string p = fields["model.precision"].get<std::string>();
    OLMO_CHECK(p == "fp32" || p == "bf16_mixed", dir, ": the recipe's model.precision is '", p,
               "', not fp32 or bf16_mixed (a damaged or foreign checkpoint)");
    return p;
  }
  return "";
}

PrecisionChoice choose_precision(const Config& c, const std::string& resumed) {
  const PrecisionSetting p = c.model.precision;
  PrecisionChoice r;
  if (p == PrecisionSetting::automatic && !resumed.empty()) {
    // A resumed `auto` run continues in the precision it trained in: the probe is a timing, and
    // a timing must never decide a resumed run's bits (a busy machine would flip it).
    const bool bf16 = resumed == "bf16_mixed";
    OLMO_CHECK(!bf16 || kernels::bf16_usable(), precision_key(c), " = auto resumes ",
               c.trainer.run_dir, ", which trained in bf16_mixed, but this CPU has no native bf16 "
               "dot products (AVX512_BF16) or the AVX-512 kernels are turned off: set "
               "OLMO_BF16=emulate to continue its trajectory bit for bit (slower), or start a new "
               "phase from its checkpoint with trainer.load_path and model.precision=fp32");
    if (bf16) r.precision = model::Precision::bf16_mixed;
    r.why = cat("precision: auto -> ", resumed, " (resumed: the checkpoint in ", c.trainer.run_dir,
                " trained in ", resumed, "; a resume never probes again",
                bf16 && kernels::bf16_emulated() ? "; bf16 emulated: OLMO_BF16=emulate)" : ")");
    std::fprintf(stderr, "%s\n", r.why.c_str());
    runtime().set({"precision", resumed, Source::checkpoint, "trainer.run_dir", r.why, {}});
    return r;
  }
  if (p == PrecisionSetting::fp32) {
    r.why = "model.precision: fp32";
    runtime().set({"precision", "fp32", Source::config, "model.precision", r.why, {}});
    return r;
  }
  if (p == PrecisionSetting::bf16_mixed) {
    OLMO_CHECK(kernels::bf16_usable(), precision_key(c), " = bf16_mixed, but this CPU has no "
               "native bf16 dot products (AVX512_BF16), or the AVX-512 kernels are turned off "
               "(OLMO_ISA / OLMO_BF16=0): use model.precision=fp32 or auto");
    r.precision = model::Precision::bf16_mixed;
    r.why = "model.precision: bf16_mixed";
    if (kernels::bf16_emulated()) {
      r.why += " (emulated: OLMO_BF16=emulate on a CPU without native bf16; fp32 GEMMs on "
               "bf16-rounded inputs, slower than fp32)";
      std::fprintf(stderr, "%s\n", r.why.c_str());
    }
    runtime().set({"precision", "bf16_mixed", Source::config, "model.precision", r.why, {}});
    return r;
  }
  // auto: decided once per process (every model_config_for_this_cpu() call agrees, one log line).
  static std::mutex mu;
  static bool decided = false;
  static PrecisionChoice choice;
  std::lock_guard<std::mutex> lock(mu);
  if (!decided) {
    // Test switches: OLMO_TEST_PRECISION_PROBE=bf16|fp32 replaces the probe's outcome (bf16:
    // "bf16 GEMM is faster"), so tests/distributed/precision_test.py can make each case happen on
    // any CPU; =BF16/FP32 (two GFLOP/s figures, e.g. 109/100) replaces only its measurement, so
    // the >= 1.1x rule below decides (tests/train/claims_precision_rule_test.py). Either, with
    // OLMO_BF16=emulate, also on a CPU without native bf16.
    const std::optional<std::string> forced_env = runtime().env("OLMO_TEST_PRECISION_PROBE");
    const char* forced = forced_env ? forced_env->c_str() : nullptr;
    Setting rec{"precision", "", Source::default_value, "no usable bf16", "", {}};
    double forced_bf16 = 0, forced_fp32 = 0;
    char tail = 0;
    const bool timed = forced && std::sscanf(forced, "%lf/%lf%c", &forced_bf16, &forced_fp32,
                                             &tail) == 2;
    if (forced && *forced && !timed) {
      OLMO_CHECK(!std::strcmp(forced, "bf16") || !std::strcmp(forced, "fp32"),
                 "OLMO_TEST_PRECISION_PROBE = '", forced, "' must be bf16, fp32 or BF16/FP32 "
                 "GFLOP/s (e.g. 109/100)");
    }
    OLMO_CHECK(!timed || (forced_bf16 > 0 && forced_fp32 > 0), "OLMO_TEST_PRECISION_PROBE = '",
               forced, "': both GFLOP/s figures must be > 0");
    if (forced && *forced && !timed && (kernels::cpu_has_bf16() || kernels::bf16_emulated())) {
      const bool bf16 = !std::strcmp(forced, "bf16");
      choice.why = cat("precision: auto -> ", bf16 ? "bf16_mixed" : "fp32",
                       " (probe outcome forced by OLMO_TEST_PRECISION_PROBE=", forced,
                       kernels::bf16_emulated() ? "; bf16 emulated: OLMO_BF16=emulate)" : ")");
      if (bf16) choice.precision = model::Precision::bf16_mixed;
      rec.source = Source::test_override, rec.origin = "OLMO_TEST_PRECISION_PROBE";
    } else if (!kernels::cpu_has_bf16() && !(timed && kernels::bf16_emulated())) {
      choice.why = "precision: auto -> fp32 (no AVX512_BF16 on this CPU, or OLMO_ISA/OLMO_BF16 "
                   "turned it off)";
    } else {
      kernels::GemmProbe g;
      if (timed) {
        g.bf16_gflops = forced_bf16;
        g.fp32_gflops = forced_fp32;
        g.bf16_impl = g.fp32_impl = "OLMO_TEST_PRECISION_PROBE";
      } else {
        g = kernels::probe_gemm_precisions();  // the training GEMMs: gemm_micro(_bf16)
      }
      rec.source = Source::probe;
      rec.origin = cat("GEMM probe ", g.M, "x", g.N, "x", g.K, timed ? " (timings forced by "
                       "OLMO_TEST_PRECISION_PROBE)" : "");
      rec.figures = {{"bf16_gflops", g.bf16_gflops}, {"fp32_gflops", g.fp32_gflops},
                     {"ratio", g.bf16_gflops / g.fp32_gflops}, {"needs", 1.1}};
      // The ratio itself against 1.1 (not bf16 >= 1.1 * fp32, which rounds 1.1 * 100 up).
      const bool faster = g.bf16_gflops / g.fp32_gflops >= 1.1;
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "precision: auto -> %s (%s; GEMM %lldx%lldx%lld: "
                    "bf16 %.0f GFLOP/s [%s] vs fp32 %.0f [%s], %.3fx; bf16_mixed needs >= 1.10x)",
                    faster ? "bf16_mixed" : "fp32",
                    kernels::cpu_has_bf16() ? "AVX512_BF16 present"
                                            : "bf16 emulated: OLMO_BF16=emulate",
                    (long long)g.M, (long long)g.N,
                    (long long)g.K, g.bf16_gflops, g.bf16_impl.c_str(), g.fp32_gflops,
                    g.fp32_impl.c_str(), g.bf16_gflops / g.fp32_gflops);
      choice.why = buf;
      if (faster) choice.precision = model::Precision::bf16_mixed;
    }
    std::fprintf(stderr, "%s\n", choice.why.c_str());
    rec.value = model::precision_name(choice.precision);
    rec.note = choice.why;
    runtime().set(std::move(rec));
    decided = true;
  }
  return choice;
}

void report_attention_choice() {
  static std::once_flag once;
  std::call_once(once, [] {
    const kernels::AttnChoice a = kernels::attention_bf16_choice();
    runtime().set(Setting{"attention", a.bf16 ? "bf16" : "fp32", a.source, a.origin, a.why, {}});
    std::fprintf(stderr, "%s\n", a.why.c_str());
  });
}

static int64_t llama_ffn(int64_t d) {
  int64_t h = int64_t(8.0 * double(d) / 3.0);
  return 256 * ((h + 255) / 256);
}

model::ModelConfig model_config(const Config& c) {
  const ModelSection& m = c.model;
  const model::ModelConfig& a = m.arch;  // the `model.<name>` keys; unset = the preset's
  model::ModelConfig mc;
  const bool from_preset = !m.preset.empty();
  if (from_preset) {
    try {
      mc = model::preset(m.preset);
    } catch (const Error& e) {
      throw Error(cat("config key 'model.preset': ", e.what()));
    }
  } else {
    OLMO_CHECK(a.d_model > 0 && a.n_layers > 0 && a.n_heads > 0 && a.vocab_size > 0,
               "config: model.preset is empty, so model.d_model, model.n_layers, model.n_heads "
               "and model.vocab_size must all be set");
    mc.name = c.name.empty() ? "custom" : c.name;
  }
  const int64_t old_layers = mc.n_layers;
  const bool resized = (a.d_model > 0 && a.d_model != mc.d_model) ||
                       (a.n_heads > 0 && a.n_heads != mc.n_heads);
  // Every field that is set replaces the preset's (or ModelConfig's default for a custom model).
  model::describe_model_fields([&](const char*, auto get, const char*, model::FieldUse use) {
    const auto& v = get(a);
    if (use.yaml && v != std::decay_t<decltype(v)>{}) get(mc) = v;
  });
  // A custom or resized model derives what the preset would have fixed.
  if (!from_preset || resized) {
    OLMO_CHECK(mc.d_model % mc.n_heads == 0, "config key 'model.n_heads' = ", mc.n_heads,
               " does not divide model.d_model = ", mc.d_model);
    if (a.n_kv_heads == 0) mc.n_kv_heads = mc.n_heads;
    if (a.head_dim == 0) mc.head_dim = mc.d_model / mc.n_heads;
    if (a.ffn_hidden == 0) mc.ffn_hidden = llama_ffn(mc.d_model);
  }
  mc.max_seq_len = c.data.seq_len;

  if (!m.window_pattern.empty()) {
    mc.layer_window.assign(mc.n_layers, 0);
    for (int64_t i = 0; i < mc.n_layers; ++i) {
      int64_t w = m.window_pattern[i % m.window_pattern.size()];
      mc.layer_window[i] = w < 0 ? 0 : w;
    }
    if (m.force_full_last != 0) mc.layer_window[mc.n_layers - 1] = 0;   // default on (OLMo 3)
    if (m.force_full_first == 1) mc.layer_window[0] = 0;
  } else if (mc.n_layers != old_layers || mc.layer_window.empty()) {
    mc.layer_window = model::olmo3_layer_windows(mc.n_layers);
  }
  if (a.yarn.factor != 0) {
    OLMO_CHECK(a.yarn.factor > 1, "config key 'model.yarn_factor' = ", a.yarn.factor,
               " must be > 1 (or 0 for no YaRN)");
    OLMO_CHECK(mc.yarn.old_context_len > 0, "config key 'model.yarn_old_context_len' = ",
               mc.yarn.old_context_len, " must be positive");
    OLMO_CHECK(mc.yarn.old_context_len <= c.data.seq_len, "config key "
               "'model.yarn_old_context_len' = ", mc.yarn.old_context_len,
               " is larger than data.seq_len = ", c.data.seq_len,
               " (YaRN extends a shorter trained context to the longer sequence)");
  }
  if (!mc.yarn.enabled()) mc.yarn = model::RopeScaling{};  // YaRN settings without a factor
  // As written; `auto` stays unresolved (fp32) here: model_config_for_this_cpu() decides it.
  mc.precision = m.precision == PrecisionSetting::bf16_mixed ? model::Precision::bf16_mixed
                                                             : model::Precision::fp32;
  mc.act_ckpt.mode = m.ac_mode;
  mc.act_ckpt.block_interval = m.ac_block_interval;
  mc.act_ckpt.budget = m.ac_budget;
  model::validate(mc, "config section 'model'");
  return mc;
}

model::ModelConfig model_config_for_this_cpu(const Config& c, const std::string& resumed) {
  model::ModelConfig mc = model_config(c);
  mc.precision = choose_precision(c, resumed).precision;
  return mc;
}

namespace {
// A value as a YAML override reads it back exactly (config.cpp's parse_into).
std::string override_text(const std::string& s) { return s; }
std::string override_text(int64_t x) { return std::to_string(x); }
std::string override_text(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  return o.str();
}
std::string override_text(float x) { return override_text(double(x)); }
std::string override_text(model::YarnVariant v) { return model::yarn_variant_name(v); }
std::string override_text(model::Precision p) { return model::precision_name(p); }
std::string override_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

std::vector<std::string> model_overrides(const model::ModelConfig& mc) {
  std::vector<std::string> o = {"name=" + mc.name, "model.preset="};
  model::visit_model_fields(mc, [&](const char* name, const auto& v, const char*,
                                    model::FieldUse use) {
    if (use.yaml) o.push_back(cat("model.", name, "=", override_text(v)));
  });
  // The fields whose trainer-config form is elsewhere (FieldUse::yaml false).
  std::vector<int64_t> windows = mc.layer_window;
  for (int64_t& w : windows) w = w == 0 ? -1 : w;
  o.push_back("model.window_pattern=" + override_text(windows));
  o.push_back("model.force_full_last=0");
  o.push_back("model.force_full_first=0");
  o.push_back(cat("data.seq_len=", mc.max_seq_len));
  o.push_back("model.precision=" + override_text(mc.precision));
  return o;
}

}  // namespace olmo::train
