// Console output of a run (see progress.h): core's ProgressBar labelled "step", without its own
// rate and ETA (the trainer's summary carries tokens/s and an ETA that knows the resume point).
#include "train/progress.h"

namespace olmo::train {

namespace {

ProgressOptions options(ProgressMode mode, int64_t every) {
  ProgressOptions o;
  o.mode = mode;
  o.stats = false;
  o.line_every = every < 1 ? 1 : every;
  return o;
}

}  // namespace

Progress::Progress(int64_t total_steps, ProgressMode mode, int64_t every)
    : bar_(total_steps, "step", options(mode, every)) {}

}  // namespace olmo::train
