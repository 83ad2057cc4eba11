// ckpt/fused_fingerprint.h: the tensor sums added block by block (random block sizes, shuffled
// order, from OpenMP threads) give fingerprint_state's values exactly, for a sharded flat
// buffer and for a replicated one fingerprinted over this rank's range, with tensors cut across
// the fingerprint's 1024-element chunks; a buffer not wholly added is computed as usual; and
// the sums are really the ones used (a value changed after its block was added is not seen).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "ckpt/fused_fingerprint.h"
#include "ckpt/state_io.h"

using namespace olmo;
using namespace olmo::ckpt;

namespace {

// Three tensors of one flat buffer of 10500 elements, cut across 1024-element chunks.
const FlatLayout kLayout = {{"w", {3000}, 0, 3000}, {"x", {50, 100}, 3000, 5000},
                            {"y", {2500}, 8000, 2500}};
constexpr size_t kN = 10500, kLo = 1700, kHi = 9100;  // this rank's shard

struct State {
  std::vector<float> params = std::vector<float>(kN);  // replicated
  std::vector<float> m = std::vector<float>(kHi - kLo);  // the shard's moment
  State() {
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (float& x : params) x = u(g);
    for (float& x : m) x = u(g);
  }
  StateFn fn() {
    return [this](StateVisitor& v) {
      StateVisitor::Section s(v, "toy");
      v.flat_replicated("", params.data());
      v.flat("m/", m.data(), kLo, kHi);
    };
  }
};

// [kLo, kHi) in blocks of 1..700 elements, shuffled.
std::vector<std::pair<size_t, size_t>> blocks(uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<std::pair<size_t, size_t>> b;
  for (size_t a = kLo; a < kHi;) {
    const size_t e = std::min(kHi, a + 1 + g() % 700);
    b.push_back({a, e});
    a = e;
  }
  std::shuffle(b.begin(), b.end(), g);
  return b;
}

void add_all(FusedTensorFingerprint& f, const std::vector<std::pair<size_t, size_t>>& b) {
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < int64_t(b.size()); ++i) f.add(b[size_t(i)].first, b[size_t(i)].second);
}

}  // namespace

TEST(FusedFingerprint, BlocksInAnyOrderGiveTheStateFingerprint) {
  State s;
  const auto want = fingerprint_state(s.fn(), kLayout, 0, kLo, kHi).tensor_partials;
  for (uint32_t seed : {1u, 2u, 3u}) {
    FusedTensorFingerprint f(s.fn(), kLayout, kLo, kHi);
    add_all(f, blocks(seed));
    EXPECT_EQ(fingerprint_state(s.fn(), kLayout, 0, kLo, kHi, &f).tensor_partials, want)
        << "seed " << seed;
  }
}

TEST(FusedFingerprint, UsesTheAddedSumsAndComputesWhatWasNotAdded) {
  State s;
  const auto before = fingerprint_state(s.fn(), kLayout, 0, kLo, kHi).tensor_partials;
  FusedTensorFingerprint f(s.fn(), kLayout, kLo, kHi);
  add_all(f, blocks(4));
  s.params[4000] += 1.0f;  // after its block was added: the fused sums keep the old value
  s.m[10] += 1.0f;
  const auto fused = fingerprint_state(s.fn(), kLayout, 0, kLo, kHi, &f).tensor_partials;
  EXPECT_EQ(fused, before);
  EXPECT_NE(fingerprint_state(s.fn(), kLayout, 0, kLo, kHi).tensor_partials.at("x"),
            before.at("x"));
  // One block missing: both buffers are computed from memory (the changed values seen).
  auto b = blocks(5);
  b.pop_back();
  FusedTensorFingerprint g(s.fn(), kLayout, kLo, kHi);
  add_all(g, b);
  EXPECT_EQ(fingerprint_state(s.fn(), kLayout, 0, kLo, kHi, &g).tensor_partials,
            fingerprint_state(s.fn(), kLayout, 0, kLo, kHi).tensor_partials);
}
