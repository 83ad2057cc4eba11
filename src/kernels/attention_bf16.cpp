// bf16 attention entry points (contract in attention_bf16.h): validate the shape, open the
// profiler scope and run the AVX512_BF16 kernels (attention_bf16_avx512bf16.cpp) where
// cpu_has_bf16(), else their exact emulation (attention_bf16_emu.cpp). Also bf16_mixed's choice
// between them and the fp32 kernels (attention_bf16_choice: the bf16 kernels unless
// OLMO_ATTN_BF16=0 or the test override says otherwise; never timed; returned with its reason,
// never printed here: src/train reports it). The timing probe stays for benchmarks.
#include "kernels/attention_bf16.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

#include "core/profile.h"
#include "core/runtime.h"
#include "core/timer.h"
#include "kernels/attention_bf16_emu.h"
#include "kernels/attention_mask.h"
#include "kernels/bf16.h"

namespace olmo::kernels {

namespace isa_avx512bf16 {
void attention_fwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, float* out, float* lse);
void attention_bwd_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                        const int32_t* doc_ids, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv);
}  // namespace isa_avx512bf16

bool attention_bf16_native() { return cpu_has_bf16(); }

AttnProbe probe_attention_precisions(const AttnShape& s, int reps) {
  check_attn_shape(s);
  OLMO_CHECK(reps > 0, "probe_attention_precisions: reps must be positive");
  AttnProbe r{s, 0, 0};
  const int64_t nq = s.B * s.T * s.H * s.hd, nk = s.B * s.T * s.KV * s.hd;
  const size_t zq = static_cast<size_t>(nq), zk = static_cast<size_t>(nk);
  std::vector<float> q(zq), g(zq), o(zq), dq(zq), k(zk), v(zk), dk(zk), dv(zk);
  std::vector<float> lse(static_cast<size_t>(s.B * s.H * s.T));
  for (size_t i = 0; i < zq; ++i)
    q[i] = float(int(i % 17) - 8) * 0.1f, g[i] = float(int(i % 7) - 3) * 0.1f;
  for (size_t i = 0; i < zk; ++i)
    k[i] = float(int(i % 13) - 6) * 0.1f, v[i] = float(int(i % 11) - 5) * 0.1f;
  const double flops = 3.0 * attention_flops(s);
  auto best = [&](bool bf) {
    auto call = [&] {
      if (bf) {
        isa_avx512bf16::attention_fwd_bf16(s, q.data(), k.data(), v.data(), nullptr, o.data(),
                                           lse.data());
        isa_avx512bf16::attention_bwd_bf16(s, q.data(), k.data(), v.data(), nullptr, o.data(),
                                           lse.data(), g.data(), dq.data(), dk.data(), dv.data());
      } else {
        attention_forward(s, q.data(), k.data(), v.data(), nullptr, o.data(), lse.data());
        attention_backward(s, q.data(), k.data(), v.data(), nullptr, o.data(), lse.data(),
                           g.data(), dq.data(), dk.data(), dv.data());
      }
    };
    return flops / best_seconds(reps, call, thread_cpu_seconds) * 1e-9;
  };
  const bool was = profile::enabled();  // the probe's calls are no part of a profiled step
  profile::enable(false);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);  // one thread, timed in its own CPU time: see attention_bf16.h
  for (int round = 0; round < 3; ++round) {
    r.fp32_gflops = std::max(r.fp32_gflops, best(false));
    if (attention_bf16_native()) r.bf16_gflops = std::max(r.bf16_gflops, best(true));
  }
  omp_set_num_threads(threads);
  profile::enable(was);
  return r;
}

namespace {
int g_attn_override = -1;
std::mutex g_attn_mu;
bool g_attn_decided = false;
AttnChoice g_attn;

// Env switch, else the bf16 kernels; once per process (the test override bypasses the cache).
void decide_attention() {
  std::lock_guard<std::mutex> lock(g_attn_mu);
  if (g_attn_decided) return;
  AttnChoice& c = g_attn;
  const char* how = attention_bf16_native() ? "native AVX512_BF16" : "exact emulation";
  const std::string e = runtime().env("OLMO_ATTN_BF16").value_or("");
  if (!e.empty()) {
    OLMO_CHECK(e == "0" || e == "1", "OLMO_ATTN_BF16 = '", e,
               "' must be 0 (fp32 attention) or 1 (bf16 attention, the default)");
    c.bf16 = e[0] == '1';
    c.source = Source::env;
    c.origin = "OLMO_ATTN_BF16";
    c.why = c.bf16 ? cat("attention (bf16_mixed): bf16 kernels (", how, "; OLMO_ATTN_BF16=1)")
                   : "attention (bf16_mixed): fp32 kernels (OLMO_ATTN_BF16=0)";
  } else {
    c.bf16 = true;
    c.source = Source::default_value;
    c.origin = how;
    c.why = cat("attention (bf16_mixed): bf16 kernels (", how, ")");
  }
  g_attn_decided = true;
}
}  // namespace

AttnChoice attention_bf16_choice() {
  if (g_attn_override >= 0) {
    AttnChoice c;
    c.bf16 = g_attn_override == 1;
    c.source = Source::test_override;
    c.origin = "set_attention_bf16_override";
    c.why = cat("attention (bf16_mixed): ", c.bf16 ? "bf16" : "fp32", " kernels (test override)");
    return c;
  }
  decide_attention();
  std::lock_guard<std::mutex> lock(g_attn_mu);
  return g_attn;
}

bool attention_bf16_chosen() {
  if (g_attn_override >= 0) return g_attn_override == 1;
  decide_attention();
  return g_attn.bf16;
}

std::string attention_bf16_why() { return attention_bf16_choice().why; }

void set_attention_bf16_override(int mode) { g_attn_override = mode; }

void attention_forward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                            const int32_t* doc_ids, float* out, float* lse) {
  check_attn_shape(s);
  OLMO_PROFILE("attention_bf16_fwd", attention_flops(s));
  if (attention_bf16_native())
    isa_avx512bf16::attention_fwd_bf16(s, q, k, v, doc_ids, out, lse);
  else
    attention_bf16_emu::forward(s, q, k, v, doc_ids, out, lse);
}

void attention_backward_bf16(const AttnShape& s, const float* q, const float* k, const float* v,
                             const int32_t* doc_ids, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv) {
  check_attn_shape(s);
  OLMO_PROFILE("attention_bf16_bwd", 2.0 * attention_flops(s));
  if (attention_bf16_native())
    isa_avx512bf16::attention_bwd_bf16(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
  else
    attention_bf16_emu::backward(s, q, k, v, doc_ids, out, lse, dout, dq, dk, dv);
}

}  // namespace olmo::kernels
