// gemm_micro_bf16 (gemm_micro.h: VDPBF16PS's arithmetic, native or emulated) against a plain
// reference of that arithmetic written here from its definition (per C element and kc block:
// odd depth element first, each product fused, denormal bf16 inputs read as zero, denormal sums
// flushed to zero; the definition checked against the instruction by
// kernels_bf16_dot_semantics): bit for bit on every ISA this CPU has, natively (AVX512_BF16) and
// emulated on AVX-512 (set_bf16_native_override(0)), AVX2 and scalar, with 1 and 3 threads.
// All transposes, odd sizes (edge tiles, odd depth: a padded pair), small blockings, alpha /
// beta, ld strides, planted denormal inputs and sums that underflow. Also: gemm_bf16 runs it,
// and its bits differ from gemm_micro's on the widened matrices (the order is visible).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/bf16_bits.h"
#include "kernels/gemm.h"
#include "kernels/gemm_micro.h"
#include "kernels/isa_util.h"

using olmo::kernels::bf16_t;
using olmo::kernels::GemmMicroBlocking;
using olmo::testing::bf;
using olmo::testing::bits;
using olmo::testing::flush;

namespace {

float in(bf16_t h) { return flush(bf(h)); }

// The definition, one element at a time.
void dot_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16_t* A,
             const bf16_t* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc,
             int64_t kc) {
  auto a = [&](int64_t i, int64_t p) { return in(ta ? A[p * lda + i] : A[i * lda + p]); };
  auto b = [&](int64_t p, int64_t j) { return in(tb ? B[j * ldb + p] : B[p * ldb + j]); };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float& c = C[i * ldc + j];
      for (int64_t p0 = 0; p0 < K; p0 += kc) {
        const int64_t p1 = std::min(K, p0 + kc);
        float acc = 0.0f;
        for (int64_t p = p0; p < p1; p += 2) {
          const float a1 = p + 1 < p1 ? a(i, p + 1) : 0.0f, b1 = p + 1 < p1 ? b(p + 1, j) : 0.0f;
          acc = flush(std::fma(a1, b1, acc));
          acc = flush(std::fma(a(i, p), b(p, j), acc));
        }
        if (p0 > 0) c = std::fma(alpha, acc, c);
        else if (beta == 0.0f) c = alpha * acc;
        else c = std::fma(alpha, acc, beta * c);
      }
    }
}

struct Case {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  std::vector<bf16_t> A, B;
  std::vector<float> C;
};

// Random bf16 operands (pad extra columns per row), a few denormals and zeros planted; tiny:
// magnitudes near 2^-64, so products and sums fall below 2^-126 and get flushed.
Case make_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int pad, bool tiny,
               uint32_t seed) {
  Case c{ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto fill = [&](std::vector<bf16_t>& x, size_t n) {
    x.resize(n);
    for (auto& h : x) {
      const uint32_t k = rng() % 64;
      if (k == 0) h = bf16_t(rng() & 0x807f);  // denormal or zero
      else h = olmo::kernels::f32_to_bf16_ref(nd(rng) * (tiny ? 0x1p-64f : 1.0f));
    }
  };
  fill(c.A, size_t((ta ? K : M) * c.lda));
  fill(c.B, size_t((tb ? N : K) * c.ldb));
  c.C.resize(size_t(M * c.ldc));
  for (auto& x : c.C) x = nd(rng);
  return c;
}

std::string where(const Case& c, float alpha, float beta, const GemmMicroBlocking& blk) {
  return "ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " M=" +
         std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) +
         " kc=" + std::to_string(blk.kc) + " mc=" + std::to_string(blk.mc) +
         " nc=" + std::to_string(blk.nc);
}

// Every path this CPU can run: (name, ISA, native VDPBF16PS allowed).
struct Path {
  std::string name;
  olmo::Isa isa;
  bool native;
};
std::vector<Path> paths() {
  std::vector<Path> v;
  for (olmo::Isa isa : olmo::testing::isas()) {
    v.push_back({std::string(olmo::isa_name(isa)) + " emulated", isa, false});
    if (isa == olmo::Isa::avx512) {
      if (olmo::cpu_has_avx512_bf16())
        v.push_back({"avx512 native", isa, true});
      else
        olmo::testing::not_run("gemm_micro_bf16 on VDPBF16PS", "this CPU lacks AVX512_BF16");
    }
  }
  return v;
}

struct PathGuard {
  explicit PathGuard(const Path& p) {
    olmo::set_isa_override(p.isa);
    olmo::kernels::set_bf16_native_override(p.native ? -1 : 0);
  }
  ~PathGuard() {
    olmo::clear_isa_override();
    olmo::kernels::set_bf16_native_override(-1);
  }
};

}  // namespace

TEST(GemmBf16Dot, EveryPathIsTheDefinitionBitForBit) {
  const int nt0 = omp_get_max_threads();
  for (const Path& path : paths()) {
    PathGuard guard(path);
    EXPECT_EQ(olmo::kernels::cpu_has_bf16(), path.native) << path.name;
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{13, 70, 601}, {1, 1, 1},
                             {7, 129, 3}, {40, 64, 256}, {6, 65, 513}}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, {1.0f, 0.0f}, {0.5f, -2.0f}}) {
            for (const GemmMicroBlocking& blk :
                 {GemmMicroBlocking{}, GemmMicroBlocking{8, 12, 70}}) {
              if (threads > 1 && blk.kc < 256) continue;  // its barriers: minutes on a loaded CPU
              for (bool tiny : {false, true}) {
                Case c = make_case(ta, tb, M, N, K, t == 3 ? 3 : 0, tiny,
                                   uint32_t(M * 7 + N + K + t));
                std::vector<float> got = c.C, want = c.C;
                olmo::kernels::gemm_micro_bf16(ta, tb, M, N, K, alpha, c.A.data(), c.B.data(),
                                               beta, got.data(), c.lda, c.ldb, c.ldc, blk);
                dot_ref(ta, tb, M, N, K, alpha, c.A.data(), c.B.data(), beta, want.data(),
                        c.lda, c.ldb, c.ldc, std::min<int64_t>(blk.kc, K));
                size_t bad = 0, first = 0;
                for (size_t i = 0; i < got.size(); ++i)
                  if (bits(got[i]) != bits(want[i]) && !bad++) first = i;
                EXPECT_EQ(bad, 0u) << path.name << " x" << threads << " "
                                   << where(c, alpha, beta, blk) << (tiny ? " tiny" : "")
                                   << ": first at " << first << " got " << got[first]
                                   << " want " << want[first];
              }
            }
          }
        }
      }
    }
  }
  omp_set_num_threads(nt0);
}

// gemm_bf16 is gemm_micro_bf16; the arithmetic is not gemm_micro's fp32 order on the widened
// values (so the test above would see a path that summed in that order).
TEST(GemmBf16Dot, GemmBf16RunsItAndTheOrderIsVisible) {
  Case c = make_case(false, true, 24, 40, 600, 0, false, 5);
  std::vector<float> g = c.C, d = c.C, w = c.C, aw(c.A.size()), bw(c.B.size());
  olmo::kernels::gemm_bf16(false, true, 24, 40, 600, 1.0f, c.A.data(), c.B.data(), 1.0f,
                           g.data());
  olmo::kernels::gemm_micro_bf16(false, true, 24, 40, 600, 1.0f, c.A.data(), c.B.data(), 1.0f,
                                 d.data());
  EXPECT_EQ(std::memcmp(g.data(), d.data(), g.size() * 4), 0);
  for (size_t i = 0; i < aw.size(); ++i) aw[i] = in(c.A[i]);
  for (size_t i = 0; i < bw.size(); ++i) bw[i] = in(c.B[i]);
  olmo::kernels::gemm_micro(false, true, 24, 40, 600, 1.0f, aw.data(), bw.data(), 1.0f,
                            w.data());
  EXPECT_NE(std::memcmp(d.data(), w.data(), d.size() * 4), 0);
}
