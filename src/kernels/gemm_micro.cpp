// gemm_micro's public entries (contract in gemm_micro.h): the loop nest over kc / nc / mc blocks,
// packing, threads and ISA dispatch, one driver for fp32 and bf16 inputs. The tile and the
// packing loops are gemm_micro_body.h (its
// scalar copy is compiled here).
#include "kernels/gemm_micro.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/scratch.h"
#include "kernels/dispatch.h"
#include "kernels/gemm_args.h"
#include "kernels/gemm_micro_body.h"

namespace olmo::kernels {

namespace {
constexpr int64_t kMR = 6;
}

int64_t gemm_micro_nr() { return OLMO_DISPATCH(micro_nr)(); }

namespace {
// The driver for both input types: T = float (micro_pack_*) or bf16_t (micro_pack_*_bf16,
// widened while packed); the tiles see fp32 either way.
template <class In, class PackA, class PackB>
void drive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const In* A,
           const In* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc,
           const GemmMicroBlocking& blk, PackA pack_a, PackB pack_b) {
  OLMO_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_micro: negative size");
  OLMO_CHECK(blk.kc > 0 && blk.mc > 0 && blk.nc > 0, "gemm_micro: bad blocking");
  if (gemm_args_done(ta, tb, M, N, K, beta, C, lda, ldb, ldc)) return;
  const int64_t NR = gemm_micro_nr();
  const auto macro = OLMO_DISPATCH(micro_macro);
  const int64_t kc = std::min(blk.kc, K);
  const int64_t mc = (std::min(blk.mc, M) + kMR - 1) / kMR * kMR;
  const int64_t nc = (std::min(blk.nc, N) + NR - 1) / NR * NR;
  const int64_t slivers = (M + kMR - 1) / kMR;
  int64_t nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  nt = std::max<int64_t>(1, std::min(nt, slivers));
  float* Bp = scratch<float>(Scratch::gemm_pack_b, kc * nc);
#pragma omp parallel num_threads(int(nt))
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    float* Ap = scratch<float>(Scratch::gemm_pack_a, mc * kc);
    const int64_t m0 = slivers * t / T * kMR, m1 = std::min(M, slivers * (t + 1) / T * kMR);
    for (int64_t jc = 0; jc < N; jc += nc) {
      const int64_t ncur = std::min(nc, N - jc), nsl = (ncur + NR - 1) / NR;
      for (int64_t pc = 0; pc < K; pc += kc) {
        const int64_t kcur = std::min(kc, K - pc);
        {  // this thread's share of the panel's slivers, then wait for the whole panel
          const int64_t s0 = nsl * t / T, s1 = nsl * (t + 1) / T;
          if (s1 > s0)
            pack_b(tb, B, ldb, pc, kcur, jc + s0 * NR, std::min(ncur, s1 * NR) - s0 * NR,
                   Bp + s0 * NR * kcur);
        }
#pragma omp barrier
        for (int64_t ic = m0; ic < m1; ic += mc) {
          const int64_t mcur = std::min(mc, m1 - ic);
          pack_a(ta, A, lda, ic, mcur, pc, kcur, Ap);
          macro(mcur, ncur, kcur, Ap, Bp, alpha, beta, pc == 0, C + ic * ldc + jc, ldc);
        }
#pragma omp barrier
      }
    }
  }
}
}  // namespace

void gemm_micro(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc,
                const GemmMicroBlocking& blk) {
  drive(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, blk, OLMO_DISPATCH(micro_pack_a),
        OLMO_DISPATCH(micro_pack_b));
}

void gemm_micro_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda,
                     int64_t ldb, int64_t ldc, const GemmMicroBlocking& blk) {
  drive(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, blk,
        OLMO_DISPATCH(micro_pack_a_bf16), OLMO_DISPATCH(micro_pack_b_bf16));
}

}  // namespace olmo::kernels
