// The exact arithmetic of VDPBF16PS (AVX512_BF16), checked against this CPU's instruction, for
// an exact emulation (issue 46 item 3, docs/invariance.md). Per fp32 lane j, with bf16 pairs
// a = (a0, a1) = src1.bf16[2j, 2j+1], b likewise and acc = srcdest.fp32[j]:
//   acc = FTZ(fma(DAZ(a1), DAZ(b1), DAZ(acc)));  acc = FTZ(fma(DAZ(a0), DAZ(b0), acc))
// i.e. the odd pair first, each product fused into the sum (one rounding to nearest even per
// pair), denormal inputs read as zero and denormal results flushed to zero (sign kept). The
// unfused order (product, then add) and the even-pair-first order are shown to differ, so the
// test would see either. 3.2 M random lanes: normal values over a wide exponent range,
// denormals, infinities, NaN (any NaN matches any NaN: payloads not compared) and accumulators
// that cancel the pair sum. Measured on AMD Zen 4; on a CPU without AVX512_BF16 it is announced
// as not run.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "core/cpu.h"
#include "kernels/bf16_bits.h"
#include "kernels/isa_util.h"

using olmo::testing::bf;
using olmo::testing::bits;
using olmo::testing::f32;
using olmo::testing::flush;

namespace {

// The candidate emulations of one lane.
float fused_odd_first(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  acc = flush(std::fma(flush(bf(a1)), flush(bf(b1)), flush(acc)));
  return flush(std::fma(flush(bf(a0)), flush(bf(b0)), acc));
}
float unfused_odd_first(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  volatile float p1 = flush(flush(bf(a1)) * flush(bf(b1)));
  acc = flush(flush(acc) + p1);
  volatile float p0 = flush(flush(bf(a0)) * flush(bf(b0)));
  return flush(acc + p0);
}
float fused_even_first(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  return fused_odd_first(acc, a1, a0, b1, b0);
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void dpbf16(const float* acc,
                                                                  const uint16_t* a,
                                                                  const uint16_t* b, float* out) {
  const __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a),
                                    (__m512bh)_mm512_loadu_si512(b));
  _mm512_storeu_ps(out, r);
}

bool same(float p, float q) { return (std::isnan(p) && std::isnan(q)) || bits(p) == bits(q); }

}  // namespace

TEST(Bf16DotSemantics, VdpBf16PsIsFusedOddPairFirstWithDazFtz) {
  if (!olmo::cpu_has_avx512_bf16()) {
    olmo::testing::not_run("VDPBF16PS against its emulation", "this CPU lacks AVX512_BF16");
    return;
  }
  std::mt19937 rng(1);
  auto rb = [&]() -> uint16_t {
    const uint32_t k = rng() % 16;
    const uint16_t h = uint16_t(rng());
    if (k == 0) return uint16_t(h & 0x807f);                    // denormal or zero
    if (k == 1) return uint16_t((h & 0x8000) | 0x7f80);         // +-inf
    if (k == 2) return uint16_t(0x7fc1);                        // NaN
    if (k < 8) return uint16_t((h & 0x8000) | ((rng() % 30 + 113) << 7) | (h & 0x7f));
    return h;                                                   // any bits
  };
  long lanes = 0, miss_fused = 0, miss_unfused = 0, miss_even = 0;
  for (int it = 0; it < 200000; ++it) {
    uint16_t a[32], b[32];
    float acc[16], out[16];
    for (int i = 0; i < 32; ++i) a[i] = rb(), b[i] = rb();
    for (int j = 0; j < 16; ++j) {
      const uint32_t k = rng() % 8;
      float x = f32(rng());
      if (k < 5) x = f32((rng() & 0x80000000u) | ((rng() % 40 + 100) << 23) | (rng() & 0x7fffff));
      if (k == 5) x = f32(rng() & 0x807fffffu);  // denormal accumulator
      if (k == 6) x = -(bf(a[2 * j]) * bf(b[2 * j]) + bf(a[2 * j + 1]) * bf(b[2 * j + 1]));
      acc[j] = x;
    }
    dpbf16(acc, a, b, out);
    for (int j = 0; j < 16; ++j) {
      ++lanes;
      const uint16_t a0 = a[2 * j], a1 = a[2 * j + 1], b0 = b[2 * j], b1 = b[2 * j + 1];
      const float want = fused_odd_first(acc[j], a0, a1, b0, b1);
      if (!same(out[j], want)) {
        if (miss_fused < 5)
          ADD_FAILURE() << std::hexfloat << "acc " << acc[j] << " a " << bf(a0) << ", " << bf(a1)
                        << " b " << bf(b0) << ", " << bf(b1) << ": VDPBF16PS " << out[j]
                        << ", emulation " << want;
        ++miss_fused;
      }
      miss_unfused += !same(out[j], unfused_odd_first(acc[j], a0, a1, b0, b1));
      miss_even += !same(out[j], fused_even_first(acc[j], a0, a1, b0, b1));
    }
  }
  std::printf("%ld lanes: mismatches fused odd-first %ld, unfused odd-first %ld, fused "
              "even-first %ld\n", lanes, miss_fused, miss_unfused, miss_even);
  EXPECT_EQ(miss_fused, 0);
  EXPECT_GT(miss_unfused, 0) << "the inputs do not tell fused from unfused";
  EXPECT_GT(miss_even, 0) << "the inputs do not tell the pair order";
}
