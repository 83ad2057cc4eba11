// DataLoader (data/loader.h): global batches are rows of global_order (numpy-exact, checked in
// pcg64_test / numpy_order.py) cut to B * floor(N / B); rank r of W gets columns r::W so the union
// over ranks is the same global batch for every W; resume from state() equals the unbroken stream
// at every cut point, across epoch boundaries and through a JSON round trip; a changed global
// batch resumes at tokens_processed / new batch tokens; fingerprint mismatch throws unless
// ignored; the global hash equals hash64 of the batch's raw token bytes read independently.
// (OLMo-core itself is compared in olmo_core_parity.py.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/error.h"
#include "core/hash.h"
#include "data/loader.h"
#include "data/pcg64.h"

using namespace olmo::data;
namespace fs = std::filesystem;

namespace {
struct Fixture {
  fs::path dir;
  std::vector<std::string> paths;
  Fixture(std::vector<int> sizes, const std::string& tag) {
    dir = fs::temp_directory_path() / ("olmo_loader_test_" + tag + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::mt19937 g(11);
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<uint32_t> v(sizes[i]);
      for (auto& x : v) x = g() % 1000 == 0 ? olmo::kDolma2Eos : g() % 50000;
      std::string p = (dir / ("f" + std::to_string(i) + ".npy")).string();
      std::ofstream(p, std::ios::binary)
          .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
      paths.push_back(p);
    }
  }
  ~Fixture() { fs::remove_all(dir); }
};
struct Rec {
  int64_t epoch, batch;
  std::vector<int64_t> idx;
  uint64_t hash;
  std::vector<int32_t> tokens;
  bool operator==(const Rec& o) const {
    return epoch == o.epoch && batch == o.batch && idx == o.idx && hash == o.hash &&
           tokens == o.tokens;
  }
};
std::vector<Rec> take(DataLoader& dl, int n) {
  std::vector<Rec> r;
  DataLoader::Batch b;
  for (int i = 0; i < n && dl.next(b); ++i)
    r.push_back({b.epoch, b.batch_index, b.instance_indices, b.global_hash, b.tokens});
  return r;
}
constexpr int64_t T = 8;
}  // namespace

TEST(DataLoader, GlobalBatchesIndependentOfWorldSize) {
  Fixture fx({300, 77, 130}, "w");  // 37 + 9 + 16 = 62 instances
  FslDataset ds(fx.paths, T);
  ASSERT_EQ(ds.size(), 62);
  const int64_t gb = 8;
  DataLoader ref(ds, gb, 34521);
  EXPECT_EQ(ref.batches_per_epoch(), 7);  // 62 // 8; 6 instances dropped per epoch
  auto ref_batches = take(ref, 14);       // two epochs
  for (int e = 1; e <= 2; ++e) {
    auto order = global_order(62, 34521, e);
    std::set<int64_t> seen;
    for (int b = 0; b < 7; ++b) {
      const Rec& r = ref_batches[(e - 1) * 7 + b];
      EXPECT_EQ(r.epoch, e);
      EXPECT_EQ(r.batch, b);
      for (int i = 0; i < gb; ++i) EXPECT_EQ(r.idx[i], int64_t(order[b * gb + i]));
      seen.insert(r.idx.begin(), r.idx.end());
    }
    EXPECT_EQ(seen.size(), 56u);  // no repeats inside an epoch
  }
  for (int W : {2, 4, 8}) {
    std::vector<std::vector<Rec>> per_rank;
    for (int r = 0; r < W; ++r) {
      DataLoader dl(ds, gb, 34521, r, W);
      per_rank.push_back(take(dl, 14));
    }
    for (int s = 0; s < 14; ++s) {
      std::vector<int64_t> merged(gb);
      for (int r = 0; r < W; ++r) {
        const Rec& x = per_rank[r][s];
        ASSERT_EQ(int64_t(x.idx.size()), gb / W);
        EXPECT_EQ(x.hash, ref_batches[s].hash);
        for (int64_t k = 0; k < gb / W; ++k) {
          merged[r + k * W] = x.idx[k];
          // Tokens of this rank's k-th instance = tokens of that column in the W=1 batch.
          int64_t col = r + k * W;
          EXPECT_TRUE(std::equal(x.tokens.begin() + k * T, x.tokens.begin() + (k + 1) * T,
                                 ref_batches[s].tokens.begin() + col * T));
        }
      }
      EXPECT_EQ(merged, ref_batches[s].idx) << "W=" << W << " step " << s;
    }
  }
}

// Uneven slices (the exact reduction's any-W rule): every world size 1..gb and chunk size
// deals each instance of every global batch to exactly one rank, in the documented positions
// (chunk j of c columns to rank j % W), ranks holding ceil or floor of their chunks' share.
TEST(DataLoader, UnevenSlicesCoverTheGlobalBatchOnce) {
  Fixture fx({300}, "u");  // 37 instances
  FslDataset ds(fx.paths, T);
  const int64_t gb = 7;
  DataLoader ref(ds, gb, 11);
  const auto want = take(ref, 5);
  for (int64_t c : {1, 2, 3}) {
    for (int W = 1; W <= (gb + c - 1) / c; ++W) {
      std::vector<std::vector<Rec>> per_rank;
      int64_t total = 0;
      for (int r = 0; r < W; ++r) {
        DataLoader dl(ds, gb, 11, r, W);
        dl.set_rank_chunk(c);
        per_rank.push_back(take(dl, 5));
        int64_t expect = 0;  // columns p with (p / c) % W == r, counted independently
        for (int64_t p = 0; p < gb; ++p) expect += (p / c) % W == r;
        EXPECT_EQ(dl.rank_batch_instances(), expect) << "W=" << W << " c=" << c << " r=" << r;
        EXPECT_EQ(int64_t(per_rank.back()[0].idx.size()), expect);
        total += expect;
        if (c == 1) {
          EXPECT_TRUE(expect == gb / W || expect == (gb + W - 1) / W);
        }
      }
      EXPECT_EQ(total, gb);
      for (int s = 0; s < 5; ++s) {
        std::vector<int64_t> merged(gb, -1);
        for (int r = 0; r < W; ++r) {
          std::vector<int64_t> cols;
          for (int64_t p = 0; p < gb; ++p)
            if ((p / c) % W == r) cols.push_back(p);
          for (size_t k = 0; k < cols.size(); ++k) merged[cols[k]] = per_rank[r][s].idx[k];
        }
        EXPECT_EQ(merged, want[s].idx) << "W=" << W << " c=" << c << " step " << s;
      }
    }
  }
}

TEST(DataLoader, GlobalHashIsRawBytesOfTheGlobalBatch) {
  Fixture fx({200}, "h");
  FslDataset ds(fx.paths, T);
  DataLoader dl(ds, 4, 5);
  std::ifstream f(fx.paths[0], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  std::set<uint64_t> hashes;
  for (const Rec& r : take(dl, 6)) {
    std::string cat;
    for (int64_t i : r.idx) cat += bytes.substr(i * T * 4, T * 4);
    EXPECT_EQ(r.hash, olmo::hash64(cat.data(), cat.size()));
    hashes.insert(r.hash);
  }
  EXPECT_EQ(hashes.size(), 6u);
  EXPECT_EQ(dl.global_batch_hash(1, 2), take(*std::make_unique<DataLoader>(ds, 4, 5), 3)[2].hash);
}

TEST(DataLoader, ResumeEqualsUnbrokenStreamAcrossEpochs) {
  Fixture fx({100, 61}, "r");  // 12 + 7 = 19 instances, gb 4 -> 4 batches/epoch
  FslDataset ds(fx.paths, T);
  for (int W : {1, 2}) {
    for (int r = 0; r < W; ++r) {
      DataLoader full(ds, 4, 77, r, W);
      auto want = take(full, 11);  // 2.75 epochs
      for (int cut : {0, 1, 3, 4, 5, 8, 9, 10}) {
        DataLoader a(ds, 4, 77, r, W);
        auto head = take(a, cut);
        nlohmann::json st = nlohmann::json::parse(a.state().dump());
        DataLoader b(ds, 4, 1234 /* state's seed wins */, r, W);
        b.load_state(st);
        EXPECT_EQ(b.seed(), 77u);
        auto tail = take(b, 11 - cut);
        head.insert(head.end(), tail.begin(), tail.end());
        ASSERT_EQ(head.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(head[i] == want[i]) << "W=" << W << " cut " << cut << " step " << i;
      }
    }
  }
}

TEST(DataLoader, StateMatchesOlmoCoreKeys) {
  Fixture fx({100}, "s");
  FslDataset ds(fx.paths, T);
  DataLoader dl(ds, 4, 9);
  take(dl, 2);
  auto st = dl.state();
  EXPECT_EQ(st["batches_processed"], 2);
  EXPECT_EQ(st["tokens_processed"], 2 * 4 * T);
  EXPECT_EQ(st["epoch"], 1);
  EXPECT_EQ(st["seed"], 9);
  EXPECT_EQ(st["dataset_type"], "fsl");
  EXPECT_EQ(st["sequence_length"], T);
  EXPECT_TRUE(st["max_target_sequence_length"].is_null());
  EXPECT_EQ(st["dataset_fingerprint_version"], "v2.0");
  EXPECT_EQ(st["dataset_fingerprint"], ds.fingerprint());
}

TEST(DataLoader, BatchSizeChangeResumesAtTokensProcessed) {
  Fixture fx({400}, "b");  // 50 instances
  FslDataset ds(fx.paths, T);
  DataLoader small(ds, 4, 3);
  auto s = take(small, 6);
  DataLoader big(ds, 8, 3);
  big.load_state(small.state());
  EXPECT_EQ(big.batches_processed(), 3);
  auto nb = take(big, 1)[0];
  DataLoader ref8(ds, 8, 3);
  EXPECT_TRUE(take(ref8, 4)[3] == nb);
  // The doubled batch is exactly the next two small batches.
  auto s2 = take(small, 2);
  std::vector<int64_t> two = s2[0].idx;
  two.insert(two.end(), s2[1].idx.begin(), s2[1].idx.end());
  EXPECT_EQ(nb.idx, two);
  // Not divisible: floor, as OLMo-core (5 small batches = 2.5 big ones -> resume at 2).
  DataLoader odd(ds, 4, 3);
  take(odd, 5);
  DataLoader big2(ds, 8, 3);
  big2.load_state(odd.state());
  EXPECT_EQ(big2.batches_processed(), 2);
  // Mid-stream setter (OLMo-core's global_batch_size setter).
  DataLoader m(ds, 4, 3);
  take(m, 4);
  m.set_global_batch_instances(8);
  EXPECT_EQ(m.batches_processed(), 2);
  EXPECT_EQ(take(m, 1)[0].idx, take(*std::make_unique<DataLoader>(ds, 8, 3), 3)[2].idx);
  m.set_global_batch_instances(2);
  EXPECT_EQ(m.batches_processed(), 12);
  DataLoader m3(ds, 4, 3);
  take(m3, 3);
  EXPECT_THROW(m3.set_global_batch_instances(8), olmo::Error);  // 3 % 2 != 0
  EXPECT_THROW(m3.set_global_batch_instances(6), olmo::Error);  // not an integer factor
}

TEST(DataLoader, FingerprintMismatchAndBadState) {
  Fixture fx({100, 60}, "f");
  FslDataset ds(fx.paths, T);
  FslDataset other({fx.paths[0]}, T);
  DataLoader a(ds, 4, 1);
  take(a, 2);
  DataLoader b(other, 4, 1);
  try {
    b.load_state(a.state());
    FAIL() << "fingerprint mismatch accepted";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fingerprint"), std::string::npos);
  }
  b.load_state(a.state(), /*ignore_fingerprint_mismatch=*/true);
  EXPECT_EQ(b.batches_processed(), 2);
  auto st = a.state();
  st.erase("tokens_processed");
  EXPECT_THROW(DataLoader(ds, 4, 1).load_state(st), olmo::Error);
  st = a.state();
  st["dataset_type"] = "vsl";
  EXPECT_THROW(DataLoader(ds, 4, 1).load_state(st), olmo::Error);
  st = a.state();
  st["max_target_sequence_length"] = 16;
  EXPECT_THROW(DataLoader(ds, 4, 1).load_state(st), olmo::Error);
  st = a.state();
  st["seed"] = "x";
  EXPECT_THROW(DataLoader(ds, 4, 1).load_state(st), olmo::Error);
}

TEST(DataLoader, EpochLimitAndBadConfig) {
  Fixture fx({100}, "e");  // 12 instances
  FslDataset ds(fx.paths, T);
  DataLoader dl(ds, 5, 1);
  dl.set_max_epochs(2);
  EXPECT_EQ(take(dl, 100).size(), 4u);  // 2 batches per epoch x 2 epochs
  EXPECT_THROW(DataLoader(ds, 3, 1, 0, 4), olmo::Error);  // a rank without an instance
  DataLoader c4(ds, 6, 1, 0, 2);
  c4.set_rank_chunk(4);                                    // chunks of 4 and 2: one per rank
  EXPECT_EQ(c4.rank_batch_instances(), 4);
  EXPECT_THROW(c4.set_rank_chunk(6), olmo::Error);         // one chunk for two ranks
  EXPECT_THROW(DataLoader(ds, 4, 1, 4, 4), olmo::Error);  // rank out of range
  EXPECT_THROW(DataLoader(ds, 13, 1), olmo::Error);       // batch > dataset
  EXPECT_THROW(DataLoader(ds, 0, 1), olmo::Error);
  DataLoader ns(ds, 4, 1, 0, 1, /*shuffle=*/false);
  EXPECT_EQ(take(ns, 1)[0].idx, (std::vector<int64_t>{0, 1, 2, 3}));
}
