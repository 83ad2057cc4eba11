// PackedFslDataset (data/packed_dataset.h): OBFD packing on a hand-worked example, padding,
// truncation, document lengths, batch targets / doc ids, the loader over packed instances, bad
// input; and parity with OLMo-core's own NumpyPackedFSLDataset (tests/data/packed_ref.py, run
// with $OLMO_PYTHON) on the same token files: source permutation (Python random.Random),
// fingerprint, instance count, every instance's tokens, padding and document lengths (equal
// instances when document lengths are distinct; same packing structure when they tie).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "core/error.h"
#include "core/file_io.h"
#include "data/doc_lengths.h"
#include "data/fsl_dataset.h"
#include "data/loader.h"
#include "data/packed_dataset.h"
#include "data/py_random.h"

using namespace olmo;
using namespace olmo::data;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t E = olmo::kDolma2Eos, P = olmo::kDolma2Pad;

struct Files {
  fs::path dir;
  std::vector<std::string> paths;
  explicit Files(const std::vector<std::vector<uint32_t>>& contents) {
    dir = fs::temp_directory_path() / ("olmo_packed_test_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(counter()++));
    fs::create_directories(dir);
    for (size_t i = 0; i < contents.size(); ++i) {
      std::string p = (dir / ("part-" + std::to_string(i) + ".npy")).string();
      std::ofstream(p, std::ios::binary)
          .write(reinterpret_cast<const char*>(contents[i].data()),
                 std::streamsize(contents[i].size() * 4));
      paths.push_back(p);
    }
  }
  ~Files() { fs::remove_all(dir); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

// A document of n tokens: ids base, base+1, ... then EOS.
std::vector<uint32_t> doc(int n, uint32_t base) {
  std::vector<uint32_t> v;
  for (int i = 0; i + 1 < n; ++i) v.push_back(base + uint32_t(i));
  v.push_back(E);
  return v;
}
std::vector<uint32_t> concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> v;
  for (auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

PackedOptions opts(int64_t group = 1) {
  PackedOptions o;
  o.eos_id = E;
  o.pad_id = P;
  o.source_group_size = group;
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(PackedDataset, BestFitDecreasingByHand) {
  // seq 8; documents (lengths) 5, 3, 6, 2, 2, 1, 20 (truncated to 8), then 3 tokens without EOS.
  // Sorted decreasing: 8 | 6 | 5 | 3 | 2 | 2 | 1. OBFD: 8 -> bin0 (full); 6 -> bin1 (2 left);
  // 5 -> bin2 (3 left); 3 -> bin2 (best fit, full); 2 -> bin1 (full); 2 -> bin3 (6 left);
  // 1 -> bin3 (5 left).
  Files f({concat({doc(5, 10), doc(3, 20), doc(6, 30), doc(2, 40), doc(2, 50), doc(1, 60),
                   doc(20, 100), {7, 7, 7}})});
  PackedFslDataset ds(f.paths, 8, olmo::kDolma2VocabSize, opts());
  ASSERT_EQ(ds.size(), 4);
  EXPECT_EQ(ds.num_documents(), 7);
  std::vector<int32_t> x(8);
  auto row = [&](int64_t i) {
    ds.read(i, x.data());
    return std::vector<int32_t>(x.begin(), x.end());
  };
  const int32_t e = int32_t(E), p = int32_t(P);
  EXPECT_EQ(row(0), (std::vector<int32_t>{100, 101, 102, 103, 104, 105, 106, 107}));  // truncated
  EXPECT_EQ(row(1), (std::vector<int32_t>{30, 31, 32, 33, 34, e, 40, e}));
  EXPECT_EQ(row(2), (std::vector<int32_t>{10, 11, 12, 13, e, 20, 21, e}));
  EXPECT_EQ(row(3), (std::vector<int32_t>{50, e, e, p, p, p, p, p}));
  EXPECT_EQ(ds.label_length(3), 3);
  EXPECT_EQ(ds.label_length(0), 8);
  EXPECT_EQ(ds.document_lengths(1), (std::vector<int32_t>{6, 2}));
  EXPECT_EQ(ds.document_lengths(3), (std::vector<int32_t>{2, 1, 5}));  // padding: last segment
  EXPECT_EQ(ds.document_lengths(0), (std::vector<int32_t>{8}));
  EXPECT_EQ(ds.num_tokens(), 8 + 8 + 8 + 3);
}

TEST(PackedDataset, GroupsPackTogether) {
  // Two files, each with a 5-token and a 3-token document. Per file: one bin {5, 3} each.
  // Grouped by 2: sorted 5, 5, 3, 3 -> bins {5, 3}, {5, 3}, the first from file 0.
  Files f({concat({doc(5, 10), doc(3, 20)}), concat({doc(3, 30), doc(5, 40)})});
  PackedFslDataset one(f.paths, 8, olmo::kDolma2VocabSize, opts(1));
  PackedFslDataset two(f.paths, 8, olmo::kDolma2VocabSize, opts(2));
  EXPECT_EQ(one.size(), 2);
  EXPECT_EQ(two.size(), 2);
  // Sorted 5 (file 0), 5 (file 1), 3 (file 0), 3 (file 1): bin 0 = 5 (f0) + 3 (f0).
  auto d = two.instance_documents(0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, 0);
  EXPECT_EQ(d[1].file, 0);
  EXPECT_EQ(two.instance_documents(1)[0].file, 1);
  EXPECT_NE(one.fingerprint(), two.fingerprint());
}

TEST(PackedDataset, BatchTargetsAndDocIds) {
  Files f({concat({doc(6, 30), doc(2, 40), doc(2, 50), doc(1, 60)})});
  PackedFslDataset ds(f.paths, 8, olmo::kDolma2VocabSize, opts());
  ASSERT_EQ(ds.size(), 2);
  std::vector<int32_t> tok(16), tgt(16), ids(16);
  ds.read(0, tok.data());
  ds.read(1, tok.data() + 8);
  batch_targets(ds, {0, 1}, tok.data(), 2, 8, tgt.data(), ids.data());
  const int32_t e = int32_t(E), I = olmo::kIgnoreIndex;
  // Instance 0 = [30..34 E 40 E] (full): shifted, last ignored. Instance 1 = the 2- and
  // 1-token documents [50 E E P P P P P]: labels only inside the 3 real tokens.
  EXPECT_EQ(std::vector<int32_t>(tgt.begin(), tgt.begin() + 8),
            (std::vector<int32_t>{31, 32, 33, 34, e, 40, e, I}));
  EXPECT_EQ(std::vector<int32_t>(tgt.begin() + 8, tgt.end()),
            (std::vector<int32_t>{e, e, I, I, I, I, I, I}));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 2, 2, 2, 2, 2}));
  // FslDataset through the same interface: plain shifted targets.
  FslDataset fsl(f.paths, 4);
  std::vector<int32_t> t2(4), y2(4);
  fsl.read(0, t2.data());
  batch_targets(fsl, {0}, t2.data(), 1, 4, y2.data());
  EXPECT_EQ(y2, (std::vector<int32_t>{t2[1], t2[2], t2[3], I}));
}

TEST(PackedDataset, LoaderServesPackedInstances) {
  std::vector<uint32_t> all;
  for (int d = 0; d < 40; ++d) {
    auto v = doc(1 + (d * 7) % 15, uint32_t(100 * d));
    all.insert(all.end(), v.begin(), v.end());
  }
  Files f({all});
  PackedFslDataset ds(f.paths, 16, olmo::kDolma2VocabSize, opts());
  DataLoader dl(ds, 4, 42);
  DataLoader::Batch b;
  std::vector<int32_t> x(16);
  int n = 0;
  while (n < dl.batches_per_epoch() && dl.next(b)) {
    ASSERT_EQ(b.T, 16);
    for (int64_t k = 0; k < b.B; ++k) {
      ds.read(b.instance_indices[k], x.data());
      EXPECT_TRUE(std::equal(x.begin(), x.end(), b.tokens.begin() + k * 16));
    }
    // global hash = hash of the padded instances' uint32 bytes, in global order.
    Hasher h;
    for (int64_t i : dl.global_batch(1, b.batch_index)) {
      ds.read(i, x.data());
      std::vector<uint32_t> u(x.begin(), x.end());
      h.update(u.data(), u.size() * 4);
    }
    EXPECT_EQ(b.global_hash, h.digest());
    ++n;
  }
  EXPECT_GT(n, 0);
  auto st = dl.state();
  EXPECT_EQ(st["dataset_fingerprint"], ds.fingerprint());
  EXPECT_EQ(st["dataset_type"], "fsl");
  // A packed state does not load into an FSL dataset's loader over the same files.
  FslDataset fsl(f.paths, 16);
  DataLoader other(fsl, 4, 42);
  EXPECT_NE(error_of([&] { other.load_state(st); }).find("fingerprint"), std::string::npos);
}

TEST(PackedDataset, BadInput) {
  Files f({concat({doc(5, 10), doc(3, 20)})});
  PackedOptions no_eos = opts();
  no_eos.eos_id = -1;
  EXPECT_NE(error_of([&] { PackedFslDataset(f.paths, 8, olmo::kDolma2VocabSize, no_eos); })
                .find("packed instances need an EOS id"),
            std::string::npos);
  EXPECT_NE(error_of([&] { PackedFslDataset(f.paths, 12, olmo::kDolma2VocabSize, opts()); })
                .find("must be a power of two"),
            std::string::npos);
  EXPECT_NE(error_of([&] { PackedFslDataset({"/nonexistent/x.npy"}, 8, olmo::kDolma2VocabSize, opts()); })
                .find("/nonexistent/x.npy: token file not found"),
            std::string::npos);
  Files bad({{1, 2, 200000, E}});
  EXPECT_NE(error_of([&] { PackedFslDataset(bad.paths, 8, olmo::kDolma2VocabSize, opts()); })
                .find("token id 200000 at token offset 2"),
            std::string::npos);
  Files none({{1, 2, 3}});
  EXPECT_NE(error_of([&] { PackedFslDataset(none.paths, 8, olmo::kDolma2VocabSize, opts()); })
                .find("no EOS-terminated document"),
            std::string::npos);
  PackedFslDataset ok(f.paths, 8, olmo::kDolma2VocabSize, opts());
  std::vector<int32_t> x(8);
  EXPECT_NE(error_of([&] { ok.read(5, x.data()); }).find("out of range"), std::string::npos);
}

// ------------------------------------------------------------------------- OLMo-core parity

class PackedParity : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    const char* py = std::getenv("OLMO_PYTHON");
    const char* src = std::getenv("OLMO_SOURCE_DIR");
    if (!py || !src || !fs::exists(py)) return;
    dir_ = (fs::temp_directory_path() / ("olmo_packed_ref_" + std::to_string(::getpid()))).string();
    std::string cmd = std::string(py) + " " + src + "/tests/data/packed_ref.py " + dir_ + " > " +
                      dir_ + ".log 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
    if (!ok_) std::fprintf(stderr, "%s failed:\n%s\n", cmd.c_str(), read_file(dir_ + ".log").c_str());
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec), fs::remove(dir_ + ".log", ec);
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "OLMO_PYTHON / OLMO_SOURCE_DIR not set (run via ctest)";
    ASSERT_TRUE(ok_) << "reference script failed";
  }
  struct Case {
    nlohmann::json ref;
    std::vector<int32_t> inst;
    std::unique_ptr<PackedFslDataset> ds;
  };
  static Case load(const std::string& name) {
    Case c;
    const std::string d = dir_ + "/" + name;
    c.ref = nlohmann::json::parse(read_file(d + "/ref.json"));
    std::string raw = read_file(d + "/instances.i32");
    c.inst.resize(raw.size() / 4);
    std::memcpy(c.inst.data(), raw.data(), raw.size());
    std::vector<std::string> files;
    for (auto& f : c.ref["files"]) files.push_back(d + "/" + f.get<std::string>());
    std::vector<std::string> perm = permute_sources(files, c.ref["perm_seed"].get<uint64_t>());
    std::vector<std::string> names;
    for (auto& p : perm) names.push_back(fs::path(p).filename().string());
    EXPECT_EQ(nlohmann::json(names), c.ref["order"]) << "source permutation";
    PackedOptions o;
    o.eos_id = c.ref["eos"].get<int64_t>();
    o.pad_id = c.ref["pad"].get<uint32_t>();
    o.source_group_size = c.ref["group"].get<int64_t>();
    c.ds = std::make_unique<PackedFslDataset>(perm, c.ref["seq_len"].get<int64_t>(),
                                              c.ref["vocab"].get<uint32_t>(), o);
    EXPECT_EQ(c.ds->fingerprint(), c.ref["fingerprint"].get<std::string>());
    EXPECT_EQ(c.ds->size(), c.ref["num_instances"].get<int64_t>());
    return c;
  }
  static std::string dir_;
  static bool ok_;
};
std::string PackedParity::dir_;
bool PackedParity::ok_ = false;

TEST_F(PackedParity, DistinctLengthsGiveTheSameInstances) {
  Case c = load("distinct");
  const int64_t T = c.ds->seq_len(), N = std::min<int64_t>(c.ds->size(), c.ref["num_instances"]);
  std::vector<int32_t> x(static_cast<size_t>(T));
  int64_t equal = 0;
  for (int64_t i = 0; i < N; ++i) {
    c.ds->read(i, x.data());
    bool same = std::equal(x.begin(), x.end(), c.inst.begin() + i * T);
    EXPECT_TRUE(same) << "instance " << i;
    equal += same;
    EXPECT_EQ(c.ds->label_length(i), c.ref["label_len"][size_t(i)].get<int64_t>()) << i;
    EXPECT_EQ(nlohmann::json(c.ds->document_lengths(i)), c.ref["doc_lens"][size_t(i)]) << i;
  }
  std::printf("  distinct: %lld of %lld instances equal to OLMo-core's (tokens, padding, "
              "document lengths)\n", (long long)equal, (long long)c.ref["num_instances"].get<int64_t>());
}

TEST_F(PackedParity, TiesGiveTheSamePacking) {
  Case c = load("ties");
  const int64_t T = c.ds->seq_len(), N = std::min<int64_t>(c.ds->size(), c.ref["num_instances"]);
  std::vector<int32_t> x(static_cast<size_t>(T));
  std::map<std::vector<int32_t>, int> ours, theirs;  // documents as token sequences
  int64_t equal = 0;
  for (int64_t i = 0; i < N; ++i) {
    c.ds->read(i, x.data());
    equal += std::equal(x.begin(), x.end(), c.inst.begin() + i * T);
    EXPECT_EQ(c.ds->label_length(i), c.ref["label_len"][size_t(i)].get<int64_t>()) << i;
    EXPECT_EQ(nlohmann::json(c.ds->document_lengths(i)), c.ref["doc_lens"][size_t(i)]) << i;
    int64_t t = 0;
    for (int32_t len : c.ds->document_lengths(i)) {
      ours[std::vector<int32_t>(x.begin() + t, x.begin() + t + len)]++;
      theirs[std::vector<int32_t>(c.inst.begin() + i * T + t, c.inst.begin() + i * T + t + len)]++;
      t += len;
    }
  }
  EXPECT_EQ(ours, theirs) << "the same documents (and padding segments) overall";
  std::printf("  ties: same packing structure in all %lld instances; %lld bit-identical "
              "(the rest exchange equal-length documents: numpy's unstable argsort)\n",
              (long long)N, (long long)equal);
}

TEST(PyRandom, ShuffleOfZeroAndOneItems) {
  EXPECT_TRUE(python_shuffle_order(0, 123).empty());
  EXPECT_EQ(python_shuffle_order(1, 123), (std::vector<int64_t>{0}));
  auto o = python_shuffle_order(1000, 5);
  std::sort(o.begin(), o.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(o[size_t(i)], i);
}

TEST(InstanceSource, OpenFromSpec) {
  Files f({concat({doc(5, 10), doc(3, 20)}), concat({doc(6, 30)}), concat({doc(2, 40)})});
  DatasetSpec s;
  s.kind = "packed_fsl";
  s.paths = f.paths;
  s.seq_len = 8;
  s.vocab_size = olmo::kDolma2VocabSize;
  s.eos_id = E;
  s.pad_id = P;
  s.permutation_seed = 123;
  auto ds = open_instance_source(s);
  PackedFslDataset direct(permute_sources(f.paths, 123), 8, olmo::kDolma2VocabSize, opts());
  EXPECT_EQ(ds->fingerprint(), direct.fingerprint());
  EXPECT_EQ(ds->size(), direct.size());
  s.eos_id = -1;
  EXPECT_NE(error_of([&] { open_instance_source(s); }).find("packed instances need an EOS id"),
            std::string::npos);
  s.kind = "fsl";
  s.permutation_seed = 0;
  s.seq_len = 4;
  auto fsl = open_instance_source(s);
  EXPECT_EQ(fsl->fingerprint(), FslDataset(f.paths, 4).fingerprint());
  s.kind = "vsl";
  EXPECT_NE(error_of([&] { open_instance_source(s); }).find("must be fsl or packed_fsl"),
            std::string::npos);
}
