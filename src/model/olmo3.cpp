// OLMo 3 forward/backward (see olmo3.h for the math). Buffer plan per micro-batch of N = B*T
// tokens (flops.h): stored per layer x, a, h, f [N,D]; q_raw, q, o [N,Q]; k_raw, k, v [N,KVd];
// gate, up [N,F]; rstd x4 [N]; lse [H,N]; then x_L, final-normed x [N,D] and its rstd. Scratch
// (reused by every layer): dres, tD [N,D]; F1..F3 [N,F]; Q1, Q2 [N,Q]; K1..K3 [N,KVd].
// Activation checkpointing (act_checkpoint.h): a checkpointed block's x is its own, the rest of
// its pointers share one recompute slot; backward() reruns block_forward() for it first.
// bf16_mixed: every GEMM goes through mm() with bf16 operands (weight(): the bf16 copy; act():
// the fp32 activation rounded into one of four bf16 scratch slots right before its GEMMs), and
// attention through attention_*_bf16 (which round q, k, v, dO while packing their tiles: no bf16
// copies are stored); the fp32 path makes exactly the kernel calls it always made.
// KV-cached forward (forward_cached): the same forward() and block_forward() over a lean buffer
// plan (one block's buffers, x in place; scratch tD and F1 only); block_forward's attention then
// appends K/V to the cache and, after a prefill, attends with kernels/attention_decode.h.
#include "model/olmo3.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/det_math.h"
#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "kernels/attention_decode.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/loss.h"
#include "kernels/norm.h"
#include "kernels/swiglu.h"
#include "model/flops.h"
#include "model/kv_cache.h"

namespace olmo::model {

using namespace olmo::kernels;

FloatBuffer::FloatBuffer(size_t n) : n_(n) {
  if (n == 0) return;
  size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  OLMO_CHECK(p, "out of memory allocating ", bytes, " bytes");
  p_.reset(p);
  // Parallel first touch so pages spread over the threads that use them.
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < int64_t((n + 65535) / 65536); ++b) {
    size_t i0 = size_t(b) * 65536, i1 = std::min(n, i0 + 65536);
    std::memset(p + i0, 0, (i1 - i0) * sizeof(float));
  }
}
void FloatBuffer::Free::operator()(float* p) const { std::free(p); }

struct Olmo3::Acts {
  FloatBuffer store, scratch;
  // Pointers for the current N (recomputed by ensure()).
  struct Layer {
    float *x, *a, *h, *f, *q_raw, *q, *o, *k_raw, *k, *v, *g, *u, *rq, *rk, *ra, *rf, *lse;
  };
  std::vector<Layer> L;
  float *xL, *xf, *rfin;
  float *dres, *tD, *F1, *F2, *F3, *Q1, *Q2, *K1, *K2, *K3;
};

Olmo3::Olmo3(const ModelConfig& c, bool own_storage) : cfg_(c) {
  validate(cfg_, cat("model config '", cfg_.name, "'"));
  OLMO_CHECK(!bf16() || bf16_usable(), "model '", cfg_.name, "': precision bf16_mixed needs a "
             "CPU with AVX512_BF16 (native bf16 dot products, VDPBF16PS) and the AVX-512 kernels "
             "active; this one has none (or OLMO_ISA / OLMO_BF16=0 turned them off): use fp32 "
             "or auto (OLMO_BF16=emulate runs the bf16 numerics slowly, for tests)");
  layout_ = make_layout(cfg_);
  units_ = param_units(layout_);
  ckpt_ = checkpointed_blocks(cfg_);
  if (own_storage) {
    params_ = FloatBuffer(layout_.total);
    grads_ = FloatBuffer(layout_.total);
  }
  acts_ = std::make_unique<Acts>();
}
Olmo3::Olmo3(Olmo3&&) noexcept = default;
Olmo3& Olmo3::operator=(Olmo3&&) noexcept = default;
Olmo3::~Olmo3() = default;

size_t Olmo3::activation_bytes() const {
  size_t b = (acts_->store.size() + acts_->scratch.size()) * sizeof(float);
  for (auto& x : xb_) b += x.size() * sizeof(bf16_t);
  return b;
}

// ------------------------------------------------------------------------ bf16_mixed operands

// Places every matrix except the embedding in bf16 space (at = running count in layout order,
// so each parameter unit's matrices are contiguous there).
void Olmo3::place_bf16() {
  if (!wb_at_.empty()) return;
  size_t n = 0;
  for (const ParamInfo& p : layout_.info)
    if (p.shape.size() == 2 && !p.is_embedding) wb_at_.push_back({p.offset, n, p.numel}), n += p.numel;
  std::sort(wb_at_.begin(), wb_at_.end(),
            [](const WbSlot& a, const WbSlot& b) { return a.off < b.off; });
}

void Olmo3::refresh_bf16() {
  place_bf16();
  const size_t total = wb_at_.back().at + wb_at_.back().n;
  if (wb_.size() < total) wb_.resize(total);
  const float* P = params_.data();
  for (const WbSlot& w : wb_at_) f32_to_bf16(P + w.off, wb_.data() + w.at, int64_t(w.n));
  bf16_stale_ = false;
  ++bf16_refreshes_;
}

Olmo3::Operand Olmo3::weight(const UnitView& U, size_t off) const {
  if (!bf16()) return {U.at(off), nullptr};
  auto it = std::lower_bound(wb_at_.begin(), wb_at_.end(), off,
                             [](const WbSlot& a, size_t o) { return a.off < o; });
  OLMO_CHECK(it != wb_at_.end() && it->off == off, "Olmo3: no bf16 copy of the tensor at ", off);
  OLMO_CHECK(!provider_ || (wb_unit_ >= 0 && off >= units_[size_t(wb_unit_)].begin &&
                            off < units_[size_t(wb_unit_)].end),
             "Olmo3: the bf16 copy of the tensor at ", off, " is not the acquired unit's");
  return {nullptr, wb_.data() + (it->at - wb_base_)};
}

Olmo3::Operand Olmo3::act(const float* x, int64_t n, int slot) {
  if (!bf16()) return {x, nullptr};
  auto& buf = xb_[slot];
  if (int64_t(buf.size()) < n) buf.resize(size_t(n));
  f32_to_bf16(x, buf.data(), n);
  return {nullptr, buf.data()};
}

void Olmo3::mm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, Operand A, Operand B,
               float beta, float* C) const {
  if (bf16())
    gemm_bf16(ta, tb, M, N, K, 1.0f, A.b, B.b, beta, C);
  else
    gemm(ta, tb, M, N, K, 1.0f, A.f, B.f, beta, C);
}

// ------------------------------------------------------------------------------ unit hooks

void Olmo3::set_param_provider(ParamProvider* p) {
  OLMO_CHECK(p, "model '", cfg_.name, "': set_param_provider needs a provider");
  provider_ = p;
  params_ = FloatBuffer();
  grads_ = FloatBuffer();
  std::vector<bf16_t>().swap(wb_);  // bf16_mixed: from now on one unit's bf16 copy at a time
}

UnitView Olmo3::acquire(int64_t u) {
  const size_t b = units_[size_t(u)].begin;
  if (!provider_) return {params_.data() + b, b};
  const UnitView U{provider_->acquire(u), b};
  if (bf16()) {  // the bf16 copy of this unit's matrices only (refreshed at every acquire)
    place_bf16();
    const auto by_off = [](const WbSlot& a, size_t o) { return a.off < o; };
    auto first = std::lower_bound(wb_at_.begin(), wb_at_.end(), b, by_off);
    auto last = std::lower_bound(first, wb_at_.end(), units_[size_t(u)].end, by_off);
    wb_base_ = first == last ? 0 : first->at;
    const size_t need = first == last ? 0 : (last - 1)->at + (last - 1)->n - wb_base_;
    if (wb_.size() < need) wb_.resize(need);
    for (auto it = first; it != last; ++it)
      f32_to_bf16(U.at(it->off), wb_.data() + (it->at - wb_base_), int64_t(it->n));
    wb_unit_ = u;
  }
  return U;
}
void Olmo3::release(int64_t u) {
  if (!provider_) return;
  wb_unit_ = -1;
  provider_->release(u);
}
UnitGrad Olmo3::grad(int64_t u) {
  const size_t b = units_[size_t(u)].begin;
  return {provider_ ? provider_->grad(u) : grads_.data() + b, b};
}
void Olmo3::grad_done(int64_t u) {
  if (provider_) provider_->grad_done(u);
  if (grad_hook_) grad_hook_(u, units_[size_t(u)].begin, units_[size_t(u)].end);
}

// ------------------------------------------------------------------------------ init / grads

namespace {
inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Uniform in (0, 1] with 53 random bits.
inline double uniform01(uint64_t& s) { return (double(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53; }
}  // namespace

void Olmo3::init_weights(uint64_t seed) {
  float* P = params();
  bf16_stale_ = true;
  init_weights_range(seed, P, 0, layout_.total);
}

void Olmo3::init_weights_range(uint64_t seed, float* out, size_t lo, size_t hi) const {
  constexpr double kStd = 0.02;
  constexpr size_t kChunk = 1 << 16;
  for (size_t ti = 0; ti < layout_.info.size(); ++ti) {
    const ParamInfo& p = layout_.info[ti];
    // The tensor's elements [a, e) (tensor-relative) that fall in [lo, hi).
    const size_t a = std::max(lo, p.offset) - p.offset;
    const size_t b = std::min(hi, p.offset + p.numel);
    if (b <= p.offset + a) continue;
    const size_t e = b - p.offset;
    float* w = out + (p.offset + a - lo);  // w[i - a] = element i
    if (p.shape.size() == 1) {  // norm weight
      std::fill(w, w + (e - a), 1.0f);
      continue;
    }
    const int64_t c0 = int64_t(a / kChunk), c1 = int64_t((e + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (int64_t ch = c0; ch < c1; ++ch) {
      uint64_t s = seed * 0x100000001b3ull ^ (uint64_t(ti) << 40) ^ uint64_t(ch);
      splitmix64(s);
      size_t i0 = size_t(ch) * kChunk, i1 = std::min(p.numel, i0 + kChunk);
      for (size_t i = i0; i < i1; ++i) {  // the whole chunk: its draws are sequential
        double z;
        do {  // Box-Muller, rejection outside +-3 sigma
          z = std::sqrt(-2.0 * det::log(uniform01(s))) * det::cos(2.0 * M_PI * uniform01(s));
        } while (std::fabs(z) > 3.0);
        if (i >= a && i < e) w[i - a] = float(kStd * z);
      }
    }
  }
}

void Olmo3::zero_grad() {
  float* g = grads();
  const size_t n = layout_.total;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < int64_t((n + 65535) / 65536); ++b) {
    size_t i0 = size_t(b) * 65536, i1 = std::min(n, i0 + 65536);
    std::memset(g + i0, 0, (i1 - i0) * sizeof(float));
  }
}

// ----------------------------------------------------------------------------------- buffers

void Olmo3::ensure_rope(int64_t positions) {
  if (rope_.max_pos >= positions) return;
  const int64_t len = std::max<int64_t>(positions, std::min<int64_t>(cfg_.max_seq_len, 2048));
  rope_ = rope_table(len, cfg_.head_dim, cfg_.rope_theta);
  if (cfg_.yarn.enabled())
    rope_yarn_ = rope_table(len, cfg_.head_dim, cfg_.rope_theta, cfg_.yarn.params(),
                            cfg_.yarn.formula());
}

void Olmo3::ensure(int64_t B, int64_t T, bool keep) {
  OLMO_CHECK(B > 0 && T > 0, "Olmo3: batch and sequence length must be positive, got B=", B,
             " T=", T);
  OLMO_CHECK(T <= cfg_.max_seq_len, "Olmo3: sequence length ", T, " exceeds max_seq_len ",
             cfg_.max_seq_len, " of model '", cfg_.name, "'");
  ensure_rope(T);
  Acts& A = *acts_;
  const int64_t N = B * T;
  const int64_t D = cfg_.d_model, Q = cfg_.q_dim(), K = cfg_.kv_dim(), F = cfg_.ffn_hidden;
  const size_t need_store =
      size_t(N * (keep ? activation_floats_per_token(cfg_)
                       : block_activation_floats_per_token(cfg_) + D + 1));
  const size_t need_scratch = size_t(N * (keep ? scratch_floats_per_token(cfg_) : D + F));
  if (A.store.size() < need_store || A.scratch.size() < need_scratch) {
    const size_t ns = std::max(need_store, A.store.size());
    const size_t nc = std::max(need_scratch, A.scratch.size());
    A.store = FloatBuffer();  // free before allocating the larger arena
    A.scratch = FloatBuffer();
    A.store = FloatBuffer(ns);
    A.scratch = FloatBuffer(nc);
  }
  float* p = A.store.data();
  auto take = [&](int64_t n) {
    float* r = p;
    p += n;
    return r;
  };
  // Everything of a block but x; a checkpointed block points these into the recompute slot.
  auto take_rest = [&](Acts::Layer& l) {
    l.a = take(N * D), l.h = take(N * D), l.f = take(N * D);
    l.q_raw = take(N * Q), l.q = take(N * Q), l.o = take(N * Q);
    l.k_raw = take(N * K), l.k = take(N * K), l.v = take(N * K);
    l.g = take(N * F), l.u = take(N * F);
    l.rq = take(N), l.rk = take(N), l.ra = take(N), l.rf = take(N);
    l.lse = take(N * cfg_.n_heads);
  };
  A.L.resize(cfg_.n_layers);
  if (!keep) {  // one block's buffers for every block; x in place, also x_L
    Acts::Layer slot{};
    slot.x = take(N * D);
    take_rest(slot);
    std::fill(A.L.begin(), A.L.end(), slot);
    A.xL = slot.x, A.xf = take(N * D), A.rfin = take(N);
    p = A.scratch.data();
    A.tD = take(N * D), A.F1 = take(N * F);
    A.dres = A.F2 = A.F3 = A.Q1 = A.Q2 = A.K1 = A.K2 = A.K3 = nullptr;
    return;
  }
  for (int64_t i = 0; i < cfg_.n_layers; ++i) {
    A.L[i].x = take(N * D);
    if (!ckpt_[i]) take_rest(A.L[i]);
  }
  if (std::find(ckpt_.begin(), ckpt_.end(), 1) != ckpt_.end()) {
    Acts::Layer slot{};
    take_rest(slot);
    for (int64_t i = 0; i < cfg_.n_layers; ++i)
      if (ckpt_[i]) {
        float* x = A.L[i].x;
        A.L[i] = slot;
        A.L[i].x = x;
      }
  }
  A.xL = take(N * D), A.xf = take(N * D), A.rfin = take(N);
  p = A.scratch.data();
  A.dres = take(N * D), A.tD = take(N * D);
  A.F1 = take(N * F), A.F2 = take(N * F), A.F3 = take(N * F);
  A.Q1 = take(N * Q), A.Q2 = take(N * Q);
  A.K1 = take(N * K), A.K2 = take(N * K), A.K3 = take(N * K);
}

const RopeTable& Olmo3::rope_for(int64_t layer) const {
  return cfg_.yarn_on_layer(layer) ? rope_yarn_ : rope_;
}

// ----------------------------------------------------------------------------------- forward

// Runs embedding, all blocks and the final norm; leaves the normed hidden states in acts_->xf.
UnitView Olmo3::forward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T,
                        const CacheView* kv) {
  Acts& A = *acts_;
  if (bf16() && bf16_stale_ && !provider_) refresh_bf16();
  const UnitView E = acquire(embed_unit());
  embedding_forward(E.at(layout_.embed), tokens, B * T, cfg_.d_model, A.L[0].x, cfg_.vocab_size);
  release(embed_unit());
  for (int64_t l = 0; l < cfg_.n_layers; ++l) {
    const UnitView U = acquire(block_unit(l));
    block_forward(l, U, doc_ids, B, T, l + 1 < cfg_.n_layers ? A.L[l + 1].x : A.xL, kv);
    release(block_unit(l));
  }
  const UnitView H = acquire(head_unit(cfg_.n_layers));
  rmsnorm_forward(A.xL, H.at(layout_.final_norm), A.xf, A.rfin, B * T, cfg_.d_model,
                  cfg_.norm_eps);
  return H;
}

// Block l from its input A.L[l].x: fills the block's activations (the recompute slot for a
// checkpointed block) and, unless x_next is null (the recompute in backward), its output
// (x_next may be x itself: forward_cached). Uses scratch tD and F1 and bf16 slot 0.
// kv (forward_cached): row b continues sequence kv->seq[b] of the cache at position kv->pos[b];
// its K/V go into the cache, and its query attends over the cache (which then holds it too).
void Olmo3::block_forward(int64_t l, const UnitView& U, const int32_t* doc_ids, int64_t B,
                          int64_t T, float* x_next, const CacheView* kv) {
  Acts& A = *acts_;
  const int64_t N = B * T, D = cfg_.d_model, Q = cfg_.q_dim(), K = cfg_.kv_dim(),
                F = cfg_.ffn_hidden, H = cfg_.n_heads, KV = cfg_.n_kv_heads, hd = cfg_.head_dim;
  const float eps = cfg_.norm_eps;
  auto& a = A.L[l];
  const LayerOffsets& w = layout_.layers[l];
  // Attention sub-block.
  const Operand xo = act(a.x, N * D, 0);
  mm(false, true, N, Q, D, xo, weight(U, w.q), 0.0f, a.q_raw);
  mm(false, true, N, K, D, xo, weight(U, w.k), 0.0f, a.k_raw);
  mm(false, true, N, K, D, xo, weight(U, w.v), 0.0f, a.v);
  rmsnorm_forward(a.q_raw, U.at(w.q_norm), a.q, a.rq, N, Q, eps);
  rmsnorm_forward(a.k_raw, U.at(w.k_norm), a.k, a.rk, N, K, eps);
  if (kv && !kv->prefill) {  // decode: one token per row, each at its own position
    rope_forward_at(a.q, B, H, hd, rope_for(l), kv->pos);
    rope_forward_at(a.k, B, KV, hd, rope_for(l), kv->pos);
    std::vector<KvRing> ring(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      kv->cache->store(l, kv->seq[b], kv->pos[b], 1, a.k + b * K, a.v + b * K);
      ring[size_t(b)] = {kv->cache->k(l, kv->seq[b]), kv->cache->v(l, kv->seq[b])};
    }
    attention_decode(B, H, KV, hd, cfg_.layer_window[l], kv->cache->slots(l), a.q, ring.data(),
                     kv->pos, a.o);
  } else {
    rope_forward(a.q, B, T, H, hd, rope_for(l));
    rope_forward(a.k, B, T, KV, hd, rope_for(l));
    AttnShape s{B, T, H, KV, hd, cfg_.layer_window[l]};
    if (bf16() && attention_bf16_chosen())
      attention_forward_bf16(s, a.q, a.k, a.v, doc_ids, a.o, a.lse);
    else
      attention_forward(s, a.q, a.k, a.v, doc_ids, a.o, a.lse);
    for (int64_t b = 0; kv && b < B; ++b)  // prefill: positions 0..T-1 into the cache
      kv->cache->store(l, kv->seq[b], 0, T, a.k + b * T * K, a.v + b * T * K);
  }
  mm(false, true, N, D, Q, act(a.o, N * Q, 0), weight(U, w.o), 0.0f, a.a);
  rmsnorm_forward(a.a, U.at(w.attn_norm), A.tD, a.ra, N, D, eps);
  add(a.h, a.x, A.tD, N * D);
  // Feed-forward sub-block.
  const Operand ho = act(a.h, N * D, 0);
  mm(false, true, N, F, D, ho, weight(U, w.gate), 0.0f, a.g);
  mm(false, true, N, F, D, ho, weight(U, w.up), 0.0f, a.u);
  swiglu_forward(a.g, a.u, A.F1, N * F);
  mm(false, true, N, D, F, act(A.F1, N * F, 0), weight(U, w.down), 0.0f, a.f);
  rmsnorm_forward(a.f, U.at(w.ffn_norm), A.tD, a.rf, N, D, eps);
  if (x_next) add(x_next, a.h, A.tD, N * D);
}

// ---------------------------------------------------------------------------------- backward

// Expects forward() state and d(loss)/d(final-normed x) in acts_->tD; accumulates into grads_.
void Olmo3::backward(const int32_t* tokens, const int32_t* doc_ids, int64_t B, int64_t T,
                     const UnitView& head, const UnitGrad& head_grad) {
  Acts& A = *acts_;
  const int64_t N = B * T, D = cfg_.d_model, Q = cfg_.q_dim(), K = cfg_.kv_dim(),
                F = cfg_.ffn_hidden, H = cfg_.n_heads, KV = cfg_.n_kv_heads, hd = cfg_.head_dim;
  const int64_t hu = head_unit(cfg_.n_layers);
  rmsnorm_backward(A.tD, A.xL, head.at(layout_.final_norm), A.rfin, A.dres,
                   head_grad.at(layout_.final_norm), N, D);
  grad_done(hu);
  release(hu);
  for (int64_t l = cfg_.n_layers - 1; l >= 0; --l) {
    const UnitView U = acquire(block_unit(l));
    const UnitGrad G = grad(block_unit(l));
    // A checkpointed block recomputes its activations from x into the recompute slot (only
    // dres is live here; block_forward uses tD, F1 and bf16 slot 0).
    if (ckpt_[l]) block_forward(l, U, doc_ids, B, T, nullptr);
    auto& a = A.L[l];
    const LayerOffsets& w = layout_.layers[l];
    // out = h + norm_ffn(f): dres is d out; d h = dres + (through the MLP).
    rmsnorm_backward(A.dres, a.f, U.at(w.ffn_norm), a.rf, A.tD, G.at(w.ffn_norm), N, D);
    swiglu_forward(a.g, a.u, A.F1, N * F);  // recompute s (not stored)
    {
      const Operand dy = act(A.tD, N * D, 0), s = act(A.F1, N * F, 1);
      mm(true, false, D, F, N, dy, s, 1.0f, G.at(w.down));
      mm(false, false, N, F, D, dy, weight(U, w.down), 0.0f, A.F1);
    }
    swiglu_backward(a.g, a.u, A.F1, A.F2, A.F3, N * F);
    {
      const Operand dg = act(A.F2, N * F, 0), du = act(A.F3, N * F, 1), h = act(a.h, N * D, 2);
      mm(true, false, F, D, N, dg, h, 1.0f, G.at(w.gate));
      mm(true, false, F, D, N, du, h, 1.0f, G.at(w.up));
      mm(false, false, N, D, F, dg, weight(U, w.gate), 1.0f, A.dres);
      mm(false, false, N, D, F, du, weight(U, w.up), 1.0f, A.dres);
    }
    // h = x + norm_attn(a): dres is now d h; d x = dres + (through attention).
    rmsnorm_backward(A.dres, a.a, U.at(w.attn_norm), a.ra, A.tD, G.at(w.attn_norm), N, D);
    {
      const Operand dy = act(A.tD, N * D, 0), o = act(a.o, N * Q, 1);
      mm(true, false, D, Q, N, dy, o, 1.0f, G.at(w.o));
      mm(false, false, N, Q, D, dy, weight(U, w.o), 0.0f, A.Q1);
    }
    AttnShape s{B, T, H, KV, hd, cfg_.layer_window[l]};
    if (bf16() && attention_bf16_chosen())
      attention_backward_bf16(s, a.q, a.k, a.v, doc_ids, a.o, a.lse, A.Q1, A.Q2, A.K1, A.K2);
    else
      attention_backward(s, a.q, a.k, a.v, doc_ids, a.o, a.lse, A.Q1, A.Q2, A.K1, A.K2);
    rope_backward(A.Q2, B, T, H, hd, rope_for(l));
    rope_backward(A.K1, B, T, KV, hd, rope_for(l));
    rmsnorm_backward(A.Q2, a.q_raw, U.at(w.q_norm), a.rq, A.Q1, G.at(w.q_norm), N, Q);
    rmsnorm_backward(A.K1, a.k_raw, U.at(w.k_norm), a.rk, A.K3, G.at(w.k_norm), N, K);
    const Operand dq = act(A.Q1, N * Q, 0), dk = act(A.K3, N * K, 1), dv = act(A.K2, N * K, 2),
                  x = act(a.x, N * D, 3);
    mm(true, false, Q, D, N, dq, x, 1.0f, G.at(w.q));
    mm(true, false, K, D, N, dk, x, 1.0f, G.at(w.k));
    mm(true, false, K, D, N, dv, x, 1.0f, G.at(w.v));
    mm(false, false, N, D, Q, dq, weight(U, w.q), 1.0f, A.dres);
    mm(false, false, N, D, K, dk, weight(U, w.k), 1.0f, A.dres);
    mm(false, false, N, D, K, dv, weight(U, w.v), 1.0f, A.dres);
    grad_done(block_unit(l));
    release(block_unit(l));
  }
  const UnitGrad EG = grad(embed_unit());
  embedding_backward(A.dres, tokens, N, D, EG.at(layout_.embed), cfg_.vocab_size);
  grad_done(embed_unit());
}

// ------------------------------------------------------------------------------- entry points

LossSums Olmo3::forward_backward(const int32_t* tokens, const int32_t* targets,
                                 const int32_t* doc_ids, int64_t B, int64_t T, float grad_scale,
                                 float z_coef) {
  ensure(B, T);
  const UnitView H = forward(tokens, doc_ids, B, T);
  Acts& A = *acts_;
  const int64_t N = B * T, D = cfg_.d_model;
  const UnitGrad HG = grad(head_unit(cfg_.n_layers));
  float* dW = HG.at(layout_.lm_head);
  LossSums s = bf16() ? lm_head_loss_bf16(A.xf, weight(H, layout_.lm_head).b, targets, N, D,
                                          cfg_.vocab_size, z_coef, grad_scale, A.tD, dW)
                      : lm_head_loss(A.xf, H.at(layout_.lm_head), targets, N, D,
                                     cfg_.vocab_size, z_coef, grad_scale, A.tD, dW);
  backward(tokens, doc_ids, B, T, H, HG);
  return s;
}

LossSums Olmo3::forward_loss(const int32_t* tokens, const int32_t* targets,
                             const int32_t* doc_ids, int64_t B, int64_t T, float z_coef) {
  ensure(B, T);
  const UnitView H = forward(tokens, doc_ids, B, T);
  const LossSums s =
      bf16() ? lm_head_loss_bf16(acts_->xf, weight(H, layout_.lm_head).b, targets, B * T,
                                 cfg_.d_model, cfg_.vocab_size, z_coef, 1.0f, nullptr, nullptr)
             : lm_head_loss(acts_->xf, H.at(layout_.lm_head), targets, B * T, cfg_.d_model,
                            cfg_.vocab_size, z_coef, 1.0f, nullptr, nullptr);
  release(head_unit(cfg_.n_layers));
  return s;
}

void Olmo3::forward_logits(const int32_t* tokens, int64_t B, int64_t T, float* logits,
                           const int32_t* doc_ids) {
  ensure(B, T);
  const UnitView H = forward(tokens, doc_ids, B, T);
  mm(false, true, B * T, cfg_.vocab_size, cfg_.d_model, act(acts_->xf, B * T * cfg_.d_model, 0),
     weight(H, layout_.lm_head), 0.0f, logits);
  release(head_unit(cfg_.n_layers));
}

void Olmo3::forward_cached(const int32_t* tokens, int64_t B, int64_t T, KvCache& cache,
                           const int64_t* seq, float* logits) {
  OLMO_CHECK(B >= 1 && B <= cache.batch() && T >= 1, "Olmo3::forward_cached: ", B, " rows of ",
             T, " tokens for a cache of ", cache.batch(), " sequences");
  std::vector<int64_t> pos(static_cast<size_t>(B));
  bool prefill = true;
  for (int64_t b = 0; b < B; ++b) {
    OLMO_CHECK(seq[b] >= 0 && seq[b] < cache.batch(), "Olmo3::forward_cached: sequence ", seq[b],
               " outside 0..", cache.batch() - 1);
    for (int64_t j = 0; j < b; ++j)
      OLMO_CHECK(seq[j] != seq[b], "Olmo3::forward_cached: sequence ", seq[b], " given twice");
    pos[size_t(b)] = cache.length(seq[b]);
    OLMO_CHECK(pos[size_t(b)] + T <= cache.max_len(), "Olmo3::forward_cached: sequence ", seq[b],
               " at ", pos[size_t(b)], " + ", T, " tokens exceeds the cache of ", cache.max_len());
    prefill = prefill && pos[size_t(b)] == 0;
  }
  OLMO_CHECK(prefill || T == 1, "Olmo3::forward_cached: ", T, " tokens per row continue a "
             "non-empty sequence (after the prefill, one token per step)");
  ensure(B, T, /*keep=*/false);
  ensure_rope(cache.max_len());
  const CacheView kv{&cache, seq, pos.data(), prefill};
  const UnitView H = forward(tokens, nullptr, B, T, &kv);
  Acts& A = *acts_;
  const int64_t D = cfg_.d_model;
  const float* last = A.xf;  // each row's last token [B, D]
  if (T > 1) {
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(A.tD + b * D, A.xf + (b * T + T - 1) * D, size_t(D) * sizeof(float));
    last = A.tD;
  }
  mm(false, true, B, cfg_.vocab_size, D, act(last, B * D, 0), weight(H, layout_.lm_head), 0.0f,
     logits);
  release(head_unit(cfg_.n_layers));
  for (int64_t b = 0; b < B; ++b) cache.set_length(seq[b], pos[size_t(b)] + T);
}

}  // namespace olmo::model
