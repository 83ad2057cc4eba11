// KV cache and incremental decoder (see kv_cache.h). The block math is Olmo3::forward's
// (olmo3.cpp) without the stored activations: post-norm blocks, QK-norm over the full width,
// RoPE, GQA, SwiGLU.
#include "model/kv_cache.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/norm.h"
#include "kernels/swiglu.h"

namespace olmo::model {

using namespace olmo::kernels;

KvCache::KvCache(const ModelConfig& c, int64_t batch, int64_t max_len)
    : batch_(batch), max_len_(max_len), kv_dim_(c.kv_dim()) {
  OLMO_CHECK(batch > 0, "KvCache: batch must be positive, got ", batch);
  OLMO_CHECK(max_len > 0 && max_len <= c.max_seq_len, "KvCache: length ", max_len,
             " must be in 1..", c.max_seq_len, " (the context of model '", c.name, "')");
  len_.assign(size_t(batch), 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    int64_t w = c.layer_window[size_t(l)];
    int64_t s = w > 0 ? std::min(w, max_len) : max_len;
    slots_.push_back(s);
    k_.emplace_back(size_t(batch * s * kv_dim_));
    v_.emplace_back(size_t(batch * s * kv_dim_));
  }
}

size_t KvCache::bytes_for(const ModelConfig& c, int64_t batch, int64_t max_len) {
  size_t slots = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t w = c.layer_window[size_t(l)];
    slots += size_t(w > 0 ? std::min(w, max_len) : max_len);
  }
  return 2 * size_t(batch) * slots * size_t(c.kv_dim()) * sizeof(float);
}

size_t KvCache::bytes() const {
  size_t n = 0;
  for (auto& b : k_) n += b.size();
  for (auto& b : v_) n += b.size();
  return n * sizeof(float);
}

Decoder::Decoder(const Olmo3& m, int64_t batch, int64_t max_len)
    : m_(m), cache_(m.config(), batch, max_len) {
  const ModelConfig& c = m.config();
  rope_ = rope_table(max_len, c.head_dim, c.rope_theta);
  if (c.yarn.enabled()) {
    rope_yarn_ = rope_table(max_len, c.head_dim, c.rope_theta, c.yarn.params(), c.yarn.formula());
  }
  ensure(batch);
}

void Decoder::ensure(int64_t n) {
  if (n <= cap_) return;
  const ModelConfig& c = m_.config();
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden;
  auto buf = [&](int64_t per_row) { return FloatBuffer(size_t(n * per_row)); };
  x_ = buf(D), h_ = buf(D), t_ = buf(D), xf_ = buf(D);
  q_ = buf(2 * Q), o_ = buf(Q);
  k_ = buf(2 * K), v_ = buf(K);
  g_ = buf(F), u_ = buf(F), s_ = buf(F);
  r_ = buf(1);
  // Attention scratch: lse of the prefill kernel [H, n], or one score row per (row, head).
  att_ = FloatBuffer(size_t(std::max(n * c.n_heads, cache_.batch() * c.n_heads * cache_.max_len())));
  cap_ = n;
}

// x_ [n, D] in, out; attend(l, q [n,Q], k [n,K], v [n,K], o [n,Q]) applies RoPE, stores K/V
// and writes the attention output.
template <class Attend>
void Decoder::blocks(int64_t n, Attend&& attend) {
  const ModelConfig& c = m_.config();
  const int64_t D = c.d_model, Q = c.q_dim(), K = c.kv_dim(), F = c.ffn_hidden;
  const float* P = m_.params();
  const ParamLayout& L = m_.layout();
  const float eps = c.norm_eps;
  float *qr = q_.data() + n * Q, *kr = k_.data() + n * K;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerOffsets& w = L.layers[size_t(l)];
    float* x = x_.data();
    gemm(false, true, n, Q, D, 1.0f, x, P + w.q, 0.0f, qr);
    gemm(false, true, n, K, D, 1.0f, x, P + w.k, 0.0f, kr);
    gemm(false, true, n, K, D, 1.0f, x, P + w.v, 0.0f, v_.data());
    rmsnorm_forward(qr, P + w.q_norm, q_.data(), r_.data(), n, Q, eps);
    rmsnorm_forward(kr, P + w.k_norm, k_.data(), r_.data(), n, K, eps);
    attend(l, q_.data(), k_.data(), v_.data(), o_.data());
    gemm(false, true, n, D, Q, 1.0f, o_.data(), P + w.o, 0.0f, t_.data());
    rmsnorm_forward(t_.data(), P + w.attn_norm, xf_.data(), r_.data(), n, D, eps);
    add(h_.data(), x, xf_.data(), n * D);
    gemm(false, true, n, F, D, 1.0f, h_.data(), P + w.gate, 0.0f, g_.data());
    gemm(false, true, n, F, D, 1.0f, h_.data(), P + w.up, 0.0f, u_.data());
    swiglu_forward(g_.data(), u_.data(), s_.data(), n * F);
    gemm(false, true, n, D, F, 1.0f, s_.data(), P + w.down, 0.0f, t_.data());
    rmsnorm_forward(t_.data(), P + w.ffn_norm, xf_.data(), r_.data(), n, D, eps);
    add(x, h_.data(), xf_.data(), n * D);
  }
}

void Decoder::logits_of(const float* x, int64_t n, float* logits) {
  const ModelConfig& c = m_.config();
  rmsnorm_forward(x, m_.params() + m_.layout().final_norm, xf_.data(), r_.data(), n, c.d_model,
                  c.norm_eps);
  gemm(false, true, n, c.vocab_size, c.d_model, 1.0f, xf_.data(),
       m_.params() + m_.layout().lm_head, 0.0f, logits);
}

void Decoder::prefill(int64_t b, const int32_t* tokens, int64_t n, float* logits) {
  const ModelConfig& c = m_.config();
  OLMO_CHECK(b >= 0 && b < cache_.batch(), "Decoder::prefill: sequence ", b, " outside 0..",
             cache_.batch() - 1);
  OLMO_CHECK(cache_.length(b) == 0, "Decoder::prefill: sequence ", b, " already holds ",
             cache_.length(b), " tokens");
  OLMO_CHECK(n >= 1, "Decoder::prefill: empty prompt");
  OLMO_CHECK(n <= cache_.max_len(), "prompt of ", n, " tokens is longer than the context of ",
             cache_.max_len(), " tokens (model '", c.name, "', max_seq_len ", c.max_seq_len, ")");
  ensure(n);
  const int64_t H = c.n_heads, KV = c.n_kv_heads, hd = c.head_dim, K = c.kv_dim();
  embedding_forward(m_.params() + m_.layout().embed, tokens, n, c.d_model, x_.data(),
                    c.vocab_size);
  blocks(n, [&](int64_t l, float* q, float* k, const float* v, float* o) {
    const RopeTable& tab = c.yarn_on_layer(l) ? rope_yarn_ : rope_;
    rope_forward(q, 1, n, H, hd, tab);
    rope_forward(k, 1, n, KV, hd, tab);
    AttnShape s{1, n, H, KV, hd, c.layer_window[size_t(l)]};
    attention_forward(s, q, k, v, nullptr, o, att_.data());
    const int64_t S = cache_.slots(l);
    float *kc = cache_.k(l, b), *vc = cache_.v(l, b);
    for (int64_t p = std::max<int64_t>(0, n - S); p < n; ++p) {
      std::memcpy(kc + (p % S) * K, k + p * K, size_t(K) * sizeof(float));
      std::memcpy(vc + (p % S) * K, v + p * K, size_t(K) * sizeof(float));
    }
  });
  cache_.set_length(b, n);
  logits_of(x_.data() + (n - 1) * c.d_model, 1, logits);
}

namespace {
// RoPE of one token at position `pos` (rotate_half layout, kernels/rope.h), nh heads.
void rope_row(float* x, int64_t nh, int64_t hd, const RopeTable& t, int64_t pos) {
  const int64_t half = hd / 2;
  const float* cs = t.cos.data() + pos * half;
  const float* sn = t.sin.data() + pos * half;
  for (int64_t h = 0; h < nh; ++h) {
    float* v = x + h * hd;
    for (int64_t j = 0; j < half; ++j) {
      float x1 = v[j], x2 = v[j + half];
      v[j] = x1 * cs[j] - x2 * sn[j];
      v[j + half] = x2 * cs[j] + x1 * sn[j];
    }
  }
}
}  // namespace

void Decoder::step(const int64_t* seq, const int32_t* tokens, int64_t rows, float* logits) {
  const ModelConfig& c = m_.config();
  OLMO_CHECK(rows >= 1 && rows <= cache_.batch(), "Decoder::step: ", rows,
             " rows for a cache of ", cache_.batch(), " sequences");
  std::vector<int64_t> pos(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    int64_t b = seq[i];
    OLMO_CHECK(b >= 0 && b < cache_.batch(), "Decoder::step: sequence ", b, " outside 0..",
               cache_.batch() - 1);
    for (int64_t j = 0; j < i; ++j)
      OLMO_CHECK(seq[j] != b, "Decoder::step: sequence ", b, " given twice");
    pos[size_t(i)] = cache_.length(b);
    OLMO_CHECK(pos[size_t(i)] > 0, "Decoder::step: sequence ", b, " is empty (prefill first)");
    OLMO_CHECK(pos[size_t(i)] < cache_.max_len(), "sequence ", b, " reached the context of ",
               cache_.max_len(), " tokens (model '", c.name, "')");
  }
  ensure(rows);
  const int64_t H = c.n_heads, KV = c.n_kv_heads, hd = c.head_dim, Q = c.q_dim(),
                K = c.kv_dim(), group = H / KV, M = cache_.max_len();
  const float scale = 1.0f / std::sqrt(float(hd));
  embedding_forward(m_.params() + m_.layout().embed, tokens, rows, c.d_model, x_.data(),
                    c.vocab_size);
  blocks(rows, [&](int64_t l, float* q, float* k, const float* v, float* o) {
    const RopeTable& tab = c.yarn_on_layer(l) ? rope_yarn_ : rope_;
    const int64_t S = cache_.slots(l), win = c.layer_window[size_t(l)];
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t p = pos[size_t(i)], slot = p % S;
      rope_row(q + i * Q, H, hd, tab, p);
      rope_row(k + i * K, KV, hd, tab, p);
      std::memcpy(cache_.k(l, seq[i]) + slot * K, k + i * K, size_t(K) * sizeof(float));
      std::memcpy(cache_.v(l, seq[i]) + slot * K, v + i * K, size_t(K) * sizeof(float));
    }
    // One query against the cache per (row, head): the visible positions lo..p are in the ring.
#pragma omp parallel for schedule(static)
    for (int64_t ih = 0; ih < rows * H; ++ih) {
      const int64_t i = ih / H, h = ih % H, kvh = h / group, p = pos[size_t(i)];
      const int64_t lo = win > 0 ? std::max<int64_t>(0, p - win + 1) : 0;
      const float* qh = q + i * Q + h * hd;
      const float* kc = cache_.k(l, seq[i]);
      const float* vc = cache_.v(l, seq[i]);
      float* sc = att_.data() + ih * M;
      float mx = -INFINITY;
      for (int64_t t = lo; t <= p; ++t) {
        const float* kt = kc + (t % S) * K + kvh * hd;
        float d = 0;
        for (int64_t e = 0; e < hd; ++e) d += qh[e] * kt[e];
        sc[t - lo] = d * scale;
        mx = std::max(mx, sc[t - lo]);
      }
      float sum = 0;
      for (int64_t t = lo; t <= p; ++t) sum += (sc[t - lo] = std::exp(sc[t - lo] - mx));
      float* oh = o + i * Q + h * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t t = lo; t <= p; ++t) {
        const float* vt = vc + (t % S) * K + kvh * hd;
        const float pr = sc[t - lo] / sum;
        for (int64_t e = 0; e < hd; ++e) oh[e] += pr * vt[e];
      }
    }
  });
  for (int64_t i = 0; i < rows; ++i) cache_.set_length(seq[i], pos[size_t(i)] + 1);
  logits_of(x_.data(), rows, logits);
}

}  // namespace olmo::model
