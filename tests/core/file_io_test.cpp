// core/file_io: atomic writes leave no temp file, errors name the path, mmap sees the bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

static fs::path tmpdir() {
  fs::path d = fs::temp_directory_path() / ("olmo_core_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

TEST(FileIo, AtomicWriteReplacesAndLeavesNoTemp) {
  fs::path d = tmpdir();
  std::string p = (d / "a.bin").string();
  olmo::write_file_atomic(p, "first");
  olmo::write_file_atomic(p, "second");
  EXPECT_EQ(olmo::read_file(p), "second");
  int n = 0;
  for (auto& e : fs::directory_iterator(d)) n += e.path().filename().string().rfind("a.bin", 0) == 0;
  EXPECT_EQ(n, 1);
  fs::remove_all(d);
}

TEST(FileIo, ErrorsNameThePath) {
  try {
    olmo::read_file("/nonexistent/dir/x.txt");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.txt"), std::string::npos);
  }
  EXPECT_THROW(olmo::write_file_atomic("/nonexistent/dir/y.txt", "x"), olmo::Error);
}

TEST(FileIo, MappedFileSeesBytes) {
  fs::path d = tmpdir();
  std::string p = (d / "m.bin").string();
  olmo::write_file_atomic(p, std::string("hello\0world", 11));
  olmo::MappedFile m(p);
  ASSERT_EQ(m.size(), 11u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 11), std::string("hello\0world", 11));
  olmo::MappedFile moved = std::move(m);
  EXPECT_EQ(moved.size(), 11u);
  EXPECT_EQ(m.data(), nullptr);
  fs::remove_all(d);
}

TEST(Hash, StreamingEqualsOneShotAndDiffers) {
  std::string s(1000, 'x');
  olmo::Hasher h;
  h.update(s.data(), 400);
  h.update(s.data() + 400, 600);
  EXPECT_EQ(h.digest(), olmo::hash64(s.data(), s.size()));
  std::string t = s;
  t[500] = 'y';
  EXPECT_NE(olmo::hash64(t.data(), t.size()), olmo::hash64(s.data(), s.size()));
  EXPECT_EQ(olmo::hex64(0xabcULL), "0000000000000abc");
}
