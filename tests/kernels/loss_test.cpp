// Fused LM-head loss: the chunked fast path against the double reference (sums, dx, dW
// accumulation) with ignored targets, several chunk sizes and V not a multiple of the vector
// width, under every ISA path; the reference gradient by central differences in double; the
// all-ignored batch; out-of-range targets raise olmo::Error; and parity with OLMo-core's
// cross_entropy_loss (z-loss definition and normalisation), run through the project venv.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_util.h"
#include "kernels/gradcheck.h"
#include "kernels/loss.h"

using namespace olmo::kernels;
using olmo::testing::numeric_grad;
using olmo::testing::randn;
using olmo::testing::rel_l2;
using olmo::testing::to;

using olmo::testing::isas;
using olmo::testing::IsaGuard;

namespace {
std::vector<int32_t> make_targets(int64_t N, int64_t V, uint64_t seed) {
  std::vector<int32_t> t(N);
  uint64_t x = seed;
  for (int64_t i = 0; i < N; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t[i] = (x >> 60) == 0 ? olmo::kIgnoreIndex : int32_t((x >> 20) % V);  // ~1/16 ignored
  }
  return t;
}
}  // namespace

TEST(LmHeadLoss, FastMatchesReference) {
  struct S { int64_t N, D, V, chunk; };
  for (S c : {S{37, 24, 1000, 8}, S{64, 48, 517, 0}, S{5, 16, 3001, 2}, S{50, 40, 96, 64}}) {
    auto xd = randn(c.N * c.D, 1, 1.0), Wd = randn(c.V * c.D, 2, 0.5), dW0 = randn(c.V * c.D, 3);
    auto t = make_targets(c.N, c.V, c.N * 31 + c.V);
    t[1] = olmo::kIgnoreIndex;
    auto x = to<float>(xd), W = to<float>(Wd);
    const float zc = 1e-2f, gs = 0.25f;  // zc large enough that the z term shows in the gradient
    std::vector<double> rdx(x.size());
    std::vector<double> rdW(dW0.begin(), dW0.end());
    std::vector<double> xr(x.begin(), x.end()), Wr(W.begin(), W.end());
    LossSums ref = lm_head_loss_ref<double>(xr.data(), Wr.data(), t.data(), c.N, c.D, c.V, zc,
                                            gs, rdx.data(), rdW.data());
    for (olmo::Isa isa : isas()) {
      olmo::set_isa_override(isa);
      SCOPED_TRACE(olmo::cat("N", c.N, " D", c.D, " V", c.V, " chunk", c.chunk, " isa=",
                             olmo::isa_name(isa)));
      std::vector<float> dx(x.size(), NAN), dW = to<float>(dW0);
      LossSums r = lm_head_loss(x.data(), W.data(), t.data(), c.N, c.D, c.V, zc, gs, dx.data(),
                                dW.data(), c.chunk);
      EXPECT_EQ(r.count, ref.count);
      EXPECT_NEAR(r.ce_sum, ref.ce_sum, 1e-6 * std::fabs(ref.ce_sum));
      EXPECT_NEAR(r.z_sum, ref.z_sum, 1e-6 * std::fabs(ref.z_sum));
      EXPECT_LT(rel_l2(dx, rdx), 1e-5);
      EXPECT_LT(rel_l2(dW, rdW), 1e-6);  // accumulated onto dW0
      for (int64_t i = 0; i < c.N; ++i) {
        if (t[i] != olmo::kIgnoreIndex) continue;
        for (int64_t d = 0; d < c.D; ++d) EXPECT_EQ(dx[i * c.D + d], 0.0f);
      }
      // Loss only (no gradients) gives the same sums.
      LossSums r2 = lm_head_loss(x.data(), W.data(), t.data(), c.N, c.D, c.V, zc, gs, nullptr,
                                 nullptr, c.chunk);
      EXPECT_EQ(r2.count, r.count);
      EXPECT_NEAR(r2.ce_sum, r.ce_sum, 1e-9 * std::fabs(r.ce_sum));
    }
    olmo::clear_isa_override();
  }
}

// bf16 matmul inputs: with W and x already bf16-representable the logits are exact products
// summed in fp32, so the sums match the double reference to fp32 accuracy; the gradients go
// through d/dlogits rounded to bf16 (relative error <= u = 2^-9 per element), so dx and dW are
// held to 2u in relative L2. Shapes as above (odd V, chunks of 8 / auto / 2).
TEST(LmHeadLoss, Bf16MatchesReferenceOnRoundedInputs) {
  struct S { int64_t N, D, V, chunk; };
  for (S c : {S{37, 24, 1000, 8}, S{64, 48, 517, 0}, S{5, 16, 3001, 2}}) {
    auto xd = randn(c.N * c.D, 4, 1.0), Wd = randn(c.V * c.D, 5, 0.5), dW0 = randn(c.V * c.D, 6);
    auto t = make_targets(c.N, c.V, c.N * 17 + c.V);
    std::vector<float> x(xd.size()), Wf(Wd.size());
    std::vector<bf16_t> Wb(Wd.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = bf16_to_f32_ref(f32_to_bf16_ref(float(xd[i])));
    for (size_t i = 0; i < Wb.size(); ++i) {
      Wb[i] = f32_to_bf16_ref(float(Wd[i]));
      Wf[i] = bf16_to_f32_ref(Wb[i]);
    }
    const float zc = 1e-2f, gs = 0.25f;
    std::vector<double> rdx(x.size()), rdW(dW0.begin(), dW0.end());
    std::vector<double> xr(x.begin(), x.end()), Wr(Wf.begin(), Wf.end());
    LossSums ref = lm_head_loss_ref<double>(xr.data(), Wr.data(), t.data(), c.N, c.D, c.V, zc,
                                            gs, rdx.data(), rdW.data());
    SCOPED_TRACE(olmo::cat("N", c.N, " D", c.D, " V", c.V, " chunk", c.chunk));
    std::vector<float> dx(x.size(), NAN), dW = to<float>(dW0);
    LossSums r = lm_head_loss_bf16(x.data(), Wb.data(), t.data(), c.N, c.D, c.V, zc, gs,
                                   dx.data(), dW.data(), c.chunk);
    EXPECT_EQ(r.count, ref.count);
    EXPECT_NEAR(r.ce_sum, ref.ce_sum, 1e-5 * std::fabs(ref.ce_sum));
    EXPECT_NEAR(r.z_sum, ref.z_sum, 1e-5 * std::fabs(ref.z_sum));
    // dW is compared as the increment over dW0 (the accumulated base would hide the error).
    std::vector<double> inc(dW.size()), rinc(dW.size());
    for (size_t i = 0; i < dW.size(); ++i) inc[i] = dW[i] - dW0[i], rinc[i] = rdW[i] - dW0[i];
    EXPECT_LT(rel_l2(dx, rdx), 2.0 / 512);
    EXPECT_LT(rel_l2(inc, rinc), 2.0 / 512);
    std::vector<int32_t> bad = t;
    bad[2] = int32_t(c.V);
    try {
      lm_head_loss_bf16(x.data(), Wb.data(), bad.data(), c.N, c.D, c.V, zc, gs, nullptr,
                        nullptr);
      ADD_FAILURE() << "no error for target V";
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("lm_head_loss_bf16: target[2]"), std::string::npos)
          << e.what();
    }
  }
}

// Central differences of grad_scale * (ce_sum + z_coef * z_sum) w.r.t. x and W, in double.
TEST(LmHeadLoss, ReferenceGradientCheck) {
  const int64_t N = 5, D = 3, V = 7;
  const std::vector<int32_t> t = {2, olmo::kIgnoreIndex, 6, 0, 2};
  const double zc = 0.1, gs = 0.7;
  std::vector<double> p = randn(N * D + V * D, 9, 1.5);
  auto f = [&](const std::vector<double>& p) {
    LossSums r = lm_head_loss_ref<double>(p.data(), p.data() + N * D, t.data(), N, D, V, zc, gs,
                                          nullptr, nullptr);
    return gs * (r.ce_sum + zc * r.z_sum);
  };
  std::vector<double> num = numeric_grad(f, p);
  std::vector<double> ana(p.size(), 0.0);
  LossSums r = lm_head_loss_ref<double>(p.data(), p.data() + N * D, t.data(), N, D, V, zc, gs,
                                        ana.data(), ana.data() + N * D);
  EXPECT_EQ(r.count, 4);
  EXPECT_LT(olmo::testing::max_scaled_err(ana, num, 1e-6, 1e-8), 1.0);
}

// Known values: with W = 0 every logit is 0, so lse = log V, ce = log V per row, z = (log V)^2.
TEST(LmHeadLoss, ZeroWeightsGiveLogV) {
  const int64_t N = 4, D = 8, V = 300;
  std::vector<float> x(N * D, 1.0f), W(V * D, 0.0f);
  std::vector<int32_t> t = {0, 5, olmo::kIgnoreIndex, 299};
  LossSums r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f, nullptr, nullptr);
  EXPECT_EQ(r.count, 3);
  EXPECT_NEAR(r.ce_sum, 3 * std::log(300.0), 1e-5);
  EXPECT_NEAR(r.z_sum, 3 * std::log(300.0) * std::log(300.0), 1e-4);
}

TEST(LmHeadLoss, AllIgnored) {
  const int64_t N = 3, D = 4, V = 10;
  std::vector<float> x(N * D, 1.0f), W(V * D, 0.5f), dx(N * D, NAN), dW(V * D, 2.0f);
  std::vector<int32_t> t(N, olmo::kIgnoreIndex);
  LossSums r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f, dx.data(),
                            dW.data());
  EXPECT_EQ(r.count, 0);
  EXPECT_EQ(r.ce_sum, 0.0);
  for (float v : dx) EXPECT_EQ(v, 0.0f);
  for (float v : dW) EXPECT_EQ(v, 2.0f);
}

TEST(LmHeadLoss, BadTargetThrows) {
  const int64_t N = 3, D = 4, V = 10;
  std::vector<float> x(N * D, 1.0f), W(V * D, 0.5f);
  for (int32_t bad : {10, -1, -101}) {
    std::vector<int32_t> t = {1, bad, 2};
    try {
      lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f, nullptr, nullptr);
      ADD_FAILURE() << "no error for target " << bad;
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("target[1]"), std::string::npos) << e.what();
    }
  }
}

namespace {
template <class T>
std::vector<T> read_raw(const std::string& path, size_t n) {
  std::vector<T> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(T)));
  EXPECT_TRUE(bool(f)) << "short read " << path;
  return v;
}
}  // namespace

// OLMo-core oracle: ce and z-loss with reduction "sum" and z_loss_multiplier 1e-5, gradients of
// (ce + z) / count; we pass z_coef = 1e-5 and grad_scale = 1 / count.
TEST(LmHeadLoss, MatchesOlmoCore) {
  const char* py = std::getenv("OLMO_PYTHON");
  if (!py || !std::filesystem::exists(py)) GTEST_SKIP() << "OLMO_PYTHON not set (run via ctest)";
  const char* src = std::getenv("OLMO_SOURCE_DIR");
  const std::string script = std::string(src ? src : OLMO_SOURCE_DIR) +
                             "/tests/kernels/loss_olmo_core.py";
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("olmo_loss_oracle_" + std::to_string(getpid())))
          .string();
  const std::string cmd = std::string(py) + " " + script + " " + dir + " > " + dir + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  int64_t N = 0, D = 0, V = 0;
  std::ifstream(dir + "/shape.txt") >> N >> D >> V;
  ASSERT_GT(N * D * V, 0);
  auto x = read_raw<float>(dir + "/x.f32", N * D), W = read_raw<float>(dir + "/W.f32", V * D);
  auto t = read_raw<int32_t>(dir + "/targets.i32", N);
  auto sums = read_raw<double>(dir + "/sums.f64", 3);
  auto rdx = read_raw<double>(dir + "/dx.f64", N * D), rdW = read_raw<double>(dir + "/dW.f64", V * D);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".log");
  for (olmo::Isa isa : isas()) {
    olmo::set_isa_override(isa);
    SCOPED_TRACE(olmo::isa_name(isa));
    std::vector<float> dx(N * D), dW(V * D, 0.0f);
    LossSums r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f,
                              1.0f / float(sums[2]), dx.data(), dW.data(), 16);
    EXPECT_EQ(double(r.count), sums[2]);
    EXPECT_NEAR(r.ce_sum, sums[0], 2e-6 * std::fabs(sums[0]));
    EXPECT_NEAR(1e-5 * r.z_sum, sums[1], 2e-6 * std::fabs(sums[1]));
    EXPECT_LT(rel_l2(dx, rdx), 1e-5);
    EXPECT_LT(rel_l2(dW, rdW), 1e-5);
  }
  olmo::clear_isa_override();
}
