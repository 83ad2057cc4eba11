// Probe (not a test): is Intel AMX's TDPBF16PS the arithmetic of the invariant bf16 kernels?
//
// olmo.cpp's bf16_mixed GEMMs compute in VDPBF16PS's arithmetic (docs/invariance.md): per fp32
// output, the k pairs in order, each pair odd element first, each product fused into the sum
// with one round-to-nearest-even, denormal inputs read as zero and results flushed to zero.
// If one TDPBF16PS (a 16 x 16 fp32 tile += 16 x 32 bf16 times 32 x 16 bf16, i.e. 16 pairs per
// output) gave those bits, an AMX GEMM could join the invariant path at several times the speed.
// This probe runs the instruction on seeded random tiles and counts, per output element, the
// agreement with candidate models of its arithmetic:
//   seq_odd    the VDPBF16PS sequence above (what the invariant kernels compute)
//   seq_even   the same with the even element of each pair first
//   exact_rne  acc + all 32 products summed exactly, one round-to-nearest-even at the end
//   within_1   |result - exact_rne| <= 1 ulp (how close it is, whatever the model)
// Any model short of 100% cannot be the instruction's arithmetic. Inputs: normal bf16 values of
// a standard normal (no denormals / specials, so DAZ / FTZ play no part).
//
// Usage: build/tests/bench_amx_bf16_probe [tiles]   (default 20000; exit 0, or 2 without AMX).
// Figures: docs/invariance.md ("AMX"). Cost: ~1 s per 20,000 tiles.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace {

constexpr int kRows = 16, kPairs = 16;  // one tile: 16 x 16 fp32 outputs, K = 32 (16 pairs)

float bf(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint16_t to_bf16_trunc(float f) { return uint16_t(bits(f) >> 16); }

// The tile configuration of palette 1 (Intel SDM, LDTILECFG: 64 bytes).
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// C[16][16] fp32 += A[16][32] bf16 x B (16 pair rows x 16 columns x 2), through tmm0..tmm2.
__attribute__((target("amx-tile,amx-bf16"))) void tile_dot(const uint16_t* A, const uint16_t* B,
                                                           float* C) {
  TileConfig cfg;
  for (int t = 0; t < 3; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  _tile_loadd(0, C, 64);
  _tile_loadd(1, A, 64);
  _tile_loadd(2, B, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, C, 64);
  _tile_release();
}

// Linux gives a process AMX's tile data only on request (arch_prctl ARCH_REQ_XCOMP_PERM).
bool request_amx() {
  const long kArchReqXcompPerm = 0x1023, kXfeatureTileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long tiles = argc > 1 ? std::atol(argv[1]) : 20000;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("amx-bf16")) {
    std::printf("AMX-BF16: not on this CPU; nothing probed\n");
    return 2;
  }
  if (!request_amx()) {
    std::printf("AMX-BF16: the kernel refused the tile state (arch_prctl); nothing probed\n");
    return 2;
  }
  std::mt19937_64 rng(46);
  std::normal_distribution<float> normal;
  long n = 0, seq_odd = 0, seq_even = 0, exact_rne = 0, within_1 = 0;
  for (long t = 0; t < tiles; ++t) {
    uint16_t A[kRows * 2 * kPairs], B[kPairs * 2 * kRows];
    float C[kRows * kRows], C0[kRows * kRows];
    for (auto& a : A) a = to_bf16_trunc(normal(rng));
    for (auto& b : B) b = to_bf16_trunc(normal(rng));
    for (int i = 0; i < kRows * kRows; ++i) C[i] = C0[i] = normal(rng);
    tile_dot(A, B, C);
    for (int m = 0; m < kRows; ++m)
      for (int j = 0; j < kRows; ++j) {
        float odd = C0[m * kRows + j], even = odd;
        long double exact = odd;  // 64-bit mantissa: exact for these inputs' exponent range
        for (int k = 0; k < kPairs; ++k) {
          const float a0 = bf(A[m * 2 * kPairs + 2 * k]), a1 = bf(A[m * 2 * kPairs + 2 * k + 1]);
          const float b0 = bf(B[k * 2 * kRows + 2 * j]), b1 = bf(B[k * 2 * kRows + 2 * j + 1]);
          odd = std::fma(a0, b0, std::fma(a1, b1, odd));
          even = std::fma(a1, b1, std::fma(a0, b0, even));
          exact += (long double)a0 * b0 + (long double)a1 * b1;
        }
        const float got = C[m * kRows + j], rne = float(exact);
        ++n;
        seq_odd += bits(got) == bits(odd);
        seq_even += bits(got) == bits(even);
        exact_rne += bits(got) == bits(rne);
        within_1 += std::labs(long(bits(got)) - long(bits(rne))) <= 1;
      }
  }
  auto pct = [n](long c) { return 100.0 * double(c) / double(n); };
  std::printf("TDPBF16PS, %ld outputs (%ld tiles of 16 x 16, 16 bf16 pairs each):\n", n, tiles);
  std::printf("  seq_odd   (the invariant kernels' arithmetic) %9ld  %6.2f%%\n", seq_odd, pct(seq_odd));
  std::printf("  seq_even                                      %9ld  %6.2f%%\n", seq_even, pct(seq_even));
  std::printf("  exact_rne (one rounding)                      %9ld  %6.2f%%\n", exact_rne, pct(exact_rne));
  std::printf("  within 1 ulp of exact_rne                     %9ld  %6.2f%%\n", within_1, pct(within_1));
  return 0;
}
