// Throughput of the attention kernels (forward, backward) and of the fused LM-head loss, in
// GFLOP/s and as a fraction of the fp32 FMA peak measured in the same run (before and after).
// FLOPs counted as useful work only: attention forward 4*hd*pairs*H, backward 8*hd*pairs*H
// (pairs = visible query-key pairs; recomputation not counted); LM head 2*N*D*V forward,
// 6*N*D*V with both gradients.
// The bf16 attention kernels run after the fp32 ones where AVX512_BF16 is in use ("attn2048":
// only the full-causal MHA shape of olmo3-190m, T 2048). Percentages of the fp32 FMA peak and
// of the bf16 VDPBF16PS peak (kernels/peak.h), measured before and after.
// Usage: bench_attention [attn|attn2048|attndemo|probe|gemmstep|gemmmicro|gemmbf16|gemmdet|loss|all|cmp|
//                         shapes] [reps]
//                        [chunk_rows] [cpu|wall]
//        (threads: OMP_NUM_THREADS)
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <vector>

#include "core/cpu.h"
#include "core/timer.h"
#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_micro.h"
#include "kernels/loss.h"
#include "kernels/peak.h"

using namespace olmo::kernels;

namespace {
std::vector<float> randv(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Best of `reps` runs. The machine is shared (other processes take CPU slices), so besides wall
// time we report process CPU time / threads: the time the kernel would take with the cores to
// itself (conservative: OpenMP threads spinning at barriers count as busy).
bool g_use_cpu = true;
template <class F>
double best_of(int reps, F&& f) {
  double best = 1e30, best_wall = 1e30;
  const int nt = omp_get_max_threads();
  for (int r = 0; r < reps; ++r) {
    double t0 = olmo::now_seconds(), c0 = olmo::process_cpu_seconds();
    f();
    best_wall = std::min(best_wall, olmo::now_seconds() - t0);
    best = std::min(best, (olmo::process_cpu_seconds() - c0) / nt);
  }
  return g_use_cpu ? best : best_wall;
}

// The peaks for CPU-time figures on a shared machine: the best of many ~2 ms single-thread
// passes (some of them run with the core to itself) times the thread count (the vCPUs are
// separate cores: 2 threads measure ~2x one on an idle machine).
double peak_cpu_time(bool bf16) {
  double best = 0;
  for (int i = 0; i < 60; ++i)
    best = std::max(best, bf16 ? measure_bf16_peak_gflops(0.016, 1)
                               : measure_fp32_peak_gflops(0.016, 1));
  return best * omp_get_max_threads();
}

// fp32 kernels, and where AVX512_BF16 is in use the bf16 kernels (attention_bf16.h) on the same
// inputs right after them; percentages of the fp32 peak and, for bf16, also of the bf16 peak.
// Shapes: "attn" olmo3-190m's T 2048 (MHA and GQA, full and windowed), "attn2048" its full
// MHA layer only, "attndemo" configs/demo.yaml's micro-batch (4 x 256 tokens, 2 heads of 64,
// full and window 64; each timing covers `inner` = 20 calls, the figures are per call).
void bench_attention(int reps, double peak, double peak_bf16, const std::string& set) {
  std::vector<AttnShape> shapes;
  if (set == "attndemo") {
    shapes = {{4, 256, 2, 2, 64, 0}, {4, 256, 2, 2, 64, 64}};
  } else {
    for (int64_t KV : {int64_t(12), int64_t(4)})
      for (int64_t w : {int64_t(0), int64_t(1024), int64_t(256)})
        if (set != "attn2048" || (KV == 12 && w == 0)) shapes.push_back({1, 2048, 12, KV, 64, w});
  }
  const int inner = set == "attndemo" ? 20 : 1;
  for (const AttnShape& s : shapes) {
    const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, w = s.window;
    auto q = randv(B * T * H * hd, 1, 1.0f), k = randv(B * T * KV * hd, 2, 1.0f),
         v = randv(B * T * KV * hd, 3, 1.0f), g = randv(B * T * H * hd, 4, 1.0f);
    std::vector<float> o(q.size()), l(B * H * T), dq(q.size()), dk(k.size()), dv(v.size());
    const double pairs = double(attention_visible_pairs(s, nullptr)) * H;
    const double ff = 4 * hd * pairs, fb = 8 * hd * pairs;
    for (bool bf : {false, true}) {
      if (bf && !attention_bf16_native()) continue;
      const auto fwd = bf ? attention_forward_bf16 : attention_forward;
      const auto bwd = bf ? attention_backward_bf16 : attention_backward;
      const double tf = best_of(reps, [&] {
        for (int i = 0; i < inner; ++i)
          fwd(s, q.data(), k.data(), v.data(), nullptr, o.data(), l.data());
      }) / inner;
      const double tb = best_of(reps, [&] {
        for (int i = 0; i < inner; ++i)
          bwd(s, q.data(), k.data(), v.data(), nullptr, o.data(), l.data(), g.data(),
              dq.data(), dk.data(), dv.data());
      }) / inner;
      const double pk = bf ? peak_bf16 : peak;
      std::printf(
          "attention %s B=%lld T=%lld H=%lld KV=%lld hd=%lld window=%-5lld fwd %6.2f ms %6.1f "
          "GFLOP/s (%4.1f%%)  bwd %6.2f ms %6.1f GFLOP/s (%4.1f%%)  fwd+bwd %6.1f GFLOP/s "
          "(%4.1f%% of the fp32 peak",
          bf ? "bf16" : "fp32", (long long)B, (long long)T, (long long)H, (long long)KV,
          (long long)hd, (long long)w, tf * 1e3, ff / tf * 1e-9, 100 * ff / tf * 1e-9 / peak,
          tb * 1e3, fb / tb * 1e-9, 100 * fb / tb * 1e-9 / peak, (ff + fb) / (tf + tb) * 1e-9,
          100 * (ff + fb) / (tf + tb) * 1e-9 / peak);
      if (bf)
        std::printf(", %4.1f%% of the bf16 peak", 100 * (ff + fb) / (tf + tb) * 1e-9 / pk);
      std::printf(")\n");
      std::fflush(stdout);
    }
  }
}

// In-run anchor: oneDNN fp32 gemm at a training shape (2048 x 2304 x 768, a fused QKV
// projection), timed the same way, so kernel figures can be read relative to it.
double bench_gemm_anchor(int reps, double peak) {
  const int64_t M = 2048, N = 2304, K = 768;
  auto a = randv(M * K, 7, 1.0f), b = randv(N * K, 8, 1.0f);
  std::vector<float> c(M * N);
  gemm(false, true, M, N, K, 1.0f, a.data(), b.data(), 0.0f, c.data());
  const double t = best_of(reps + 2, [&] {
    gemm(false, true, M, N, K, 1.0f, a.data(), b.data(), 0.0f, c.data());
  });
  const double gf = 2.0 * M * N * K / t * 1e-9;
  std::printf("anchor gemm (oneDNN) %lldx%lldx%lld: %6.1f GFLOP/s (%4.1f%%)\n", (long long)M,
              (long long)N, (long long)K, gf, 100 * gf / peak);
  return gf;
}

void bench_loss(int reps, double peak, int64_t chunk) {
  const int64_t N = 2048, D = 768, V = 100352;
  auto x = randv(N * D, 5, 1.0f), W = randv(V * D, 6, 0.02f);
  std::vector<float> dx(N * D), dW(V * D, 0.0f);
  std::vector<int32_t> t(N);
  for (int64_t i = 0; i < N; ++i) t[i] = int32_t((i * 7919) % V);
  LossSums r;
  const double tf = best_of(reps, [&] {
    r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f / N, nullptr, nullptr,
                     chunk);
  });
  const double tb = best_of(reps, [&] {
    r = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f / N, dx.data(), dW.data(),
                     chunk);
  });
  const double ff = 2.0 * N * D * V, fb = 6.0 * N * D * V;
  std::printf(
      "lm_head_loss N=%lld D=%lld V=%lld chunk=%lld  loss only %7.1f ms %6.1f GFLOP/s (%4.1f%%)  "
      "loss+dx+dW %7.1f ms %6.1f GFLOP/s (%4.1f%%)  [ce/N=%.4f]\n",
      (long long)N, (long long)D, (long long)V, (long long)chunk, tf * 1e3, ff / tf * 1e-9,
      100 * ff / tf * 1e-9 / peak, tb * 1e3, fb / tb * 1e-9, 100 * fb / tb * 1e-9 / peak,
      r.ce_sum / r.count);
  std::fflush(stdout);
}

// lm_head_loss with both gradients at several row-chunk sizes, interleaved rep by rep so all see
// the same machine load ("cmp"); then ("cmp" and "shapes") the oneDNN gemm shapes the row-chunked
// path is made of, and those a vocab-tiled two-pass variant would use (N x Vb tiles, one extra
// forward gemm: measured 20-25% slower end to end on 2026-12-02 and not kept), in GFLOP/s.
void bench_loss_compare(int reps, int64_t chunk, bool loss_variants) {
  const int64_t N = 2048, D = 768, V = 100352;
  auto x = randv(N * D, 5, 1.0f), W = randv(V * D, 6, 0.02f);
  std::vector<float> dx(N * D), dW(V * D, 0.0f);
  std::vector<int32_t> t(N);
  for (int64_t i = 0; i < N; ++i) t[i] = int32_t((i * 7919) % V);
  const double fb = 6.0 * N * D * V;
  // Row chunk 160 (auto, or the chunk argument), 256, 384 rows (64 / 103 / 154 MB of logits).
  const int64_t chunks[] = {chunk, 256, 384};
  for (int r = 0; r < (loss_variants ? reps : 0); ++r)
    for (int64_t c : chunks) {
      LossSums a;
      const double ta = best_of(1, [&] {
        a = lm_head_loss(x.data(), W.data(), t.data(), N, D, V, 1e-5f, 1.0f / N, dx.data(),
                         dW.data(), c);
      });
      std::printf("loss+dx+dW rep %d: chunk %4lld  %7.1f ms  %6.1f GFLOP/s (6NDV)  [ce/N %.6f]\n",
                  r, (long long)c, ta * 1e3, fb / ta * 1e-9, a.ce_sum / a.count);
      std::fflush(stdout);
    }
  struct G { const char* what; bool ta, tb; int64_t M, N, K; float beta; };
  const int64_t C = 160, Vb = 8192;
  std::vector<float> A(std::max(C * V, N * Vb)), Cm(std::max(C * V, N * Vb));
  for (G g : {G{"row fwd  x_c W^T", false, true, C, V, D, 0.0f},
              G{"row dx   dl W   ", false, false, C, D, V, 0.0f},
              G{"row dxT  W^T dl^T", true, true, D, C, V, 0.0f},
              G{"row dW   dl^T x ", true, false, V, D, C, 1.0f},
              G{"voc fwd  x Wb^T ", false, true, N, Vb, D, 0.0f},
              G{"voc dx   dl Wb  ", false, false, N, D, Vb, 1.0f},
              G{"voc dW   dl^T x ", true, false, Vb, D, N, 1.0f}}) {
    const bool dxT = g.ta && g.tb;  // dx^T = W^T dlogits^T: A = W [V, D], B = dlogits [C, V]
    const float* Ap = dxT ? W.data() : A.data();
    const float* Bp = dxT ? A.data() : g.ta ? x.data() : W.data();
    float* Cp = g.ta && !dxT ? dW.data() : Cm.data();
    const double tg = best_of(reps, [&] {
      gemm(g.ta, g.tb, g.M, g.N, g.K, 1.0f, Ap, Bp, g.beta, Cp);
    });
    std::printf("gemm %s M=%6lld N=%6lld K=%6lld: %6.1f GFLOP/s\n", g.what, (long long)g.M,
                (long long)g.N, (long long)g.K, 2.0 * g.M * g.N * g.K / tg * 1e-9);
    std::fflush(stdout);
  }
}
// Every GEMM shape of one olmo3-190m step at seq 2048 (2048 tokens; d 768, FFN 3072, V 100352,
// LM head in row chunks of 416 = chunk_rows auto at this shape), as model/olmo3.cpp calls them
// (profiler key M x N x K; ta, tb), fp32 (gemm) and bf16 (gemm_bf16 on bf16 inputs) timed back
// to back, alternating fp32 / bf16 rep by rep; then the remedies: fused QKV (one 2048x2304x768
// instead of three 2048x768x768), fused gate/up (2048x6144x768 instead of two 2048x3072x768) and
// their backward data / weight GEMMs, and LM-head row chunks 160..1024 (per-row-of-logits cost).
// "gemmstep": GFLOP/s per shape and % of the fp32 / bf16 peaks.
struct StepGemm {
  const char* what;
  bool ta, tb;
  int64_t M, N, K;
  int calls;  // per step (12 layers; LM head: chunks of 416 rows)
};
// The GEMM calls of one olmo3-190m step (seq 2048; LM head in chunks of 416 rows), in the
// transposes model/olmo3.cpp uses; gemmstep and gemmmicro add their own rows after these.
const StepGemm kStepGemms[] = {
    {"q,k,v,o fwd x W^T", false, true, 2048, 768, 768, 48},
    {"q,k,v,o dx dy W", false, false, 2048, 768, 768, 48},
    {"q,k,v,o dW dy^T x", true, false, 768, 768, 2048, 48},
    {"gate,up fwd", false, true, 2048, 3072, 768, 24},
    {"down dx", false, false, 2048, 3072, 768, 12},
    {"down fwd", false, true, 2048, 768, 3072, 12},
    {"gate,up dx", false, false, 2048, 768, 3072, 24},
    {"gate,up dW", true, false, 3072, 768, 2048, 24},
    {"down dW", true, false, 768, 3072, 2048, 12},
    {"lm fwd (416 rows)", false, true, 416, 100352, 768, 5},
    {"lm dx (416 rows)", false, false, 416, 768, 100352, 5},
    {"lm dW (416 rows)", true, false, 100352, 768, 416, 5},
};
void bench_step_gemms(int reps, double peak, double peak_bf16) {
  std::vector<StepGemm> shapes(std::begin(kStepGemms), std::end(kStepGemms));
  shapes.insert(shapes.end(), {
      // remedies
      {"fused qkv fwd", false, true, 2048, 2304, 768, 12},
      {"fused qkv dx", false, false, 2048, 768, 2304, 12},
      {"fused qkv dW", true, false, 2304, 768, 2048, 12},
      {"fused gate-up fwd", false, true, 2048, 6144, 768, 12},
      {"fused gate-up dx", false, false, 2048, 768, 6144, 12},
      {"fused gate-up dW", true, false, 6144, 768, 2048, 12},
      {"lm fwd (160 rows)", false, true, 160, 100352, 768, 13},
      {"lm dx (160 rows)", false, false, 160, 768, 100352, 13},
      {"lm dW (160 rows)", true, false, 100352, 768, 160, 13},
      {"lm fwd (1024 rows)", false, true, 1024, 100352, 768, 2},
      {"lm dx (1024 rows)", false, false, 1024, 768, 100352, 2},
      {"lm dW (1024 rows)", true, false, 100352, 768, 1024, 2},
  });
  // Without a native bf16 matmul (AVX2) gemm_bf16 runs the fp32 one on widened inputs: its %
  // is then of the fp32 peak.
  const double pb = peak_bf16 > 0 ? peak_bf16 : peak;
  for (const StepGemm& g : shapes) {
    const int64_t na = g.M * g.K, nb = g.K * g.N, nc = g.M * g.N;
    auto a = randv(size_t(na), 11, 1.0f), b = randv(size_t(nb), 12, 0.05f);
    std::vector<float> c(size_t(nc), 0.0f);
    std::vector<bf16_t> ab(static_cast<size_t>(na)), bb(static_cast<size_t>(nb));
    f32_to_bf16(a.data(), ab.data(), na);
    f32_to_bf16(b.data(), bb.data(), nb);
    const float beta = g.ta ? 1.0f : 0.0f;  // weight gradients accumulate
    auto f32 = [&] { gemm(g.ta, g.tb, g.M, g.N, g.K, 1.0f, a.data(), b.data(), beta, c.data()); };
    auto b16 = [&] {
      gemm_bf16(g.ta, g.tb, g.M, g.N, g.K, 1.0f, ab.data(), bb.data(), beta, c.data());
    };
    f32(), b16();  // primitive creation, first touch
    double tf = 1e30, tb = 1e30;
    for (int r = 0; r < reps; ++r)
      tf = std::min(tf, best_of(1, f32)), tb = std::min(tb, best_of(1, b16));
    const double fl = 2.0 * double(g.M) * double(g.N) * double(g.K);
    std::printf("gemm %-20s ta=%d tb=%d %6lldx%6lldx%6lld x%2d/step  fp32 %6.1f GFLOP/s (%5.1f%%) "
                "%7.1f ms/step  bf16 %6.1f GFLOP/s (%5.1f%%) %7.1f ms/step\n",
                g.what, int(g.ta), int(g.tb), (long long)g.M, (long long)g.N, (long long)g.K,
                g.calls, fl / tf * 1e-9, 100 * fl / tf * 1e-9 / peak, tf * g.calls * 1e3,
                fl / tb * 1e-9, 100 * fl / tb * 1e-9 / pb, tb * g.calls * 1e3);
    std::fflush(stdout);
  }
}

// "gemmbf16": the bf16 shapes of gemmstep (rows 0..11; one row with OLMO_BENCH_SHAPE=i) through
// oneDNN's bf16 matmul (gemm_bf16_onednn, what gemm_bf16 ran before issue 46 item 3) and
// gemm_micro_bf16 (gemm_bf16 now: VDPBF16PS where the CPU has it, else the emulation),
// alternating rep by rep on the same inputs; best CPU time of each, ms per olmo3-190m step.
void bench_bf16(int reps) {
  const char* shape = std::getenv("OLMO_BENCH_SHAPE");
  const int64_t only = shape && *shape ? std::atoll(shape) : -1;
  double sum_d = 0, sum_m = 0;
  for (int64_t i = 0; i < int64_t(std::size(kStepGemms)); ++i) {
    if (only >= 0 && i != only) continue;
    const StepGemm& g = kStepGemms[i];
    const int64_t na = g.M * g.K, nb = g.K * g.N, nc = g.M * g.N;
    auto a = randv(size_t(na), 11, 1.0f), b = randv(size_t(nb), 12, 0.05f);
    std::vector<bf16_t> ab(static_cast<size_t>(na)), bb(static_cast<size_t>(nb));
    f32_to_bf16(a.data(), ab.data(), na);
    f32_to_bf16(b.data(), bb.data(), nb);
    std::vector<float> c(size_t(nc), 0.0f), cm(size_t(nc), 0.0f);
    const float beta = g.ta ? 1.0f : 0.0f;
    auto dnn = [&] {
      gemm_bf16_onednn(g.ta, g.tb, g.M, g.N, g.K, 1.0f, ab.data(), bb.data(), beta, c.data());
    };
    auto mic = [&] {
      gemm_micro_bf16(g.ta, g.tb, g.M, g.N, g.K, 1.0f, ab.data(), bb.data(), beta, cm.data());
    };
    dnn(), mic();
    double td = 1e30, tm = 1e30;
    for (int r = 0; r < reps; ++r)
      td = std::min(td, best_of(1, dnn)), tm = std::min(tm, best_of(1, mic));
    const double fl = 2.0 * double(g.M) * double(g.N) * double(g.K);
    sum_d += td * g.calls, sum_m += tm * g.calls;
    std::printf("bf16 %-20s %6lldx%6lldx%6lld x%2d/step  onednn %6.1f GFLOP/s %7.1f ms/step  "
                "micro %6.1f GFLOP/s %7.1f ms/step  %.3fx\n",
                g.what, (long long)g.M, (long long)g.N, (long long)g.K, g.calls, fl / td * 1e-9,
                td * g.calls * 1e3, fl / tm * 1e-9, tm * g.calls * 1e3, td / tm);
    std::fflush(stdout);
  }
  std::printf("bf16 sum: onednn %.1f ms/step, micro %.1f ms/step, micro vs onednn %.3fx\n",
              sum_d * 1e3, sum_m * 1e3, sum_d / sum_m);
}

// "gemmmicro": the fp32 shapes of gemmstep (rows 0..11, and the LM-head dW at 160 / 1024 rows:
// 12, 13; other weight gradients: 14..19; one row with OLMO_BENCH_SHAPE=i) through
// oneDNN directly (not gemm(), which may route to gemm_micro), gemm_micro (blocking from
// OLMO_MICRO_KC / _MC / _NC, defaults gemm_micro.h) and, for ta = tb = 0, two oneDNN remedies:
// K split in blocks of 8192 accumulated with beta = 1, and the transposed problem C^T = B^T A^T
// into a scratch [N, M] transposed back. Variants alternate rep by rep on the same inputs; best
// CPU time of each. The max abs difference to oneDNN's C is printed as a sanity check.
int64_t env_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : dflt;
}
void bench_micro(int reps, double peak) {
  std::vector<StepGemm> shapes(std::begin(kStepGemms), std::end(kStepGemms));
  shapes.insert(shapes.end(), {
      {"lm dW (160 rows)", true, false, 100352, 768, 160, 13},
      {"lm dW (1024 rows)", true, false, 100352, 768, 1024, 2},
      // the weight-gradient class at other sizes (calls: per step of that model, seq 2048)
      {"fused gate-up dW", true, false, 6144, 768, 2048, 12},
      {"fused qkv dW", true, false, 2304, 768, 2048, 12},
      {"7B q,k,v,o dW", true, false, 4096, 4096, 2048, 128},
      {"7B gate,up dW", true, false, 11008, 4096, 2048, 64},
      {"7B down dW", true, false, 4096, 11008, 2048, 32},
      {"7B lm dW (416 rows)", true, false, 100352, 4096, 416, 5},
      // the demo's LM head (configs/demo.yaml: d_model 128; a step's 2 micro-batches of 1024
      // tokens in chunks of 416, 416, 192 rows: counted as 5 chunks of 416)
      {"demo lm fwd (416 rows)", false, true, 416, 100352, 128, 5},
      {"demo lm dx (416 rows)", false, false, 416, 128, 100352, 5},
      {"demo lm dW (416 rows)", true, false, 100352, 128, 416, 5},
  });
  GemmMicroBlocking blk;
  blk.kc = env_int("OLMO_MICRO_KC", blk.kc);
  blk.mc = env_int("OLMO_MICRO_MC", blk.mc);
  blk.nc = env_int("OLMO_MICRO_NC", blk.nc);
  const int64_t only = env_int("OLMO_BENCH_SHAPE", -1);
  std::printf("gemm_micro: MR 6 x NR %lld, kc %lld mc %lld nc %lld\n", (long long)gemm_micro_nr(),
              (long long)blk.kc, (long long)blk.mc, (long long)blk.nc);
  for (int64_t i = 0; i < int64_t(shapes.size()); ++i) {
    if (only >= 0 && i != only) continue;
    const StepGemm& g = shapes[i];
    const int64_t na = g.M * g.K, nb = g.K * g.N, nc = g.M * g.N;
    auto a = randv(size_t(na), 11, 1.0f), b = randv(size_t(nb), 12, 0.05f);
    std::vector<float> c(size_t(nc), 0.0f), c0(size_t(nc), 0.0f), ct;
    const float beta = g.ta ? 1.0f : 0.0f;
    const int64_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
    // oneDNN itself (gemm() may route the shape to gemm_micro: the header line says so)
    auto onednn = [&](float* C) {
      gemm_onednn(g.ta, g.tb, g.M, g.N, g.K, 1.0f, a.data(), b.data(), beta, C);
    };
    struct Variant {
      const char* name;
      std::function<void()> f;
      double t = 1e30;
    };
    std::vector<Variant> vs;
    vs.push_back({"onednn", [&] { onednn(c.data()); }});
    vs.push_back({"micro", [&] {
                    gemm_micro(g.ta, g.tb, g.M, g.N, g.K, 1.0f, a.data(), b.data(), beta,
                               c.data(), 0, 0, 0, blk);
                  }});
    if (!g.ta && !g.tb) {
      const int64_t kb = 8192;
      vs.push_back({"onednn ksplit 8192", [&] {
                      for (int64_t p = 0; p < g.K; p += kb)
                        gemm_onednn(false, false, g.M, g.N, std::min(kb, g.K - p), 1.0f,
                                    a.data() + p, b.data() + p * ldb, p == 0 ? beta : 1.0f,
                                    c.data(), lda, ldb, g.N);
                    }});
      ct.resize(size_t(nc));
      vs.push_back({"onednn transposed", [&] {
                      // C^T [N, M] = op(B)^T op(A)^T: B [K, N] read as transposed A, A [M, K]
                      // as transposed B; then C = (C^T)^T.
                      gemm_onednn(true, true, g.N, g.M, g.K, 1.0f, b.data(), a.data(), 0.0f,
                                  ct.data(), ldb, lda, g.M);
                      for (int64_t r = 0; r < g.M; ++r)
                        for (int64_t q = 0; q < g.N; ++q)
                          c[size_t(r * g.N + q)] = ct[size_t(q * g.M + r)];
                    }});
    }
    // Reference result (from zero C: the beta = 1 shapes accumulate into C between calls, so
    // the check compares one call each from the same starting C).
    onednn(c0.data());
    const double fl = 2.0 * double(g.M) * double(g.N) * double(g.K);
    std::printf("gemm %-20s ta=%d tb=%d %6lldx%6lldx%6lld x%2d/step  oneDNN impl %s\n", g.what,
                int(g.ta), int(g.tb), (long long)g.M, (long long)g.N, (long long)g.K, g.calls,
                gemm_impl(false, g.ta, g.tb, g.M, g.N, g.K).c_str());
    for (Variant& v : vs) {  // untimed call: primitive creation, first touch; the sanity check
      std::fill(c.begin(), c.end(), 0.0f);
      v.f();
      double md = 0, mx = 0;
      for (size_t q = 0; q < c.size(); ++q)
        md = std::max(md, double(std::fabs(c[q] - c0[q]))),
        mx = std::max(mx, double(std::fabs(c0[q])));
      std::printf("  %-20s max |C - onednn| %.2e (max |C| %.2e)\n", v.name, md, mx);
    }
    for (int r = 0; r < reps; ++r)
      for (Variant& v : vs) v.t = std::min(v.t, best_of(1, v.f));
    for (Variant& v : vs)
      std::printf("  %-20s %8.2f ms %6.1f GFLOP/s (%5.1f%%) %8.1f ms/step  x%.3f vs onednn\n",
                  v.name, v.t * 1e3, fl / v.t * 1e-9, 100 * fl / v.t * 1e-9 / peak,
                  v.t * g.calls * 1e3, vs[0].t / v.t);
    std::fflush(stdout);
  }
}

// "gemmdet": does the result depend on the thread count? oneDNN (gemm_onednn) and gemm_micro at
// 1 and at omp_get_max_threads() threads, on the step's dx / dW / fwd classes (smaller K).
void bench_determinism() {
  struct S { bool ta, tb; int64_t M, N, K; };
  const int nt = omp_get_max_threads();
  for (S s : {S{false, true, 2048, 768, 768}, S{false, false, 2048, 768, 3072},
              S{true, false, 768, 3072, 2048}, S{false, false, 416, 768, 20000},
              S{true, false, 100352, 768, 416}}) {
    auto a = randv(size_t(s.M * s.K), 21, 1.0f), b = randv(size_t(s.K * s.N), 22, 0.05f);
    for (int which = 0; which < 2; ++which) {
      std::vector<float> c1(size_t(s.M * s.N)), c2(c1.size());
      auto run = [&](float* C) {
        if (which == 0) gemm_onednn(s.ta, s.tb, s.M, s.N, s.K, 1.0f, a.data(), b.data(), 0.0f, C);
        else gemm_micro(s.ta, s.tb, s.M, s.N, s.K, 1.0f, a.data(), b.data(), 0.0f, C);
      };
      omp_set_num_threads(1);
      run(c1.data());
      omp_set_num_threads(nt);
      run(c2.data());
      size_t diff = 0;
      for (size_t q = 0; q < c1.size(); ++q) diff += std::memcmp(&c1[q], &c2[q], 4) != 0;
      std::printf("determinism %-6s ta=%d tb=%d %lldx%lldx%lld: 1 vs %d threads: %zu of %zu "
                  "elements differ\n", which ? "micro" : "onednn", int(s.ta), int(s.tb),
                  (long long)s.M, (long long)s.N, (long long)s.K, nt, diff, c1.size());
      std::fflush(stdout);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int64_t chunk = argc > 3 ? std::atoll(argv[3]) : 0;
  g_use_cpu = !(argc > 4 && std::string(argv[4]) == "wall");
  double p0 = measure_fp32_peak_gflops(0.3), b0 = measure_bf16_peak_gflops(0.3);
  std::printf("threads=%d isa=%s peak(before)=%.1f GFLOP/s bf16 peak(before)=%.1f GFLOP/s "
              "timing=%s\n", omp_get_max_threads(), olmo::isa_name(olmo::active_isa()), p0, b0,
              g_use_cpu ? "process cpu time / threads" : "wall");
  if (g_use_cpu) {
    p0 = peak_cpu_time(false), b0 = olmo::cpu_has_avx512_bf16() ? peak_cpu_time(true) : 0;
    std::printf("peaks for cpu timing (best 2 ms single-thread pass x threads): fp32 %.1f, "
                "bf16 %.1f GFLOP/s\n", p0, b0);
  }
  bench_gemm_anchor(reps, p0);
  if (what == "attn" || what == "attn2048" || what == "attndemo" || what == "all")
    bench_attention(reps, p0, b0, what == "all" ? "attn" : what);
  if (what == "gemmstep") bench_step_gemms(reps, p0, b0);
  if (what == "gemmmicro") bench_micro(reps, p0);
  if (what == "gemmbf16") bench_bf16(reps);
  if (what == "gemmdet") bench_determinism();
  if (what == "probe")  // bf16_mixed's attention choice (attention_bf16.h) at several shapes
    for (AttnShape s : {AttnShape{1, 1024, 4, 4, 64, 0}, AttnShape{1, 2048, 4, 4, 64, 0},
                        AttnShape{1, 2048, 12, 12, 64, 0}}) {
      const AttnProbe p = probe_attention_precisions(s, reps);
      std::printf("probe B=1 T=%lld H=%lld hd=64: fwd+bwd fp32 %.1f bf16 %.1f GFLOP/s, %.2fx\n",
                  (long long)s.T, (long long)s.H, p.fp32_gflops, p.bf16_gflops,
                  p.bf16_gflops / p.fp32_gflops);
      std::fflush(stdout);
    }
  if (what == "loss" || what == "all") bench_loss(reps, p0, chunk);
  if (what == "cmp" || what == "shapes") bench_loss_compare(reps, chunk, what == "cmp");
  std::printf("peak(after)=%.1f GFLOP/s bf16 peak(after)=%.1f GFLOP/s\n",
              measure_fp32_peak_gflops(0.3), measure_bf16_peak_gflops(0.3));
  if (g_use_cpu)
    std::printf("peaks for cpu timing (after): fp32 %.1f, bf16 %.1f GFLOP/s\n",
                peak_cpu_time(false), olmo::cpu_has_avx512_bf16() ? peak_cpu_time(true) : 0.0);
  return 0;
}
