// Deterministic parallel tokenization into OLMo token files (see prepare.h).
#include "data/prepare.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "data/jsonl.h"
#include "data/token_file.h"

namespace olmo::data {
namespace fs = std::filesystem;

std::string part_name(size_t index) {
  char b[32];
  std::snprintf(b, sizeof b, "part-%05zu.npy", index);
  return b;
}

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

// Progress bar on stderr, drawn at most 5 times a second and only on a terminal.
class Progress {
 public:
  Progress(bool want, uint64_t total_bytes)
      : on_(want && ::isatty(2)), total_(std::max<uint64_t>(total_bytes, 1)), t0_(now_seconds()) {}
  void update(uint64_t bytes, uint64_t docs, uint64_t tokens, bool final = false) {
    if (!on_) return;
    double t = now_seconds();
    if (!final && t - last_ < 0.2) return;
    last_ = t;
    double frac = std::min(1.0, double(bytes) / double(total_));
    int w = 30, fill = int(frac * w);
    std::string bar(fill, '#');
    bar.resize(w, '.');
    std::fprintf(stderr, "\r[%s] %5.1f%%  %llu docs  %.2fM tokens  %.2fM tok/s ", bar.c_str(),
                 100 * frac, (unsigned long long)docs, tokens / 1e6,
                 tokens / 1e6 / std::max(1e-9, t - t0_));
    if (final) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool on_;
  uint64_t total_;
  double t0_, last_ = 0;
};

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
  fs::create_directories(opt.out_dir);
  int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  PrepareStats st;
  Progress bar(opt.progress, total_bytes);
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
      st.tokens += t.size();
      ++st.docs;
    }
    batch.clear();
  };

  for (const auto& path : inputs) {
    DocumentReader r(path, JsonlOptions{opt.skip_bad_lines});
    size_t bytes = 0;
    uint64_t docs_before = st.docs + batch.size(), empty_before = st.empty_docs;
    Document d;
    while (r.next(d)) {
      if (d.text.empty()) {
        ++st.empty_docs;
        continue;
      }
      st.utf8_fixes += sanitize_utf8(d.text);
      st.text_bytes += d.text.size();
      bytes += d.text.size();
      batch.push_back(std::move(d));
      if (bytes >= opt.batch_bytes) {
        flush_batch();
        bytes = 0;
        bar.update(done_bytes + r.compressed_bytes_read(), st.docs, st.tokens);
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
  bar.update(done_bytes, st.docs, st.tokens, true);
  if (st.docs == 0) {
    std::string names;
    for (size_t i = 0; i < inputs.size() && i < 5; ++i) names += (i ? ", " : "") + inputs[i];
    if (inputs.size() > 5) names += cat(", ... (", inputs.size(), " files)");
    throw Error(cat("empty corpus: no non-empty documents in ", names,
                    st.bad_lines ? cat(" (", st.bad_lines, " malformed lines skipped)") : ""));
  }
  out->commit();
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
  j["files"] = files;
  write_file_atomic((fs::path(opt.out_dir) / "prepare.json").string(), j.dump(2) + "\n");
  st.seconds = now_seconds() - t0;
  return st;
}

}  // namespace olmo::data
