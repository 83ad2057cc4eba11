// ISA and thread-count invariance of every kernel on the training path (docs/invariance.md):
// each kernel runs on fixed random inputs under every dispatch level this CPU can execute
// (OLMO_ISA scalar / avx2 / avx512 through set_isa_override) and 1, 2 and 3 OpenMP threads, and
// every output must equal the first run's bit for bit; on a CPU with AVX512_BF16 also at avx512
// with the native bf16 kernels off (their exact emulation). bf16 kernels: gemm_micro_bf16 and
// the bf16 attention, forward and backward. Shapes are odd on purpose (tails of 1..15
// lanes past the 16-lane V16 blocks and past AVX2's 8, head dims not a multiple of 8, several
// gemm_micro kc blocks). Also: every OpenMP thread computes under the pinned MXCSR (core/cpu.h).
// Accuracy against references lives in each kernel's own test; this one checks bits only.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "kernels/bf16.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/gemm_micro.h"
#include "kernels/gradcheck.h"
#include "kernels/isa_util.h"
#include "kernels/loss.h"
#include "kernels/norm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::to;

namespace {

std::vector<float> rnd(size_t n, uint64_t seed, double scale = 1.0) {
  return to<float>(randn(n, seed, scale));
}

// Runs `f` (which fills its outputs from scratch each call and returns them as one byte string)
// under every ISA level and 1/2/3 threads, and at avx512 on a CPU with AVX512_BF16 once more with
// the native bf16 kernels turned off (set_bf16_native_override: their emulation); every run must
// return the first run's bytes.
void expect_invariant(const std::string& what, const std::function<std::string()>& f) {
  olmo::testing::IsaGuard guard;
  struct NativeReset {
    ~NativeReset() { set_bf16_native_override(-1); }
  } reset;
  const int nt0 = omp_get_max_threads();
  std::string first, first_at;
  for (olmo::Isa isa : olmo::testing::isas()) {
    for (int native : {1, 0}) {
      if (!native && !(isa == olmo::Isa::avx512 && olmo::cpu_has_avx512_bf16())) continue;
      olmo::set_isa_override(isa);
      set_bf16_native_override(native ? -1 : 0);
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        const std::string got = f();
        const std::string at = std::string(olmo::isa_name(isa)) +
                               (cpu_has_bf16() ? " bf16-native" : "") + " x" +
                               std::to_string(threads);
        if (first_at.empty()) {
          first = got, first_at = at;
          continue;
        }
        EXPECT_TRUE(got == first) << what << ": " << at << " differs from " << first_at;
      }
    }
  }
  omp_set_num_threads(nt0);
}

template <class T>
void put(std::string& s, const std::vector<T>& v) {
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
template <class T>
void put(std::string& s, const T& x) {
  s.append(reinterpret_cast<const char*>(&x), sizeof(T));
}

}  // namespace

TEST(Invariance, EveryThreadHasThePinnedMxcsr) {
  EXPECT_EQ(olmo::mxcsr(), olmo::kMxcsr);
  std::vector<unsigned> seen(3, 0);
#pragma omp parallel num_threads(3)
  seen[size_t(omp_get_thread_num())] = olmo::mxcsr();
  for (unsigned m : seen) EXPECT_EQ(m, olmo::kMxcsr) << std::hex << m;
}

TEST(Invariance, Elementwise) {
  for (int64_t n : {1, 15, 17, 100003}) {
    const auto a = rnd(size_t(n), 1), b = rnd(size_t(n), 2);
    expect_invariant("elementwise n=" + std::to_string(n), [&] {
      std::string s;
      auto y = a;
      add_inplace(y.data(), b.data(), n);
      axpy(y.data(), 0.37f, b.data(), n);
      scale_inplace(y.data(), -1.3f, n);
      put(s, y);
      put(s, sum_squares(a.data(), n));
      return s;
    });
  }
}

TEST(Invariance, RmsNorm) {
  for (auto [N, D] : {std::pair{5, 7}, {33, 100}, {70, 768}, {3, 1000}}) {
    const auto x = rnd(size_t(N * D), 3), w = rnd(size_t(D), 4), dy = rnd(size_t(N * D), 5);
    expect_invariant("rmsnorm " + std::to_string(N) + "x" + std::to_string(D), [&] {
      std::vector<float> y(x.size()), rstd(static_cast<size_t>(N)), dx(x.size());
      std::vector<float> dw(static_cast<size_t>(D), 0.5f);
      rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), N, D, 1e-6f);
      rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), N, D);
      std::string s;
      put(s, y), put(s, rstd), put(s, dx), put(s, dw);
      return s;
    });
  }
}

TEST(Invariance, SwiGlu) {
  const int64_t n = 1237;
  const auto g = rnd(size_t(n), 6, 4.0), u = rnd(size_t(n), 7), d = rnd(size_t(n), 8);
  expect_invariant("swiglu", [&] {
    std::vector<float> out(static_cast<size_t>(n)), dg(static_cast<size_t>(n)), du(static_cast<size_t>(n));
    swiglu_forward(g.data(), u.data(), out.data(), n);
    swiglu_backward(g.data(), u.data(), d.data(), dg.data(), du.data(), n);
    std::string s;
    put(s, out), put(s, dg), put(s, du);
    return s;
  });
}

TEST(Invariance, RopeAndItsTable) {
  for (int64_t hd : {6, 16, 40}) {
    const int64_t B = 2, T = 9, H = 3;
    const auto x = rnd(size_t(B * T * H * hd), 9);
    expect_invariant("rope hd=" + std::to_string(hd), [&] {
      const RopeTable tab = rope_table(T, hd, 500000.0);
      auto y = x, z = x;
      rope_forward(y.data(), B, T, H, hd, tab);
      rope_backward(z.data(), B, T, H, hd, tab);
      std::string s;
      put(s, tab.cos), put(s, tab.sin), put(s, y), put(s, z);
      return s;
    });
  }
}

TEST(Invariance, Embedding) {
  const int64_t N = 37, D = 45, V = 11;
  std::vector<int32_t> ids(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) ids[size_t(i)] = int32_t((i * 7) % V);
  const auto W = rnd(size_t(V * D), 10), dout = rnd(size_t(N * D), 11);
  expect_invariant("embedding", [&] {
    std::vector<float> out(static_cast<size_t>(N * D)), dW(size_t(V * D), 0.25f);
    embedding_forward(W.data(), ids.data(), N, D, out.data(), V);
    embedding_backward(dout.data(), ids.data(), N, D, dW.data(), V);
    std::string s;
    put(s, out), put(s, dW);
    return s;
  });
}

TEST(Invariance, Bf16Conversion) {
  const int64_t n = 70001;
  auto x = rnd(size_t(n), 12, 3.0);
  x[0] = 1e-40f, x[1] = -INFINITY, x[2] = NAN, x[3] = 3.4e38f;
  expect_invariant("bf16 conversion", [&] {
    std::vector<bf16_t> b(static_cast<size_t>(n));
    std::vector<float> back(static_cast<size_t>(n));
    f32_to_bf16(x.data(), b.data(), n);
    bf16_to_f32(b.data(), back.data(), n);
    std::string s;
    put(s, b), put(s, back);
    return s;
  });
}

TEST(Invariance, Gemm) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int64_t M = 45, N = 70, K = 601;  // K: three kc blocks, the last of odd depth
      const auto A = rnd(size_t(M * K), 13), B = rnd(size_t(K * N), 14);
      const auto C0 = rnd(size_t(M * N), 15);
      std::vector<bf16_t> Ab(A.size()), Bb(B.size());
      f32_to_bf16(A.data(), Ab.data(), int64_t(A.size()));
      f32_to_bf16(B.data(), Bb.data(), int64_t(B.size()));
      expect_invariant("gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb), [&] {
        auto C = C0, Cb = C0;
        gemm(ta, tb, M, N, K, 1.0f, A.data(), B.data(), 1.0f, C.data());
        gemm_micro_bf16(ta, tb, M, N, K, 1.0f, Ab.data(), Bb.data(), 1.0f, Cb.data());
        std::string s;
        put(s, C), put(s, Cb);
        return s;
      });
    }
}

TEST(Invariance, LmHeadLoss) {
  const int64_t N = 23, D = 40, V = 1001;  // V: 31 blocks of 32 and a 9-lane tail
  const auto x = rnd(size_t(N * D), 16), W = rnd(size_t(V * D), 17, 0.3);
  std::vector<int32_t> t(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) t[size_t(i)] = i == 5 ? -100 : int32_t((i * 37) % V);
  expect_invariant("lm_head_loss", [&] {
    std::vector<float> dx(static_cast<size_t>(N * D)), dW(static_cast<size_t>(V * D), 0.0f);
    const LossSums r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-4f, 1.0f / 22,
                                    dx.data(), dW.data(), 16);
    std::string s;
    put(s, r.ce_sum), put(s, r.z_sum), put(s, dx), put(s, dW);
    return s;
  });
}

TEST(Invariance, Attention) {
  for (auto [T, H, KV, hd, w] : {std::tuple{70, 4, 2, 20, 0}, {131, 2, 1, 64, 33},
                                  {17, 3, 3, 7, 0}}) {
    const AttnShape sh{2, T, H, KV, hd, w};
    const size_t nq = size_t(2 * T * H * hd), nk = size_t(2 * T * KV * hd);
    const auto q = rnd(nq, 18), k = rnd(nk, 19), v = rnd(nk, 20), dout = rnd(nq, 21);
    std::vector<int32_t> doc(static_cast<size_t>(2 * T));
    for (int64_t i = 0; i < 2 * T; ++i) doc[size_t(i)] = int32_t(i % T < T / 3 ? 0 : 1);
    const int32_t* doc_sets[] = {nullptr, doc.data()};
    for (const int32_t* docs : doc_sets)
      expect_invariant("attention T=" + std::to_string(T) + (docs ? " docs" : ""), [&] {
        std::vector<float> out(nq), lse(static_cast<size_t>(2 * H * T)), dq(nq), dk(nk), dv(nk);
        std::string s;
        for (bool bf : {false, true}) {  // the fp32 kernels, then the bf16 ones
          (bf ? attention_forward_bf16 : attention_forward)(sh, q.data(), k.data(), v.data(),
                                                            docs, out.data(), lse.data());
          (bf ? attention_backward_bf16 : attention_backward)(
              sh, q.data(), k.data(), v.data(), docs, out.data(), lse.data(), dout.data(),
              dq.data(), dk.data(), dv.data());
          put(s, out), put(s, lse), put(s, dq), put(s, dk), put(s, dv);
        }
        return s;
      });
  }
}
