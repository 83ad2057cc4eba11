// Scoring of OLMo in-loop tasks (olmo_tasks.h) exactly as ai2-olmo-eval 0.9.0's ICLMetric does
// (olmo_eval/metrics.py), with the shared context of a document computed once.
//
// Per continuation c of a document: query = ctx + c[:-1] left-truncated to max_len tokens,
// ctx_len = |query| - |c| + 1, and S = sum_t log p(c_t | query[:ctx_len + t]) over the full
// (padded) vocabulary, rounded to float32 like the reference's fp32 cross-entropy. fast_mc
// tasks: one query (the context), every choice is one token scored at position ctx_len - 1, and
// every choice uses choice 0's string lengths (the reference's batch carries choice 0's).
// Per-continuation values in float32 (L = str_len, B = byte_len, primed = "no leading space"):
//   acc:                ll = S,   ll' = S
//   len_norm/bpb/ce:    ll = S/L, ll' = S/L'
//   ce = -S/L, ce' = -S/L';  bpb = -S/B * 1.44269504089, bpb' = -S/B' * 1.44269504089
// Per document: pred = first argmax of ll; acc = [pred == label]; ce, bpb at the label;
// soft = softmax(ll)[label], soft_log = log_softmax(ll)[label] (and primed forms over ll').
// Task metrics (keys as ICLMetric.compute returns them; "_v1" = primed, "_v2" = plain):
//   bpb tasks:      bpb_v1, bpb_v2 (float32 running sum over documents in doc_id order / n)
//   ce_loss tasks:  ce_loss_v1, ce_loss_v2 (same)
//   acc/len_norm:   <type>_v1 = <type>_v2 = mean acc, ce_loss_v1/v2, bpb_v1/v2, soft_v1/v2,
//                   soft_log_v1/v2 (double sum of the float32 per-document values / n, then
//                   rounded to float32)
// Logged names: "eval/downstream/<label> (<text>)" as OLMo-core's DownstreamEvaluator maps the
// keys (olmo_core/train/callbacks/evaluator_callback.py).
//
// Cost: per document, each distinct truncated prefix (the context, normally shared by all
// choices) runs once through the KV-cache decoder (model/kv_cache.h); the choices then continue
// from copies of its cache, one token per step, up to `group` multi-token choices per batch. A
// document with a single continuation (bpb tasks) runs as one forward with the LM head on the
// continuation positions only (Olmo3::forward_loss). Both run the model's own block forward in
// the model's precision (bf16_mixed: bf16 GEMMs; the decode steps' attention in fp32).
// Memory (plan_icl_kv): one KV sequence costs sum over layers of 2 x slots x kv_dim x 4 bytes
// (slots = the task's longest query, <= max_len, or the layer's window); the cache holds
// 1 + group sequences: sequence 0 the context, 1..group the continuations. group = the most
// multi-token choices of a document, cut so the cache fits kv_budget bytes, but never below 1:
// the floor is 2 sequences (OLMo 3 7B at 8192: 2 x 5.37 GB). fast_mc tasks need sequence 0 only;
// tasks with one continuation per document need no cache. Results do not depend on group beyond
// the decoder's float rounding at a different batch width.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/progress_bar.h"
#include "eval/olmo_tasks.h"
#include "model/olmo3.h"

namespace olmo::eval {

// S (sum of log-probs, float32) of every choice of a document, by choice index.
struct IclDocScore {
  int64_t doc_id = 0;
  int label = 0;
  int pred = 0;               // first argmax of ll (acc/len_norm tasks)
  std::vector<float> S;       // per choice
  std::vector<float> ll;      // the metric's log-likelihood per choice (S or S / str_len)
  bool truncated = false;     // some query lost context tokens to max_len
};

// The KV cache a task is scored with (see Memory above); batch 0 = no decoder.
struct IclKvPlan {
  int64_t batch = 0;     // KV sequences: 0, 1 (fast_mc) or 1 + group
  int64_t group = 0;     // multi-token continuations decoded together
  int64_t length = 0;    // positions per sequence: the longest query (<= max_len)
  size_t bytes = 0;      // the cache's fp32 K and V
};

struct IclTaskResult {
  std::string label, metric_type;
  std::map<std::string, float> metrics;  // ICLMetric.compute keys (bpb_v2, acc_v1, ...)
  std::vector<IclDocScore> docs;
  int64_t truncated_rows = 0;  // rows whose query was left-truncated to max_len
  int64_t tokens = 0;          // query tokens the reference would run (sum of |query|)
  int64_t forwarded = 0;       // tokens our scorer actually ran through the model
  IclKvPlan kv;                // the KV cache it allocated
  double seconds = 0;
};

constexpr size_t kIclKvBudget = size_t(4) << 30;  // 4 GiB
// GiB (a config value or flag, > 0) -> bytes; throws olmo::Error naming `what` otherwise.
size_t kv_budget_bytes(double gib, const char* what = "benchmarks.task_kv_budget_gib");
IclKvPlan plan_icl_kv(const model::ModelConfig& c, const IclTask& task, int64_t max_len,
                      size_t kv_budget = kIclKvBudget);

// Scores a loaded task. max_len: the model context (olmo_eval's model_ctx_len), <= the model's
// max_seq_len. kv_budget: bytes the KV cache may take beyond its floor (plan_icl_kv).
// progress: a bar on stderr over the task's documents, labelled with the task (core/
// progress_bar.h; automatic: only when stderr is a terminal; the in-loop evaluation passes
// silent, beside the trainer's own bar); stdout is never written.
IclTaskResult score_icl_task(model::Olmo3& m, const IclTask& task, int64_t max_len,
                             size_t kv_budget = kIclKvBudget,
                             ProgressMode progress = ProgressMode::automatic);

// Task metrics from per-document scores (exposed for tests); fills r.metrics and each pred.
void compute_icl_metrics(const IclTask& task, IclTaskResult& r);

// OLMo-core's logged name of a metric key: "eval/downstream/<label> (<text>)".
std::string olmo_metric_name(const std::string& label, const std::string& key);
// The key the summary table shows for a metric type (acc -> acc_v1, len_norm -> len_norm_v1,
// bpb -> bpb_v2, ce_loss -> ce_loss_v2).
std::string primary_metric_key(const std::string& metric_type);

}  // namespace olmo::eval
