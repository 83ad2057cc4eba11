// The test-only fault switches of a run, attached to the loop as a callback (the step itself
// holds no fault code). Both are read from the environment once, when the trainer is built.
//   OLMO_TEST_NAN=KIND:STEP[:COUNT[:RANK]]  (refused unless allow_fault_injection: true)
//     KIND loss | loss_inf: NaN / Inf into the first micro-batch's CE sum on RANK (default 0)
//          zloss | zloss_inf: into its z-loss sum only (the CE stays finite)
//          grad | grad_inf: into one gradient element as that backward finishes its unit
//          weight: a NaN written into one weight after the update of STEP (the checkpoint
//                  writer must refuse it)
//     for COUNT (default 1) steps from STEP (post_backward / post_step hooks).
//   OLMO_TEST_KILL=<where>:<rank>:<step>  that rank SIGKILLs itself at `where`: start (the
//     starting state is in memory, step = the step it starts from: on_resume), step (after its
//     first micro-batch of that step: post_backward), ckpt (its checkpoint shard data written,
//     not yet committed: on_checkpoint_written; with trainer.async_checkpoint: staged, its write
//     under way on the writer thread), eval (rank 0 only: the held-out losses of the evaluation
//     at that step computed, none logged: mid_eval) -- the crash tests of tests/distributed and
//     the kill campaign of tests/train.
//   OLMO_TEST_HOLD=<where>:<rank>:<step>[+]:<FILE>[,...]  that rank stops at the same named
//     points, once: it creates FILE (O_EXCL; "pid where step") and then blocks until a signal ends
//     it or FILE is removed or emptied (then it goes on, checking every 10 ms); a preemption signal
//     (train/preempt_stop.h) caught while it holds is appended to FILE as "signal N", and acted on
//     after the release. Where FILE exists already, emptied or not (a relaunch passing the point
//     again), it goes on. <step>+ holds at the first such point at or after that step. A test waits
//     for FILE and then kills what it wants (a whole host in
//     tests/distributed/launch_netns_test.py), lets a watchdog find the hung rank, or does what must
//     happen at that point (a signal, a remount) and removes or empties FILE: the fault lands
//     exactly there, never early or late as after a sleep. Several points: comma-separated (each
//     with its own FILE).
//     HOLD has one more point, write (trainer.async_checkpoint): the writer thread of the save
//     of that step, before it writes anything; the training loop goes on meanwhile (the
//     commit waits for the thread), so a test sees the write asynchronous.
//   OLMO_TEST_PARAM_SCALE=GROUP[.LAYER]:X[:FROM]  (refused unless allow_fault_injection: true; not under
//     ZeRO-3) every step's update (from step FROM, default 1) of one parameter group (model/param_groups.h names: embed, attn_q, ...,
//     lm_head; GROUP.LAYER: that layer's tensor alone, e.g. attn_q.1) is scaled by X after the optimizer: w = w_prev + X (w - w_prev). X = 0 freezes
//     the group, 2 steps it twice, 1.5 is a wrong lr multiplier on it (decoupled weight decay
//     included, as an lr multiplier does) -- the recipe deviations `olmo compare` must flag.
//   OLMO_TEST_GRAD_SCALE=STEP:X:RANK:MICRO  (refused unless allow_fault_injection) the gradient of
//     micro-batch MICRO (this rank's index) on RANK at STEP is multiplied by X, unit by unit as the
//     backward finishes it (unit_grad_done, before the data-parallel object converts it), in the
//     step's first pass only. X = 65536 makes that one rank's gradient outgrow the exact
//     reduction's scales (kHeadroom binades): a rank-local overflow that every rank must answer
//     with the same redo (tests/distributed/grad_overflow_test.py). Instance g of a step is
//     micro-batch g / W of rank g % W (one instance per micro-batch, data/loader.cpp), so
//     STEP:X:1:0 at 2-4 processes and STEP:X:0:1 at one scale the same instance.
//   OLMO_TEST_FREE_BYTES=N  the checkpoint's free-space check (ckpt::check_free_space) sees N
//     bytes free on the run dir's file system instead of statvfs's figure.
//   OLMO_TEST_PEAK=G  the trainer's first peak probe of each precision reports G GFLOP/s, as a
//     probe run on a busy machine would (read by Trainer::measure_peak, trainer_throughput.cpp).
// Cost: a few comparisons per step when set; nothing is installed when none is set
// (OLMO_TEST_PARAM_SCALE: a copy of the group's weights per step).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/callback.h"

namespace olmo::train {

struct Config;

class TestFaults : public Callback {
 public:
  // Parses the switches (an OLMO_TEST_NAN without allow_fault_injection is an error); null
  // when none is set.
  static std::unique_ptr<TestFaults> from_env(const Config& cfg, int rank);
  std::string name() const override { return "test_faults"; }
  void on_resume(Trainer& t) override { at_point(t, "start"); }
  void post_backward(Trainer& t, int64_t micro, kernels::LossSums& s) override;
  void unit_grad_done(Trainer& t, int64_t micro, size_t a, size_t b) override;
  void pre_step(Trainer& t, data::DataLoader::Batch&) override;
  void post_step(Trainer& t, const StepResult& r) override;
  void mid_eval(Trainer& t) override { at_point(t, "eval"); }
  void on_checkpoint_written(Trainer& t) override { at_point(t, "ckpt"); }

 private:
  void parse_param_scale(const Config& cfg, const char* spec, int rank);
  void parse_grad_scale(const Config& cfg, const char* spec, int rank);
  // OLMO_TEST_KILL / OLMO_TEST_HOLD at the named point `where` of the current step.
  void at_point(Trainer& t, const char* where);
  struct Hold {
    std::string where, file;
    int rank = 0;
    int64_t step = 0;
    bool or_later = false;  // <step>+
    bool done = false;      // held (and released) once in this process
  };
  // OLMO_TEST_HOLD's point h at `where` of `step` on `rank` (blocks there when it matches).
  static void hold_at(Hold& h, const char* where, int rank, int64_t step);
  bool nan_active(int64_t step, int rank) const {
    return !nan_kind_.empty() && rank == nan_rank_ && step >= nan_step_ &&
           step < nan_step_ + nan_count_;
  }
  std::string nan_kind_;   // "" = off
  int64_t nan_step_ = 0, nan_count_ = 1;
  int nan_rank_ = 0;
  std::string kill_spec_;  // "" = off
  std::vector<Hold> holds_;
  // OLMO_TEST_PARAM_SCALE: the group, its flat ranges, the factor, its weights
  // before the step.
  std::string scale_group_;  // "" = off
  std::vector<std::pair<size_t, size_t>> scale_ranges_;
  double scale_ = 1;
  int64_t scale_from_ = 1;  // the first step scaled
  std::vector<float> scale_before_;
  // OLMO_TEST_GRAD_SCALE: step (0 = off), factor, rank, micro-batch.
  int64_t gscale_step_ = 0;
  float gscale_ = 1;
  int gscale_rank_ = 0;
  int64_t gscale_micro_ = 0;
};

}  // namespace olmo::train
