// KV-cache sizing of the OLMo task scorer (src/eval/icl_metric.h, plan_icl_kv): the planned
// bytes for OLMo 3 7B at context 8192 against hand-worked figures (fast_mc: 1 sequence, bpb: no
// cache, 4 multi-token choices: 2 sequences under the default 4 GiB budget, 5 under 64 GiB), the
// allocated cache equal to the plan, and scoring with the choices decoded one at a time (the
// floor) or all together, both against log-softmax of the full forward's logits (double, plain
// loops; an independent path: no KV cache).
#include <gtest/gtest.h>

#include <cmath>

#include "eval/icl_metric.h"
#include "model/kv_cache.h"
#include "model/olmo3.h"

using namespace olmo;
using namespace olmo::eval;

namespace {

// One document: a context of n_ctx tokens and choices of the given token counts.
IclDoc make_doc(int64_t id, int64_t n_ctx, const std::vector<int>& lens, int32_t vocab) {
  IclDoc d;
  d.doc_id = id;
  d.label = 0;
  d.contexts.emplace_back();
  for (int64_t t = 0; t < n_ctx; ++t) d.contexts[0].push_back(int32_t((7 * t + 3 * id + 1) % vocab));
  for (size_t i = 0; i < lens.size(); ++i) {
    IclChoice ch;
    ch.cont_id = int64_t(i);
    for (int t = 0; t < lens[i]; ++t) ch.cont.push_back(int32_t((11 * t + 5 * i + id + 2) % vocab));
    ch.str_len = ch.byte_len = 4 * lens[i] + 1;
    ch.str_len_nls = ch.byte_len_nls = 4 * lens[i];
    d.choices.push_back(ch);
  }
  return d;
}

IclTask make_task(const std::string& type, bool fast_mc, std::vector<IclDoc> docs) {
  IclTask t;
  t.spec.label = "t_" + type;
  t.spec.metric_type = type;
  t.spec.fast_mc = fast_mc;
  t.docs = std::move(docs);
  return t;
}

model::ModelConfig olmo3_7b() {  // configs/olmo3-7b-stage1.yaml's shape, context 8192
  model::ModelConfig c;
  c.name = "olmo3-7b";
  c.d_model = 4096;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = 32;
  c.head_dim = 128;
  c.ffn_hidden = 11008;
  c.vocab_size = 100352;
  c.max_seq_len = 8192;
  for (int l = 0; l < 32; ++l) c.layer_window.push_back(l % 4 == 3 || l == 31 ? 0 : 4096);
  return c;
}

TEST(IclKv, PlanForOlmo3_7B) {
  const model::ModelConfig c = olmo3_7b();
  // 24 sliding layers x 4096 slots + 8 full x 8192 = 163,840 slots x kv_dim 4096 x K,V x 4 B.
  const size_t seq = size_t(163840) * 4096 * 2 * 4;
  ASSERT_EQ(seq, size_t(5368709120));
  ASSERT_EQ(model::KvCache::bytes_for(c, 1, 8192), seq);
  std::vector<IclDoc> rc, mc, bpb;
  for (int i = 0; i < 3; ++i) {
    rc.push_back(make_doc(i, 9000, {3, 2, 1, 4}, 100278));  // 3 multi-token choices
    mc.push_back(make_doc(i, 9000, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 100278));
    bpb.push_back(make_doc(i, 9000, {40}, 100278));
  }
  rc.push_back(make_doc(3, 500, {2, 2, 2, 2}, 100278));   // 4 multi-token choices
  const IclKvPlan p = plan_icl_kv(c, make_task("acc", false, rc), 8192);
  EXPECT_EQ(p.length, 8192);
  EXPECT_EQ(p.group, 1);  // one sequence already exceeds 4 GiB: the floor
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.bytes, 2 * seq);  // was (4 choices + 1) x seq = 26.8 GB
  const IclKvPlan wide = plan_icl_kv(c, make_task("acc", false, rc), 8192, size_t(64) << 30);
  EXPECT_EQ(wide.group, 4);  // 64 GiB holds 12 sequences; the task needs 1 + 4
  EXPECT_EQ(wide.bytes, 5 * seq);
  const IclKvPlan fast = plan_icl_kv(c, make_task("acc", true, mc), 8192);
  EXPECT_EQ(fast.batch, 1);  // 10 single-token choices at one position: the context only
  EXPECT_EQ(fast.bytes, seq);
  const IclKvPlan gold = plan_icl_kv(c, make_task("bpb", false, bpb), 8192);
  EXPECT_EQ(gold.batch, 0);  // one continuation per document: one forward, no cache
  EXPECT_EQ(gold.bytes, size_t(0));
}

model::ModelConfig tiny() {
  model::ModelConfig c;
  c.name = "t";
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  c.ffn_hidden = 64;
  c.vocab_size = 128;
  c.layer_window = {4, 0};
  c.max_seq_len = 32;
  return c;
}

// Sum over the continuation of log_softmax(logits)[token], from the full forward, in double.
double ref_S(model::Olmo3& m, const IclDoc& d, const IclChoice& ch, int64_t max_len) {
  std::vector<int32_t> q = d.contexts[size_t(ch.ctx)];
  q.insert(q.end(), ch.cont.begin(), ch.cont.end() - 1);
  if (int64_t(q.size()) > max_len) q.erase(q.begin(), q.end() - max_len);
  const int64_t T = int64_t(q.size()), V = m.config().vocab_size;
  std::vector<float> logits(size_t(T * V));
  m.forward_logits(q.data(), 1, T, logits.data());
  double S = 0;
  const int64_t first = T - int64_t(ch.cont.size());
  for (size_t t = 0; t < ch.cont.size(); ++t) {
    const float* row = logits.data() + (first + int64_t(t)) * V;
    double mx = row[0], s = 0;
    for (int64_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
    for (int64_t v = 0; v < V; ++v) s += std::exp(double(row[v]) - mx);
    S += double(row[ch.cont[t]]) - mx - std::log(s);
  }
  return S;
}

TEST(IclKv, GroupedDecodingMatchesFullForward) {
  model::Olmo3 m(tiny());
  m.init_weights(7);
  std::vector<IclDoc> docs;
  docs.push_back(make_doc(0, 10, {3, 1, 5, 2}, 128));
  docs.push_back(make_doc(1, 30, {4, 4, 1, 6}, 128));  // truncated to the context 24
  docs.push_back(make_doc(2, 6, {1, 2}, 128));
  const IclTask task = make_task("acc", false, docs);
  const int64_t max_len = 24;
  const size_t seq = model::KvCache::bytes_for(m.config(), 1, max_len);
  const IclTaskResult all = score_icl_task(m, task, max_len, size_t(1) << 30);
  const IclTaskResult one = score_icl_task(m, task, max_len, 2 * seq);
  EXPECT_EQ(all.kv.group, 3);  // the most multi-token choices of a document
  EXPECT_EQ(all.kv.batch, 4);
  EXPECT_EQ(one.kv.group, 1);
  EXPECT_EQ(one.kv.batch, 2);
  EXPECT_EQ(one.kv.bytes, 2 * seq);
  for (size_t i = 0; i < docs.size(); ++i)
    for (size_t j = 0; j < docs[i].choices.size(); ++j) {
      const double ref = ref_S(m, docs[i], docs[i].choices[j], max_len);
      const float a = all.docs[i].S[j], b = one.docs[i].S[j];
      EXPECT_NEAR(a, ref, 1e-5 * std::abs(ref)) << "doc " << i << " choice " << j;
      EXPECT_NEAR(b, ref, 1e-5 * std::abs(ref)) << "doc " << i << " choice " << j;
      EXPECT_NEAR(a, b, 1e-6 * std::abs(ref)) << "doc " << i << " choice " << j;
    }
  EXPECT_EQ(all.docs[1].truncated, true);
  EXPECT_EQ(all.forwarded, one.forwarded);
}

}  // namespace
