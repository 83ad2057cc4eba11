// gemm_micro's public entries (contract in gemm_micro.h): the loop nest over kc / nc / mc blocks,
// packing, threads and ISA dispatch, one driver for fp32 and bf16 inputs. The tile and the
// packing loops are gemm_micro_body.h (its
// scalar copy is compiled here).
#include "kernels/gemm_micro.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/scratch.h"
#include "kernels/dispatch.h"
#include "kernels/gemm_args.h"
#include "kernels/gemm_bf16_native.h"
#include "kernels/gemm_micro_body.h"

namespace olmo::kernels {

namespace {
constexpr int64_t kMR = 6;
}

int64_t gemm_micro_nr() { return OLMO_DISPATCH(micro_nr)(); }

namespace {
using MacroFn = void (*)(int64_t, int64_t, int64_t, const float*, const float*, float, float, bool,
                         float*, int64_t);

// One register-tile path: its NR, its tile loop (micro_macro or a bf16 dot one) and how deep a
// packed block of kc depth steps is, in floats per row or column: kc (fp32), kc rounded up to
// even (the emulated VDPBF16PS), or its pairs (the native one, a bf16 pair per float).
struct Path {
  int64_t nr;
  MacroFn macro;
  enum Depth { steps, even, pairs } depth;
  int64_t packed(int64_t kc) const {
    return depth == steps ? kc : depth == even ? kc + (kc & 1) : (kc + 1) / 2;
  }
};

// The driver for both input types: T = float (micro_pack_*) or bf16_t (micro_pack_*_dot /
// gemm_dot_pack_*: VDPBF16PS's operands, emulated or native).
// Loop nest: for each nc-wide column panel, for each group of kc blocks: all threads pack the
// group's B panels together, one barrier, then each thread runs its rows' mc blocks through the
// group's kc blocks in K order. A group is one kc block, or the whole depth when its packed
// panels fit the panel budget of the blocking (kc x nc floats: a short K, e.g. a weight
// gradient over a few hundred tokens): then each C block takes all its kc blocks while it is in
// cache instead of one pass over C per kc block. The B panels alternate between two buffers, so
// a thread may pack group g + 1 while others still compute group g (it passed the barrier
// after group g's packing, which every thread reached after computing group g - 1, the
// buffer's previous user): one barrier per group. None of this changes an element's order:
// its kc blocks still go into C one by one in K order (the bits depend on kc only).
template <class In, class PackA, class PackB>
void drive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const In* A,
           const In* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc,
           const GemmMicroBlocking& blk, PackA pack_a, PackB pack_b, const Path& path) {
  OLMO_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_micro: negative size");
  OLMO_CHECK(blk.kc > 0 && blk.mc > 0 && blk.nc > 0, "gemm_micro: bad blocking");
  OLMO_CHECK(path.depth == Path::steps || blk.kc % 2 == 0, "gemm_micro_bf16: kc = ", blk.kc,
             " must be even (whole bf16 pairs per block)");
  if (gemm_args_done(ta, tb, M, N, K, beta, C, lda, ldb, ldc)) return;
  const int64_t NR = path.nr;
  const int64_t kc = std::min(blk.kc, K), kcp = path.packed(kc);
  const int64_t mc = (std::min(blk.mc, M) + kMR - 1) / kMR * kMR;
  const int64_t nc = (std::min(blk.nc, N) + NR - 1) / NR * NR;
  const int64_t slivers = (M + kMR - 1) / kMR;
  // The kc blocks: depth offset, depth, packed depth, offset of its panel in a group's buffer.
  struct KBlock { int64_t pc, kcur, kp, off; };
  std::vector<KBlock> kb;
  int64_t depth_all = 0;  // packed depth of all blocks
  for (int64_t pc = 0; pc < K; pc += kc) {
    const int64_t kcur = std::min(kc, K - pc), kp = path.packed(kcur);
    kb.push_back({pc, kcur, kp, depth_all * nc});
    depth_all += kp;
  }
  const bool whole = depth_all * nc <= path.packed(blk.kc) * blk.nc;  // one group
  const int64_t nblk = int64_t(kb.size()), group = whole ? nblk : 1;
  const int64_t panel = (whole ? depth_all : kcp) * nc;
  if (!whole)
    for (KBlock& b : kb) b.off = 0;
  int64_t nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  nt = std::max<int64_t>(1, std::min(nt, slivers));
  const int64_t groups = (N + nc - 1) / nc * (nblk / group);
  float* Bp = scratch<float>(Scratch::gemm_pack_b, groups > 1 ? 2 * panel : panel);
#pragma omp parallel num_threads(int(nt))
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    float* Ap = scratch<float>(Scratch::gemm_pack_a, mc * kcp);
    const int64_t m0 = slivers * t / T * kMR, m1 = std::min(M, slivers * (t + 1) / T * kMR);
    int64_t it = 0;  // group count: the buffer parity
    for (int64_t jc = 0; jc < N; jc += nc) {
      const int64_t ncur = std::min(nc, N - jc), nsl = (ncur + NR - 1) / NR;
      for (int64_t g0 = 0; g0 < nblk; g0 += group, ++it) {
        float* buf = Bp + (it & 1) * panel;
        {  // this thread's share of the group's slivers, then wait for the whole panels
          const int64_t s0 = nsl * t / T, s1 = nsl * (t + 1) / T;
          if (s1 > s0)
            for (int64_t q = g0; q < g0 + group; ++q)
              pack_b(tb, B, ldb, kb[q].pc, kb[q].kcur, jc + s0 * NR,
                     std::min(ncur, s1 * NR) - s0 * NR, buf + kb[q].off + s0 * NR * kb[q].kp);
        }
#pragma omp barrier
        for (int64_t ic = m0; ic < m1; ic += mc) {
          const int64_t mcur = std::min(mc, m1 - ic);
          for (int64_t q = g0; q < g0 + group; ++q) {
            pack_a(ta, A, lda, ic, mcur, kb[q].pc, kb[q].kcur, Ap);
            path.macro(mcur, ncur, kb[q].kp, Ap, buf + kb[q].off, alpha, beta, kb[q].pc == 0,
                       C + ic * ldc + jc, ldc);
          }
        }
      }
    }
  }
}
}  // namespace

void gemm_micro(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc,
                const GemmMicroBlocking& blk) {
  drive(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, blk, OLMO_DISPATCH(micro_pack_a),
        OLMO_DISPATCH(micro_pack_b), Path{gemm_micro_nr(), OLMO_DISPATCH(micro_macro), Path::steps});
}

void gemm_micro_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda,
                     int64_t ldb, int64_t ldc, const GemmMicroBlocking& blk) {
  if (cpu_has_bf16()) {
    drive(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, blk,
          isa_avx512bf16::gemm_dot_pack_a, isa_avx512bf16::gemm_dot_pack_b,
          Path{isa_avx512bf16::gemm_dot_nr(), isa_avx512bf16::gemm_dot_macro, Path::pairs});
  } else {
    drive(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, blk,
          OLMO_DISPATCH(micro_pack_a_dot), OLMO_DISPATCH(micro_pack_b_dot),
          Path{gemm_micro_nr(), OLMO_DISPATCH(micro_macro_dot), Path::even});
  }
}

}  // namespace olmo::kernels
