// Runtime CPU feature detection and kernel dispatch level.
// The binary is compiled for baseline x86-64; fast kernels exist per ISA (files *_avx2.cpp,
// *_avx512.cpp) and are selected by active_isa(). OLMO_ISA=scalar|avx2|avx512 forces a lower
// path (a request above what the CPU supports is clamped to the detected level).
#pragma once

namespace olmo {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

Isa detected_isa();           // best ISA this CPU supports (AVX2 needs FMA; AVX-512 F/BW/VL/DQ)
Isa active_isa();             // min(detected, OLMO_ISA env or override); cached
void set_isa_override(Isa);   // for tests: force a level (clamped to detected)
void clear_isa_override();
const char* isa_name(Isa);

// AVX512_BF16 (VDPBF16PS, VCVTNE2PS2BF16) on a CPU whose detected level is AVX-512. Independent
// of OLMO_ISA: a feature of the hardware, not a dispatch level.
bool cpu_has_avx512_bf16();

// The floating-point environment every thread computes in: MXCSR = kMxcsr (round to nearest
// even, all exceptions masked, denormals neither flushed (FTZ) nor treated as zero (DAZ)), the
// x86-64 default, so scalar, AVX2 and AVX-512 code sees the same denormal arithmetic. The
// process sets it once at load time (core/cpu.cpp, before any thread exists); threads inherit
// it. mxcsr() reads the calling thread's; pin_fp_env() sets it (a thread that may have been
// created by code that changed it). Tests check every OpenMP thread (tests/kernels).
constexpr unsigned kMxcsr = 0x1F80;
unsigned mxcsr();
void pin_fp_env();

}  // namespace olmo
