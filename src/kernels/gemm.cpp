// oneDNN-backed gemm() and its reference. Primitives are created once per
// (ta, tb, M, N, K, lds, alpha, beta != 0) and cached; oneDNN's own primitive cache would also
// work, but keeping the primitive object avoids re-hashing descriptors on every call.
#include "kernels/gemm.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>

#include "core/error.h"

namespace olmo::kernels {
namespace {

struct Key {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
  auto tie() const { return std::tie(ta, tb, M, N, K, lda, ldb, ldc, alpha, beta); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Prim {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

Prim& get_prim(const Key& k) {
  static std::map<Key, Prim> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  dnnl::memory::desc a(dims{k.M, k.K}, dt::f32, k.ta ? dims{1, k.lda} : dims{k.lda, 1});
  dnnl::memory::desc b(dims{k.K, k.N}, dt::f32, k.tb ? dims{1, k.ldb} : dims{k.ldb, 1});
  dnnl::memory::desc c(dims{k.M, k.N}, dt::f32, dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
  if (k.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(k.beta);
    attr.set_post_ops(po);
  }
  dnnl::matmul::desc d(a, b, c);
  dnnl::matmul::primitive_desc pd(d, attr, engine());
  Prim p{dnnl::matmul(pd), a, b, c};
  return cache.emplace(k, std::move(p)).first->second;
}

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (!lda) lda = ta ? M : K;
  if (!ldb) ldb = tb ? K : N;
  if (!ldc) ldc = N;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  Key key{ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  Prim& p = get_prim(key);
  static thread_local dnnl::stream stream(engine());
  dnnl::memory ma(p.a, engine(), const_cast<float*>(A));
  dnnl::memory mb(p.b, engine(), const_cast<float*>(B));
  dnnl::memory mc(p.c, engine(), C);
  p.prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  stream.wait();
}

void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              const float* B, float beta, float* C, int64_t lda, int64_t ldb, int64_t ldc) {
  if (!lda) lda = ta ? M : K;
  if (!ldb) ldb = tb ? K : N;
  if (!ldc) ldc = N;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t p = 0; p < K; ++p) {
        double a = ta ? A[p * lda + i] : A[i * lda + p];
        double b = tb ? B[j * ldb + p] : B[p * ldb + j];
        s += a * b;
      }
      double prev = beta == 0.0f ? 0.0 : static_cast<double>(beta) * C[i * ldc + j];
      C[i * ldc + j] = static_cast<float>(alpha * s + prev);
    }
}

}  // namespace olmo::kernels
