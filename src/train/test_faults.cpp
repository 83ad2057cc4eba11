// The OLMO_TEST_* switches of a run (see test_faults.h).
#include "train/test_faults.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "ckpt/checkpoint.h"
#include "core/error.h"
#include "core/runtime.h"
#include "distributed/zero.h"
#include "kernels/loss.h"
#include "model/olmo3.h"
#include "model/param_groups.h"
#include "train/async_checkpoint.h"
#include "train/preempt_stop.h"
#include "train/trainer.h"

namespace olmo::train {

std::unique_ptr<TestFaults> TestFaults::from_env(const Config& cfg, int rank) {
  // The variables' values (core/runtime.h), alive to the end of this function; null = unset.
  const std::optional<std::string> vars[] = {
      runtime().env("OLMO_TEST_KILL"), runtime().env("OLMO_TEST_HOLD"),
      runtime().env("OLMO_TEST_NAN"), runtime().env("OLMO_TEST_PARAM_SCALE"),
      runtime().env("OLMO_TEST_FREE_BYTES"), runtime().env("OLMO_TEST_GRAD_SCALE")};
  auto c_str = [](const std::optional<std::string>& v) { return v ? v->c_str() : nullptr; };
  const char* kill = c_str(vars[0]);
  const char* hold = c_str(vars[1]);
  const char* spec = c_str(vars[2]);
  const char* pscale = c_str(vars[3]);
  // OLMO_TEST_FREE_BYTES: the free-space figure the checkpoint's check sees (a process-wide hook
  // of src/ckpt, no callback).
  if (const char* fb = c_str(vars[4]); fb && *fb) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(fb, &end, 10);
    OLMO_CHECK(end && *end == 0 && fb[0] != '-', "OLMO_TEST_FREE_BYTES = '", fb,
               "': expected a byte count");
    ckpt::set_free_space_hook([n](const std::string&) { return uint64_t(n); });
  }
  const char* gscale = c_str(vars[5]);
  const bool nan = spec && *spec, ps = pscale && *pscale, gs = gscale && *gscale;
  if (!kill && !hold && !nan && !ps && !gs) return nullptr;
  auto f = std::make_unique<TestFaults>();
  if (ps) f->parse_param_scale(cfg, pscale, rank);
  if (gs) f->parse_grad_scale(cfg, gscale, rank);
  if (kill) f->kill_spec_ = kill;
  if (hold && *hold) {
    std::string rest = hold;
    for (size_t at = 0; at <= rest.size();) {
      const size_t end = std::min(rest.find(',', at), rest.size());
      const std::string one = rest.substr(at, end - at);
      at = end + 1;
      char w[16] = {0};
      int r = -1, n = 0;
      long long s = -1;
      Hold h;
      bool ok = std::sscanf(one.c_str(), "%15[^:]:%d:%lld%n", w, &r, &s, &n) == 3;
      if (ok && one[size_t(n)] == '+') h.or_later = true, ++n;
      ok = ok && one[size_t(n)] == ':' && size_t(n) + 1 < one.size();
      h.where = w;
      OLMO_CHECK(ok && r >= 0 && s >= 0 &&
                     (h.where == "start" || h.where == "step" || h.where == "ckpt" ||
                  h.where == "eval" || h.where == "write"),
                 "OLMO_TEST_HOLD = '", hold, "': expected WHERE:RANK:STEP[+]:FILE[,...] with "
                 "WHERE start, step, ckpt, eval or write (bad: '", one, "')");
      h.rank = r;
      h.step = s;
      h.file = one.substr(size_t(n) + 1);
      if (h.where == "write") {
        // The asynchronous writer's thread: its own copy of the point (it runs beside the loop).
        if (h.rank == rank)
          set_async_write_hook([h, rank](int64_t step) mutable { hold_at(h, "write", rank, step); });
      } else {
        f->holds_.push_back(h);
      }
    }
  }
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

void TestFaults::parse_param_scale(const Config& cfg, const char* spec, int rank) {
  OLMO_CHECK(cfg.allow_fault_injection, "OLMO_TEST_PARAM_SCALE = '", spec,
             "' is refused: it changes the optimizer's update on purpose (a test switch) and "
             "needs allow_fault_injection: true in the config");
  OLMO_CHECK(cfg.dist.zero_stage != 3, "OLMO_TEST_PARAM_SCALE needs the full weights on every "
             "rank: not under ZeRO-3");
  const std::string s = spec;
  const size_t colon = s.find(':');
  char* end = nullptr;
  const double x = colon == std::string::npos ? NAN : std::strtod(s.c_str() + colon + 1, &end);
  const std::string group = s.substr(0, colon);
  const auto& names = model::param_group_names();
  long long from = 1;
  int used = 0;
  const bool from_ok = end && (*end == '\0' || (std::sscanf(end, ":%lld%n", &from, &used) == 1 &&
                                                 end[used] == '\0' && from >= 1));
  // GROUP or GROUP.LAYER (one block tensor; a layer the model lacks is refused in pre_step).
  const size_t dot = group.find('.');
  const std::string base = group.substr(0, dot);
  const bool layer_ok = dot == std::string::npos ||
                        (dot + 1 < group.size() &&
                         group.find_first_not_of("0123456789", dot + 1) == std::string::npos);
  OLMO_CHECK(std::isfinite(x) && from_ok && layer_ok &&
                 std::find(names.begin(), names.end(), base) != names.end(),
             "OLMO_TEST_PARAM_SCALE = '", spec, "': expected GROUP[.LAYER]:X[:FROM] with GROUP one "
             "of the param_rms groups (embed, attn_q, ..., lm_head), X a number and FROM a step "
             ">= 1");
  scale_ = x;
  scale_from_ = from;
  scale_group_ = group;
  if (rank == 0)
    std::fprintf(stderr, "OLMO_TEST_PARAM_SCALE: the update of %s scaled by %g at every step "
                 "from step %lld\n", group.c_str(), x, from);
}

void TestFaults::parse_grad_scale(const Config& cfg, const char* spec, int rank) {
  OLMO_CHECK(cfg.allow_fault_injection, "OLMO_TEST_GRAD_SCALE = '", spec,
             "' is refused: it changes a gradient on purpose (a test switch) and needs "
             "allow_fault_injection: true in the config");
  long long step = 0, micro = -1;
  float x = NAN;
  int r = -1, n = 0;
  const bool ok = std::sscanf(spec, "%lld:%f:%d:%lld%n", &step, &x, &r, &micro, &n) == 4 &&
                  spec[n] == '\0';
  OLMO_CHECK(ok && step >= 1 && std::isfinite(x) && r >= 0 && micro >= 0,
             "OLMO_TEST_GRAD_SCALE = '", spec, "': expected STEP:X:RANK:MICRO with STEP >= 1, X a "
             "finite number, RANK and MICRO >= 0");
  gscale_step_ = step;
  gscale_ = x;
  gscale_rank_ = r;
  gscale_micro_ = micro;
  if (rank == 0)
    std::fprintf(stderr, "OLMO_TEST_GRAD_SCALE: the gradient of micro-batch %lld of rank %d "
                 "scaled by %g at step %lld\n", micro, r, double(x), step);
}

void TestFaults::at_point(Trainer& t, const char* where) {
  char w[16] = {0};
  int r = -1;
  long long s = -1;
  if (!kill_spec_.empty() && std::sscanf(kill_spec_.c_str(), "%15[^:]:%d:%lld", w, &r, &s) == 3 &&
      std::string(w) == where && r == t.rank() && s == t.step()) {
    std::fprintf(stderr, "OLMO_TEST_KILL: rank %d kills itself at %s of step %lld\n", r, w, s);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  for (Hold& h : holds_) hold_at(h, where, t.rank(), t.step());
}

void TestFaults::hold_at(Hold& h, const char* where, int rank, int64_t step) {
  if (h.done || h.where != where || h.rank != rank || step < h.step ||
      (!h.or_later && step != h.step))
    return;
  const int fd = ::open(h.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;  // passed once already (or FILE cannot be created: no hold)
  const std::string line = cat(::getpid(), " ", where, " ", step, "\n");
  const bool wrote = ::write(fd, line.data(), line.size()) == ssize_t(line.size());
  ::close(fd);
  std::fprintf(stderr, "OLMO_TEST_HOLD: rank %d holds at %s of step %lld (%s%s)\n", rank, where,
               (long long)step, h.file.c_str(), wrote ? "" : ", short write");
  std::fflush(stderr);
  h.done = true;
  // Until a signal ends the process or the test removes or empties FILE (emptied, it still
  // marks the point as passed for a relaunch).
  // A preemption signal that arrives meanwhile is appended to FILE ("signal N"): a test waits
  // for it before the release, so the stop step is the held one, whatever the delivery took.
  for (int seen = preempt_signal();;) {
    struct stat st;
    if (::stat(h.file.c_str(), &st) != 0 || st.st_size == 0) break;
    if (const int sig = preempt_signal(); sig != seen) {
      const std::string note = cat("signal ", sig, "\n");
      const int afd = ::open(h.file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (afd >= 0 && ::write(afd, note.data(), note.size()) == ssize_t(note.size())) seen = sig;
      if (afd >= 0) ::close(afd);
    }
    ::usleep(10000);
  }
  std::fprintf(stderr, "OLMO_TEST_HOLD: rank %d released at %s of step %lld\n", rank, where,
               (long long)step);
  std::fflush(stderr);
}

namespace {
// KIND's value: Inf for the *_inf kinds, else NaN.
float injected_value(const std::string& kind) {
  return kind.find("inf") != std::string::npos ? std::numeric_limits<float>::infinity()
                                               : std::numeric_limits<float>::quiet_NaN();
}
}  // namespace

void TestFaults::post_backward(Trainer& t, int64_t micro, kernels::LossSums& s) {
  if (micro != 0) return;
  at_point(t, "step");
  if (!nan_active(t.step(), t.rank())) return;
  const float bad = injected_value(nan_kind_);
  if (nan_kind_.rfind("loss", 0) == 0) s.ce_sum = double(bad);
  if (nan_kind_.rfind("zloss", 0) == 0) s.z_sum = double(bad);
}

void TestFaults::unit_grad_done(Trainer& t, int64_t micro, size_t a, size_t b) {
  if (gscale_step_ == t.step() && gscale_rank_ == t.rank() && gscale_micro_ == micro) {
    float* g = t.model().grads();
    for (size_t i = a; i < b; ++i) g[i] *= gscale_;
  }
  if (micro != 0 || nan_kind_.rfind("grad", 0) != 0 || !nan_active(t.step(), t.rank())) return;
  const size_t at = t.model().num_params() / 2 + 17;
  if (at < a || at >= b) return;
  t.model().grads()[at] = injected_value(nan_kind_);
}

void TestFaults::pre_step(Trainer& t, data::DataLoader::Batch&) {
  if (scale_group_.empty()) return;
  if (scale_ranges_.empty()) scale_ranges_ = model::param_group_ranges(t.model().layout(), scale_group_);
  OLMO_CHECK(!scale_ranges_.empty(), "OLMO_TEST_PARAM_SCALE: the model has no tensor ",
             scale_group_);
  const float* w = t.model().params();
  scale_before_.clear();
  for (auto [a, b] : scale_ranges_) scale_before_.insert(scale_before_.end(), w + a, w + b);
}

void TestFaults::post_step(Trainer& t, const StepResult& r) {
  if (!scale_ranges_.empty() && r.step >= scale_from_) {
    float* w = t.model().params();
    size_t k = 0;
    for (auto [a, b] : scale_ranges_)
      for (size_t i = a; i < b; ++i, ++k)
        w[i] = float(double(scale_before_[k]) + scale_ * (double(w[i]) - double(scale_before_[k])));
  }
  if (nan_kind_ == "weight" && nan_active(r.step, t.rank()))
    t.model().params()[t.reducer().shard_begin() + 3] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace olmo::train
