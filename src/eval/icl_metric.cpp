// ICLMetric-exact scoring of OLMo in-loop tasks with a shared-context KV cache (icl_metric.h).
#include "eval/icl_metric.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/progress_bar.h"
#include "core/timer.h"
#include "core/token_ids.h"
#include "model/kv_cache.h"

namespace olmo::eval {

namespace {

constexpr float kLog2E = 1.44269504089f;  // olmo_eval's LOG_2_OF_E, as a float32 operand

// log-sum-exp of logits[V]: fp32 exp of x - max (< 1 ulp each), double accumulation.
double log_sum_exp(const float* x, int64_t V) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < V; ++i) mx = std::max(mx, x[i]);
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += double(std::exp(x[i] - mx));
  return double(mx) + std::log(s);
}

// One continuation to score: prefix = ctx[drop:] (the truncated query up to ctx_len), cont.
struct Piece {
  int choice;
  const std::vector<int32_t>* ctx;
  int64_t drop;
  const std::vector<int32_t>* cont;
  int64_t prefix_len() const { return int64_t(ctx->size()) - drop; }
};

class DocScorer {
 public:
  // No decoder when plan.batch is 0 (only single() is used then).
  DocScorer(model::Olmo3& m, const IclKvPlan& plan)
      : m_(m), V_(m.config().vocab_size), group_(plan.group),
        dec_(plan.batch > 0 ? std::make_unique<model::Decoder>(m, plan.batch, plan.length)
                            : nullptr),
        logits_(size_t(std::max<int64_t>(plan.batch, 1) * V_)) {}
  size_t kv_bytes() const { return dec_ ? dec_->cache().bytes() : 0; }

  // S of one continuation by one forward (LM head on its positions only).
  float single(const Piece& p, int64_t* forwarded) {
    std::vector<int32_t> q(p.ctx->begin() + p.drop, p.ctx->end());
    q.insert(q.end(), p.cont->begin(), p.cont->end() - 1);
    const int64_t T = int64_t(q.size()), first = p.prefix_len() - 1;
    std::vector<int32_t> tgt(size_t(T), olmo::kIgnoreIndex);
    for (size_t t = 0; t < p.cont->size(); ++t) tgt[size_t(first) + t] = (*p.cont)[t];
    kernels::LossSums s = m_.forward_loss(q.data(), tgt.data(), nullptr, 1, T, 0.0f);
    OLMO_CHECK(s.count == int64_t(p.cont->size()), "icl scoring: scored ", s.count,
               " positions, expected ", p.cont->size());
    *forwarded += T;
    return float(-s.ce_sum);
  }

  // S of several continuations sharing one prefix: the prefix once, then the multi-token
  // continuations, group_ at a time, each from a copy of its KV cache. out[i] for pieces[i].
  void shared(const std::vector<Piece>& pieces, std::vector<float>& out, int64_t* forwarded) {
    const Piece& p0 = pieces[0];
    const int64_t n = int64_t(pieces.size()), P = p0.prefix_len();
    model::KvCache& kv = dec_->cache();
    for (int64_t b = 0; b < kv.batch(); ++b) kv.reset(b);
    std::vector<double> S(size_t(n), 0.0);
    dec_->prefill(0, p0.ctx->data() + p0.drop, P, logits_.data());
    *forwarded += P;
    const double lse0 = log_sum_exp(logits_.data(), V_);
    std::vector<int64_t> multi;  // pieces with more than one token, in order
    for (int64_t i = 0; i < n; ++i) {
      S[size_t(i)] = double(logits_[size_t((*pieces[size_t(i)].cont)[0])]) - lse0;
      if (pieces[size_t(i)].cont->size() > 1) multi.push_back(i);
    }
    const model::ModelConfig& c = m_.config();
    OLMO_CHECK(multi.empty() || group_ > 0, "icl scoring: multi-token choices, no KV group");
    for (size_t g0 = 0; g0 < multi.size(); g0 += size_t(group_)) {
      const size_t g1 = std::min(multi.size(), g0 + size_t(group_));
      // Sequence 1 + (j - g0) continues piece multi[j] from a copy of the prefix's cache.
      size_t longest = 0;
      for (size_t j = g0; j < g1; ++j) {
        const int64_t b = 1 + int64_t(j - g0);
        for (int64_t l = 0; l < c.n_layers; ++l) {
          const size_t floats = size_t(kv.slots(l) * c.kv_dim());
          std::memcpy(kv.k(l, b), kv.k(l, 0), floats * sizeof(float));
          std::memcpy(kv.v(l, b), kv.v(l, 0), floats * sizeof(float));
        }
        kv.set_length(b, P);
        longest = std::max(longest, pieces[size_t(multi[j])].cont->size());
      }
      std::vector<int64_t> seq, who;
      std::vector<int32_t> tok;
      for (size_t t = 1; t < longest; ++t) {
        seq.clear(), who.clear(), tok.clear();
        for (size_t j = g0; j < g1; ++j) {
          const auto& ct = *pieces[size_t(multi[j])].cont;
          if (ct.size() <= t) continue;
          seq.push_back(1 + int64_t(j - g0)), who.push_back(multi[j]), tok.push_back(ct[t - 1]);
        }
        dec_->step(seq.data(), tok.data(), int64_t(seq.size()), logits_.data());
        *forwarded += int64_t(seq.size());
        for (size_t r = 0; r < seq.size(); ++r) {
          const float* lg = logits_.data() + r * size_t(V_);
          const auto& ct = *pieces[size_t(who[r])].cont;
          S[size_t(who[r])] += double(lg[ct[t]]) - log_sum_exp(lg, V_);
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = float(S[size_t(i)]);
  }

  // fast_mc: every choice token at the last position of the (truncated) context.
  void fast_mc(const std::vector<int32_t>& ctx, int64_t drop, const IclDoc& d,
               std::vector<float>& out, int64_t* forwarded) {
    model::KvCache& kv = dec_->cache();
    kv.reset(0);
    const int64_t P = int64_t(ctx.size()) - drop;
    dec_->prefill(0, ctx.data() + drop, P, logits_.data());
    *forwarded += P;
    const double lse = log_sum_exp(logits_.data(), V_);
    for (size_t i = 0; i < d.choices.size(); ++i)
      out[i] = float(double(logits_[size_t(d.choices[i].cont[0])]) - lse);
  }

 private:
  model::Olmo3& m_;
  int64_t V_, group_;
  std::unique_ptr<model::Decoder> dec_;
  std::vector<float> logits_;
};

}  // namespace

size_t kv_budget_bytes(double gib, const char* what) {
  OLMO_CHECK(std::isfinite(gib) && gib > 0 && gib < 1 << 20, what, " must be a positive number of GiB, got ",
             gib);
  return static_cast<size_t>(gib * double(size_t(1) << 30));
}

IclKvPlan plan_icl_kv(const model::ModelConfig& c, const IclTask& task, int64_t max_len,
                      size_t kv_budget) {
  IclKvPlan p;
  int64_t most_choices = 0, most_multi = 0;
  for (const auto& d : task.docs) {
    int64_t multi = 0;
    for (const auto& ch : d.choices) {
      multi += ch.cont.size() > 1;
      p.length = std::max<int64_t>(
          p.length, std::min<int64_t>(max_len, int64_t(d.contexts[size_t(ch.ctx)].size() +
                                                       ch.cont.size()) - 1));
    }
    most_choices = std::max<int64_t>(most_choices, int64_t(d.choices.size()));
    most_multi = std::max(most_multi, multi);
  }
  p.length = std::max<int64_t>(p.length, 1);
  if (task.spec.fast_mc) {
    p.batch = 1;
  } else if (most_choices > 1) {
    const size_t seq = model::KvCache::bytes_for(c, 1, p.length);
    const int64_t fit = int64_t(kv_budget / seq) - 1;  // continuations beside the context
    p.group = most_multi == 0 ? 0 : std::clamp<int64_t>(fit, 1, most_multi);
    p.batch = 1 + p.group;
  }
  p.bytes = p.batch > 0 ? model::KvCache::bytes_for(c, p.batch, p.length) : 0;
  return p;
}

IclTaskResult score_icl_task(model::Olmo3& m, const IclTask& task, int64_t max_len,
                             size_t kv_budget, ProgressMode progress) {
  const model::ModelConfig& c = m.config();
  OLMO_CHECK(max_len >= 2 && max_len <= c.max_seq_len, "task ", task.spec.label,
             ": model context ", max_len, " must be in 2..", c.max_seq_len,
             " (max_seq_len of model '", c.name, "')");
  const double t0 = now_seconds();
  IclTaskResult r;
  r.label = task.spec.label;
  r.metric_type = task.spec.metric_type;
  for (const auto& d : task.docs) {
    for (const auto& ch : d.choices) {
      OLMO_CHECK(int64_t(ch.cont.size()) <= max_len, "task ", task.spec.label, ": doc ",
                 d.doc_id, " choice ", ch.cont_id, ": continuation of ", ch.cont.size(),
                 " tokens does not fit the model context ", max_len);
      for (int32_t t : ch.cont)
        OLMO_CHECK(t >= 0 && t < c.vocab_size, "task ", task.spec.label, ": token ", t,
                   " outside the model vocabulary ", c.vocab_size);
    }
    for (const auto& ctx : d.contexts)
      for (int32_t t : ctx)
        OLMO_CHECK(t >= 0 && t < c.vocab_size, "task ", task.spec.label, ": token ", t,
                   " outside the model vocabulary ", c.vocab_size);
  }
  r.kv = plan_icl_kv(c, task, max_len, kv_budget);
  DocScorer sc(m, r.kv);
  OLMO_CHECK(sc.kv_bytes() == r.kv.bytes, "task ", task.spec.label, ": KV cache of ",
             sc.kv_bytes(), " bytes, planned ", r.kv.bytes);
  r.docs.reserve(task.docs.size());
  ProgressOptions bar_opt;
  bar_opt.mode = progress;
  bar_opt.units = "docs";
  ProgressBar bar(int64_t(task.docs.size()), task.spec.label, bar_opt);
  for (const auto& d : task.docs) {
    IclDocScore ds;
    ds.doc_id = d.doc_id;
    ds.label = d.label;
    ds.S.assign(d.choices.size(), 0.0f);
    if (task.spec.fast_mc) {
      const auto& ctx = d.contexts[size_t(d.choices[0].ctx)];
      const int64_t drop = std::max<int64_t>(0, int64_t(ctx.size()) - max_len);
      ds.truncated = drop > 0;
      r.truncated_rows += drop > 0;
      r.tokens += int64_t(ctx.size()) - drop;
      sc.fast_mc(ctx, drop, d, ds.S, &r.forwarded);
    } else {
      std::vector<Piece> pieces;
      for (size_t i = 0; i < d.choices.size(); ++i) {
        const auto& ch = d.choices[i];
        const auto& ctx = d.contexts[size_t(ch.ctx)];
        const int64_t full = int64_t(ctx.size() + ch.cont.size()) - 1;
        const int64_t drop = std::max<int64_t>(0, full - max_len);
        ds.truncated |= drop > 0;
        r.truncated_rows += drop > 0;
        r.tokens += full - drop;
        pieces.push_back({int(i), &ctx, drop, &ch.cont});
      }
      // Group the pieces by their prefix (same context, same truncation).
      std::vector<bool> done(pieces.size(), false);
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (done[i]) continue;
        std::vector<Piece> group;
        for (size_t j = i; j < pieces.size(); ++j)
          if (!done[j] && pieces[j].ctx == pieces[i].ctx && pieces[j].drop == pieces[i].drop) {
            group.push_back(pieces[j]);
            done[j] = true;
          }
        if (group.size() == 1) {
          ds.S[size_t(group[0].choice)] = sc.single(group[0], &r.forwarded);
        } else {
          std::vector<float> out(group.size());
          sc.shared(group, out, &r.forwarded);
          for (size_t k = 0; k < group.size(); ++k) ds.S[size_t(group[k].choice)] = out[k];
        }
      }
    }
    r.docs.push_back(std::move(ds));
    bar.update(int64_t(r.docs.size()));
  }
  bar.finish();
  compute_icl_metrics(task, r);
  r.seconds = now_seconds() - t0;
  return r;
}

void compute_icl_metrics(const IclTask& task, IclTaskResult& r) {
  OLMO_CHECK(r.docs.size() == task.docs.size() && !r.docs.empty(),
             "compute_icl_metrics: ", r.docs.size(), " scores for ", task.docs.size(), " docs");
  const std::string& type = task.spec.metric_type;
  const bool by_len = type != "acc";
  // Running sums: float32 (bpb / ce_loss tasks) or double of float32 values (the others).
  float f_v1 = 0, f_v2 = 0;
  double acc = 0, ce1 = 0, ce2 = 0, bpb1 = 0, bpb2 = 0, soft1 = 0, soft2 = 0, sl1 = 0, sl2 = 0;
  for (size_t di = 0; di < task.docs.size(); ++di) {
    const IclDoc& d = task.docs[di];
    IclDocScore& s = r.docs[di];
    const size_t n = d.choices.size();
    std::vector<float> ll(n), ll1(n), ce(n), ce_1(n), bpb(n), bpb_1(n);
    for (size_t i = 0; i < n; ++i) {
      // fast_mc: the reference's batch carries choice 0's lengths for every choice.
      const IclChoice& lc = task.spec.fast_mc ? d.choices[0] : d.choices[i];
      const float S = s.S[i];
      const float L = float(lc.str_len), L1 = float(lc.str_len_nls);
      const float B = float(lc.byte_len), B1 = float(lc.byte_len_nls);
      ll[i] = by_len ? S / L : S;
      ll1[i] = by_len ? S / L1 : S;
      ce[i] = -S / L;
      ce_1[i] = -S / L1;
      bpb[i] = (-S / B) * kLog2E;
      bpb_1[i] = (-S / B1) * kLog2E;
    }
    s.ll = ll;
    const size_t g = size_t(d.label);
    if (type == "bpb" || type == "ce_loss") {
      s.pred = 0;
      f_v1 += type == "bpb" ? bpb_1[0] : ce_1[0];
      f_v2 += type == "bpb" ? bpb[0] : ce[0];
      continue;
    }
    size_t pred = 0;
    for (size_t i = 1; i < n; ++i)
      if (ll[i] > ll[pred]) pred = i;
    s.pred = int(pred);
    acc += pred == g ? 1.0 : 0.0;
    ce1 += ce_1[g], ce2 += ce[g], bpb1 += bpb_1[g], bpb2 += bpb[g];
    auto soft = [&](const std::vector<float>& x, double& p, double& lp) {
      float mx = x[0];
      for (float v : x) mx = std::max(mx, v);
      double z = 0;
      for (float v : x) z += std::exp(double(v) - double(mx));
      p += float(std::exp(double(x[g]) - double(mx)) / z);
      lp += float(double(x[g]) - double(mx) - std::log(z));
    };
    soft(ll1, soft1, sl1);
    soft(ll, soft2, sl2);
  }
  const double n = double(task.docs.size());
  auto& M = r.metrics;
  M.clear();
  if (type == "bpb" || type == "ce_loss") {
    M[type + "_v1"] = f_v1 / float(task.docs.size());
    M[type + "_v2"] = f_v2 / float(task.docs.size());
    return;
  }
  M[type + "_v1"] = float(acc / n);
  M[type + "_v2"] = float(acc / n);
  M["ce_loss_v1"] = float(ce1 / n), M["ce_loss_v2"] = float(ce2 / n);
  M["bpb_v1"] = float(bpb1 / n), M["bpb_v2"] = float(bpb2 / n);
  M["soft_v1"] = float(soft1 / n), M["soft_v2"] = float(soft2 / n);
  M["soft_log_v1"] = float(sl1 / n), M["soft_log_v2"] = float(sl2 / n);
}

std::string olmo_metric_name(const std::string& label, const std::string& key) {
  static const std::map<std::string, std::string> text = {
      {"acc_v1", "accuracy"},         {"acc_v2", "accuracy v2"},
      {"len_norm_v1", "length-normalized accuracy"},
      {"len_norm_v2", "length-normalized accuracy v2"},
      {"ce_loss_v1", "CE loss"},      {"ce_loss_v2", "CE loss v2"},
      {"bpb_v1", "BPB"},              {"bpb_v2", "BPB v2"},
      {"soft_v1", "soft loss"},       {"soft_v2", "soft loss v2"},
      {"soft_log_v1", "log soft loss"}, {"soft_log_v2", "log soft loss v2"}};
  auto it = text.find(key);
  OLMO_CHECK(it != text.end(), "no OLMo-core metric name for key '", key, "'");
  return "eval/downstream/" + label + " (" + it->second + ")";
}

std::string primary_metric_key(const std::string& metric_type) {
  if (metric_type == "bpb" || metric_type == "ce_loss") return metric_type + "_v2";
  return metric_type + "_v1";
}

}  // namespace olmo::eval
