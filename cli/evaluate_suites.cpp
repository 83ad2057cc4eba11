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

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "eval/benchmark.h"
#include "eval/exposure.h"
#include "model/hf_io.h"
#include "interop/inference_model.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int run_evaluate_suites(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "evaluate-suites",
      "Offline scoring of benchmark suites (ranked classification: acc, acc_len_norm, bpb, "
      "ce_loss) and, with --canaries, canary exposure, for a model.");
  std::string dir, canaries, tok_path = olmo::tokenizer::Tokenizer::default_path(), out_path;
  std::string save_hf;
  std::vector<std::string> suites;
  int64_t max_items = 0, max_len = 0, candidates = 64, per_count = 0;
  app->add_option("SUITE", suites, "SUITE.jsonl: {\"id\", \"context\", \"choices\": [...], "
                                   "\"gold\"} per line; label = file name without .jsonl");
  app->add_option("--model", dir, "checkpoint (stepN), run dir (newest checkpoint) or HF model "
                                  "dir")
      ->required();
  app->add_option("--max-items", max_items, "first N items of each suite (0: all)")
      ->check(olmo::cli::non_negative());
  app->add_option("--max-len", max_len, "longest scored sequence (0: the model's max_seq_len)")
      ->check(olmo::cli::non_negative());
  app->add_option("--canaries", canaries, "also canary exposure from this canaries.json");
  app->add_option("--candidates", candidates, "|R| per canary");
  app->add_option("--per-count", per_count, "canaries per count (0: all)");
  app->add_option("--tokenizer", tok_path, "rank file");
  app->add_option("--out", out_path, "per-item / per-candidate log-likelihoods and summaries "
                                     "(JSONL)");
  app->add_option("--save-hf", save_hf, "write the scored weights as an HF model dir "
                                        "(config.json + model.safetensors, our writer)");
  olmo::cli::parse(*app, argc, argv);
  if (suites.empty() && canaries.empty())
    olmo::cli::usage_error(*app, "give at least one SUITE.jsonl or --canaries FILE");
  OLMO_CHECK(fs::exists(dir), dir, ": model directory not found");
  auto m = olmo::train::load_model_for_inference(dir);
  if (!save_hf.empty()) olmo::model::save_hf(*m, save_hf);
  auto tok = olmo::tokenizer::Tokenizer::load(tok_path);

  std::vector<json> out;
  for (const std::string& path : suites) {
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
  if (!canaries.empty()) {
    olmo::eval::ExposureEvaluator ev(canaries, tok, candidates, per_count);
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
  if (!out_path.empty()) {
    std::string text;
    for (const auto& j : out) text += j.dump() + "\n";
    olmo::write_file_atomic(out_path, text);
  }
  return 0;
}

}  // namespace

OLMO_COMMAND("evaluate-suites",
             "score benchmark suites (acc, len-norm acc, bpb) and canary exposure for a model",
             run_evaluate_suites);
