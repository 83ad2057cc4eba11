// StepProfiler: trainer.profile's per-step table (see step_profiler.h).
#include "train/step_profiler.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/profile.h"
#include "train/metrics_log.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace olmo::train {

void StepProfiler::pre_step(Trainer&, data::DataLoader::Batch&) { profile::enable(steps_ >= 0); }

void StepProfiler::post_step(Trainer&, const StepResult& r) {
  profile::enable(false);
  if (++steps_ > 0) seconds_ += r.seconds;
}

void StepProfiler::on_end(Trainer& t) {
  if (steps_ <= 0) return;
  const std::string table = profile::table(seconds_, steps_);
  t.progress().message(cat("step profile, rank ", t.rank(), ", mean of ", steps_,
                           " steps (first step excluded):\n", table));
  nlohmann::json rows = nlohmann::json::array();
  for (const profile::Row& row : profile::rows())
    rows.push_back({{"op", row.key}, {"class", row.klass}, {"seconds", row.seconds / steps_},
                    {"flops", row.flops / steps_}, {"calls", row.calls / steps_}});
  t.metrics().write({{"kind", "profile"}, {"steps", steps_},
                     {"step_seconds", seconds_ / steps_}, {"rows", rows}});
}

}  // namespace olmo::train
