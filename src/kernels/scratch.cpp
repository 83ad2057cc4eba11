// Per-thread growing scratch buffers (contract in scratch.h).
#include "kernels/scratch.h"

#include <cstdlib>
#include <new>

namespace olmo {
namespace {
struct Slot {
  void* p = nullptr;
  size_t cap = 0;
};
struct Slots {
  Slot s[int(Scratch::count)];
  ~Slots() {
    for (Slot& x : s) std::free(x.p);
  }
};
}  // namespace

void* scratch_bytes(Scratch slot, size_t bytes) {
  static thread_local Slots slots;
  Slot& s = slots.s[int(slot)];
  if (s.cap < bytes || !s.p) {
    const size_t n = (bytes + 63) / 64 * 64 + 64;  // never 0; rounded for aligned_alloc
    void* p = std::aligned_alloc(64, n);
    if (!p) throw std::bad_alloc();
    std::free(s.p);
    s.p = p;
    s.cap = n;
  }
  return s.p;
}

}  // namespace olmo
