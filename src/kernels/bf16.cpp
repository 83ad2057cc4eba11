// fp32 <-> bf16 conversion entry points (contract in bf16.h): thread split + ISA dispatch onto
// the stamped loops of bf16_body.h, whose scalar copy is compiled here.
#include "kernels/bf16.h"

#include <atomic>

#include "core/cpu.h"
#include "core/profile.h"
#include "core/runtime.h"
#include "kernels/bf16_body.h"
#include "kernels/dispatch.h"

namespace olmo::kernels {

namespace {
constexpr int64_t kGrain = 1 << 15;  // elements per thread at least (below: one thread)
}  // namespace

void f32_to_bf16(const float* x, bf16_t* y, int64_t n) {
  OLMO_PROFILE("convert_bf16", 0);
  const auto body = OLMO_DISPATCH(cvt_to_bf16);
  parallel_blocks(n, kGrain, 32, [&](int64_t i0, int64_t i1) { body(x, y, i0, i1); });
}

void bf16_to_f32(const bf16_t* x, float* y, int64_t n) {
  OLMO_PROFILE("convert_bf16", 0);
  const auto body = OLMO_DISPATCH(cvt_to_f32);
  parallel_blocks(n, kGrain, 32, [&](int64_t i0, int64_t i1) { body(x, y, i0, i1); });
}

void f32_to_bf16_serial(const float* x, bf16_t* y, int64_t n) {
  OLMO_DISPATCH(cvt_to_bf16)(x, y, 0, n);
}

namespace {
std::atomic<int> g_native_override{-1};
}  // namespace

bool cpu_has_bf16() {
  static const bool has = [] {
    const auto e = runtime().env("OLMO_BF16");
    if (e == "0" || e == "emulate") return false;
    return cpu_has_avx512_bf16();
  }();
  return has && active_isa() == Isa::avx512 && g_native_override.load() != 0;
}

void set_bf16_native_override(int mode) { g_native_override.store(mode); }

bool bf16_emulated() {  // read on every call: consulted only when a model is set up
  return runtime().env("OLMO_BF16") == "emulate" && !cpu_has_bf16();
}

bool bf16_usable() { return cpu_has_bf16() || bf16_emulated(); }

}  // namespace olmo::kernels
