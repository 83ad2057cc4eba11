// The bf16_mixed paths a test runs on this CPU (header-only): the native AVX512_BF16 kernels
// where they are in use (announced as NOT RUN where not: isa_util.h not_run), then always the
// path of a CPU without them, forced on a native one: OLMO_BF16=emulate (gemm_bf16 on inputs
// widened to fp32, fp32 attention) under the AVX2 kernels (scalar below AVX2). So a CPU with
// AVX512_BF16 checks both, every other CPU the emulated one and says what it left out.
//   for (const auto& mode : olmo::testing::bf16_modes()) {
//     olmo::testing::Bf16ModeGuard guard(mode);
//     SCOPED_TRACE(mode.name);
//     ...
//   }
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "kernels/bf16.h"
#include "kernels/isa_util.h"

namespace olmo::testing {

struct Bf16Mode {
  const char* name;  // "native" | "emulated"
  bool native;
};

// Native first: bf16_mixed's once-per-process choices (the attention probe) are then made where
// the native kernels exist.
inline std::vector<Bf16Mode> bf16_modes() {
  olmo::clear_isa_override();
  std::vector<Bf16Mode> v;
  if (olmo::kernels::cpu_has_bf16())
    v.push_back({"native", true});
  else
    not_run("bf16_mixed on the native bf16 kernels",
            olmo::cpu_has_avx512_bf16() ? "AVX512_BF16 turned off by OLMO_ISA / OLMO_BF16=0"
                                        : "this CPU lacks AVX512_BF16");
  v.push_back({"emulated", false});
  return v;
}

// Enters a mode for its scope (emulated: set_isa_override(avx2), OLMO_BF16=emulate); restores
// the ISA override and OLMO_BF16 at the end.
class Bf16ModeGuard {
 public:
  explicit Bf16ModeGuard(const Bf16Mode& m) {
    const char* e = std::getenv("OLMO_BF16");
    had_ = e != nullptr;
    if (had_) old_ = e;
    if (!m.native) {
      olmo::set_isa_override(olmo::Isa::avx2);  // clamped to the CPU: scalar below AVX2
      setenv("OLMO_BF16", "emulate", 1);
    }
  }
  ~Bf16ModeGuard() {
    olmo::clear_isa_override();
    if (had_)
      setenv("OLMO_BF16", old_.c_str(), 1);
    else
      unsetenv("OLMO_BF16");
  }
  Bf16ModeGuard(const Bf16ModeGuard&) = delete;
  Bf16ModeGuard& operator=(const Bf16ModeGuard&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};

}  // namespace olmo::testing
