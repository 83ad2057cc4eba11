// `olmo evaluate-suites`: offline scoring of benchmark suites (ranked classification: acc,
// acc_len_norm, bpb, ce_loss; src/eval/benchmark.h) and, with --canaries, canary exposure
// (src/eval/exposure.h) for a checkpoint, run dir or HF model dir. --out writes every per-item,
// per-choice log-likelihood (and every exposure candidate's) as JSONL for external checking;
// --save-hf writes the weights that were scored as an HF dir with our safetensors writer.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "eval/benchmark.h"
#include "eval/exposure.h"
#include "model/hf_io.h"
#include "train/inference_model.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int run_evaluate_suites(int argc, char** argv) {
  olmo::cli::Args a(argc, argv);
  if (a.has("--help")) {
    std::printf(
        "usage: olmo evaluate-suites --model DIR [options] SUITE.jsonl...\n"
        "  DIR              checkpoint (stepN), run dir (newest checkpoint) or HF model dir\n"
        "  SUITE.jsonl      {\"id\", \"context\", \"choices\": [...], \"gold\"} per line; label =\n"
        "                   file name without .jsonl\n"
        "  --max-items N    first N items of each suite (default all)\n"
        "  --max-len L      longest scored sequence (default the model's max_seq_len)\n"
        "  --canaries FILE  also canary exposure from canaries.json\n"
        "  --candidates K   |R| per canary (default 64); --per-count P canaries per count\n"
        "  --tokenizer F    rank file (default data/tokenizer/cl100k_base.tiktoken)\n"
        "  --out FILE       per-item / per-candidate log-likelihoods and summaries (JSONL)\n"
        "  --save-hf OUT    write the scored weights as an HF model dir (config.json +\n"
        "                   model.safetensors, our writer)\n");
    return 0;
  }
  a.finish({"--model", "--max-items", "--max-len", "--canaries", "--candidates", "--per-count",
            "--tokenizer", "--out", "--save-hf"});
  const std::string dir = a.require("--model");
  OLMO_CHECK(!a.positional().empty() || a.has("--canaries"),
             "give at least one SUITE.jsonl or --canaries FILE");
  const int64_t max_items = a.get_int("--max-items", 0);
  const int64_t max_len = a.get_int("--max-len", 0);
  OLMO_CHECK(max_items >= 0 && max_len >= 0, "--max-items / --max-len must be >= 0");
  OLMO_CHECK(fs::exists(dir), dir, ": model directory not found");
  auto m = olmo::train::load_model_for_inference(dir);
  if (a.has("--save-hf")) olmo::model::save_hf(*m, a.get("--save-hf"));
  auto tok = olmo::tokenizer::Tokenizer::load(a.get("--tokenizer", olmo::tokenizer::Tokenizer::default_path()));

  std::vector<json> out;
  for (const std::string& path : a.positional()) {
    std::string label = fs::path(path).filename().string();
    if (label.size() > 6 && label.substr(label.size() - 6) == ".jsonl")
      label = label.substr(0, label.size() - 6);
    olmo::eval::BenchmarkSuite suite(label, path, tok, max_items);
    olmo::eval::SuiteResult r = suite.run(*m, max_len);
    for (const auto& it : r.per_item) {
      json ll = json::array(), tk = json::array(), ch = json::array(), by = json::array();
      for (const auto& c : it.choices) {
        ll.push_back(c.ll);
        tk.push_back(c.tokens);
        ch.push_back(c.chars);
        by.push_back(c.bytes);
      }
      out.push_back({{"kind", "item"}, {"suite", label}, {"id", it.id}, {"gold", it.gold},
                     {"pred", it.pred}, {"pred_norm", it.pred_norm},
                     {"truncated", it.truncated}, {"ll", ll}, {"tokens", tk}, {"chars", ch},
                     {"bytes", by}});
    }
    out.push_back({{"kind", "benchmark"}, {"suite", label}, {"items", r.items}, {"acc", r.acc},
                   {"acc_len_norm", r.acc_len_norm}, {"bpb", r.bpb}, {"ce_loss", r.ce_loss},
                   {"truncated", r.truncated}, {"forwards", r.forwards}, {"tokens", r.tokens},
                   {"seconds", r.seconds}});
    std::printf("%-16s %5lld items  acc %.4f  acc_len_norm %.4f  bpb %.4f  ce %.4f  "
                "(%lld forwards, %.2fs)\n",
                label.c_str(), (long long)r.items, r.acc, r.acc_len_norm, r.bpb, r.ce_loss,
                (long long)r.forwards, r.seconds);
  }
  if (a.has("--canaries")) {
    olmo::eval::ExposureEvaluator ev(a.get("--canaries"), tok, a.get_int("--candidates", 64),
                                     a.get_int("--per-count", 0));
    olmo::eval::ExposureResult r = ev.run(*m);
    json by = json::object();
    for (const auto& e : r.canaries)
      out.push_back({{"kind", "canary"}, {"name", e.name}, {"count", e.count}, {"ll", e.ll},
                     {"rank", e.rank}, {"candidates", e.candidates}, {"exposure", e.exposure},
                     {"refs", e.refs}, {"ref_ll", e.ref_ll}});
    std::printf("exposure (bits, |R| = %lld, %lld forwards, %.2fs):\n", (long long)r.candidates,
                (long long)r.forwards, r.seconds);
    for (const auto& [count, c] : r.by_count) {
      by[std::to_string(count)] = {{"mean", c.mean}, {"min", c.min}, {"max", c.max},
                                   {"canaries", c.canaries}};
      std::printf("  x%-3d %2lld canaries  mean %.3f  min %.3f  max %.3f%s\n", count,
                  (long long)c.canaries, c.mean, c.min, c.max, count == 0 ? "  (controls)" : "");
    }
    out.push_back({{"kind", "exposure"}, {"candidates", r.candidates}, {"by_count", by},
                   {"seconds", r.seconds}});
  }
  if (a.has("--out")) {
    std::string text;
    for (const auto& j : out) text += j.dump() + "\n";
    olmo::write_file_atomic(a.get("--out"), text);
  }
  return 0;
}

}  // namespace

OLMO_COMMAND("evaluate-suites",
             "score benchmark suites (acc, len-norm acc, bpb) and canary exposure for a model",
             run_evaluate_suites);
