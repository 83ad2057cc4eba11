// YaRN in the model: config validation and HF config.json parsing of both variants, and parity
// of logits, loss and every gradient at a sequence (256) longer than the old context (64) of a
// small GQA config with sliding and full layers, against independent references written by
// tests/model/yarn_ref.py: OLMo-core's own Transformer with full_attn_layers_only=True (our
// faithful variant), transformers' Olmo3ForCausalLM with the released config's legacy
// rope_scaling (faithful), and with YaRN on both layer types (our hf variant). Each reference is
// also checked to tell the two variants apart (the test can fail).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "model/config.h"
#include "model/hf_io.h"
#include "model/olmo3.h"
#include "model/safetensors.h"

using namespace olmo;
using namespace olmo::model;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const char* kBase = R"({"model_type": "olmo3", "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 97, "sliding_window": 32, "max_position_embeddings": 256, "rope_theta": 500000)";
const char* kYarn = R"({"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64,
  "beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": 1.2079441541679836})";

ModelConfig parse(const std::string& extra) {
  return config_from_hf_json_text(std::string(kBase) + extra + "}", "test/config.json");
}

}  // namespace

TEST(YarnConfig, HfLegacyRopeScalingIsFaithful) {
  ModelConfig c = parse(std::string(R"(, "rope_scaling": )") + kYarn);
  ASSERT_TRUE(c.yarn.enabled());
  EXPECT_EQ(c.yarn.variant, YarnVariant::faithful);
  EXPECT_EQ(c.yarn.factor, 8.0);
  EXPECT_EQ(c.yarn.old_context_len, 64);
  EXPECT_EQ(c.yarn.attention_factor, 1.2079441541679836);
  // Layers 0-2 sliding keep plain RoPE, layer 3 (full) gets YaRN.
  EXPECT_FALSE(c.yarn_on_layer(0));
  EXPECT_FALSE(c.yarn_on_layer(2));
  EXPECT_TRUE(c.yarn_on_layer(3));
}

TEST(YarnConfig, HfRopeParametersPerLayerType) {
  auto pp = [](const std::string& full, const std::string& sliding) {
    return std::string(R"(, "rope_parameters": {"full_attention": )") + full +
           R"(, "sliding_attention": )" + sliding + "}";
  };
  const std::string def = R"({"rope_type": "default", "rope_theta": 500000})";
  ModelConfig f = parse(pp(kYarn, def));
  EXPECT_EQ(f.yarn.variant, YarnVariant::faithful);
  ModelConfig h = parse(pp(kYarn, kYarn));
  EXPECT_EQ(h.yarn.variant, YarnVariant::hf);
  for (int l = 0; l < 4; ++l) EXPECT_TRUE(h.yarn_on_layer(l));
  EXPECT_FALSE(parse(pp(def, def)).yarn.enabled());
  EXPECT_NE(error_of([&] { parse(pp(def, kYarn)); }).find("sliding_attention but not to full"),
            std::string::npos);
  std::string other = kYarn;
  other.replace(other.find("8.0"), 3, "4.0");
  EXPECT_NE(error_of([&] { parse(pp(kYarn, other)); }).find("different YaRN parameters"),
            std::string::npos);
  // Round trip through our exporter keeps the variant.
  for (const ModelConfig& c : {f, h}) {
    ModelConfig r = config_from_hf_json_text(config_to_hf_json(c), "roundtrip");
    EXPECT_EQ(r.yarn.variant, c.yarn.variant);
    EXPECT_EQ(r.yarn.factor, c.yarn.factor);
    EXPECT_EQ(r.yarn.old_context_len, c.yarn.old_context_len);
  }
}

TEST(YarnConfig, BadInputIsAClearError) {
  auto with = [](std::string y) { return std::string(R"(, "rope_scaling": )") + y; };
  std::string y1 = kYarn;
  y1.replace(y1.find("8.0"), 3, "1.0");
  EXPECT_NE(error_of([&] { parse(with(y1)); }).find("test/config.json: field \"rope_scaling."
                                                    "factor\" is 1; YaRN needs a factor > 1"),
            std::string::npos);
  std::string y2 = kYarn;
  y2.replace(y2.find(": 64"), 4, ": 4096");  // old context 4096 > max_position_embeddings 256
  EXPECT_NE(error_of([&] { parse(with(y2)); }).find("YaRN old context length 4096 is larger "
                                                    "than the sequence length 256"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse(with(R"({"rope_type": "yarn", "factor": 8})")); })
                .find("original_max_position_embeddings\" is required"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse(with(R"({"rope_type": "linear", "factor": 8})")); })
                .find("only \"default\" and \"yarn\""),
            std::string::npos);
  std::string y3 = kYarn;
  y3.insert(1, R"("truncate": false, )");
  EXPECT_NE(error_of([&] { parse(with(y3)); }).find("truncate"), std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(std::string(R"(, "rope_parameters": )") + kYarn);
            }).find("ambiguous"),
            std::string::npos);
  // Direct ModelConfig validation.
  ModelConfig c = preset("olmo3-tiny");
  c.yarn.factor = 0.5;
  c.yarn.old_context_len = 64;
  EXPECT_NE(error_of([&] { validate(c, "cfg"); }).find("cfg: YaRN factor must be > 1"),
            std::string::npos);
  c.yarn.factor = 8;
  c.yarn.old_context_len = c.max_seq_len + 1;
  EXPECT_NE(error_of([&] { validate(c, "cfg"); }).find("is larger than the sequence length"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_yarn_variant("all", "key"); }).find("key: YaRN variant 'all'"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------- parity

namespace {

struct Result {
  std::vector<float> logits;
  double loss = 0;
  std::vector<float> grads;  // flat, our layout
};

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

std::vector<int32_t> read_i32(const std::string& p) {
  std::string s = read_file(p);
  std::vector<int32_t> v(s.size() / 4);
  std::memcpy(v.data(), s.data(), v.size() * 4);
  return v;
}
std::vector<float> read_f32(const std::string& p) {
  std::string s = read_file(p);
  std::vector<float> v(s.size() / 4);
  std::memcpy(v.data(), s.data(), v.size() * 4);
  return v;
}

Result run(Olmo3& m, const std::vector<int32_t>& ids, int64_t B, int64_t T) {
  Result r;
  const int64_t V = m.config().vocab_size;
  r.logits.resize(size_t(B * T * V));
  m.forward_logits(ids.data(), B, T, r.logits.data());
  std::vector<int32_t> tgt(ids.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      tgt[b * T + t] = t + 1 < T ? ids[b * T + t + 1] : olmo::kIgnoreIndex;
  m.zero_grad();
  auto s = m.forward_backward(ids.data(), tgt.data(), nullptr, B, T, 1.0f / float(B * (T - 1)),
                              0.0f);
  r.loss = s.ce_sum / double(s.count);
  r.grads.assign(m.grads(), m.grads() + m.num_params());
  return r;
}

class YarnParity : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    const char* py = std::getenv("OLMO_PYTHON");
    const char* src = std::getenv("OLMO_SOURCE_DIR");
    if (!py || !src || !fs::exists(py)) return;
    dir_ = (fs::temp_directory_path() / ("olmo_yarn_" + std::to_string(::getpid()))).string();
    std::string cmd = std::string(py) + " " + src + "/tests/model/yarn_ref.py " + dir_ +
                      " > " + dir_ + ".log 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
    if (!ok_) std::fprintf(stderr, "%s failed:\n%s\n", cmd.c_str(), read_file(dir_ + ".log").c_str());
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      fs::remove(dir_ + ".log", ec);
    }
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "OLMO_PYTHON / OLMO_SOURCE_DIR not set (run via ctest)";
    ASSERT_TRUE(ok_) << "reference script failed";
  }

  // Runs our model (config from the case's config.json, optionally forced to `variant`) and
  // returns (logits rel L2, worst gradient rel L2, loss rel) against the case's reference.
  struct Diff {
    double logits, logits_maxabs, grad, loss;
    std::string worst;
  };
  static Diff compare(const std::string& ref_case, const std::string& model_case,
                      int force_variant = -1) {
    const std::string rd = dir_ + "/" + ref_case, md = dir_ + "/" + model_case;
    ModelConfig c = config_from_hf_json(md + "/config.json");
    if (force_variant >= 0) c.yarn.variant = YarnVariant(force_variant);
    Olmo3 m(c);
    load_hf_weights(m, md);
    auto ids = read_i32(rd + "/tokens.i32");
    const int64_t B = 2, T = int64_t(ids.size()) / 2;
    Result r = run(m, ids, B, T);
    auto L = read_f32(rd + "/logits.f32");
    EXPECT_EQ(L.size(), r.logits.size());
    Diff d{};
    d.logits = rel_l2(r.logits.data(), L.data(), L.size());
    double mx = 0, ma = 0;
    for (size_t i = 0; i < L.size(); ++i) {
      mx = std::max(mx, std::fabs(double(r.logits[i]) - L[i]));
      ma = std::max(ma, std::fabs(double(L[i])));
    }
    d.logits_maxabs = mx / ma;
    d.loss = std::fabs(r.loss - std::stod(read_file(rd + "/loss.txt"))) / r.loss;
    SafetensorsFile g(rd + "/grads.safetensors");
    for (const ParamInfo& p : m.params_info()) {
      std::vector<float> ref(p.numel);
      g.read_f32(p.name, ref.data());
      double e = rel_l2(r.grads.data() + p.offset, ref.data(), p.numel);
      if (e > d.grad) d.grad = e, d.worst = p.name;
    }
    std::printf("  %-10s model %-10s variant %-8s: logits rel L2 %.2e (max abs diff / max |logit| "
                "%.2e), loss rel %.2e, worst grad rel L2 %.2e (%s)\n",
                ref_case.c_str(), model_case.c_str(), yarn_variant_name(c.yarn.variant),
                d.logits, d.logits_maxabs, d.loss, d.grad, d.worst.c_str());
    return d;
  }
  static std::string dir_;
  static bool ok_;
};
std::string YarnParity::dir_;
bool YarnParity::ok_ = false;

void expect_match(const YarnParity::Diff& d) {
  EXPECT_LT(d.logits, 1e-5);
  EXPECT_LT(d.loss, 1e-6);
  EXPECT_LT(d.grad, 1e-4) << d.worst;
}

}  // namespace

TEST_F(YarnParity, FaithfulMatchesOlmoCore) {
  // config.json written by OLMo-core's own HF exporter: parsed as the faithful variant.
  EXPECT_EQ(config_from_hf_json(dir_ + "/olmo_core/config.json").yarn.variant,
            YarnVariant::faithful);
  expect_match(compare("olmo_core", "olmo_core"));
}

TEST_F(YarnParity, FaithfulMatchesHfLegacyRopeScaling) {
  EXPECT_EQ(config_from_hf_json(dir_ + "/hf_legacy/config.json").yarn.variant,
            YarnVariant::faithful);
  expect_match(compare("hf_legacy", "hf_legacy"));
}

TEST_F(YarnParity, HfVariantMatchesHfEveryLayer) {
  EXPECT_EQ(config_from_hf_json(dir_ + "/hf_all/config.json").yarn.variant, YarnVariant::hf);
  expect_match(compare("hf_all", "hf_all"));
}

TEST_F(YarnParity, VariantsDiffer) {
  // The wrong variant is far off at any length (spec 2.4): the references tell them apart.
  EXPECT_GT(compare("olmo_core", "olmo_core", int(YarnVariant::hf)).logits, 1e-2);
  EXPECT_GT(compare("hf_all", "hf_all", int(YarnVariant::faithful)).logits, 1e-2);
}
