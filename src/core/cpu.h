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

}  // namespace olmo
