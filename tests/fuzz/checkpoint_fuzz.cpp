// libFuzzer target: checkpoint index.json / state.json / COMMITTED (src/ckpt/checkpoint_reader.cpp,
// CheckpointReader + verify + read_slice). A scratch checkpoint dir holds a fixed 256-byte
// tensors-00000.bin; the first byte of the input picks what the rest becomes:
//   0: index.json verbatim (COMMITTED carries its true checksum; state.json is fixed);
//   1: state.json verbatim (index.json is a fixed one-tensor index with the true state checksum);
//   2: index.json after the harness parsed it and filled in the true checksums (state file and
//      each tensor's byte range where it lies in the data file), so tensor entries are reached;
//   3: COMMITTED verbatim (index and state fixed and consistent).
// Every tensor whose global shape holds at most 2^16 elements is then read whole.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/hash.h"
#include "fuzz_util.h"

namespace ck = olmo::ckpt;
using nlohmann::json;

namespace {

std::string data_bytes() {
  std::string d(256, '\0');
  for (size_t i = 0; i < d.size(); ++i) d[i] = char((i * 37 + 11) & 0xFF);
  return d;
}

const std::string& kState() {
  static const std::string s = R"({"trainer":{"step":3},"loader":{"epoch":0}})";
  return s;
}

std::string index_for(const std::string& state) {
  const std::string data = data_bytes();
  json t = {{"name", "w"},           {"dtype", "f32"},        {"global_shape", {4, 4}},
            {"offset", {0, 0}},      {"local_shape", {4, 4}}, {"file", "tensors-00000.bin"},
            {"byte_offset", 64},     {"nbytes", 64},
            {"checksum", olmo::hex64(olmo::hash64(data.data() + 64, 64))}};
  json j = {{"format", "olmo.cpp-checkpoint"},
            {"version", 1},
            {"step", 3},
            {"files",
             {{"state.json",
               {{"nbytes", state.size()}, {"checksum", olmo::hex64(olmo::hash64(state.data(), state.size()))}}}}},
            {"tensors", json::array({t})}};
  return j.dump();
}

std::string marker_for(const std::string& index) {
  return json({{"step", 3}, {"index_checksum", olmo::hex64(olmo::hash64(index.data(), index.size()))}})
      .dump();
}

// Mode 2: true checksums wherever the fields have the shape the reader expects.
std::string fix_checksums(const std::string& text, const std::string& state) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return text;
  const std::string data = data_bytes();
  if (j.contains("files") && j["files"].is_object() && j["files"].contains("state.json") &&
      j["files"]["state.json"].is_object())
    j["files"]["state.json"]["checksum"] = olmo::hex64(olmo::hash64(state.data(), state.size()));
  if (j.contains("tensors") && j["tensors"].is_array())
    for (auto& t : j["tensors"]) {
      if (!t.is_object() || !t.contains("byte_offset") || !t.contains("nbytes")) continue;
      if (!t["byte_offset"].is_number_unsigned() || !t["nbytes"].is_number_unsigned()) continue;
      const uint64_t b = t["byte_offset"].get<uint64_t>(), n = t["nbytes"].get<uint64_t>();
      if (b <= data.size() && n <= data.size() - b)
        t["checksum"] = olmo::hex64(olmo::hash64(data.data() + b, n));
    }
  return j.dump();
}

void write(const std::string& dir, const std::string& name, const std::string& bytes) {
  olmo::fuzz::write_scratch("ck/step3/" + name, bytes);
  (void)dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] & 3;
  const std::string body(olmo::fuzz::as_view(data + 1, size - 1));
  const std::string dir = olmo::fuzz::scratch_dir() + "/ck/step3";
  std::filesystem::create_directories(dir);
  std::string index, state = kState(), marker;
  switch (mode) {
    case 0: index = body; break;
    case 1: state = body; index = index_for(state); break;
    case 2: index = fix_checksums(body, state); break;
    default: index = index_for(state); marker = body;
  }
  if (mode != 3) marker = marker_for(index);
  write(dir, "tensors-00000.bin", data_bytes());
  write(dir, "state.json", state);
  write(dir, "index.json", index);
  write(dir, "COMMITTED", marker);
  try {
    ck::CheckpointReader r(dir);
    if (r.has_json("trainer")) (void)r.json("trainer").dump();
    try {
      r.verify();
    } catch (const olmo::Error& e) {
      OLMO_FUZZ_NOTE(e);
    }
    for (const ck::TensorEntry& t : r.tensors()) {
      int64_t n = 1;
      bool small = true;
      for (int64_t d : t.global_shape) {
        if (d > (1 << 16) || (n *= d) > (1 << 16)) small = false;
        if (!small) break;
      }
      if (!small) continue;
      std::vector<uint8_t> out(size_t(n) * ck::dtype_size(t.dtype) + 1);
      try {
        r.read_slice(t.name, t.dtype, out.data(), std::vector<int64_t>(t.global_shape.size(), 0),
                     t.global_shape);
      } catch (const olmo::Error& e) {
        OLMO_FUZZ_NOTE(e);
      }
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
