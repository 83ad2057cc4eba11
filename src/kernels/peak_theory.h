// The CPU's theoretical fp32 FMA peak, from what the machine says about itself at run time:
//   cores x fp32 flops per cycle per core x clock,
// flops per cycle = 2 (an FMA is a multiply and an add) x FMA pipes x fp32 lanes per pipe, the
// lanes being the width of the active ISA (CPUID) capped by the pipes' width. No instruction
// reports the pipes: they are a fact of the microarchitecture (CPUID vendor / family / model),
// listed in peak_theory.cpp for the ones whose datapath is documented; any other CPU gets no
// theoretical figure (only the measured one is printed). Never a per-model peak: the clock and
// the cores are read here, the clock from sysfs cpufreq (cpuinfo_max_freq: the highest clock)
// or else /proc/cpuinfo's "cpu MHz" (the current or, in a VM, the nominal clock: boost may run
// above it, so the measured peak can exceed the figure), and the cores are the physical cores
// (sysfs topology) among the CPUs this process may run on, at most `threads`.
// For people (printed beside the measured peak, recorded in the start record); MFU never uses
// it (the measured peak is what the work can reach). Cost: a few small file reads.
#pragma once
#include <string>

namespace olmo::kernels {

struct FmaPeakTheory {
  double gflops = 0;  // 0: not known (`text` says why)
  int cores = 0, flops_per_cycle = 0;
  double mhz = 0;
  std::string text;  // "166 GFLOP/s = 2 cores x 32 flop/cycle x 2596 MHz, <clock's source>",
                     // or "unknown (why)"
};

// For `threads` threads (0: omp_get_max_threads()) of the active ISA.
FmaPeakTheory theoretical_fp32_peak(int threads = 0);

// The pieces, for tests. fp32 flops per cycle per core of an FMA at `isa_bits` (256: AVX2, 512:
// AVX-512) on the CPU of CPUID vendor string / family / model (family and model as Linux
// prints them: extended fields folded in); 0 when the microarchitecture is not listed.
int fp32_flops_per_cycle(const std::string& vendor, int family, int model, int isa_bits);
// The first "cpu MHz" of /proc/cpuinfo's text; 0 when absent or malformed.
double cpuinfo_mhz(const std::string& cpuinfo);

}  // namespace olmo::kernels
