// The OLMO_TEST_NAN / OLMO_TEST_KILL switches (see test_faults.h).
#include "train/test_faults.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "distributed/zero.h"
#include "kernels/loss.h"
#include "model/olmo3.h"
#include "train/trainer.h"

namespace olmo::train {

std::unique_ptr<TestFaults> TestFaults::from_env(const Config& cfg, int rank) {
  const char* kill = std::getenv("OLMO_TEST_KILL");
  const char* spec = std::getenv("OLMO_TEST_NAN");
  const bool nan = spec && *spec;
  if (!kill && !nan) return nullptr;
  auto f = std::make_unique<TestFaults>();
  if (kill) f->kill_spec_ = kill;
  if (!nan) return f;
  OLMO_CHECK(cfg.allow_fault_injection, "OLMO_TEST_NAN = '", spec,
             "' is refused: it puts NaN/Inf into training on purpose (a test switch) and needs "
             "allow_fault_injection: true in the config");
  char kind[16] = {0};
  long long step = 0, count = 1;
  int r = 0;
  const int n = std::sscanf(spec, "%15[^:]:%lld:%lld:%d", kind, &step, &count, &r);
  const std::string k = kind;
  OLMO_CHECK(n >= 2 && step >= 1 && count >= 1 && r >= 0 &&
                 (k == "loss" || k == "grad" || k == "loss_inf" || k == "grad_inf" ||
                  k == "zloss" || k == "zloss_inf" || k == "weight"),
             "OLMO_TEST_NAN = '", spec, "': expected KIND:STEP[:COUNT[:RANK]] with KIND loss, "
             "grad, loss_inf, grad_inf, zloss, zloss_inf or weight, STEP and COUNT >= 1");
  f->nan_kind_ = k;
  f->nan_step_ = step;
  f->nan_count_ = count;
  f->nan_rank_ = r;
  if (rank == 0)
    std::fprintf(stderr, "OLMO_TEST_NAN: %s on rank %d at steps %lld..%lld\n", kind, r, step,
                 step + count - 1);
  return f;
}

void TestFaults::maybe_kill(Trainer& t, const char* where) const {
  if (kill_spec_.empty()) return;
  char w[16] = {0};
  int r = -1;
  long long s = -1;
  if (std::sscanf(kill_spec_.c_str(), "%15[^:]:%d:%lld", w, &r, &s) == 3 &&
      std::string(w) == where && r == t.rank() && s == t.step()) {
    std::fprintf(stderr, "OLMO_TEST_KILL: rank %d kills itself at %s of step %lld\n", r, w, s);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

void TestFaults::post_backward(Trainer& t, int64_t micro, kernels::LossSums& s) {
  if (micro != 0) return;
  maybe_kill(t, "step");
  if (!nan_active(t.step(), t.rank())) return;
  const float bad = nan_kind_.find("inf") != std::string::npos
                        ? std::numeric_limits<float>::infinity()
                        : std::numeric_limits<float>::quiet_NaN();
  if (nan_kind_.rfind("loss", 0) == 0) s.ce_sum = double(bad);
  if (nan_kind_.rfind("zloss", 0) == 0) s.z_sum = double(bad);
  if (nan_kind_.rfind("grad", 0) == 0) t.model().grads()[t.model().num_params() / 2 + 17] = bad;
}

void TestFaults::post_step(Trainer& t, const StepResult& r) {
  if (nan_kind_ == "weight" && nan_active(r.step, t.rank()))
    t.model().params()[t.reducer().shard_begin() + 3] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace olmo::train
