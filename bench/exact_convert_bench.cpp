// CPU cost of the exact reduction's conversion (dist.reduce=exact, 1 process): the real
// GradReducer / SegmentScales (distributed/zero.h, scaled_fixed.h) driven as DataParallel drives
// them (data_parallel.cpp), on the demo model's real parameter layout (model/params.h:
// configs/demo.yaml's d_model 128, 8 layers, vocab 100352: 27.8M parameters, one scale segment
// per tensor, the input embedding row-sparse), 8 instances of seq_len tokens per step.
// Per instance: touch_rows(its token ids), then add_micro_batch(g) with the clear fused (the
// rank's last instance: the step's sum rounded into the shard instead), then finish().
// Timed: add_micro_batch + finish (profile row exact_convert + reduce_finish), and in the
// variants with kept copies the copy of each instance's gradient (data_parallel.cpp's keep():
// the dense part and the rows its tokens touched).
// Not timed: writing each instance's gradient into the buffer (the backward's job in training;
// two pristine gradients alternate) and the step's start (zero_grad).
// Variants (--variants, comma-separated, run alternately rep by rep, ISA:MODE):
//   ISA  scalar | avx2 | avx512 (OLMO_DISPATCH's copy; clamped to the CPU's)
//   MODE plain  one conversion per instance (no kept copies: the memory plan / ZeRO-3 path)
//        keep   + the kept fp32 copy per instance (item 5 of issue 47, armed after a rescale)
//        defer  the kept copy (clearing the gradient as it reads it), and every instance but
//               the last converted with the last from its copy (defer_micro_batch: one pass)
// Prints per variant: conversion CPU seconds per step (mean, min over reps) and ns per
// parameter per instance (CPU time / (instances x parameters)).
// Usage: bench_exact_convert [--reps N] [--instances N] [--seq N] [--threads N]
//                            [--variants avx512:plain,avx2:plain]
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "core/timer.h"
#include "distributed/communicator.h"
#include "distributed/zero.h"
#include "model/params.h"

using namespace olmo;

namespace {

struct Variant {
  std::string name;
  Isa isa = Isa::avx512;
  bool keep = false, defer = false;
  std::vector<double> cpu, wall;  // per rep: seconds per step
};

Variant parse_variant(const std::string& s) {
  Variant v;
  v.name = s;
  const size_t c = s.find(':');
  const std::string isa = s.substr(0, c), mode = c == std::string::npos ? "plain" : s.substr(c + 1);
  if (isa == "scalar") v.isa = Isa::scalar;
  else if (isa == "avx2") v.isa = Isa::avx2;
  else if (isa == "avx512") v.isa = Isa::avx512;
  else throw Error("unknown ISA '" + isa + "' (scalar, avx2, avx512)");
  if (mode == "keep") v.keep = true;
  else if (mode == "defer") v.keep = v.defer = true;
  else if (mode != "plain") throw Error("unknown mode '" + mode + "' (plain, keep, defer)");
  return v;
}

// The demo model (configs/demo.yaml).
model::ModelConfig demo_config() {
  model::ModelConfig c;
  c.name = "demo";
  c.d_model = 128;
  c.n_layers = 8;
  c.n_heads = c.n_kv_heads = 2;
  c.head_dim = 64;
  c.ffn_hidden = 512;
  c.vocab_size = 100352;
  c.layer_window = {64, 64, 64, 0, 64, 64, 64, 0};
  return c;
}

struct Bench {
  model::ParamLayout lay;
  size_t P = 0, V = 0, D = 0;
  int64_t instances = 8, seq = 256;
  std::vector<std::vector<float>> pristine;     // [2][P]: every element nonzero
  std::vector<std::vector<int32_t>> tokens;     // [instances][seq]
  std::vector<std::vector<uint32_t>> rows;      // sorted unique ids per instance
  std::vector<float> work, shard;               // the model's gradient buffer; the 1-rank shard
  std::vector<std::vector<float>> kept;         // [instances][P]

  // work = instance i's gradient: the dense part and its rows (the rest of work is zero).
  void fill(int64_t i) {
    const float* src = pristine[size_t(i % 2)].data();
    const size_t ea = lay.embed, eb = ea + V * D;
    std::memcpy(work.data(), src, ea * sizeof(float));
    for (uint32_t r : rows[size_t(i)])
      std::memcpy(&work[ea + r * D], src + ea + r * D, D * sizeof(float));
    std::memcpy(&work[eb], src + eb, (P - eb) * sizeof(float));
  }
  // data_parallel.cpp's copy_gradient: the dense part and the touched rows (clear: zeroed in
  // work as copied, chunk by chunk).
  void keep(int64_t i, bool clear) {
    float* dst = kept[size_t(i)].data();
    const auto copy = [&](size_t a, size_t b) {
      for (size_t c = a; c < b; c += size_t(1) << 14) {
        const size_t e = std::min(b, c + (size_t(1) << 14));
        std::memcpy(dst + c, &work[c], (e - c) * sizeof(float));
        if (clear) std::memset(&work[c], 0, (e - c) * sizeof(float));
      }
    };
    const size_t ea = lay.embed, eb = ea + V * D;
    copy(0, ea);
    for (uint32_t r : rows[size_t(i)]) copy(ea + r * D, ea + (r + 1) * D);
    copy(eb, P);
  }
};

// One step as DataParallel runs it at one process; returns {cpu, wall} seconds of the timed
// part and whether the reducer asked for a redo.
struct StepTime {
  double cpu = 0, wall = 0;
  bool redo = false;
};

StepTime step(Bench& b, dist::GradReducer& red, bool keep, bool defer) {
  StepTime t;
  std::fill(b.work.begin(), b.work.end(), 0.0f);  // begin_pass: zero_grad
  red.begin_step(b.instances);
  for (int64_t i = 0; i < b.instances; ++i) {
    b.fill(i);
    const bool last = i + 1 == b.instances;
    const double c0 = process_cpu_seconds(), w0 = now_seconds();
    if (keep) b.keep(i, defer && !last);
    red.touch_rows(b.tokens[size_t(i)].data(), size_t(b.seq));
    if (defer && !last)
      red.defer_micro_batch(b.kept[size_t(i)].data());
    else
      red.add_micro_batch(b.work.data(), last ? nullptr : b.work.data(),
                          last ? b.shard.data() : nullptr);
    if (last) red.finish(nullptr, b.shard.data());
    t.cpu += process_cpu_seconds() - c0;
    t.wall += now_seconds() - w0;
  }
  t.redo = red.redo();
  return t;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

}  // namespace

int main(int argc, char** argv) try {
  int reps = 5, threads = 1;
  Bench b;
  std::string variants = "avx512:plain";
  for (int a = 1; a < argc; ++a) {
    const std::string k = argv[a];
    OLMO_CHECK(a + 1 < argc, "option ", k, " needs a value");
    const char* v = argv[++a];
    if (k == "--reps") reps = std::atoi(v);
    else if (k == "--instances") b.instances = std::atoll(v);
    else if (k == "--seq") b.seq = std::atoll(v);
    else if (k == "--threads") threads = std::atoi(v);
    else if (k == "--variants") variants = v;
    else throw Error("unknown option " + k);
  }
  omp_set_num_threads(threads);
  std::vector<Variant> vs;
  for (size_t p = 0; p <= variants.size();) {
    const size_t q = std::min(variants.find(',', p), variants.size());
    vs.push_back(parse_variant(variants.substr(p, q - p)));
    p = q + 1;
  }

  const model::ModelConfig cfg = demo_config();
  b.lay = model::make_layout(cfg);
  b.P = b.lay.total;
  b.V = size_t(cfg.vocab_size);
  b.D = size_t(cfg.d_model);
  std::vector<size_t> bounds;
  for (const auto& p : b.lay.info) bounds.push_back(p.offset);
  std::sort(bounds.begin(), bounds.end());
  bounds.push_back(b.P);
  // Gradients: per tensor a magnitude 2^-(4..20), normal values (every element nonzero).
  std::mt19937 rng(47);
  b.pristine.assign(2, std::vector<float>(b.P));
  for (auto& g : b.pristine) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const float m = std::ldexp(1.0f, -4 - int(rng() % 17));
      for (size_t i = bounds[s]; i < bounds[s + 1]; ++i) g[i] = m * nd(rng);
    }
  }
  std::uniform_int_distribution<int32_t> id(0, int32_t(b.V) - 1);
  b.tokens.assign(size_t(b.instances), std::vector<int32_t>(size_t(b.seq)));
  b.rows.resize(size_t(b.instances));
  for (int64_t i = 0; i < b.instances; ++i) {
    for (auto& t : b.tokens[size_t(i)]) t = id(rng);
    auto& r = b.rows[size_t(i)];
    r.assign(b.tokens[size_t(i)].begin(), b.tokens[size_t(i)].end());
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  b.work.assign(b.P, 0.0f);
  b.shard.assign(b.P, 0.0f);
  for (const Variant& v : vs)
    if (v.keep) b.kept.assign(size_t(b.instances), std::vector<float>(b.P, 0.0f));

  auto comm = dist::make_local_communicator();
  dist::GradReducer red(*comm, b.P, dist::ReduceMode::exact, size_t(1) << 20, true, bounds);
  red.set_sparse_rows(b.lay.embed, b.V, b.D);
  // The scales: a first step measures them (redo), the next fits.
  for (int k = 0; k < 3; ++k) step(b, red, false, false);

  std::printf("demo layout: %zu parameters (%zu tensors; embedding %zu x %zu row-sparse), %lld "
              "instances x %lld tokens per step, %d thread(s), detected ISA %s, %d reps\n",
              b.P, bounds.size() - 1, b.V, b.D, static_cast<long long>(b.instances),
              static_cast<long long>(b.seq), threads, isa_name(detected_isa()), reps);
  // Every variant's step must round to the same shard (the same gradients every step).
  std::vector<float> want;
  for (int r = 0; r < reps; ++r)
    for (Variant& v : vs) {
      set_isa_override(v.isa);
      const StepTime t = step(b, red, v.keep, v.defer);
      OLMO_CHECK(!t.redo, "variant ", v.name, ": the step asked for a redo");
      if (want.empty()) want = b.shard;
      OLMO_CHECK(std::memcmp(want.data(), b.shard.data(), b.P * sizeof(float)) == 0, "variant ",
                 v.name, ": a shard with other bits than the first variant's");
      v.cpu.push_back(t.cpu);
      v.wall.push_back(t.wall);
    }
  clear_isa_override();
  const double per = double(b.instances) * double(b.P);
  std::printf("%-16s %12s %12s %12s %14s\n", "variant", "cpu_s/step", "min_cpu_s", "wall_s/step",
              "ns/param/inst");
  for (const Variant& v : vs) {
    const double m = mean(v.cpu);
    std::printf("%-16s %12.4f %12.4f %12.4f %14.3f\n", v.name.c_str(), m,
                *std::min_element(v.cpu.begin(), v.cpu.end()), mean(v.wall), m / per * 1e9);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_exact_convert: %s\n", e.what());
  return 1;
}
