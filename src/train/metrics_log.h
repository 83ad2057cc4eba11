// Run metrics as JSON Lines: RUN_DIR/metrics.jsonl, one object per record, flushed per line so a
// crash loses at most the line being written. Records carry "kind" ("train" | "eval" | "info" |
// "validation" | "benchmark" | "exposure" | "downstream" | "alarm" | "profile"), "step", and
// "time" (wall clock, Unix seconds rounded to the millisecond; added here to every record). On
// resume from step N, truncate_after(N) drops records of steps > N (they belong to the steps
// that will be re-run), so the file never holds two different values for a step.
//
// The same records go to TensorBoard (RUN_DIR/tb/, see tfevents.h) as scalars, tagged by
// tensorboard_scalars() below, with the record's step and time; truncate_after applies to them
// too, so TensorBoard shows each step once with the value metrics.jsonl ends with. A run dir
// with no event file left (from a build before them, or tb/ deleted) gets the kept records
// written to the new event file first.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/tfevents.h"

namespace olmo::train {

// The TensorBoard scalars of one metrics record (empty for kinds "info" and "profile", and for
// a record without an integer "step"). Tags follow the record's field names:
//   alarm                          "alarm/<source>/<cause>" = 1
//   eval / benchmark / downstream  "<kind>/<set | suite | task>/<field>"
//   any other kind                 "<kind>/<field>"
// for every number or boolean (0/1) field, nested objects flattened as "<field>/<key>/..."; a
// field whose name already holds a '/' (downstream metrics under OLMo-core's names, e.g.
// "eval/downstream/arc_easy (accuracy)") is its own tag. Not shown: "step", "time",
// "batch_hash", strings, arrays and nulls (a non-finite value is null in the JSON).
std::vector<TbScalar> tensorboard_scalars(const nlohmann::json& record);

class MetricsLog {
 public:
  // Opens for append (creates). An empty path is a disabled log (writes nothing): the log of
  // data-parallel ranks > 0, whose records rank 0 writes.
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Appends `record` with "time" added (unless it has one), and its scalars to TensorBoard.
  void write(const nlohmann::json& record);
  // The clock "time" is read from: Unix seconds, rounded to the millisecond (default: the
  // system clock). The trainer sets its run clock (train/run_clock.h), so that every record of
  // a run, those with their own "time" included, is on one clock.
  void set_clock(std::function<double()> unix_now) { clock_ = std::move(unix_now); }
  // Rewrites the file atomically keeping lines whose "step" <= step (malformed lines dropped);
  // the same for the TensorBoard event files.
  void truncate_after(int64_t step);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  std::unique_ptr<TfEventsWriter> tb_;
  std::function<double()> clock_;
};

}  // namespace olmo::train
