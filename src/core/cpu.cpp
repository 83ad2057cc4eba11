// CPU detection (GCC builtins), the OLMO_ISA override and the pinned MXCSR.
#include "core/cpu.h"

#include <xmmintrin.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/runtime.h"

namespace olmo {
namespace {
int g_override = -1;

Isa parse_env() {
  const std::string v = runtime().env("OLMO_ISA").value_or("");
  const char* e = v.c_str();
  if (!*e) return Isa::avx512;
  if (!std::strcmp(e, "scalar")) return Isa::scalar;
  if (!std::strcmp(e, "avx2")) return Isa::avx2;
  if (!std::strcmp(e, "avx512")) return Isa::avx512;
  throw Error(cat("OLMO_ISA='", e, "' is not one of scalar, avx2, avx512"));
}
}  // namespace

Isa detected_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::scalar;
  }();
  return isa;
}

Isa active_isa() {
  static const Isa from_env = parse_env();
  int want = g_override >= 0 ? g_override : static_cast<int>(from_env);
  int have = static_cast<int>(detected_isa());
  return static_cast<Isa>(want < have ? want : have);
}

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    __builtin_cpu_init();
    return detected_isa() == Isa::avx512 && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

void set_isa_override(Isa isa) { g_override = static_cast<int>(isa); }
void clear_isa_override() { g_override = -1; }

unsigned mxcsr() { return _mm_getcsr(); }
void pin_fp_env() { _mm_setcsr(kMxcsr); }

namespace {
// At load time, on the main thread, before main() and before OpenMP starts its threads.
[[maybe_unused]] const bool g_fp_env_pinned = (pin_fp_env(), true);
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

}  // namespace olmo
