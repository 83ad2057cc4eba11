// Mix files (data/mix.h): `label,path` lines in order, comments/blank lines skipped, {TOKENIZER}
// substituted, paths resolved against the data root (default: the mix file's directory); errors
// name the mix file, the line and the path (missing token file, malformed line, empty mix).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/mix.h"

using namespace olmo::data;
namespace fs = std::filesystem;

namespace {
struct TmpDir {
  fs::path dir;
  TmpDir() {
    dir = fs::temp_directory_path() / ("olmo_mix_test_" + std::to_string(::getpid()));
    fs::create_directories(dir / "root" / "tok" / "web");
  }
  ~TmpDir() { fs::remove_all(dir); }
  std::string put(const fs::path& rel, const std::string& text) {
    std::ofstream((dir / rel).string()) << text;
    return (dir / rel).string();
  }
};
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Mix, ParsesLinesInOrder) {
  TmpDir t;
  t.put("root/tok/web/0.npy", "");
  t.put("root/tok/web/1.npy", "");
  std::string mix = t.put("m.txt", "# comment\n\nweb,{TOKENIZER}/web/1.npy\n  web , tok/web/0.npy \r\n");
  Mix m = load_mix(mix, (t.dir / "root").string(), "tok");
  EXPECT_EQ(m.labels, (std::vector<std::string>{"web", "web"}));
  EXPECT_EQ(m.paths, (std::vector<std::string>{(t.dir / "root/tok/web/1.npy").string(),
                                               (t.dir / "root/tok/web/0.npy").string()}));
  // Default root: the mix file's directory.
  std::string mix2 = t.put("root/m2.txt", "a,tok/web/0.npy\n");
  EXPECT_EQ(load_mix(mix2).paths[0], (t.dir / "root/tok/web/0.npy").string());
}

TEST(Mix, Errors) {
  TmpDir t;
  t.put("root/tok/web/0.npy", "");
  std::string mix = t.put("m.txt", "a,tok/web/0.npy\n# x\nb,tok/web/missing.npy\n");
  std::string e = error_of([&] { load_mix(mix, (t.dir / "root").string()); });
  EXPECT_NE(e.find("m.txt:3"), std::string::npos) << e;
  EXPECT_NE(e.find("tok/web/missing.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("not found"), std::string::npos) << e;
  EXPECT_EQ(load_mix(mix, (t.dir / "root").string(), "", false).paths.size(), 2u);

  std::string bad = t.put("bad.txt", "a,tok/web/0.npy\njustapath.npy\n");
  e = error_of([&] { load_mix(bad, (t.dir / "root").string()); });
  EXPECT_NE(e.find("bad.txt:2"), std::string::npos) << e;
  std::string three = t.put("three.txt", "a,b,c\n");
  EXPECT_NE(error_of([&] { load_mix(three); }).find("three.txt:1"), std::string::npos);
  std::string nolabel = t.put("nolabel.txt", ",tok/web/0.npy\n");
  EXPECT_NE(error_of([&] { load_mix(nolabel); }).find("nolabel.txt:1"), std::string::npos);
  std::string empty = t.put("empty.txt", "# nothing\n");
  EXPECT_NE(error_of([&] { load_mix(empty); }).find("empty.txt"), std::string::npos);
  EXPECT_NE(error_of([&] { load_mix((t.dir / "none.txt").string()); }).find("none.txt"),
            std::string::npos);
}
