// Dedup cost at scale (not a test): a synthetic corpus of --docs short training documents
// (default 1,000,000; 40-100 words drawn Zipf-like from a 30,000-word vocabulary of random
// letter strings) preceded by --heldout held-out documents, with planted duplicates:
//   1% of training docs an exact copy of an earlier one (case and whitespace changed),
//   2% a near copy (its last word substituted: Jaccard of 13-grams (g-1)/(g+1) >= 0.93 for
//      g >= 28 13-grams),
//   0.1% a near copy of a held-out document (the same edit).
// Runs corpus::dedup (the fast path) and prints wall time per phase, peak RSS (getrusage) before
// and after, removals per rule, and recall / false removals against the plants.
//   build/tests/bench_dedup [--docs 1000000] [--heldout 1000] [--threads 0] [--tokenizer FILE]
// --tokenizer: 13-grams of the real tokenizer's ids instead of words (adds its speed).
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/timer.h"
#include "corpus/dedup.h"
#include "tokenizer/tokenizer.h"

using namespace olmo::corpus;
using olmo::now_seconds;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 1000000, heldout = 1000;
  int threads = 0;
  std::string tok_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--docs") n = std::stoul(argv[i + 1]);
    else if (k == "--heldout") heldout = std::stoul(argv[i + 1]);
    else if (k == "--threads") threads = std::stoi(argv[i + 1]);
    else if (k == "--tokenizer") tok_path = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 1;
    }
  }
  std::mt19937_64 rng(2026);
  std::vector<std::string> vocab(30000);
  for (auto& w : vocab) {
    size_t len = 2 + rng() % 8;
    for (size_t k = 0; k < len; ++k) w += char('a' + rng() % 26);
  }
  // Zipf-like: index = floor(V * u^3) favours the head of the vocabulary.
  auto word = [&]() -> const std::string& {
    double u = double(rng() >> 11) / double(1ull << 53);
    return vocab[std::min(vocab.size() - 1, size_t(double(vocab.size()) * u * u * u))];
  };
  auto fresh = [&]() {
    std::vector<std::string> w(40 + rng() % 61);
    for (auto& x : w) x = word();
    return w;
  };
  auto join = [](const std::vector<std::string>& w) {
    std::string s;
    for (size_t i = 0; i < w.size(); ++i) s += (i ? " " : "") + w[i];
    return s;
  };
  const double t0 = now_seconds();
  std::vector<std::string> text;
  std::vector<std::vector<std::string>> held;
  std::vector<int> plant;  // 0 none, 1 exact, 2 near, 3 near held-out
  text.reserve(heldout + n);
  for (size_t i = 0; i < heldout; ++i) held.push_back(fresh()), text.push_back(join(held.back())), plant.push_back(0);
  std::vector<std::vector<std::string>> recent;  // a window of earlier training docs to copy
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rng() % 1000;
    std::vector<std::string> w;
    int p = 0;
    if (r < 10 && !recent.empty()) {
      std::string s = join(recent[rng() % recent.size()]);
      s[0] = char(std::toupper(s[0]));
      text.push_back("  " + s + "\n");
      plant.push_back(1);
      continue;
    } else if (r < 30 && !recent.empty()) {
      w = recent[rng() % recent.size()];
      w.back() = "zzplanted";
      p = 2;
    } else if (r < 31 && heldout > 0) {
      w = held[rng() % held.size()];
      w.back() = "zzplanted";
      p = 3;
    } else {
      w = fresh();
      if (recent.size() < 4096) recent.push_back(w);
      else recent[rng() % recent.size()] = w;
    }
    text.push_back(join(w));
    plant.push_back(p);
  }
  uint64_t bytes = 0;
  for (auto& t : text) bytes += t.size();
  std::printf("corpus: %zu held-out + %zu training docs, %.1f MB text, generated in %.1f s; "
              "peak RSS %.0f MB\n",
              heldout, n, double(bytes) / 1e6, now_seconds() - t0, peak_rss_mb());

  std::vector<DedupDoc> docs;
  docs.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) docs.push_back({text[i], i < heldout});
  DedupOptions opt;
  opt.threads = threads;
  std::unique_ptr<olmo::tokenizer::Tokenizer> tok;
  if (!tok_path.empty()) {
    tok = std::make_unique<olmo::tokenizer::Tokenizer>(olmo::tokenizer::Tokenizer::load(tok_path));
    const auto* t = tok.get();
    opt.tokenize = [t](std::string_view s, std::vector<uint32_t>& out) { t->encode_append(s, out); };
  }
  const double rss0 = peak_rss_mb();
  const double t1 = now_seconds(), c1 = cpu_seconds();
  DedupResult r = dedup(docs, opt);
  const double secs = now_seconds() - t1, cpu = cpu_seconds() - c1;
  size_t planted[4] = {0, 0, 0, 0}, caught[4] = {0, 0, 0, 0};
  for (size_t i = heldout; i < text.size(); ++i) {
    ++planted[plant[i]];
    caught[plant[i]] += r.removed[i];
  }
  std::printf("dedup (%s, K=%d, %d x %d, threads %d): %.1f s wall (signatures %.1f s, matching "
              "%.1f s), %.1f s CPU; peak RSS %.0f MB (%.0f MB before)\n",
              tok ? "tokenizer 13-grams" : "word 13-grams", opt.bands * opt.rows, opt.bands,
              opt.rows, threads, secs, r.seconds_sign, r.seconds_match, cpu, peak_rss_mb(), rss0);
  std::printf("removed: %llu exact, %llu near, %llu held-out overlap\n",
              (unsigned long long)r.exact, (unsigned long long)r.near, (unsigned long long)r.heldout);
  std::printf("plants caught: exact %zu/%zu, near %zu/%zu, near held-out %zu/%zu; "
              "unplanted docs removed: %zu of %zu\n",
              caught[1], planted[1], caught[2], planted[2], caught[3], planted[3], caught[0],
              planted[0]);
  std::printf("per million training docs: %.1f s wall, %.1f s CPU, %.0f MB above the corpus text\n",
              secs * 1e6 / double(n), cpu * 1e6 / double(n), (peak_rss_mb() - rss0) * 1e6 / double(n));
  return 0;
}
