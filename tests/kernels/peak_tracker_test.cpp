// The run's peak (kernels/peak_tracker.h): the highest probe, raised to any achieved rate above
// it, so an MFU is never above 100%; and the pieces of the theoretical FMA peak
// (kernels/peak_theory.h) against the vendors' documented datapaths.
#include <gtest/gtest.h>

#include "kernels/peak_theory.h"
#include "kernels/peak_tracker.h"

using olmo::kernels::PeakTracker;

TEST(PeakTracker, HighestProbeWinsAndALowProbeNeverLowersIt) {
  PeakTracker p;
  EXPECT_EQ(p.mfu(50), 0);  // no peak yet (probing off): MFU 0, nothing raised
  EXPECT_EQ(p.raises(), 0);
  p.probe(200);
  p.probe(80);  // a probe on a busy machine
  p.probe(0);   // and one that failed
  EXPECT_EQ(p.peak(), 200);
  EXPECT_EQ(p.highest_probe(), 200);
  EXPECT_DOUBLE_EQ(p.mfu(50), 25);
}

TEST(PeakTracker, AnAchievedRateAboveThePeakRaisesItOnceSaid) {
  PeakTracker p;
  p.probe(86);  // the busy start-up probe
  EXPECT_DOUBLE_EQ(p.mfu(43), 50);
  EXPECT_DOUBLE_EQ(p.mfu(95.7), 100);  // 111% before: now the peak
  EXPECT_EQ(p.peak(), 95.7);
  EXPECT_EQ(p.raises(), 1);
  EXPECT_EQ(p.first_raise().from, 86);
  EXPECT_EQ(p.first_raise().to, 95.7);
  EXPECT_DOUBLE_EQ(p.mfu(100), 100);
  EXPECT_EQ(p.raises(), 2);
  EXPECT_EQ(p.first_raise().to, 95.7);  // the first raise's figures are kept for the one line
  EXPECT_LT(p.mfu(50), 50.1);
  EXPECT_EQ(p.highest_probe(), 86);
  for (double g : {1.0, 99.9, 100.0, 1e3, 1e9}) EXPECT_LE(p.mfu(g), 100.0) << g;
}

// fp32 flops per cycle per core = 2 x FMA pipes x lanes (AMD's and Intel's optimisation
// manuals: Zen 2/3 two 256-bit FMA pipes; Zen 4 AVX-512 on those two 256-bit pipes; Zen 1 two
// 128-bit pipes; Zen 5 desktop two 512-bit pipes; Skylake client two 256-bit ports).
TEST(PeakTheory, FlopsPerCycleOfDocumentedDatapaths) {
  using olmo::kernels::fp32_flops_per_cycle;
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x19, 0x11, 512), 32);  // Zen 4 (Genoa)
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x19, 0x21, 256), 32);  // Zen 3 (Vermeer)
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x17, 0x31, 256), 32);  // Zen 2 (Rome)
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x17, 0x01, 256), 16);  // Zen 1 (Naples)
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x1a, 0x44, 512), 64);  // Zen 5 (Granite Ridge)
  EXPECT_EQ(fp32_flops_per_cycle("AuthenticAMD", 0x1a, 0x44, 256), 32);  // ... forced to AVX2
  EXPECT_EQ(fp32_flops_per_cycle("GenuineIntel", 6, 0x5e, 256), 32);     // Skylake client
  // Not listed: no theoretical figure (never a guess).
  EXPECT_EQ(fp32_flops_per_cycle("GenuineIntel", 6, 0x55, 512), 0);  // Skylake-SP: 1 or 2 units
  EXPECT_EQ(fp32_flops_per_cycle("HygonGenuine", 0x18, 0x01, 256), 0);
}

TEST(PeakTheory, CpuinfoClock) {
  using olmo::kernels::cpuinfo_mhz;
  EXPECT_EQ(cpuinfo_mhz("processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.138\n"), 2596.138);
  EXPECT_EQ(cpuinfo_mhz("processor\t: 0\nmodel name\t: x\n"), 0);
  EXPECT_EQ(cpuinfo_mhz("cpu MHz\t\t: unknown\n"), 0);
}

TEST(PeakTheory, ThisMachineEitherAFigureOrWhyNot) {
  const olmo::kernels::FmaPeakTheory t = olmo::kernels::theoretical_fp32_peak(1);
  EXPECT_FALSE(t.text.empty());
  if (t.gflops > 0) {
    EXPECT_EQ(t.cores, 1);
    EXPECT_NEAR(t.gflops, t.cores * t.flops_per_cycle * t.mhz * 1e-3, 1e-9);
    EXPECT_NE(t.text.find("GFLOP/s ="), std::string::npos) << t.text;
  } else {
    EXPECT_EQ(t.text.rfind("unknown", 0), 0u) << t.text;
  }
}
