// Embedding: forward gather and backward scatter-add vs the reference (repeated ids) under every
// ISA this CPU runs (scalar, AVX2, AVX-512), gradient check, determinism across thread counts,
// out-of-range ids -> olmo::Error.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "core/error.h"
#include "kernels/embedding.h"
#include "isa_util.h"
#include "kernels/gradcheck.h"

using namespace olmo::kernels;
using olmo::testing::randn;
using olmo::testing::to;

TEST(Embedding, ForwardBackwardMatchReferenceEveryIsa) {
  olmo::testing::IsaGuard guard;
  for (olmo::Isa isa : olmo::testing::isas()) {
    olmo::set_isa_override(isa);
    SCOPED_TRACE(olmo::isa_name(isa));
    for (int64_t D : {int64_t(19), int64_t(64), int64_t(133)}) {  // vector tails and whole vectors
      const int64_t V = 37, N = 300;
      auto W = to<float>(randn(V * D, 1));
      std::vector<int32_t> ids(N);
      for (int64_t n = 0; n < N; ++n) ids[n] = int32_t((n * 7 + n / 3) % V);
      std::vector<float> out(N * D), ref(N * D);
      embedding_forward(W.data(), ids.data(), N, D, out.data(), V);
      embedding_forward_ref(W.data(), ids.data(), N, D, ref.data());
      EXPECT_EQ(out, ref) << "D=" << D;
      auto dout = to<float>(randn(N * D, 2));
      std::vector<float> dW(V * D, 1.0f), dW_ref(V * D, 1.0f);
      embedding_backward(dout.data(), ids.data(), N, D, dW.data(), V);
      embedding_backward_ref(dout.data(), ids.data(), N, D, dW_ref.data());
      EXPECT_EQ(dW, dW_ref) << "D=" << D;  // same summation order (token order) -> same bits
    }
  }
}

TEST(Embedding, GradientCheckInDouble) {
  const int64_t V = 5, D = 3, N = 6;
  std::vector<int32_t> ids = {0, 3, 3, 1, 4, 3};
  auto W = randn(V * D, 3), R = randn(N * D, 4);
  auto loss = [&](const std::vector<double>& w) {
    std::vector<double> o(N * D);
    embedding_forward_ref(w.data(), ids.data(), N, D, o.data());
    double s = 0;
    for (int64_t i = 0; i < N * D; ++i) s += o[i] * R[i];
    return s;
  };
  auto num = olmo::testing::numeric_grad(loss, W);
  std::vector<double> dW(V * D, 0.0);
  embedding_backward_ref(R.data(), ids.data(), N, D, dW.data());
  EXPECT_LT(olmo::testing::max_scaled_err(dW, num, 1e-6, 1e-8), 1.0);
}

TEST(Embedding, BackwardDeterministicAcrossThreads) {
  const int64_t V = 11, D = 768, N = 2048;
  auto dout = to<float>(randn(N * D, 5));
  std::vector<int32_t> ids(N);
  for (int64_t n = 0; n < N; ++n) ids[n] = int32_t(n % 3 == 0 ? 2 : n % V);
  int saved = omp_get_max_threads();
  std::vector<std::vector<float>> res;
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    std::vector<float> dW(V * D, 0.0f);
    embedding_backward(dout.data(), ids.data(), N, D, dW.data(), V);
    res.push_back(dW);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(res[0], res[1]);
  EXPECT_EQ(res[0], res[2]);
}

TEST(Embedding, OutOfRangeIdThrowsWithPosition) {
  std::vector<float> W(4 * 2), out(3 * 2);
  std::vector<int32_t> ids = {0, 4, 1};
  try {
    embedding_forward(W.data(), ids.data(), 3, 2, out.data(), 4);
    FAIL() << "no throw";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }
  ids[1] = -1;
  EXPECT_THROW(embedding_backward(out.data(), ids.data(), 3, 2, W.data(), 4), olmo::Error);
}
