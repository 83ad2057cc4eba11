// Hostile-but-well-formed checkpoint indices (issue 11): index.json entries whose checksums are
// all correct (COMMITTED re-signed) but which name data files outside the checkpoint ("../x",
// an absolute path, ".", ".."), a symlink to a device (/dev/zero), byte ranges whose end wraps
// past 2^64, shapes whose element count overflows int64, blocks whose offset + extent overflows,
// and two shards that overlap (covering one region twice and leaving a hole). Each must be
// refused with an olmo::Error naming the index or file and the problem, never read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;
using namespace olmo::ckpt;
using nlohmann::json;

namespace {

std::string fresh_dir(const std::string& tag) {
  std::string d = (fs::temp_directory_path() /
                   ("olmo_hostile_ckpt_" + tag + "_" + std::to_string(::getpid()))).string();
  fs::remove_all(d);
  return d;
}

// A complete one-process checkpoint with "w" [4, 4] f32 saved as two row shards.
std::string save(const std::string& run) {
  CheckpointWriter w(run, 1);
  std::vector<float> a(16);
  std::iota(a.begin(), a.end(), 0.0f);
  w.add_tensor("w", a.data(), {4, 4}, {0, 0}, {2, 4});
  w.add_tensor("w", a.data() + 8, {4, 4}, {2, 0}, {2, 4});
  w.add_json("trainer", {{"step", 1}});
  return w.commit();
}

void write_text(const std::string& path, const std::string& s) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << s;
}

// Applies edit to index.json and re-signs it (COMMITTED gets the new index checksum), so only
// the edited field is hostile.
template <class F>
void tamper(const std::string& dir, F edit) {
  json idx = json::parse(olmo::read_file(dir + "/index.json"));
  edit(idx);
  const std::string text = idx.dump(1);
  write_text(dir + "/index.json", text);
  json m = json::parse(olmo::read_file(dir + "/COMMITTED"));
  m["index_checksum"] = olmo::hex64(olmo::hash64(text.data(), text.size()));
  write_text(dir + "/COMMITTED", m.dump());
}

// The reader (and a whole read) must throw an olmo::Error containing every part of `want`.
void expect_refused(const std::string& dir, std::vector<std::string> want) {
  try {
    CheckpointReader r(dir);
    r.verify();
    std::vector<float> out(16);
    r.read_tensor("w", out.data(), {4, 4});
    FAIL() << "hostile checkpoint was accepted: " << dir;
  } catch (const olmo::Error& e) {
    for (const auto& w : want) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(HostileCheckpoint, UntouchedCheckpointReads) {
  const std::string dir = save(fresh_dir("ok"));
  CheckpointReader r(dir);
  r.verify();
  std::vector<float> out(16);
  r.read_tensor("w", out.data(), {4, 4});
  EXPECT_EQ(out[15], 15.0f);
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(HostileCheckpoint, FileNamesOutsideTheCheckpointRefused) {
  for (const std::string name : {"../tensors-00000.bin", "/dev/zero", "/etc/passwd", "..", ".", ""}) {
    const std::string dir = save(fresh_dir("name"));
    tamper(dir, [&](json& j) { j["tensors"][0]["file"] = name; });
    expect_refused(dir, {"index.json", "bad file name '" + name + "'"});
    fs::remove_all(fs::path(dir).parent_path());
  }
}

TEST(HostileCheckpoint, SymlinkToDeviceRefused) {
  const std::string dir = save(fresh_dir("dev"));
  fs::create_symlink("/dev/zero", dir + "/zeros.bin");
  tamper(dir, [&](json& j) { j["tensors"][0]["file"] = "zeros.bin"; });
  expect_refused(dir, {"zeros.bin", "not a regular file"});
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(HostileCheckpoint, ByteRangeWrappingPast2To64Refused) {
  const std::string dir = save(fresh_dir("wrap"));
  // byte_offset + nbytes = 2^64 + 16: wraps to a small number if added naively.
  tamper(dir, [&](json& j) { j["tensors"][0]["byte_offset"] = UINT64_MAX - 15; });
  expect_refused(dir, {"tensors-00000.bin", "truncated", "tensor 'w'"});
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(HostileCheckpoint, ShapeProductOverflowRefused) {
  const std::string dir = save(fresh_dir("numel"));
  // [2^62, 4] f32 elements: 2^64 elements, 2^66 bytes; naively 0 after wrapping.
  const int64_t big = int64_t(1) << 62;
  tamper(dir, [&](json& j) {
    auto& t = j["tensors"][0];
    t["global_shape"] = {big, 4};
    t["local_shape"] = {big, 4};
    t["nbytes"] = 0;
  });
  expect_refused(dir, {"index.json", "tensor 'w'", "more elements than fit in 64 bits"});
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(HostileCheckpoint, OffsetPlusExtentOverflowRefused) {
  const std::string dir = save(fresh_dir("offset"));
  // offset + local = 2^63 + 2 overflows int64 (undefined behaviour if computed naively).
  tamper(dir, [&](json& j) { j["tensors"][1]["offset"] = {INT64_MAX, 0}; });
  expect_refused(dir, {"index.json", "tensor 'w'", "block outside the global shape"});
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(HostileCheckpoint, OverlappingShardsRefused) {
  const std::string dir = save(fresh_dir("overlap"));
  // The second shard moves onto rows 0-1: the pieces still hold 16 elements, so a count of
  // copied elements alone would accept it and leave rows 2-3 of the output unwritten.
  tamper(dir, [&](json& j) { j["tensors"][1]["offset"] = {0, 0}; });
  expect_refused(dir, {"tensor 'w'", "overlap"});
  fs::remove_all(fs::path(dir).parent_path());
}
