// Our safetensors reader/writer: round trip, interop with the `safetensors` PyPI package in both
// directions (tests/model/safetensors_interop.py, run with $OLMO_PYTHON), and every malformed-file
// error (truncated, lying offsets: overlap / gap / out of range / trailing bytes, bad dtype).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "model/safetensors.h"

using namespace olmo::model;
namespace fs = std::filesystem;

namespace {
// One scratch directory per process, removed at exit.
struct TmpDir {
  std::string path = (fs::temp_directory_path() / ("olmo_st_test_" + std::to_string(::getpid()))).string();
  ~TmpDir() { fs::remove_all(path); }
};
std::string tmpdir() {
  static TmpDir t;
  fs::create_directories(t.path);
  return t.path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Raw file: u64 header length + header + data.
void write_raw(const std::string& path, const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s[i] = char(n >> (8 * i));
  s += header;
  s.append(data_bytes, '\x01');
  olmo::write_file_atomic(path, s);
}

// Contents shared with safetensors_interop.py.
struct Expected {
  std::vector<double> f64;
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  std::vector<int16_t> i16;
  std::vector<int8_t> i8;
  std::vector<uint8_t> u8, b;
  std::vector<uint16_t> bf16;
  Expected() {
    for (int i = 0; i < 15; ++i) {
      double fv = (i - 7) * 0.375;
      int iv = (i * 37 % 23) - 11;
      f64.push_back(fv);
      f32.push_back(float(fv));
      f16.push_back(float_to_half(float(fv)));
      i64.push_back(iv);
      i32.push_back(iv);
      i16.push_back(int16_t(iv));
      i8.push_back(int8_t(iv));
      u8.push_back(uint8_t(iv));
    }
    for (int i = 0; i < 6; ++i) b.push_back(i % 3 == 0);
    for (int i = 0; i < 4; ++i) {
      float f = 1.5f * float(i - 2);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bf16.push_back(uint16_t(bits >> 16));
    }
  }
  // Exact for the values used here (multiples of 0.375 within fp16 range).
  static uint16_t float_to_half(float f) {
    if (f == 0) return std::signbit(f) ? 0x8000 : 0;
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    return uint16_t(sign | (e - 127 + 15) << 10 | m >> 13);
  }
  void add_all(SafetensorsWriter& w) const {
    w.add("t_F64", DType::F64, {3, 5}, f64.data());
    w.add("t_F32", DType::F32, {3, 5}, f32.data());
    w.add("t_F16", DType::F16, {3, 5}, f16.data());
    w.add("t_BF16", DType::BF16, {2, 2}, bf16.data());
    w.add("t_I64", DType::I64, {3, 5}, i64.data());
    w.add("t_I32", DType::I32, {3, 5}, i32.data());
    w.add("t_I16", DType::I16, {3, 5}, i16.data());
    w.add("t_I8", DType::I8, {3, 5}, i8.data());
    w.add("t_U8", DType::U8, {3, 5}, u8.data());
    w.add("t_BOOL", DType::BOOL, {2, 3}, b.data());
  }
  void check(const SafetensorsFile& f) const {
    auto same = [&](const char* name, DType dt, std::vector<int64_t> shape, const void* want,
                    size_t nbytes) {
      const TensorView& t = f.get(name);
      EXPECT_EQ(t.dtype, dt) << name;
      EXPECT_EQ(t.shape, shape) << name;
      ASSERT_EQ(t.nbytes, nbytes) << name;
      EXPECT_EQ(std::memcmp(t.data, want, nbytes), 0) << name;
    };
    same("t_F64", DType::F64, {3, 5}, f64.data(), 120);
    same("t_F32", DType::F32, {3, 5}, f32.data(), 60);
    same("t_F16", DType::F16, {3, 5}, f16.data(), 30);
    same("t_BF16", DType::BF16, {2, 2}, bf16.data(), 8);
    same("t_I64", DType::I64, {3, 5}, i64.data(), 120);
    same("t_I32", DType::I32, {3, 5}, i32.data(), 60);
    same("t_I16", DType::I16, {3, 5}, i16.data(), 30);
    same("t_I8", DType::I8, {3, 5}, i8.data(), 15);
    same("t_U8", DType::U8, {3, 5}, u8.data(), 15);
    same("t_BOOL", DType::BOOL, {2, 3}, b.data(), 6);
    // Float conversions to fp32.
    for (const char* n : {"t_F64", "t_F32", "t_F16"}) {
      std::vector<float> v(15);
      f.read_f32(n, v.data());
      for (int i = 0; i < 15; ++i) EXPECT_EQ(v[i], f32[i]) << n << " " << i;
    }
    std::vector<float> v(4);
    f.read_f32("t_BF16", v.data());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(v[i], 1.5f * float(i - 2));
  }
};

int python(const std::string& args) {
  const char* py = std::getenv("OLMO_PYTHON");
  std::string script = std::string(OLMO_SOURCE_DIR) + "/tests/model/safetensors_interop.py";
  std::string cmd = std::string(py ? py : OLMO_SOURCE_DIR "/.venv/bin/python") + " " + script +
                    " " + args;
  return std::system(cmd.c_str());
}
}  // namespace

TEST(Safetensors, RoundTripAndLayout) {
  std::string p = tmpdir() + "/rt.safetensors";
  Expected e;
  SafetensorsWriter w;
  e.add_all(w);
  w.set_metadata("format", "pt");
  w.write(p);
  SafetensorsFile f(p);
  e.check(f);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  std::string raw = olmo::read_file(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(raw[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "data start must be 8-aligned";
  EXPECT_EQ(raw[8], '{');
}

TEST(Safetensors, HalfConversion) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
}

TEST(Safetensors, PythonReadsOurFile) {
  std::string p = tmpdir() + "/cpp.safetensors";
  Expected e;
  SafetensorsWriter w;
  e.add_all(w);
  w.set_metadata("format", "pt");
  w.set_metadata("who", "cpp");
  w.write(p);
  EXPECT_EQ(python("check " + p), 0);
}

TEST(Safetensors, WeReadPythonFile) {
  std::string p = tmpdir() + "/py.safetensors";
  ASSERT_EQ(python("write " + p), 0);
  SafetensorsFile f(p);
  Expected().check(f);
  EXPECT_EQ(f.metadata().at("who"), "python");
}

TEST(Safetensors, MalformedFilesAreNamed) {
  std::string d = tmpdir();
  struct Case {
    std::string header;
    size_t data;
    std::string want;
  };
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":)";
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":)";
  std::vector<Case> cases = {
      {"{" + a + "[0,8]}," + b + "[4,12]}}", 12, "tensor 'b' data_offsets [4, 12] overlap tensor 'a'"},
      {"{" + a + "[0,8]}," + b + "[12,20]}}", 20, "gap in the data buffer: bytes [8, 12)"},
      {"{" + a + "[0,8]}," + b + "[8,16]}}", 12, "tensor 'b': data_offsets [8, 16] out of range"},
      {"{" + a + "[0,8]}}", 12, "4 trailing bytes"},
      {"{" + a + "[0,12]}}", 12, "span 12 bytes but shape and dtype F32 need 8"},
      {"{" + a + "[8,0]}}", 8, "has begin > end"},
      {R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, "unknown dtype \"Q4\""},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", 8, "missing or malformed \"data_offsets\""},
      {R"({"a":)", 8, "header is not valid JSON"},
      {R"({"__metadata__":{"k":1}})", 0, "__metadata__[\"k\"] is not a string"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string p = d + "/bad" + std::to_string(i) + ".safetensors";
    write_raw(p, cases[i].header, cases[i].data);
    std::string e = error_of([&] { SafetensorsFile f(p); });
    EXPECT_NE(e.find(p + ": "), std::string::npos) << e;
    EXPECT_NE(e.find(cases[i].want), std::string::npos) << "want: " << cases[i].want << "\ngot: " << e;
  }
}

TEST(Safetensors, TruncatedFiles) {
  std::string d = tmpdir();
  std::string p = d + "/full.safetensors";
  Expected e;
  SafetensorsWriter w;
  e.add_all(w);
  w.write(p);
  std::string raw = olmo::read_file(p);
  // Cut inside the data, inside the header, inside the length field.
  for (size_t cut : {raw.size() - 1, size_t(20), size_t(5)}) {
    std::string q = d + "/cut" + std::to_string(cut) + ".safetensors";
    olmo::write_file_atomic(q, raw.substr(0, cut));
    std::string err = error_of([&] { SafetensorsFile f(q); });
    EXPECT_NE(err.find(q + ": "), std::string::npos) << err;
    EXPECT_TRUE(err.find("truncated") != std::string::npos ||
                err.find("out of range") != std::string::npos) << err;
  }
  EXPECT_NE(error_of([&] { SafetensorsFile f(d + "/none.safetensors"); }).find("not found"),
            std::string::npos);
}

TEST(Safetensors, MissingTensorAndNonFloatRead) {
  std::string p = tmpdir() + "/m.safetensors";
  Expected e;
  SafetensorsWriter w;
  e.add_all(w);
  w.write(p);
  SafetensorsFile f(p);
  EXPECT_NE(error_of([&] { f.get("nope"); }).find(p + ": tensor 'nope' not found"),
            std::string::npos);
  std::vector<float> v(15);
  std::string err = error_of([&] { f.read_f32("t_I32", v.data()); });
  EXPECT_NE(err.find("tensor 't_I32' has dtype I32"), std::string::npos) << err;
}
