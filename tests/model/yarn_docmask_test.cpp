// The stage-3 forward/backward: packed instances with intra-document masking (doc ids from
// document lengths, padding a final segment, positions not reset at document boundaries) and
// YaRN on the full-attention layer (faithful variant), against a PyTorch reference that masks
// the same way (tests/model/yarn_docmask_ref.py: transformers' Olmo3ForCausalLM with explicit
// 4-D masks per layer type). Logits, loss (labels ignored on padding) and every gradient.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

template <class T>
std::vector<T> read_raw(const std::string& p) {
  std::string s = read_file(p);
  std::vector<T> v(s.size() / sizeof(T));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

TEST(YarnDocMask, MatchesPyTorchReference) {
  const char* py = std::getenv("OLMO_PYTHON");
  const char* src = std::getenv("OLMO_SOURCE_DIR");
  if (!py || !src || !fs::exists(py)) GTEST_SKIP() << "OLMO_PYTHON not set (run via ctest)";
  const std::string dir =
      (fs::temp_directory_path() / ("olmo_docmask_" + std::to_string(::getpid()))).string();
  std::string cmd = std::string(py) + " " + src + "/tests/model/yarn_docmask_ref.py " + dir +
                    " > " + dir + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir + ".log");

  ModelConfig c = config_from_hf_json(dir + "/config.json");
  ASSERT_TRUE(c.yarn.enabled());
  EXPECT_EQ(c.yarn.variant, YarnVariant::faithful);
  Olmo3 m(c);
  load_hf_weights(m, dir);
  auto ids = read_raw<int32_t>(dir + "/tokens.i32");
  auto doc_lens = nlohmann::json::parse(read_file(dir + "/doc_lens.json"));
  auto label_len = nlohmann::json::parse(read_file(dir + "/label_len.json"));
  const int64_t B = int64_t(doc_lens.size()), T = int64_t(ids.size()) / B, V = c.vocab_size;
  // doc ids: ordinal of each token's document; targets: next token inside the real tokens.
  std::vector<int32_t> doc(ids.size()), tgt(ids.size(), olmo::kIgnoreIndex);
  for (int64_t b = 0; b < B; ++b) {
    int64_t t = 0;
    for (size_t k = 0; k < doc_lens[size_t(b)].size(); ++k)
      for (int64_t n = doc_lens[size_t(b)][k].get<int64_t>(); n > 0; --n) doc[b * T + t++] = int32_t(k);
    ASSERT_EQ(t, T);
    const int64_t n = label_len[size_t(b)].get<int64_t>();
    for (int64_t i = 0; i + 1 < n; ++i) tgt[b * T + i] = ids[b * T + i + 1];
  }
  std::vector<float> logits(size_t(B * T * V));
  m.forward_logits(ids.data(), B, T, logits.data(), doc.data());
  auto ref = read_raw<float>(dir + "/logits.f32");
  ASSERT_EQ(ref.size(), logits.size());
  const double el = rel_l2(logits.data(), ref.data(), ref.size());
  auto s0 = m.forward_loss(ids.data(), tgt.data(), doc.data(), B, T, 0.0f);
  m.zero_grad();
  auto s = m.forward_backward(ids.data(), tgt.data(), doc.data(), B, T, 1.0f / float(s0.count),
                              0.0f);
  const double loss = s.ce_sum / double(s.count);
  const double eloss = std::fabs(loss - std::stod(read_file(dir + "/loss.txt"))) / loss;
  SafetensorsFile g(dir + "/grads.safetensors");
  double eg = 0;
  std::string worst;
  for (const ParamInfo& p : m.params_info()) {
    std::vector<float> r(p.numel);
    g.read_f32(p.name, r.data());
    double e = rel_l2(m.grads() + p.offset, r.data(), p.numel);
    if (e > eg) eg = e, worst = p.name;
  }
  std::printf("  packed + doc mask + YaRN vs PyTorch: logits rel L2 %.2e, loss rel %.2e "
              "(%lld labels), worst grad rel L2 %.2e (%s)\n",
              el, eloss, (long long)s.count, eg, worst.c_str());
  EXPECT_LT(el, 1e-5);
  EXPECT_LT(eloss, 1e-6);
  EXPECT_LT(eg, 1e-4) << worst;
  // Without the doc ids our logits must be far from the masked reference (the check can fail).
  m.forward_logits(ids.data(), B, T, logits.data());
  EXPECT_GT(rel_l2(logits.data(), ref.data(), ref.size()), 1e-2);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove(dir + ".log", ec);
}
