// End to end: a corpus written by write_corpus with dedup on, tokenized by prepare (one part per
// shard, as scripts/make_demo_data.sh does), passes the data-loader audit's start checks
// (src/audit/corpus_index.h: held-out contamination, documents under two mix entries) with 0
// findings; the same corpus with dedup off has findings (so the check can fail). The plants: a
// held-out document copied into training with one word changed, one spread over two training
// documents (the 13-gram containment case), exact training duplicates, and repeated canaries.
// Tokens: words hashed into a 50,000 id vocabulary (EOS 0), for both dedup and prepare.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <unistd.h>

#include "audit/corpus_index.h"
#include "core/hash.h"
#include "corpus/corpus.h"
#include "corpus/prepare.h"

namespace fs = std::filesystem;
using namespace olmo;

namespace {

constexpr uint32_t kVocab = 50001;

void words(std::string_view t, std::vector<uint32_t>& out) {
  std::vector<uint32_t> w;
  corpus::word_tokens(t, w);
  for (uint32_t x : w) out.push_back(1 + x % (kVocab - 1));
}

std::string text_of(std::mt19937_64& rng, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(rng() % 3000);
  return s;
}

// Findings of the audit's start checks on DIR's tokenized corpus (dedup on or off).
size_t audit_findings(const fs::path& dir, bool dedup_on) {
  std::mt19937_64 rng(5);
  std::vector<corpus::Document> natural;
  std::vector<std::string> held;
  for (int k = 0; natural.size() < 120; ++k) {
    std::string id = "doc/" + std::to_string(k);
    natural.push_back({id, "linux-doc", text_of(rng, 200)});
    if (corpus::is_val_id(id)) held.push_back(natural.back().text);
  }
  EXPECT_GE(held.size(), 2u);
  auto add = [&](const std::string& text) {  // a training document (an id not held out)
    for (int k = 100000;; ++k) {
      std::string id = "doc/" + std::to_string(k);
      if (corpus::is_val_id(id) || std::any_of(natural.begin(), natural.end(),
                                               [&](auto& d) { return d.id == id; }))
        continue;
      natural.push_back({id, "linux-doc", text});
      return;
    }
  };
  add(held[0] + " extra");                                      // near copy of held-out text
  add(held[1].substr(0, held[1].size() * 6 / 10) + " " + text_of(rng, 300));  // 60% of it
  add(held[1].substr(held[1].size() * 5 / 10) + " " + text_of(rng, 300));     // and the rest
  for (int i = 0; i < 6; ++i) add(natural[size_t(i) * 3].text);  // exact duplicates
  corpus::CorpusOptions opt;
  opt.out_dir = (dir / "corpus").string();
  opt.dedup.enabled = dedup_on;
  opt.dedup.tokenize = words;
  opt.dedup.threads = 2;
  corpus::write_corpus(opt, natural, {}, corpus::make_canaries(3, 2), {});
  corpus::Encoder enc{[](std::string_view t, std::vector<uint32_t>& out) { words(t, out); }, 0,
                      kVocab, "words"};
  corpus::PrepareOptions po;
  po.out_dir = (dir / "tokens/train").string();
  po.part_per_input = true;
  po.threads = 2;
  auto train = corpus::prepare({(dir / "corpus/train").string()}, enc, po).files;
  EXPECT_EQ(train.size(), 4u);
  po.out_dir = (dir / "tokens/val_id").string();
  auto val = corpus::prepare({(dir / "corpus/val_id.jsonl").string()}, enc, po).files;
  auto idx = audit::load_corpus_index(train, kVocab);
  auto f = audit::check_contamination(idx, "val_id", val, 0, 0.5);
  auto d = audit::check_cross_entry_duplicates(idx);
  for (auto& x : f) std::printf("  %s\n", x.detail.c_str());
  for (auto& x : d) std::printf("  %s\n", x.detail.c_str());
  return f.size() + d.size();
}

struct TempDir {
  fs::path p = fs::temp_directory_path() / ("olmo_dedup_audit_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(p); }
  ~TempDir() { fs::remove_all(p); }
};

TEST(DedupAudit, DedupedCorpusAuditsClean) {
  TempDir t;
  EXPECT_EQ(audit_findings(t.p / "on", true), 0u);
}

TEST(DedupAudit, WithoutDedupTheAuditFindsThePlants) {
  TempDir t;
  EXPECT_GE(audit_findings(t.p / "off", false), 2u);
}

}  // namespace
