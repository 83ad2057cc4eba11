// Any partition, same bits (issue 47), in one process: W = 1..8 ranks as threads over an
// in-process communicator (below: every collective a rendezvous of the W threads), each rank a
// TrainModule on its own copy of the tiny model. Random global batches are dealt to random
// partitions (uneven instance counts, random positions), each rank with its own random
// data.micro_batch_tokens, under both exact accumulators and ZeRO-2 / ZeRO-3 (padding rounds for
// the ranks with fewer instances); two steps must give the 1-rank run's losses, grad norms and
// every parameter bit for bit. The reference is the same code on one rank: what it checks is
// that the partition and micro-batch size never reach the bits (the maths is checked by
// tests/distributed/scaled_fixed_test.cpp and the parity tests).
// Rescales (issue 47 item 5): after a segment's first rescale the exact reduction keeps each
// micro-batch's fp32 gradient, and a later rescale converts the copies again instead of running
// the forward/backward again (dist::DataParallel). RescalesReconvertWithTheRecomputeBits forces
// rescales (before steps 3, 4 and 5 every rank's scales are set to exponent 1, as a checkpoint
// would set them) on W = 1..4 ranks, both accumulators, the overlap on (the last micro-batch's
// units streamed during its backward, replayed in that order): the 1-rank run that never keeps
// (keep_limit_bytes 0: every rescale recomputes, the reduction before the kept gradients) gives
// the losses, grad norms, rescale counts and every parameter bit, with step 1's measurement the
// only recompute.
// Seen red: with TrainModule's exact micro-batch forced to micro_instances (per-micro-batch
// conversion), the partitions with several instances per micro-batch differ; with
// DataParallel::replay restoring the gradient but not replaying its units, W >= 2 differs.
// Running two ranks' models at the same time in one process gave other bits (kernels are not
// meant to run two models side by side in one process): the ranks take turns (Hub::turn).
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "distributed/communicator.h"
#include "distributed/data_parallel.h"
#include "model/olmo3.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/train_module.h"
#include "lib/thread_comm.h"

using namespace olmo;
using olmo::test_comm::Hub;
using olmo::test_comm::ThreadComm;
using dist::Op;
using dist::Type;

namespace {

std::string src(const std::string& rel) { return std::string(OLMO_SOURCE_DIR) + "/" + rel; }

struct Outcome {
  std::vector<double> loss, norm;
  std::vector<int64_t> rescales, recomputes;  // per step
  std::vector<float> params;
  size_t kept_bytes = 0;
};

// What a run varies beyond the partition.
struct RunOptions {
  bool overlap = false;
  size_t keep_limit = ~size_t(0);     // DataParallelOptions::keep_limit_bytes
  std::vector<int64_t> force_rescale;  // steps before which the scales are set to exponent 1
};

// The tiny model over `batches` (per step: G instances x T tokens, targets alike), instance k
// of step s held by rank owner[s][k], rank r with micro-batches of micro[r] instances.
Outcome run(const train::Config& cfg, const std::vector<std::vector<int32_t>>& tok,
            const std::vector<std::vector<int32_t>>& tgt, int64_t G, int64_t T, int W,
            const std::vector<std::vector<int>>& owner, const std::vector<int64_t>& micro,
            bool local, int zero_stage, const RunOptions& setup = {}) {
  Hub hub(W);
  std::vector<Outcome> out(static_cast<size_t>(W), Outcome());
  std::vector<std::string> errors(static_cast<size_t>(W), std::string());
  const model::ModelConfig mc = train::model_config(cfg);
  auto rank_main = [&](int r) {
    std::lock_guard<std::mutex> my_turn(hub.turn);
    try {
      omp_set_num_threads(1);
      ThreadComm comm(hub, r);
      model::Olmo3 model(mc, zero_stage != 3);
      train::TrainModuleOptions o;
      o.micro_instances = micro[size_t(r)];
      o.t_max = 10;
      o.dp.reduce = dist::ReduceMode::exact;
      o.dp.exact_local = local;
      o.dp.bucket_elems = 4096;
      o.dp.zero_stage = zero_stage;
      o.dp.overlap = setup.overlap;
      o.dp.keep_limit_bytes = setup.keep_limit;
      train::TrainModule tm(model, comm, cfg, o);
      if (zero_stage == 3) {
        tm.shard_parameters();
        model.init_weights_range(7, tm.param_shard(), tm.reducer().shard_begin(),
                                 tm.reducer().shard_begin() + tm.reducer().shard_len());
      } else {
        model.init_weights(7);
      }
      Outcome& mine = out[size_t(r)];
      for (size_t s = 0; s < tok.size(); ++s) {
        const int64_t step = int64_t(s) + 1;
        const auto& f = setup.force_rescale;
        if (std::find(f.begin(), f.end(), step) != f.end()) {
          dist::DataParallel& dp = tm.data_parallel();
          const size_t n = dp.state_json()["scale_exponents"].size();
          dp.load_state_json(nlohmann::json{{"scale_exponents", std::vector<int64_t>(n, 1)}},
                             "test");
        }
        std::vector<int32_t> mt, mg;
        for (int64_t k = 0; k < G; ++k)
          if (owner[s][size_t(k)] == r) {
            mt.insert(mt.end(), tok[s].begin() + k * T, tok[s].begin() + (k + 1) * T);
            mg.insert(mg.end(), tgt[s].begin() + k * T, tgt[s].begin() + (k + 1) * T);
          }
        train::StepResult res;
        tm.train_batch(mt.data(), mg.data(), nullptr, int64_t(mt.size()) / T, T, step, res, {});
        mine.loss.push_back(res.loss);
        mine.norm.push_back(res.grad_norm);
        mine.rescales.push_back(res.reduce_redos);
        mine.recomputes.push_back(res.reduce_recomputes);
      }
      mine.kept_bytes = tm.data_parallel().kept_bytes();
      if (zero_stage == 3) {
        const float* sh = tm.param_shard();
        out[size_t(r)].params.assign(sh, sh + tm.reducer().shard_len());
      } else {
        out[size_t(r)].params.assign(model.params(), model.params() + model.num_params());
      }
    } catch (const std::exception& e) {
      errors[size_t(r)] = e.what();
    }
  };
  std::vector<std::thread> th;
  for (int r = 0; r < W; ++r) th.emplace_back(rank_main, r);
  for (auto& t : th) t.join();
  for (int r = 0; r < W; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
  for (int r = 1; r < W; ++r) EXPECT_EQ(out[size_t(r)].recomputes, out[0].recomputes) << r;
  Outcome o = out[0];
  if (zero_stage == 3) {  // the shards, in rank order, are the flat vector
    o.params.clear();
    for (int r = 0; r < W; ++r)
      o.params.insert(o.params.end(), out[size_t(r)].params.begin(), out[size_t(r)].params.end());
  }
  return o;
}

// The tiny config (fp32) and random tokens and targets of `steps` global batches of G x T.
struct Batches {
  train::Config cfg;
  int64_t T = 0;
  std::vector<std::vector<int32_t>> tok, tgt;
};
Batches random_batches(int64_t steps, int64_t G, uint32_t seed) {
  Batches b;
  b.cfg = train::load_config(src("tests/configs/tiny.yaml"), {"model.precision=fp32"});
  const model::ModelConfig mc = train::model_config(b.cfg);
  b.T = b.cfg.data.seq_len;
  std::mt19937 rng(seed);
  b.tok.assign(size_t(steps), {});
  b.tgt.assign(size_t(steps), {});
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t i = 0; i < G * b.T; ++i) {
      b.tok[size_t(s)].push_back(int32_t(rng() % uint32_t(mc.vocab_size)));
      b.tgt[size_t(s)].push_back(int32_t(rng() % uint32_t(mc.vocab_size)));
    }
  return b;
}

TEST(AnyPartition, RandomPartitionsAndMicroBatchesGiveTheOneRankBits) {
  const int64_t G = 8, steps = 2;
  std::mt19937 rng(47);
  const Batches data = random_batches(steps, G, rng());
  const train::Config& cfg = data.cfg;
  const int64_t T = data.T;
  const auto& tok = data.tok;
  const auto& tgt = data.tgt;
  const std::vector<std::vector<int>> one(steps, std::vector<int>(G, 0));
  const Outcome ref = run(cfg, tok, tgt, G, T, 1, one, {int64_t(G)}, true, 2);
  ASSERT_EQ(ref.loss.size(), size_t(steps));
  {  // the loader's dealing (round-robin) on 2 ranks, and 1 rank with 1-instance micro-batches
    std::vector<std::vector<int>> rr(steps, std::vector<int>(G));
    for (auto& ow : rr)
      for (int64_t k = 0; k < G; ++k) ow[size_t(k)] = int(k % 2);
    const Outcome o = run(cfg, tok, tgt, G, T, 2, rr, {1, 3}, true, 2);
    EXPECT_EQ(o.loss, ref.loss) << "round-robin on 2 ranks";
    EXPECT_EQ(o.norm, ref.norm) << "round-robin on 2 ranks";
    const Outcome o1 = run(cfg, tok, tgt, G, T, 1, one, {1}, true, 2);
    EXPECT_EQ(o1.norm, ref.norm) << "1 rank, 1-instance micro-batches";
  }
  for (int W = 1; W <= 8; ++W) {
    for (int trial = 0; trial < 2; ++trial) {
      // A random partition: every rank at least one instance, the rest anywhere.
      std::vector<std::vector<int>> owner(steps, std::vector<int>(G));
      for (auto& ow : owner) {
        std::vector<int> ranks;
        for (int r = 0; r < W; ++r) ranks.push_back(r);
        while (int64_t(ranks.size()) < G) ranks.push_back(int(rng() % uint32_t(W)));
        std::shuffle(ranks.begin(), ranks.end(), rng);
        ow = ranks;
      }
      std::vector<int64_t> micro;
      for (int r = 0; r < W; ++r) micro.push_back(1 + int64_t(rng() % 4));
      const bool local = rng() % 2 == 0;
      const int zs = rng() % 3 == 0 ? 3 : 2;
      const Outcome o = run(cfg, tok, tgt, G, T, W, owner, micro, local, zs);
      const std::string what = "W " + std::to_string(W) + " trial " + std::to_string(trial) +
                               (local ? " local" : " sharded") + " ZeRO-" + std::to_string(zs);
      EXPECT_EQ(o.loss, ref.loss) << what;
      EXPECT_EQ(o.norm, ref.norm) << what;
      ASSERT_EQ(o.params.size(), ref.params.size()) << what;
      EXPECT_EQ(0, std::memcmp(o.params.data(), ref.params.data(), o.params.size() * 4)) << what;
    }
  }
}

TEST(AnyPartition, RescalesReconvertWithTheRecomputeBits) {
  const int64_t G = 6, steps = 6;
  const Batches data = random_batches(steps, G, 475);
  const train::Config& cfg = data.cfg;
  const int64_t T = data.T;
  const auto& tok = data.tok;
  const auto& tgt = data.tgt;
  RunOptions setup;
  setup.overlap = true;
  setup.force_rescale = {3, 4, 5};
  RunOptions never_keep = setup;
  never_keep.keep_limit = 0;
  const std::vector<std::vector<int>> one(steps, std::vector<int>(G, 0));
  const Outcome ref = run(cfg, tok, tgt, G, T, 1, one, {1}, true, 2, never_keep);
  ASSERT_EQ(ref.loss.size(), size_t(steps));
  EXPECT_EQ(ref.kept_bytes, 0u) << "keep_limit_bytes 0 keeps nothing";
  const std::vector<int64_t> forced = {1, 0, 1, 1, 1, 0};  // step 1: the scales' measurement
  EXPECT_EQ(ref.rescales, forced);
  EXPECT_EQ(ref.recomputes, forced);
  for (int W = 1; W <= 4; ++W)
    for (bool local : {true, false}) {
      std::vector<std::vector<int>> rr(steps, std::vector<int>(G));
      for (auto& ow : rr)
        for (int64_t k = 0; k < G; ++k) ow[size_t(k)] = int(k % W);
      const std::string what =
          "W " + std::to_string(W) + (local ? " local" : " sharded") + " accumulator";
      const Outcome o = run(cfg, tok, tgt, G, T, W, rr, std::vector<int64_t>(size_t(W), 1),
                            local, 2, setup);
      EXPECT_EQ(o.loss, ref.loss) << what;
      EXPECT_EQ(o.norm, ref.norm) << what;
      EXPECT_EQ(o.rescales, forced) << what;
      const std::vector<int64_t> once = {1, 0, 0, 0, 0, 0};
      EXPECT_EQ(o.recomputes, once) << what << ": only step 1's measurement recomputes";
      EXPECT_GT(o.kept_bytes, 0u) << what;
      ASSERT_EQ(o.params.size(), ref.params.size()) << what;
      EXPECT_EQ(0, std::memcmp(o.params.data(), ref.params.data(), o.params.size() * 4)) << what;
    }
}

}  // namespace
