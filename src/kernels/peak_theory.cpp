// Theoretical fp32 FMA peak from CPUID, sysfs and /proc/cpuinfo (see peak_theory.h).
#include "kernels/peak_theory.h"

#include <cpuid.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "core/cpu.h"
#include "core/error.h"

namespace olmo::kernels {

namespace {

// FMA pipes per core and their width, per microarchitecture (the vendors' optimisation
// manuals). Only datapaths that do not vary between the parts of one family/model range: Intel
// server parts with one or two 512-bit units under the same model, and hybrid parts (P and E
// cores differ), are left out on purpose.
struct Datapath {
  const char* vendor;
  int family, model_lo, model_hi;
  int pipes, bits;
  const char* name;
};
constexpr Datapath kDatapaths[] = {
    {"AuthenticAMD", 0x17, 0x00, 0x2f, 2, 128, "Zen/Zen+"},
    {"AuthenticAMD", 0x17, 0x30, 0xff, 2, 256, "Zen 2"},
    {"AuthenticAMD", 0x19, 0x00, 0xff, 2, 256, "Zen 3/Zen 4"},  // Zen 4: AVX-512 on 256-bit pipes
    {"AuthenticAMD", 0x1a, 0x00, 0x1f, 2, 512, "Zen 5 (server)"},
    {"AuthenticAMD", 0x1a, 0x20, 0x2f, 2, 256, "Zen 5 (mobile)"},
    {"AuthenticAMD", 0x1a, 0x40, 0x4f, 2, 512, "Zen 5 (desktop)"},
    {"GenuineIntel", 6, 0x3c, 0x3c, 2, 256, "Haswell"},
    {"GenuineIntel", 6, 0x3f, 0x3f, 2, 256, "Haswell"},
    {"GenuineIntel", 6, 0x45, 0x46, 2, 256, "Haswell"},
    {"GenuineIntel", 6, 0x3d, 0x3d, 2, 256, "Broadwell"},
    {"GenuineIntel", 6, 0x47, 0x47, 2, 256, "Broadwell"},
    {"GenuineIntel", 6, 0x4f, 0x4f, 2, 256, "Broadwell"},
    {"GenuineIntel", 6, 0x56, 0x56, 2, 256, "Broadwell"},
    {"GenuineIntel", 6, 0x4e, 0x4e, 2, 256, "Skylake"},
    {"GenuineIntel", 6, 0x5e, 0x5e, 2, 256, "Skylake"},
    {"GenuineIntel", 6, 0x8e, 0x8e, 2, 256, "Kaby/Coffee Lake"},
    {"GenuineIntel", 6, 0x9e, 0x9e, 2, 256, "Kaby/Coffee Lake"},
    {"GenuineIntel", 6, 0xa5, 0xa6, 2, 256, "Comet Lake"},
    {"GenuineIntel", 6, 0x8f, 0x8f, 2, 512, "Sapphire Rapids"},
    {"GenuineIntel", 6, 0xcf, 0xcf, 2, 512, "Emerald Rapids"},
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

// CPUID vendor, family, model (Linux's folding of the extended fields).
void cpu_identity(std::string& vendor, int& family, int& model) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  vendor.clear();
  family = model = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  char v[13] = {};
  for (int i = 0; i < 4; ++i) {
    v[i] = char(b >> (8 * i));
    v[4 + i] = char(d >> (8 * i));
    v[8 + i] = char(c >> (8 * i));
  }
  vendor = v;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const int base_family = int((a >> 8) & 0xf);
  family = base_family == 0xf ? base_family + int((a >> 20) & 0xff) : base_family;
  model = int((a >> 4) & 0xf);
  if (base_family == 0x6 || base_family == 0xf) model |= int((a >> 16) & 0xf) << 4;
}

// Physical cores (distinct package/core ids in sysfs) among the CPUs this process may run on;
// without topology files, the number of those CPUs.
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  std::set<std::pair<std::string, std::string>> cores;
  int cpus = 0;
  bool topology = true;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (!CPU_ISSET(i, &set)) continue;
    ++cpus;
    const std::string dir = cat("/sys/devices/system/cpu/cpu", i, "/topology/");
    const std::string pkg = read_text(dir + "physical_package_id"), core = read_text(dir + "core_id");
    if (pkg.empty() || core.empty()) topology = false;
    cores.insert({pkg, core});
  }
  return topology ? int(cores.size()) : cpus;
}

}  // namespace

int fp32_flops_per_cycle(const std::string& vendor, int family, int model, int isa_bits) {
  for (const Datapath& p : kDatapaths)
    if (vendor == p.vendor && family == p.family && model >= p.model_lo && model <= p.model_hi)
      return 2 * p.pipes * (std::min(isa_bits, p.bits) / 32);
  return 0;
}

double cpuinfo_mhz(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return 0;
    double mhz = 0;
    return std::sscanf(line.c_str() + colon + 1, "%lf", &mhz) == 1 && mhz > 0 ? mhz : 0;
  }
  return 0;
}

FmaPeakTheory theoretical_fp32_peak(int threads) {
  FmaPeakTheory t;
  if (threads <= 0) threads = omp_get_max_threads();
  const Isa isa = active_isa();
  if (isa == Isa::scalar) {
    t.text = "unknown (the scalar ISA runs no FMA instruction)";
    return t;
  }
  std::string vendor;
  int family = 0, model = 0;
  cpu_identity(vendor, family, model);
  t.flops_per_cycle = fp32_flops_per_cycle(vendor, family, model, isa == Isa::avx512 ? 512 : 256);
  if (t.flops_per_cycle == 0) {
    char id[64];
    std::snprintf(id, sizeof id, "family 0x%x model 0x%x", family, model);
    t.text = cat("unknown (the FMA pipes of ", vendor.empty() ? std::string("this CPU") : vendor,
                 " ", id, " are not listed in src/kernels/peak_theory.cpp)");
    return t;
  }
  std::string clock;
  const std::string max_khz = read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (double khz = 0; std::sscanf(max_khz.c_str(), "%lf", &khz) == 1 && khz > 0) {
    t.mhz = khz / 1000;
    clock = "the highest clock, sysfs cpuinfo_max_freq";
  } else if ((t.mhz = cpuinfo_mhz(read_text("/proc/cpuinfo"))) > 0) {
    clock = "the clock /proc/cpuinfo reports; boost may run above it";
  } else {
    t.text = "unknown (the clock frequency is not known: no sysfs cpufreq, no cpu MHz in "
             "/proc/cpuinfo)";
    return t;
  }
  const int cores = usable_cores();
  t.cores = cores > 0 ? std::min(threads, cores) : threads;
  t.gflops = double(t.cores) * t.flops_per_cycle * t.mhz * 1e-3;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.0f GFLOP/s = %d core%s x %d flop/cycle x %.0f MHz, %s",
                t.gflops, t.cores, t.cores == 1 ? "" : "s", t.flops_per_cycle, t.mhz,
                clock.c_str());
  t.text = buf;
  return t;
}

}  // namespace olmo::kernels
