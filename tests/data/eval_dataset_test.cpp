// EvalDataset (data/eval_dataset.h): one document per instance split on EOS, truncated to
// seq_len, padded with pad id, label mask, targets = get_labels (shift left, -100 where masked and
// last), running offsets over files, OLMo-core fingerprint (hex printed by OLMo-core's
// NumpyPaddedFSLDataset for the same basenames/sizes), bad inputs. Compared against OLMo-core's
// NumpyPaddedFSLDataset on random data in olmo_core_parity.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/eval_dataset.h"

using namespace olmo::data;
namespace fs = std::filesystem;

namespace {
struct TmpDir {
  fs::path dir;
  TmpDir() {
    dir = fs::temp_directory_path() / ("olmo_eval_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~TmpDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::vector<uint32_t>& v) {
    std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
    return p;
  }
};
constexpr uint32_t E = olmo::kDolma2Eos;
constexpr int32_t P = olmo::kDolma2Pad, I = olmo::kIgnoreIndex;
}  // namespace

TEST(EvalDataset, OneDocumentPerInstancePaddedAndTruncated) {
  TmpDir t;
  auto a = t.write("a.npy", {1, 2, E, 3, 4, 5, 6, 7, E, 8, E, 9, 9});  // tail 9 9 dropped
  auto b = t.write("b.npy", {E, 10, E});
  EvalDataset ds({a, b}, 4);
  ASSERT_EQ(ds.size(), 5);
  EXPECT_EQ(ds.num_truncated(), 1);
  std::vector<int32_t> ids(4), tg(4);
  std::vector<uint8_t> m(4);
  struct Want {
    std::vector<int32_t> ids, tg;
    std::vector<uint8_t> m;
  };
  const int32_t e = static_cast<int32_t>(E);
  std::vector<Want> want = {
      {{1, 2, e, P}, {2, e, I, I}, {1, 1, 1, 0}},
      {{3, 4, 5, 6}, {4, 5, 6, I}, {1, 1, 1, 1}},  // 6-token document truncated to 4
      {{8, e, P, P}, {e, I, I, I}, {1, 1, 0, 0}},
      {{e, P, P, P}, {I, I, I, I}, {1, 0, 0, 0}},
      {{10, e, P, P}, {e, I, I, I}, {1, 1, 0, 0}},
  };
  for (int i = 0; i < 5; ++i) {
    ds.read(i, ids.data(), tg.data(), m.data());
    EXPECT_EQ(ids, want[i].ids) << i;
    EXPECT_EQ(tg, want[i].tg) << i;
    EXPECT_EQ(m, want[i].m) << i;
    EXPECT_EQ(ds.length(i), std::count(m.begin(), m.end(), 1));
  }
  std::vector<int32_t> bi(8), bt(8);
  ds.read_batch(1, 2, bi.data(), bt.data());
  EXPECT_EQ(std::vector<int32_t>(bi.begin() + 4, bi.end()), want[2].ids);
  EXPECT_THROW(ds.length(5), olmo::Error);
}

TEST(EvalDataset, FingerprintMatchesOlmoCore) {
  TmpDir t;
  auto v = std::vector<uint32_t>(35, 0);
  v.back() = E;  // a.npy needs one document to open; only basename and size enter the hash
  auto a = t.write("a.npy", v);
  auto b = t.write("b.npy", std::vector<uint32_t>(10, E));
  EXPECT_EQ(EvalDataset({a, b}, 16).fingerprint(),
            "ead108f07aa18de2ebe3a66b9118fe3652616bf93b9e40a821edfe6d01af222d");
}

TEST(EvalDataset, BadInputs) {
  TmpDir t;
  auto noeos = t.write("noeos.npy", {1, 2, 3});
  try {
    EvalDataset({noeos}, 4);
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("noeos.npy"), std::string::npos);
  }
  auto bad = t.write("bad.npy", {1, E, olmo::kDolma2VocabSize + 5, E});
  try {
    EvalDataset({bad}, 4);
    FAIL();
  } catch (const olmo::Error& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("bad.npy"), std::string::npos) << s;
    EXPECT_NE(s.find("token offset 2"), std::string::npos) << s;
  }
  std::string odd = (t.dir / "odd.npy").string();
  std::ofstream(odd, std::ios::binary) << "abcdef";
  EXPECT_THROW(EvalDataset({odd}, 4), olmo::Error);
  EXPECT_THROW(EvalDataset({}, 4), olmo::Error);
}
