// Stop at a checkpoint boundary on the launcher's request (see resize_stop.h).
#include "train/resize_stop.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/file_io.h"
#include "ckpt/checkpoint.h"
#include "core/runtime.h"
#include "distributed/communicator.h"
#include "train/metrics_log.h"
#include "train/progress.h"

namespace fs = std::filesystem;

namespace olmo::train {

ResizeStop::ResizeStop(int64_t s)
    : std::runtime_error(cat("stopped after the checkpoint of step ", s, " for a resize")), step(s) {}

void ResizeStopCallback::on_start(Trainer& t) {
  t.metrics().write({{"kind", "info"}, {"event", "launch_job"}, {"job", job_}, {"step", t.step()}});
}

void ResizeStopCallback::on_step(Trainer& t, const StepResult& r) {
  const int64_t every = t.config().trainer.save_interval;
  if (every <= 0 || r.step % every != 0 || r.step >= t.total_steps()) return;
  bool stop = false;
  if (t.rank() == 0) {
    std::error_code ec;
    stop = fs::exists(path_, ec);
  }
  if (!t.comm().any(stop)) return;
  // The stop happens at this step's checkpoint: an asynchronous one is committed first.
  t.finish_checkpoint();
  stop = false;
  if (t.rank() == 0) {
    std::error_code ec;
    stop = fs::exists(path_, ec) &&
           ckpt::is_committed((fs::path(t.run_dir()) / cat("step", r.step)).string());
  }
  if (!t.comm().any(stop)) return;
  if (t.rank() == 0) {
    t.metrics().write({{"kind", "info"}, {"event", "resize_stop"}, {"step", r.step}});
    write_file_atomic(path_ + ".done", cat(r.step, "\n"));
    std::error_code ec;
    fs::remove(path_, ec);
    t.progress().message(cat("stopping after the checkpoint of step ", r.step,
                             ": the launcher resizes the job"));
  }
  t.comm().barrier();
  throw ResizeStop(r.step);
}

void add_resize_stop(Trainer& t) {
  const std::string p = runtime().env("OLMO_RESIZE_REQUEST").value_or("");
  const std::optional<std::string> job = runtime().env("OLMO_LAUNCH_JOB");
  if (!p.empty())
    t.add_callback(std::make_unique<ResizeStopCallback>(p, job ? std::atoll(job->c_str()) : -1));
}

}  // namespace olmo::train
