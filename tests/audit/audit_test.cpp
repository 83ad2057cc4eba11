// Data-loader audit building blocks (src/audit): the ledger round trip, torn-tail recovery and
// resume truncation; the per-step checks on a synthetic dataset, clean over two full epochs and
// one finding per injected anomaly (gap, repeat, identical batch, skipped batch + never served,
// wrong index, wrong tokens); the same on packed instances (clean; a document read at another
// offset, a lost padding: re-read mismatches naming the packed documents); the slicing rule against DataLoader's own rank slices (the loader is
// checked against OLMo-core elsewhere); unigram entropy against closed forms; contamination and
// cross-entry duplicates on hand-made index files written by the real prepare path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "audit/checks.h"
#include "audit/corpus_index.h"
#include "audit/ledger.h"
#include "audit/token_stats.h"
#include "core/error.h"
#include "core/hash.h"
#include "data/loader.h"
#include "data/packed_dataset.h"
#include "data/pcg64.h"
#include "corpus/prepare.h"

using namespace olmo;
using namespace olmo::audit;
namespace fs = std::filesystem;

namespace {

fs::path tmpdir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("olmo_audit_test_" + tag + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_tokens(const std::string& p, const std::vector<uint32_t>& v) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

// N = 34 instances of T = 8 tokens (B = 4: 8 batches per epoch, 2 instances dropped per epoch).
struct Data {
  fs::path dir = tmpdir("data");
  std::string path = (dir / "part-00000.npy").string();
  std::unique_ptr<data::FslDataset> ds;
  Data() {
    std::mt19937 g(3);
    std::vector<uint32_t> v(34 * 8);
    for (auto& x : v) x = g() % 500;
    write_tokens(path, v);
    data::FslOptions o;
    ds = std::make_unique<data::FslDataset>(std::vector<std::string>{path}, 8, 512, o);
  }
  ~Data() { fs::remove_all(dir); }
  // The correct record of (step, epoch, batch) and its tokens.
  LedgerRecord rec(int64_t step, int64_t e, int64_t b, std::vector<int32_t>& tok) const {
    auto ord = data::global_order(ds->size(), 5, e);
    LedgerRecord r;
    r.step = step;
    r.epoch = e;
    r.batch = b;
    tok.assign(4 * 8, 0);
    for (int k = 0; k < 4; ++k) {
      uint32_t idx = ord[size_t(b * 4 + k)];
      r.indices.push_back(idx);
      ds->read(idx, tok.data() + k * 8);
      r.row_hashes.push_back(row_hash(tok.data() + k * 8, 8));
    }
    r.content_hash = hash64(tok.data(), tok.size() * 4);
    return r;
  }
};

std::vector<std::string> kinds(const std::vector<Finding>& f) {
  std::vector<std::string> k;
  for (auto& x : f) k.push_back(x.kind);
  return k;
}

}  // namespace

TEST(Ledger, RoundTripTornTailAndResume) {
  fs::path d = tmpdir("ledger");
  std::string p = (d / "audit" / "ledger.bin").string();
  {
    LedgerWriter w(p, 0);
    for (int s = 1; s <= 5; ++s) {
      LedgerRecord r;
      r.step = s;
      r.epoch = 1;
      r.batch = s - 1;
      r.world = 2;
      r.rank = 1;
      r.chunk = 3;
      r.content_hash = 1000u + s;
      r.loader_hash = 2000u + s;
      r.indices = {uint32_t(s), uint32_t(10 * s)};
      r.row_hashes = {7u, uint32_t(s)};
      w.append(r);
    }
  }
  Ledger L = read_ledger(p);
  ASSERT_EQ(L.records.size(), 5u);
  EXPECT_FALSE(L.torn_tail);
  EXPECT_EQ(L.records[3].step, 4);
  EXPECT_EQ(L.records[3].world, 2);
  EXPECT_EQ(L.records[3].rank, 1);
  EXPECT_EQ(L.records[3].chunk, 3);
  EXPECT_EQ(L.records[3].content_hash, 1004u);
  EXPECT_EQ(L.records[3].loader_hash, 2004u);
  EXPECT_EQ(L.records[3].indices, (std::vector<uint32_t>{4, 40}));
  EXPECT_EQ(L.records[3].row_hashes, (std::vector<uint32_t>{7, 4}));
  EXPECT_EQ(fs::file_size(p), 5u * (56 + 16));
  // A crash mid-write leaves a partial record: ignored when reading, cut when reopening.
  fs::resize_file(p, fs::file_size(p) - 5);
  L = read_ledger(p);
  EXPECT_EQ(L.records.size(), 4u);
  EXPECT_TRUE(L.torn_tail);
  // Resume from step 2: records 3.. are dropped and the ledger continues without duplicates.
  {
    LedgerWriter w(p, 2);
    LedgerRecord r;
    r.step = 3;
    r.indices = {1};
    r.row_hashes = {1};
    w.append(r);
  }
  L = read_ledger(p);
  ASSERT_EQ(L.records.size(), 3u);
  EXPECT_EQ(L.records[2].step, 3);
  EXPECT_EQ(L.records[2].indices, (std::vector<uint32_t>{1}));
  // Not a ledger.
  std::ofstream(p, std::ios::binary) << std::string(64, 'x');
  EXPECT_THROW(read_ledger(p), Error);
  EXPECT_THROW(read_ledger((d / "nope.bin").string()), Error);
  fs::remove_all(d);
}

TEST(Checks, CleanOverTwoEpochsInMemoryAndOffline) {
  Data D;
  BatchAuditor live(*D.ds, 4, 5), offline(*D.ds, 4, 5);
  std::vector<int32_t> tok;
  int64_t step = 0;
  for (int e = 1; e <= 2; ++e)
    for (int b = 0; b < 8; ++b) {
      LedgerRecord r = D.rec(++step, e, b, tok);
      EXPECT_TRUE(live.observe(r, tok.data(), 0).empty()) << "step " << step;
      EXPECT_TRUE(offline.observe(r, nullptr, 0).empty()) << "step " << step;
    }
  EXPECT_TRUE(live.finish().empty());
}

TEST(Checks, EachAnomalyIsNamed) {
  Data D;
  std::vector<int32_t> tok;
  {  // a repeated instance and a wrong index, and its tokens
    BatchAuditor a(*D.ds, 4, 5);
    LedgerRecord r1 = D.rec(1, 1, 0, tok);
    EXPECT_TRUE(a.observe(r1, tok.data(), 0).empty());
    LedgerRecord r2 = D.rec(2, 1, 1, tok);
    r2.indices[2] = r1.indices[0];
    D.ds->read(r1.indices[0], tok.data() + 16);
    auto k = kinds(a.observe(r2, tok.data(), 0));
    EXPECT_EQ(k, (std::vector<std::string>{"repeat_in_epoch", "index_mismatch",
                                           "reread_mismatch"}));
  }
  {  // the same batch twice (the loader's label advances): identical batch + repeats
    BatchAuditor a(*D.ds, 4, 5);
    LedgerRecord r1 = D.rec(1, 1, 0, tok);
    std::vector<int32_t> t1 = tok;
    a.observe(r1, tok.data(), 0);
    LedgerRecord r2 = r1;
    r2.step = 2;
    r2.batch = 1;
    auto k = kinds(a.observe(r2, t1.data(), 0));
    EXPECT_EQ(k, (std::vector<std::string>{"identical_batch", "repeat_in_epoch",
                                           "index_mismatch", "reread_mismatch"}));
  }
  {  // plausible tokens from the wrong offset with the right index: only the re-read sees it
    BatchAuditor a(*D.ds, 4, 5), off(*D.ds, 4, 5);
    LedgerRecord r = D.rec(1, 1, 0, tok);
    const uint32_t* other = D.ds->view((r.indices[1] + 1) % D.ds->size());
    for (int i = 0; i < 8; ++i) tok[8 + i] = int32_t(other[i]);
    r.row_hashes[1] = row_hash(tok.data() + 8, 8);
    auto f = a.observe(r, tok.data(), 0);
    ASSERT_EQ(kinds(f), (std::vector<std::string>{"reread_mismatch"}));
    EXPECT_NE(f[0].detail.find("part-00000.npy tokens ["), std::string::npos) << f[0].detail;
    EXPECT_EQ(kinds(off.observe(r, nullptr, 0)), (std::vector<std::string>{"reread_mismatch"}));
  }
  {  // a gap in the ledger, a skipped batch, and instances never served by the epoch's end
    BatchAuditor a(*D.ds, 4, 5);
    int64_t step = 0;
    for (int b = 0; b < 8; ++b) {
      if (b == 3) continue;  // batch 3 never served
      ++step;
      if (b == 5) ++step;    // and a missing ledger step
      LedgerRecord r = D.rec(step, 1, b, tok);
      auto k = kinds(a.observe(r, tok.data(), 0));
      if (b == 4) EXPECT_EQ(k, (std::vector<std::string>{"position"}));
      else if (b == 5) EXPECT_EQ(k, (std::vector<std::string>{"ledger_gap"}));
      else EXPECT_TRUE(k.empty()) << b;
    }
    LedgerRecord r = D.rec(++step, 1, 3, tok);  // late: position, then the epoch is complete
    a.observe(r, tok.data(), 0);
    EXPECT_TRUE(a.finish().empty());  // every batch of the epoch was served in the end
    BatchAuditor b2(*D.ds, 4, 5);
    for (int b = 0; b < 8; ++b) {
      LedgerRecord rr = D.rec(b + 1, 1, b, tok);
      if (b == 6) rr = D.rec(b + 1, 1, 5, tok), rr.step = 7, rr.batch = 6;  // batch 5 again
      b2.observe(rr, tok.data(), 0);
    }
    auto f = b2.finish();
    ASSERT_EQ(kinds(f), (std::vector<std::string>{"never_served"}));
    EXPECT_NE(f[0].detail.find("4 instances of epoch 1"), std::string::npos) << f[0].detail;
  }
}

TEST(Checks, PackedInstancesCleanAndTheirDocumentsReRead) {
  // Documents of 3..12 tokens (EOS 0) packed into T = 16: 8 instances per batch of 2 -> B = 2.
  fs::path dir = tmpdir("packed");
  std::string path = (dir / "part-00000.npy").string();
  std::mt19937 g(11);
  std::vector<uint32_t> v;
  for (int d = 0; d < 40; ++d) {
    int len = 3 + int(g() % 10);
    for (int i = 0; i + 1 < len; ++i) v.push_back(2 + g() % 500);
    v.push_back(0);
  }
  write_tokens(path, v);
  data::PackedOptions o;
  o.eos_id = 0;
  o.pad_id = 1;
  data::PackedFslDataset ds({path}, 16, 512, o);
  const int64_t B = 2, T = 16, N = ds.size();
  ASSERT_GE(N, 8);
  auto rec = [&](int64_t step, int64_t e, int64_t b, std::vector<int32_t>& tok) {
    auto ord = data::global_order(N, 5, e);
    LedgerRecord r;
    r.step = step, r.epoch = e, r.batch = b;
    tok.assign(size_t(B * T), 0);
    for (int k = 0; k < B; ++k) {
      uint32_t idx = ord[size_t(b * B + k)];
      r.indices.push_back(idx);
      ds.read(idx, tok.data() + k * T);
      r.row_hashes.push_back(row_hash(tok.data() + k * T, T));
    }
    r.content_hash = hash64(tok.data(), tok.size() * 4);
    return r;
  };
  std::vector<int32_t> tok;
  BatchAuditor live(ds, B, 5), offline(ds, B, 5);
  int64_t step = 0;
  for (int e = 1; e <= 2; ++e)
    for (int64_t b = 0; b < N / B; ++b) {
      LedgerRecord r = rec(++step, e, b, tok);
      EXPECT_TRUE(live.observe(r, tok.data(), 0).empty()) << "step " << step;
      EXPECT_TRUE(offline.observe(r, nullptr, 0).empty()) << "step " << step;
    }
  EXPECT_TRUE(live.finish().empty());
  // Row 1's first document read one token later in the file (right index, plausible text).
  {
    BatchAuditor a(ds, B, 5), off(ds, B, 5);
    LedgerRecord r = rec(1, 1, 0, tok);
    auto docs = ds.instance_documents(r.indices[1]);
    for (int64_t i = docs[0].start; i < docs[0].end; ++i)
      tok[size_t(T + i - docs[0].start)] = int32_t(v[size_t(i + 1) % v.size()]);
    r.row_hashes[1] = row_hash(tok.data() + T, T);
    auto f = a.observe(r, tok.data(), 0);
    ASSERT_EQ(kinds(f), (std::vector<std::string>{"reread_mismatch"}));
    EXPECT_NE(f[0].detail.find("document"), std::string::npos) << f[0].detail;
    EXPECT_NE(f[0].detail.find("part-00000.npy ["), std::string::npos) << f[0].detail;
    EXPECT_EQ(kinds(off.observe(r, nullptr, 0)), (std::vector<std::string>{"reread_mismatch"}));
  }
  // A row whose padding was replaced by tokens (a loader that forgets the padding).
  {
    BatchAuditor a(ds, B, 5);
    LedgerRecord r = rec(1, 1, 0, tok);
    int64_t k = ds.label_length(r.indices[0]) < T ? 0 : 1;
    ASSERT_LT(ds.label_length(r.indices[size_t(k)]), T);
    tok[size_t(k * T + T - 1)] = 7;
    EXPECT_EQ(kinds(a.observe(r, tok.data(), 0)), (std::vector<std::string>{"reread_mismatch"}));
  }
  fs::remove_all(dir);
}

TEST(Checks, SlicePositionIsTheLoadersRankSlicing) {
  Data D;
  for (int world : {2, 4})
    for (int64_t chunk : {int64_t(1), int64_t(2)}) {
      if (4 % (chunk * world)) continue;
      auto ord = data::global_order(D.ds->size(), 5, 1);
      for (int r = 0; r < world; ++r) {
        data::DataLoader L(*D.ds, 4, 5, r, world);
        L.set_rank_chunk(chunk);
        data::DataLoader::Batch b;
        ASSERT_TRUE(L.next(b));
        for (int64_t k = 0; k < b.B; ++k)
          EXPECT_EQ(b.instance_indices[size_t(k)],
                    int64_t(ord[size_t(slice_position(k, r, world, chunk))]))
              << "world " << world << " chunk " << chunk << " rank " << r << " row " << k;
      }
    }
}

TEST(TokenStats, EntropyAndShares) {
  TokenHistogram h(16);
  std::vector<uint32_t> u = {0, 1, 2, 3, 4, 5, 6, 7};
  h.add(u.data(), 8);
  EXPECT_NEAR(h.entropy_bits(), 3.0, 1e-12);  // uniform over 8
  std::vector<uint32_t> s = {0, 0, 0, 0, 0, 0, 0, 0};
  h.add(s.data(), 8);                         // p0 = 9/16, others 1/16
  double want = -(9.0 / 16) * std::log2(9.0 / 16) - 7 * (1.0 / 16) * std::log2(1.0 / 16);
  EXPECT_NEAR(h.entropy_bits(), want, 1e-12);
  EXPECT_EQ(h.top(2)[0].first, 0u);
  EXPECT_NEAR(h.top(2)[0].second, 9.0 / 16, 1e-12);
  EXPECT_EQ(h.top(2)[1].first, 1u);  // ties: smaller id first
  TokenHistogram one(16);
  one.add(s.data(), 8);
  auto c = compare_distribution(one, h, 0.5, 0.05);
  EXPECT_FALSE(c.entropy_ok);
  EXPECT_FALSE(c.share_ok);
  // Miller-Madow: 8 distinct tokens in 16 draws -> + 7 / (2 * 16 * ln 2) bits.
  EXPECT_NEAR(h.entropy_bits_corrected() - h.entropy_bits(), 7.0 / (32 * std::log(2.0)), 1e-12);
  EXPECT_TRUE(compare_distribution(h, h, 0.32, 1e-9).ok());
  EXPECT_FALSE(compare_distribution(h, h, 0.31, 1e-9).ok());
  EXPECT_THROW(h.add(std::vector<uint32_t>{16}.data(), 1), Error);
}

TEST(Contamination, PrepareIndexFindsCopiesPassagesAndCrossEntryDuplicates) {
  fs::path d = tmpdir("contam");
  // Two prepared "mix entries" from JSONL through the real prepare path, with a toy encoder
  // (one token per byte) so that no tokenizer file is needed.
  corpus::Encoder enc;
  enc.encode_append = [](std::string_view t, std::vector<uint32_t>& out) {
    for (unsigned char ch : t) out.push_back(ch);
  };
  enc.eos_id = 256;
  enc.vocab_size = 257;
  enc.name = "bytes";
  std::mt19937 g(9);
  auto text = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += char('a' + g() % 26);
    return s;
  };
  std::vector<std::string> a, b;
  for (int i = 0; i < 6; ++i) a.push_back(text(300));
  for (int i = 0; i < 6; ++i) b.push_back(text(300));
  b.push_back(a[2]);  // the same document under two mix entries
  auto jsonl = [&](const std::string& path, const std::vector<std::string>& docs) {
    std::ofstream f(path);
    for (size_t i = 0; i < docs.size(); ++i)
      f << "{\"id\": \"" << i << "\", \"text\": \"" << docs[i] << "\"}\n";
  };
  jsonl((d / "a.jsonl").string(), a);
  jsonl((d / "b.jsonl").string(), b);
  corpus::PrepareOptions po;
  po.threads = 1;
  po.out_dir = (d / "A").string();
  corpus::prepare({(d / "a.jsonl").string()}, enc, po);
  po.out_dir = (d / "B").string();
  corpus::prepare({(d / "b.jsonl").string()}, enc, po);
  std::vector<std::string> mix = {(d / "A" / "part-00000.npy").string(),
                                  (d / "B" / "part-00000.npy").string()};
  CorpusIndex idx = load_corpus_index(mix, 257);
  EXPECT_TRUE(idx.missing.empty());
  EXPECT_EQ(idx.docs.size(), 13u);
  EXPECT_EQ(idx.ngram_sample, 8u);
  EXPECT_EQ(idx.counts.total(), 6u * 301 + 7u * 301);  // every token, EOS included
  auto dup = check_cross_entry_duplicates(idx);
  ASSERT_EQ(dup.size(), 1u);
  EXPECT_NE(dup[0].detail.find("2 mix entries"), std::string::npos) << dup[0].detail;

  // Held-out: doc 0 = a copy of a training doc, doc 1 = fresh text around a 200-byte passage
  // of a training doc, doc 2 and 3 fresh.
  std::vector<uint32_t> held;
  auto put = [&](const std::string& s) {
    for (unsigned char ch : s) held.push_back(ch);
    held.push_back(256);
  };
  put(b[4]);
  put(text(50) + a[4].substr(40, 200) + text(50));
  put(text(300));
  put(text(300));
  std::string hp = (d / "held.npy").string();
  write_tokens(hp, held);
  auto docs = contaminated_docs(idx, {hp}, 256, 0.5);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].index, 0);
  EXPECT_TRUE(docs[0].exact);
  EXPECT_EQ(docs[0].train_entry, mix[1]);
  EXPECT_EQ(docs[1].index, 1);
  EXPECT_FALSE(docs[1].exact);
  EXPECT_GE(docs[1].grams_in_train * 2, docs[1].grams);
  EXPECT_EQ(check_contamination(idx, "held", {hp}, 256, 0.5).size(), 2u);
  EXPECT_THROW(check_contamination(idx, "held", {(d / "nope.npy").string()}, 256, 0.5), Error);
  // Token files without an index are reported, not guessed.
  write_tokens((d / "loose.npy").string(), {1, 2, 3});
  CorpusIndex none = load_corpus_index({(d / "loose.npy").string()}, 257);
  EXPECT_EQ(none.missing.size(), 1u);
  EXPECT_EQ(none.ngram_sample, 0u);
  fs::remove_all(d);
}
