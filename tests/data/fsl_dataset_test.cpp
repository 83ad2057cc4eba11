// FslDataset (data/fsl_dataset.h): per-file chunking with dropped remainders and running
// offsets, reads equal to the raw file bytes (read independently with std::ifstream), OLMo-core
// fingerprints (expected hex printed by OLMo-core's NumpyFSLDataset.fingerprint for the same
// basenames/sizes/settings), document lengths / ids, make_targets, and every bad input: size not
// a multiple of 4, token id >= vocab (file + offset), no instance at all, no files, missing file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <numeric>
#include <random>

#include "core/error.h"
#include "data/doc_lengths.h"
#include "data/fsl_dataset.h"

using namespace olmo::data;
namespace fs = std::filesystem;

namespace {
struct TmpDir {
  fs::path dir;
  TmpDir() {
    dir = fs::temp_directory_path() / ("olmo_fsl_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~TmpDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::vector<uint32_t>& v) {
    std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
    return p;
  }
  std::string write_bytes(const std::string& name, const std::string& b) {
    std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << b;
    return p;
  }
};
std::vector<uint32_t> ramp(uint32_t start, int n) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}
std::vector<uint32_t> file_tokens(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(f)), {});
  std::vector<uint32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}
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

TEST(FslDataset, ChunksEachFileAndDropsRemainders) {
  TmpDir t;
  auto a = t.write("a.npy", ramp(0, 35));     // 2 instances, 3 dropped
  auto b = t.write("b.npy", ramp(1000, 10));  // 0 instances
  auto c = t.write("c.npy", ramp(2000, 48));  // 3 instances
  FslDataset ds({a, b, c}, 16);
  EXPECT_EQ(ds.size(), 5);
  EXPECT_EQ(ds.offsets(), (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(ds.locate(1), (std::pair<int, int64_t>{0, 1}));
  EXPECT_EQ(ds.locate(2), (std::pair<int, int64_t>{2, 0}));
  EXPECT_EQ(ds.locate(4), (std::pair<int, int64_t>{2, 2}));
  std::vector<std::vector<uint32_t>> raw = {file_tokens(a), file_tokens(c)};
  int64_t want_file[5] = {0, 0, 1, 1, 1}, want_k[5] = {0, 1, 0, 1, 2};
  std::vector<int32_t> out(16);
  for (int i = 0; i < 5; ++i) {
    ds.read(i, out.data());
    for (int t2 = 0; t2 < 16; ++t2) {
      ASSERT_EQ(uint32_t(out[t2]), raw[want_file[i]][want_k[i] * 16 + t2]) << i << " " << t2;
      ASSERT_EQ(ds.view(i)[t2], uint32_t(out[t2]));
    }
  }
  EXPECT_THROW(ds.read(5, out.data()), olmo::Error);
  EXPECT_THROW(ds.read(-1, out.data()), olmo::Error);
}

TEST(FslDataset, FingerprintMatchesOlmoCore) {
  TmpDir t;
  auto a = t.write("a.npy", std::vector<uint32_t>(35, 0));
  auto b = t.write("b.npy", std::vector<uint32_t>(10, olmo::kDolma2Eos));
  EXPECT_EQ(FslDataset({a, b}, 16).fingerprint(),
            "c2a2f119bf9ccf4bfc412095113d1a71a969d4e69375e493e44fa5b3a1b83dd8");
  FslOptions o;
  o.pad_id = 1;
  EXPECT_EQ(FslDataset({a, b}, 16, olmo::kDolma2VocabSize, o).fingerprint(),
            "98153baf2cd97f1f080c3783bb45890bcc1a1b7c4104dfcb2fc0bcea9274d3e9");
  // Sequence length is not part of NumpyFSLDataset's fingerprint (as OLMo-core).
  EXPECT_EQ(FslDataset({a, b}, 8).fingerprint(), FslDataset({a, b}, 16).fingerprint());
}

TEST(FslDataset, BadInputs) {
  TmpDir t;
  auto odd = t.write_bytes("odd.npy", std::string(4 * 20 + 2, '\0'));
  std::string e = error_of([&] { FslDataset({odd}, 4); });
  EXPECT_NE(e.find("odd.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("multiple of 4"), std::string::npos) << e;

  auto v = ramp(0, 40);
  v[37] = olmo::kDolma2VocabSize;  // in the dropped tail: still rejected at open
  auto bad = t.write("bad.npy", v);
  e = error_of([&] { FslDataset({bad}, 16); });
  EXPECT_NE(e.find("bad.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("token offset 37"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(olmo::kDolma2VocabSize)), std::string::npos) << e;

  // validate=false defers the check to read(), which still names file and offset.
  v = ramp(0, 40);
  v[20] = 500;
  auto bad2 = t.write("bad2.npy", v);
  FslOptions o;
  o.validate = false;
  FslDataset lazy({bad2}, 16, 100, o);
  std::vector<int32_t> out(16);
  EXPECT_EQ(error_of([&] { lazy.read(0, out.data()); }), "");
  e = error_of([&] { lazy.read(1, out.data()); });
  EXPECT_NE(e.find("bad2.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("token offset 20"), std::string::npos) << e;

  auto small = t.write("small.npy", ramp(0, 5));
  auto empty = t.write("empty.npy", {});
  e = error_of([&] { FslDataset({small, empty}, 16); });
  EXPECT_NE(e.find("empty"), std::string::npos) << e;
  EXPECT_NE(e.find("small.npy"), std::string::npos) << e;
  EXPECT_THROW(FslDataset({}, 16), olmo::Error);
  e = error_of([&] { FslDataset({(t.dir / "nope.npy").string()}, 16); });
  EXPECT_NE(e.find("nope.npy"), std::string::npos) << e;
  EXPECT_THROW(FslDataset({small}, 0), olmo::Error);
}

TEST(DocLengths, SplitOnEosInclusive) {
  const int32_t E = 9;
  auto L = [&](std::vector<int32_t> v) { return document_lengths(v.data(), v.size(), E); };
  EXPECT_EQ(L({1, E, 2, 3}), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(L({1, 2, E}), (std::vector<int32_t>{3}));
  EXPECT_EQ(L({E, E}), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(L({1, 2, 3}), (std::vector<int32_t>{3}));
  std::vector<int32_t> tok = {1, E, 2, 3, E, 4};
  std::vector<int32_t> ids(tok.size());
  document_ids(tok.data(), tok.size(), E, ids.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(document_ids_from_lengths(L(tok)), ids);
  std::vector<int32_t> two = {1, E, 2, E, E, 3};  // [2, 3] rows restart at 0
  EXPECT_EQ(document_ids_batch(two.data(), 2, 3, E), (std::vector<int32_t>{0, 0, 1, 0, 1, 2}));
}

TEST(DocLengths, RandomAgreesWithIds) {
  std::mt19937 g(3);
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<int32_t> tok(1 + g() % 64);
    for (auto& x : tok) x = g() % 4;  // 0 = EOS
    auto lens = document_lengths(tok.data(), tok.size(), 0);
    EXPECT_EQ(std::accumulate(lens.begin(), lens.end(), 0), int(tok.size()));
    std::vector<int32_t> ids(tok.size());
    document_ids(tok.data(), tok.size(), 0, ids.data());
    EXPECT_EQ(document_ids_from_lengths(lens), ids);
  }
}

TEST(FslDataset, DocumentLengthsAndTargets) {
  TmpDir t;
  std::vector<uint32_t> v = {5, olmo::kDolma2Eos, 6, 7, 8, olmo::kDolma2Eos, 1, 2};
  FslDataset ds({t.write("d.npy", v)}, 4);
  EXPECT_EQ(ds.document_lengths(0), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(ds.document_lengths(1), (std::vector<int32_t>{2, 2}));
  std::vector<int32_t> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(make_targets(x.data(), 2, 3), (std::vector<int32_t>{2, 3, -100, 5, 6, -100}));
}
