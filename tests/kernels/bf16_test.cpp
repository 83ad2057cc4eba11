// fp32 <-> bf16 conversion, against two independent references: hand-worked bit patterns (ties
// to even, NaN, inf, overflow, denormals) and PyTorch's own conversion (tests/kernels/
// bf16_torch.py, run with $OLMO_PYTHON: torch.tensor(x).to(torch.bfloat16) on edge cases and
// 400,000 random values; .to(torch.float32) of all 65,536 bf16 patterns), for the scalar
// reference and every ISA path; then every ISA path bit for bit against the reference on random
// and special inputs of odd lengths (vector tails, the threaded split).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <limits>
#include <random>
#include <vector>

#include <unistd.h>

#include "isa_util.h"
#include "kernels/bf16.h"

using namespace olmo::kernels;

static float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Bf16, ReferenceRoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_ref(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_ref(-2.0f), 0xc000);
  // 1 + 2^-8 is exactly halfway between 1 (even mantissa) and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0x3f808000)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> up.
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0x3f818000)), 0x3f82);
  // Just above / below halfway.
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0x3f807fff)), 0x3f80);
  EXPECT_EQ(f32_to_bf16_ref(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16_ref(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32_to_bf16_ref(std::nanf("")), 0x7fc0);
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0xff800001)), 0x7fc0);  // signalling NaN stays a NaN
  // The largest float rounds past the largest bf16 to inf.
  EXPECT_EQ(f32_to_bf16_ref(std::numeric_limits<float>::max()), 0x7f80);
  // Denormals are rounded, not flushed.
  EXPECT_EQ(f32_to_bf16_ref(from_bits(0x00010000)), 0x0001);
  EXPECT_EQ(f32_to_bf16_ref(-0.0f), 0x8000);
  EXPECT_EQ(bf16_to_f32_ref(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32_ref(0xc0490000 >> 16), from_bits(0xc0490000));
}

namespace {
template <class T>
std::vector<T> read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<T> v(std::filesystem::exists(path) ? std::filesystem::file_size(path) / sizeof(T) : 0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
  return v;
}
}  // namespace

// PyTorch's conversion as the reference. NaN: torch's vectorised tensor conversion writes 0xffff,
// c10::BFloat16's scalar round_to_nearest_even 0x7fc0 (our contract, bf16.h): for a NaN input
// both must be NaNs and ours must be 0x7fc0; every other input must give torch's bits exactly.
TEST(Bf16, MatchesTorchOnEdgeCasesAndRandomValues) {
  const char* py = std::getenv("OLMO_PYTHON");
  if (!py || !std::filesystem::exists(py)) GTEST_SKIP() << "OLMO_PYTHON not set (run via ctest)";
  const char* src = std::getenv("OLMO_SOURCE_DIR");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("olmo_bf16_torch_" + std::to_string(getpid())))
          .string();
  const std::string cmd = std::string(py) + " " + (src ? src : OLMO_SOURCE_DIR) +
                          "/tests/kernels/bf16_torch.py " + dir + " > " + dir + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto x = read_raw<float>(dir + "/x.f32");
  const auto want = read_raw<uint16_t>(dir + "/y.u16");
  const auto all = read_raw<float>(dir + "/all.f32");
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".log");
  ASSERT_EQ(x.size(), 400041u);
  ASSERT_EQ(want.size(), x.size());
  ASSERT_EQ(all.size(), 65536u);
  auto is_nan16 = [](uint16_t h) { return (h & 0x7fff) > 0x7f80; };
  int64_t nans = 0;
  for (size_t i = 0; i < x.size(); ++i) nans += std::isnan(x[i]);
  ASSERT_GT(nans, 100);  // the random patterns include NaNs
  auto compare = [&](const std::vector<bf16_t>& got, const std::string& what) {
    int64_t bad = 0;
    for (size_t i = 0; i < x.size() && bad < 5; ++i) {
      const bool ok = std::isnan(x[i]) ? (got[i] == 0x7fc0 && is_nan16(want[i]))
                                       : got[i] == want[i];
      if (!ok) {
        uint32_t u;
        std::memcpy(&u, &x[i], 4);
        ADD_FAILURE() << what << ": input 0x" << std::hex << u << " ours 0x" << got[i]
                      << " torch 0x" << want[i];
        ++bad;
      }
    }
  };
  std::vector<bf16_t> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = f32_to_bf16_ref(x[i]);
  compare(ref, "f32_to_bf16_ref");
  olmo::testing::IsaGuard guard;
  std::vector<bf16_t> every(65536);
  for (size_t h = 0; h < every.size(); ++h) every[h] = bf16_t(h);
  for (olmo::Isa isa : olmo::testing::isas()) {
    olmo::set_isa_override(isa);
    std::vector<bf16_t> got(x.size());
    f32_to_bf16(x.data(), got.data(), int64_t(x.size()));
    compare(got, std::string("f32_to_bf16 ") + olmo::isa_name(isa));
    std::vector<float> back(every.size());
    bf16_to_f32(every.data(), back.data(), int64_t(every.size()));
    EXPECT_EQ(std::memcmp(back.data(), all.data(), all.size() * 4), 0)
        << "bf16_to_f32 " << olmo::isa_name(isa) << " differs from torch's bf16 -> fp32";
  }
  for (size_t h = 0; h < every.size(); ++h) {
    const float r = bf16_to_f32_ref(bf16_t(h));
    ASSERT_EQ(std::memcmp(&r, &all[h], 4), 0) << "bf16_to_f32_ref 0x" << std::hex << h;
  }
}

TEST(Bf16, ReferenceErrorWithinHalfUlp) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  for (int i = 0; i < 100000; ++i) {
    float x = nd(rng);
    float y = bf16_to_f32_ref(f32_to_bf16_ref(x));
    // Half a bf16 ulp: the ulp in [2^e, 2^(e+1)) is 2^(e-7).
    EXPECT_LE(std::fabs(double(y) - x), std::ldexp(1.0, std::ilogb(x) - 8)) << x;
  }
}

TEST(Bf16, EveryIsaMatchesReferenceBitForBit) {
  olmo::testing::IsaGuard guard;
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> bits;
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(15), int64_t(33), int64_t(1000),
                    int64_t(200003)}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = from_bits(bits(rng));  // every class: NaN, inf, denormal, ...
    const float special[] = {0.0f, -0.0f, 1.0f, from_bits(0x3f808000), from_bits(0x3f818000),
                             std::numeric_limits<float>::infinity(), std::nanf(""),
                             std::numeric_limits<float>::max(), from_bits(0x00008000)};
    for (size_t i = 0; i < std::min(x.size(), sizeof special / sizeof special[0]); ++i)
      x[i] = special[i];
    std::vector<bf16_t> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[size_t(i)] = f32_to_bf16_ref(x[size_t(i)]);
    for (olmo::Isa isa : olmo::testing::isas()) {
      olmo::set_isa_override(isa);
      std::vector<bf16_t> got(size_t(n), 0x1234);
      f32_to_bf16(x.data(), got.data(), n);
      EXPECT_EQ(got, want) << "n=" << n << " isa=" << olmo::isa_name(isa);
      std::vector<float> back(static_cast<size_t>(n));
      bf16_to_f32(got.data(), back.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        float r = bf16_to_f32_ref(want[size_t(i)]);
        ASSERT_EQ(std::memcmp(&back[size_t(i)], &r, 4), 0) << "i=" << i;
      }
    }
  }
}

TEST(Bf16, CpuSupportFollowsTheActiveIsa) {
  olmo::testing::IsaGuard guard;
  olmo::set_isa_override(olmo::Isa::avx2);
  EXPECT_FALSE(cpu_has_bf16());  // the bf16 path needs the AVX-512 kernels
  olmo::clear_isa_override();
  const char* env = std::getenv("OLMO_BF16");
  EXPECT_EQ(cpu_has_bf16(), olmo::cpu_has_avx512_bf16() &&
                                olmo::active_isa() == olmo::Isa::avx512 &&
                                !(env && std::string(env) == "0"));
}
