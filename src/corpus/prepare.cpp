// Deterministic parallel tokenization into OLMo token files (see prepare.h).
#include "corpus/prepare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/progress_bar.h"
#include "core/timer.h"
#include "corpus/jsonl.h"
#include "corpus/token_file.h"

namespace olmo::corpus {
namespace fs = std::filesystem;

std::string part_name(size_t index) {
  char b[32];
  std::snprintf(b, sizeof b, "part-%05zu.npy", index);
  return b;
}

uint64_t ngram_hash(const uint32_t* tokens) {
  return hash64(tokens, kNgram * sizeof(uint32_t), 0x6e6772616d3133ull);
}
uint64_t doc_hash(const uint32_t* tokens, size_t n) {
  return hash64(tokens, n * sizeof(uint32_t), 0x646f6373ull);
}

namespace {

// Accumulates the audit index (see prepare.h) document by document, in output order.
class AuditIndexWriter {
 public:
  AuditIndexWriter(uint32_t vocab, uint32_t sample) : vocab_(vocab), sample_(sample) {}
  void add(size_t part, const uint32_t* t, size_t n_with_eos) {
    if (part >= counts_.size()) counts_.emplace_back(vocab_, 0);
    auto& c = counts_[part];
    for (size_t i = 0; i < n_with_eos; ++i) ++c[t[i]];
    size_t n = n_with_eos > 0 ? n_with_eos - 1 : 0;  // without the EOS
    docs_.push_back({uint32_t(part), uint32_t(std::min<size_t>(n, UINT32_MAX)), doc_hash(t, n)});
    for (size_t i = 0; i + kNgram <= n; ++i) {
      uint64_t h = ngram_hash(t + i);
      if (h % sample_ == 0) grams_.push_back(h);
    }
  }
  void write(const std::string& dir) const {
    auto put = [](std::string& s, const void* p, size_t n) {
      s.append(static_cast<const char*>(p), n);
    };
    std::string tc = "OLMOTCNT";
    uint32_t parts = uint32_t(counts_.size());
    put(tc, &vocab_, 4);
    put(tc, &parts, 4);
    std::vector<uint64_t> total(vocab_, 0);
    for (auto& c : counts_) {
      std::vector<uint32_t> ids;
      std::vector<uint64_t> cnt;
      for (uint32_t i = 0; i < vocab_; ++i)
        if (c[i]) { ids.push_back(i); cnt.push_back(c[i]); total[i] += c[i]; }
      uint32_t nnz = uint32_t(ids.size());
      put(tc, &nnz, 4);
      put(tc, ids.data(), ids.size() * 4);
      put(tc, cnt.data(), cnt.size() * 8);
    }
    write_file_atomic((fs::path(dir) / "token_counts.bin").string(), tc);

    std::string db = "OLMODOCS";
    uint64_t nd = docs_.size();
    put(db, &nd, 8);
    for (auto& d : docs_) { put(db, &d.part, 4); put(db, &d.tokens, 4); put(db, &d.hash, 8); }
    write_file_atomic((fs::path(dir) / "docs.bin").string(), db);

    std::vector<uint64_t> g = grams_;
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    std::string ng = "OLMONG13";
    uint32_t n = kNgram;
    uint64_t count = g.size();
    put(ng, &n, 4);
    put(ng, &sample_, 4);
    put(ng, &count, 8);
    put(ng, g.data(), g.size() * 8);
    write_file_atomic((fs::path(dir) / "ngrams13.bin").string(), ng);

    // Human-readable summary.
    uint64_t all = 0;
    for (auto x : total) all += x;
    double H = 0;
    std::vector<std::pair<uint64_t, uint32_t>> top;
    for (uint32_t i = 0; i < vocab_; ++i)
      if (total[i]) {
        double p = double(total[i]) / double(all);
        H -= p * std::log2(p);
        top.push_back({total[i], i});
      }
    std::sort(top.begin(), top.end(), [](auto& a, auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (top.size() > 32) top.resize(32);
    nlohmann::ordered_json j;
    j["tokens"] = all;
    j["distinct_tokens"] = std::count_if(total.begin(), total.end(), [](uint64_t x) { return x; });
    j["unigram_entropy_bits"] = H;
    j["docs"] = docs_.size();
    j["ngram"] = kNgram;
    j["ngram_sample"] = sample_;
    j["ngram_hashes"] = g.size();
    nlohmann::ordered_json tj = nlohmann::ordered_json::array();
    for (auto& [c, id] : top) tj.push_back({id, double(c) / double(all)});
    j["top_tokens"] = tj;
    write_file_atomic((fs::path(dir) / "token_stats.json").string(), j.dump(2) + "\n");
  }

 private:
  struct Doc { uint32_t part, tokens; uint64_t hash; };
  uint32_t vocab_, sample_;
  std::vector<std::vector<uint64_t>> counts_;
  std::vector<Doc> docs_;
  std::vector<uint64_t> grams_;
};

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    std::error_code ec;
    auto st = fs::status(in, ec);
    OLMO_CHECK(!ec && fs::exists(st), in, ": input does not exist");
    if (fs::is_directory(st)) {
      std::vector<std::string> files;
      for (auto& e : fs::recursive_directory_iterator(in))
        if (e.is_regular_file()) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      OLMO_CHECK(!files.empty(), in, ": input directory holds no files");
      out.insert(out.end(), files.begin(), files.end());
    } else {
      out.push_back(in);
    }
  }
  return out;
}

namespace {

// Non-empty documents of files, in input order, as prepare reads them (UTF-8 sanitized).
std::vector<Document> read_all(const std::vector<std::string>& files, bool skip_bad_lines) {
  std::vector<Document> v;
  for (auto& path : files) {
    DocumentReader r(path, JsonlOptions{skip_bad_lines});
    Document d;
    while (r.next(d))
      if (!d.text.empty()) {
        sanitize_utf8(d.text);
        v.push_back(std::move(d));
      }
  }
  return v;
}

struct DedupPlan {
  std::vector<uint8_t> removed;  // per non-empty input document, in input order
  std::string report;            // JSONL
  nlohmann::ordered_json json;
};

DedupPlan plan_dedup(const std::vector<std::string>& inputs, const Encoder& enc,
                     const PrepareOptions& opt) {
  std::vector<Document> held = read_all(expand_inputs(opt.dedup_heldout), opt.skip_bad_lines);
  std::vector<Document> train = read_all(inputs, opt.skip_bad_lines);
  OLMO_CHECK(!train.empty(), "empty corpus: no non-empty documents in the inputs of ", opt.out_dir);
  std::vector<DedupDoc> dd;
  for (auto& d : held) dd.push_back({d.text, true});
  for (auto& d : train) dd.push_back({d.text, false});
  DedupOptions o = opt.dedup_options;
  o.enabled = true;
  if (!o.tokenize) o.tokenize = enc.encode_append;
  if (o.threads == 0) o.threads = opt.threads;
  DedupResult r = dedup(dd, o);
  OLMO_CHECK(r.removals.size() < train.size(), "prepare: every one of the ", train.size(),
             " input documents is a duplicate (", r.exact, " exact, ", r.near, " near, ",
             r.heldout, " overlapping held-out text); nothing written to ", opt.out_dir);
  DedupPlan p;
  p.removed.assign(r.removed.begin() + std::ptrdiff_t(held.size()), r.removed.end());
  auto who = [&](size_t i) -> const Document& { return i < held.size() ? held[i] : train[i - held.size()]; };
  for (auto& x : r.removals) {
    nlohmann::ordered_json line = {{"id", who(x.doc).id}, {"rule", x.rule},
                                   {"duplicate_of", who(x.duplicate_of).id},
                                   {"duplicate_of_heldout", x.duplicate_of < held.size()}};
    if (x.rule == "near") line["jaccard_estimate"] = std::round(x.jaccard * 1000) / 1000;
    if (x.rule == "heldout") line["heldout_share_in_doc"] = std::round(x.share * 1000) / 1000;
    p.report += line.dump() + "\n";
  }
  p.json = {{"heldout_inputs", opt.dedup_heldout}, {"heldout_docs", held.size()},
            {"docs_before", train.size()},
            {"removed", {{"exact", r.exact}, {"near", r.near}, {"heldout", r.heldout}}},
            {"jaccard", o.jaccard}, {"bands", o.bands}, {"rows", o.rows},
            {"containment", o.containment}, {"report", "dedup_report.jsonl"}};
  return p;
}

}  // namespace

PrepareStats prepare(const std::vector<std::string>& inputs_raw, const Encoder& enc,
                     const PrepareOptions& opt) {
  OLMO_CHECK(!opt.out_dir.empty(), "prepare: no output directory given (--out)");
  OLMO_CHECK(!inputs_raw.empty(), "prepare: no input files given");
  OLMO_CHECK(enc.eos_id < enc.vocab_size, "prepare: eos id ", enc.eos_id, " >= vocab size ",
             enc.vocab_size);
  OLMO_CHECK(opt.max_tokens_per_file > 0, "prepare: --max-tokens-per-file must be > 0");
  const double t0 = now_seconds();
  std::vector<std::string> inputs = expand_inputs(inputs_raw);
  uint64_t total_bytes = 0;
  for (auto& p : inputs) total_bytes += file_size(p);
  DedupPlan plan;
  if (opt.dedup) plan = plan_dedup(inputs, enc, opt);  // before anything is written
  uint64_t ordinal = 0;                                 // non-empty documents read so far
  fs::create_directories(opt.out_dir);
  int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  PrepareStats st;
  OLMO_CHECK(opt.ngram_sample >= 1, "prepare: ngram_sample must be >= 1");
  AuditIndexWriter audit(enc.vocab_size, opt.ngram_sample);
  ProgressOptions bar_opt;  // on stderr when it is a terminal; nothing otherwise
  bar_opt.mode = opt.progress ? ProgressMode::automatic : ProgressMode::silent;
  bar_opt.units = "B";
  ProgressBar bar(int64_t(total_bytes), "prepare", bar_opt);
  auto show = [&](uint64_t bytes_read) {
    bar.update(int64_t(bytes_read), cat(st.docs, " docs ", st.tokens, " tokens"));
  };
  std::unique_ptr<TokenFileWriter> out;
  uint64_t done_bytes = 0;
  nlohmann::ordered_json inputs_json = nlohmann::ordered_json::array();

  std::vector<Document> batch;
  std::vector<std::vector<uint32_t>> toks;
  auto flush_batch = [&]() {
    if (batch.empty()) return;
    toks.resize(batch.size());
    std::exception_ptr err;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < long(batch.size()); ++i) {
      try {
        toks[i].clear();
        enc.encode_append(batch[i].text, toks[i]);
        toks[i].push_back(enc.eos_id);
      } catch (...) {
#pragma omp critical
        if (!err) err = std::current_exception();
      }
    }
    if (err) std::rethrow_exception(err);
    for (size_t i = 0; i < batch.size(); ++i) {  // input order: thread-count independent
      const auto& t = toks[i];
      if (out && out->tokens() > 0 && out->tokens() + t.size() > opt.max_tokens_per_file) {
        out->commit();
        out.reset();
      }
      if (!out) {
        st.files.push_back((fs::path(opt.out_dir) / part_name(st.files.size())).string());
        out = std::make_unique<TokenFileWriter>(st.files.back(), enc.vocab_size);
      }
      out->add_document(batch[i].id, t.data(), t.size());
      if (opt.audit_index) audit.add(st.files.size() - 1, t.data(), t.size());
      st.tokens += t.size();
      ++st.docs;
    }
    batch.clear();
  };

  size_t bytes = 0;
  for (const auto& path : inputs) {
    if (opt.part_per_input) {
      flush_batch();
      bytes = 0;
      if (out) {
        out->commit();
        out.reset();
      }
    }
    DocumentReader r(path, JsonlOptions{opt.skip_bad_lines});
    uint64_t docs_before = st.docs + batch.size(), empty_before = st.empty_docs;
    Document d;
    while (r.next(d)) {
      if (d.text.empty()) {
        ++st.empty_docs;
        continue;
      }
      if (opt.dedup && plan.removed[ordinal++]) {
        ++st.dedup_removed;
        continue;
      }
      st.utf8_fixes += sanitize_utf8(d.text);
      st.text_bytes += d.text.size();
      bytes += d.text.size();
      batch.push_back(std::move(d));
      if (bytes >= opt.batch_bytes) {
        flush_batch();
        bytes = 0;
        show(done_bytes + r.compressed_bytes_read());
      }
    }
    st.bad_lines += r.bad_lines();
    done_bytes += file_size(path);
    inputs_json.push_back({{"path", path},
                           {"size", file_size(path)},
                           {"docs", st.docs + batch.size() - docs_before},
                           {"empty_docs", st.empty_docs - empty_before},
                           {"bad_lines", r.bad_lines()}});
  }
  flush_batch();
  show(done_bytes);
  bar.finish();
  if (st.docs == 0) {
    std::string names;
    for (size_t i = 0; i < inputs.size() && i < 5; ++i) names += (i ? ", " : "") + inputs[i];
    if (inputs.size() > 5) names += cat(", ... (", inputs.size(), " files)");
    throw Error(cat("empty corpus: no non-empty documents in ", names,
                    st.bad_lines ? cat(" (", st.bad_lines, " malformed lines skipped)") : ""));
  }
  if (out) out->commit();  // (part_per_input: the last inputs may have had no documents)
  out.reset();

  // Remove part files beyond those written now (left by an earlier, larger run).
  static const std::regex part_re(R"(part-(\d{5})\.(npy|csv\.gz))");
  for (auto& e : fs::directory_iterator(opt.out_dir)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (std::regex_match(name, m, part_re) && std::stoul(m[1].str()) >= st.files.size())
      fs::remove(e.path());
  }

  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (auto& f : st.files)
    files.push_back({{"path", fs::path(f).filename().string()},
                     {"index", fs::path(doc_index_path(f)).filename().string()},
                     {"tokens", file_size(f) / 4}});
  nlohmann::ordered_json j;
  j["format"] = "olmo-token-files-v1 (headerless little-endian uint32; .csv.gz: start,end,id)";
  j["tokenizer"] = enc.name;
  j["eos_id"] = enc.eos_id;
  j["vocab_size"] = enc.vocab_size;
  j["max_tokens_per_file"] = opt.max_tokens_per_file;
  j["docs"] = st.docs;
  j["tokens"] = st.tokens;
  j["text_bytes"] = st.text_bytes;
  j["empty_docs_skipped"] = st.empty_docs;
  j["bad_lines_skipped"] = st.bad_lines;
  j["utf8_replacements"] = st.utf8_fixes;
  j["inputs"] = inputs_json;
  if (opt.dedup) {
    write_file_atomic((fs::path(opt.out_dir) / "dedup_report.jsonl").string(), plan.report);
    j["dedup"] = plan.json;
  }
  j["files"] = files;
  if (opt.audit_index) audit.write(opt.out_dir);
  write_file_atomic((fs::path(opt.out_dir) / "prepare.json").string(), j.dump(2) + "\n");
  st.seconds = now_seconds() - t0;
  return st;
}

}  // namespace olmo::corpus
