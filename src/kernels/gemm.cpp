// gemm() (gemm_micro for every call), gemm_bf16() (gemm_micro_bf16 for every call), the
// oneDNN-backed counterparts for benchmarks (gemm_onednn / gemm_bf16_onednn) and the
// references. oneDNN primitives are created once per
// (input type, ta, tb, M, N, K, lds, alpha, beta != 0) and cached; oneDNN's own primitive cache
// would also work, but keeping the primitive object avoids re-hashing descriptors on every call.
// Where oneDNN has no bf16 matmul for this CPU (Debian's oneDNN on an AVX2-only part, say),
// gemm_bf16_onednn widens A and B to fp32 (exact) and runs the fp32 matmul.
#include "kernels/gemm.h"

#include <dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "core/profile.h"
#include "kernels/scratch.h"
#include "core/timer.h"
#include "kernels/gemm_args.h"
#include "kernels/gemm_micro.h"

namespace olmo::kernels {
namespace {

struct Key {
  bool bf16, ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
  auto tie() const { return std::tie(bf16, ta, tb, M, N, K, lda, ldb, ldc, alpha, beta); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Prim {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
  std::string impl;
  bool widen = false;  // bf16 key run as fp32 on widened copies of A and B
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::map<Key, Prim> cache;  // guarded by cache_mu
std::mutex cache_mu;

// Looks k up in the cache, creating its primitive on a miss; caller holds cache_mu.
Prim& get_prim_locked(const Key& k) {
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  const dt in = k.bf16 ? dt::bf16 : dt::f32;
  dnnl::memory::desc a(dims{k.M, k.K}, in, k.ta ? dims{1, k.lda} : dims{k.lda, 1});
  dnnl::memory::desc b(dims{k.K, k.N}, in, k.tb ? dims{1, k.ldb} : dims{k.ldb, 1});
  dnnl::memory::desc c(dims{k.M, k.N}, dt::f32, dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
  if (k.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(k.beta);
    attr.set_post_ops(po);
  }
  try {
    dnnl::matmul::desc d(a, b, c);
    dnnl::matmul::primitive_desc pd(d, attr, engine());
    Prim p{dnnl::matmul(pd), a, b, c, pd.impl_info_str()};
    return cache.emplace(k, std::move(p)).first->second;
  } catch (const dnnl::error& e) {
    if (k.bf16) {  // no bf16 matmul here: the fp32 one on widened inputs
      Key kf = k;
      kf.bf16 = false;
      Prim p = get_prim_locked(kf);
      p.widen = true;
      p.impl = "fp32 on widened bf16 (" + p.impl + ")";
      return cache.emplace(k, std::move(p)).first->second;
    }
    throw Error(cat("oneDNN has no f32 matmul for M=", k.M, " N=", k.N, " K=", k.K,
                    k.ta ? " A^T" : "", k.tb ? " B^T" : "", " lda=", k.lda, " ldb=", k.ldb,
                    " ldc=", k.ldc, ": ", e.what()));
  }
}

Prim& get_prim(const Key& k) {
  std::lock_guard<std::mutex> lock(cache_mu);
  return get_prim_locked(k);
}

// Widens the rows x cols block of x (row stride ld) to fp32 in scratch slot `slot` (same
// layout). Cost: rows * cols conversions, against the gemm's M * N * K.
const float* widen(Scratch slot, const bf16_t* x, int64_t rows, int64_t cols, int64_t ld) {
  float* y = scratch<float>(slot, rows * ld);
  if (ld == cols) {
    bf16_to_f32(x, y, rows * cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) bf16_to_f32(x + r * ld, y + r * ld, cols);
  }
  return y;
}

// Shared body of gemm / gemm_bf16 (T = float or bf16_t).
template <class T>
void run(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
         const T* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  if (gemm_args_done(ta, tb, M, N, K, beta, C, lda, ldb, ldc)) return;
  Key key{bf16, ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  Prim& p = get_prim(key);
  static thread_local dnnl::stream stream(engine());
  void* a = const_cast<T*>(A);
  void* b = const_cast<T*>(B);
  if constexpr (std::is_same_v<T, bf16_t>) {
    if (p.widen) {
      a = const_cast<float*>(widen(Scratch::gemm_a, A, ta ? K : M, ta ? M : K, lda));
      b = const_cast<float*>(widen(Scratch::gemm_b, B, tb ? N : K, tb ? K : N, ldb));
    }
  }
  dnnl::memory ma(p.a, engine(), a);
  dnnl::memory mb(p.b, engine(), b);
  dnnl::memory mc(p.c, engine(), C);
  p.prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  stream.wait();
}

template <class T, class Load>
void run_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
             const T* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc, Load ld) {
  if (!lda) lda = ta ? M : K;
  if (!ldb) ldb = tb ? K : N;
  if (!ldc) ldc = N;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t p = 0; p < K; ++p) {
        double a = ld(ta ? A[p * lda + i] : A[i * lda + p]);
        double b = ld(tb ? B[j * ldb + p] : B[p * ldb + j]);
        s += a * b;
      }
      double prev = beta == 0.0f ? 0.0 : static_cast<double>(beta) * C[i * ldc + j];
      C[i * ldc + j] = static_cast<float>(alpha * s + prev);
    }
}

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  OLMO_PROFILE_SHAPE("gemm", M, N, K, 2.0 * double(M) * double(N) * double(K));
  gemm_micro(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc);
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16_t* A,
               const bf16_t* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  OLMO_PROFILE_SHAPE("gemm_bf16", M, N, K, 2.0 * double(M) * double(N) * double(K));
  gemm_micro_bf16(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc);
}

void gemm_onednn(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  run(false, ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc);
}

void gemm_bf16_onednn(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda,
                      int64_t ldb, int64_t ldc) {
  run(true, ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc);
}

void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  run_ref(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc, [](float x) { return x; });
}

void gemm_bf16_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const bf16_t* A, const bf16_t* B, float beta, float* C, int64_t lda,
                   int64_t ldb, int64_t ldc) {
  run_ref(ta, tb, M, N, K, alpha, A, B, beta, C, lda, ldb, ldc,
          [](bf16_t x) { return bf16_to_f32_ref(x); });
}

std::string gemm_impl(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  Key key{bf16, ta, tb, M, N, K, ta ? M : K, tb ? K : N, N, 1.0f, 0.0f};
  return get_prim(key).impl;
}

GemmProbe probe_gemm_precisions(int64_t M, int64_t N, int64_t K, int reps) {
  OLMO_CHECK(M > 0 && N > 0 && K > 0 && reps > 0, "probe_gemm_precisions: bad shape");
  GemmProbe r{M, N, K, 0, 0, "gemm_micro",
              cpu_has_bf16() ? "gemm_micro_bf16 (VDPBF16PS)" : "gemm_micro_bf16 (emulated)"};
  std::vector<float> x(size_t(M * K)), w(size_t(N * K)), y(size_t(M * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) * 0.01f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 13) - 6) * 0.01f;
  std::vector<bf16_t> xb(x.size()), wb(w.size());
  f32_to_bf16(x.data(), xb.data(), int64_t(x.size()));
  f32_to_bf16(w.data(), wb.data(), int64_t(w.size()));
  const double flops = 2.0 * double(M) * double(N) * double(K);
  auto best = [&](auto&& call) { return flops / best_seconds(reps, call, now_seconds) * 1e-9; };
  // Interleaved twice so a burst of load on the shared machine does not favour one side.
  for (int round = 0; round < 2; ++round) {
    r.fp32_gflops = std::max(r.fp32_gflops, best([&] {
      gemm(false, true, M, N, K, 1.0f, x.data(), w.data(), 0.0f, y.data());
    }));
    r.bf16_gflops = std::max(r.bf16_gflops, best([&] {
      gemm_bf16(false, true, M, N, K, 1.0f, xb.data(), wb.data(), 0.0f, y.data());
    }));
  }
  return r;
}

}  // namespace olmo::kernels
