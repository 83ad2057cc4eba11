// Per-thread scratch (kernels/scratch.h): 64-byte aligned, a request no larger than the slot's
// capacity returns the same buffer with its contents kept, a larger one grows it, slots are
// independent, and each thread has its own buffers.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "kernels/scratch.h"

using olmo::Scratch;
using olmo::scratch;

TEST(Scratch, AlignedReusedAndGrown) {
  float* a = scratch<float>(Scratch::loss_x, 1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  for (int i = 0; i < 1000; ++i) a[i] = float(i);
  float* b = scratch<float>(Scratch::loss_x, 10);  // smaller: same buffer, contents kept
  EXPECT_EQ(a, b);
  EXPECT_EQ(b[999], 999.0f);
  float* c = scratch<float>(Scratch::loss_x, 1 << 20);  // larger: a new, usable buffer
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  c[(1 << 20) - 1] = 1.0f;
  EXPECT_EQ(scratch<float>(Scratch::loss_x, 5), c);
  EXPECT_NE(scratch<double>(Scratch::loss_ce, 16), static_cast<void*>(c));  // another slot
  EXPECT_NE(scratch<float>(Scratch::loss_x, 0), nullptr);                  // n = 0 is valid
}

TEST(Scratch, PerThread) {
  float* mine = scratch<float>(Scratch::loss_logits, 256);
  float* theirs = nullptr;
  std::thread t([&] { theirs = scratch<float>(Scratch::loss_logits, 256); });
  t.join();
  EXPECT_NE(mine, theirs);
}
