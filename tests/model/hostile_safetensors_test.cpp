// Hostile-but-well-formed safetensors headers (issue 11): valid JSON whose numbers lie. Offsets
// that overlap or run past the end of the file (also near 2^64, where a naive end check wraps),
// a header length larger than the file, shapes whose element count overflows int64 (and would
// wrap to 0 bytes, matching an empty span), and extents above 2^63-1. Each must be refused with
// an olmo::Error naming the file and the rule, before any tensor byte is touched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;
using olmo::model::SafetensorsFile;

namespace {

std::string tmp_path(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("olmo_hostile_st_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

struct Cleanup {
  ~Cleanup() { fs::remove_all(fs::temp_directory_path() / ("olmo_hostile_st_" + std::to_string(::getpid()))); }
} cleanup;

// u64 header length (or `claimed_len` when given) + header + `data_bytes` bytes of data.
std::string write_file(const std::string& name, const std::string& header, size_t data_bytes,
                       uint64_t claimed_len = 0) {
  const std::string path = tmp_path(name);
  const uint64_t n = claimed_len ? claimed_len : header.size();
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char(n >> (8 * i));
  s += header;
  s.append(data_bytes, '\x02');
  std::ofstream(path, std::ios::binary) << s;
  return path;
}

void expect_refused(const std::string& path, const std::vector<std::string>& want) {
  try {
    SafetensorsFile f(path);
    FAIL() << "accepted " << path;
  } catch (const olmo::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    for (const auto& w : want) EXPECT_NE(m.find(w), std::string::npos) << m;
  }
}

}  // namespace

TEST(HostileSafetensors, OverlappingOffsetsRefused) {
  expect_refused(write_file("overlap.safetensors",
                            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            12),
                 {"overlap"});
  // The same span claimed twice.
  expect_refused(write_file("twice.safetensors",
                            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                            8),
                 {"overlap"});
}

TEST(HostileSafetensors, OffsetsPastTheFileRefused) {
  expect_refused(write_file("past.safetensors",
                            R"({"a":{"dtype":"F32","shape":[1048576],"data_offsets":[0,4194304]}})", 16),
                 {"tensor 'a'", "out of range"});
  // Near 2^64: begin + size would wrap around to a small number.
  expect_refused(write_file("wrap.safetensors",
                            R"({"a":{"dtype":"U8","shape":[16],)"
                            R"("data_offsets":[18446744073709551608,18446744073709551624]}})",
                            16),
                 {"tensor 'a'"});
  expect_refused(write_file("wrap2.safetensors",
                            R"({"a":{"dtype":"U8","shape":[8],)"
                            R"("data_offsets":[18446744073709551607,18446744073709551615]}})",
                            16),
                 {"tensor 'a'", "out of range"});
}

TEST(HostileSafetensors, HeaderLengthBeyondTheFileRefused) {
  expect_refused(write_file("hdr.safetensors", "{}", 0, 1u << 20), {"truncated", "header length"});
  expect_refused(write_file("hdr2.safetensors", "{}", 0, UINT64_MAX), {"header length"});
}

TEST(HostileSafetensors, ShapeProductOverflowRefused) {
  // 2^62 * 4 = 2^64 elements: wraps to 0 elements = 0 bytes, which an empty span would match.
  expect_refused(write_file("wrap_numel.safetensors",
                            R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})",
                            0),
                 {"tensor 'a'", "more elements than fit in 64 bits"});
  // Elements fit int64 but bytes do not: 2^61 F64 elements = 2^64 bytes.
  expect_refused(write_file("wrap_bytes.safetensors",
                            R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})",
                            0),
                 {"tensor 'a'", "more elements than fit in 64 bits"});
  // Three extents whose product overflows even though each is modest.
  expect_refused(write_file("wrap3.safetensors",
                            R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})",
                            0),
                 {"tensor 'a'", "more elements than fit in 64 bits"});
  // An extent above 2^63-1 (a uint64 in JSON) must not turn into a negative int64.
  expect_refused(write_file("huge_dim.safetensors",
                            R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})",
                            0),
                 {"tensor 'a'", "exceeds 2^63-1"});
}

TEST(HostileSafetensors, NumberTooLargeForJsonRefused) {
  // Valid JSON grammar, but 1e99999 overflows a double (nlohmann throws out_of_range, not a
  // parse_error): still an olmo::Error naming the file.
  expect_refused(write_file("big_number.safetensors",
                            R"({"a":{"dtype":"F32","shape":[1e99999],"data_offsets":[0,0]}})", 0),
                 {"header is not valid JSON", "number overflow"});
}

TEST(HostileSafetensors, ZeroExtentWithHugeOthersIsEmptyAndAccepted) {
  // A zero extent makes the tensor empty whatever the others are: a valid, empty tensor.
  const std::string p = write_file(
      "empty_big.safetensors",
      R"({"a":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]},)"
      R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
      4);
  SafetensorsFile f(p);
  EXPECT_EQ(f.get("a").nbytes, 0u);
  EXPECT_EQ(f.get("a").numel(), 0u);
  EXPECT_EQ(f.get("b").nbytes, 4u);
}
