// TensorBoard event files written without TensorFlow or protobuf: RUN_DIR/tb/
// events.out.tfevents.<unix seconds>.<host>.<pid>, one file per job, read live by TensorBoard.
//
// File format (TensorFlow's TFRecord): each record is
//   uint64 length (LE) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// and each record's data is one serialized tensorboard.Event protobuf, hand-encoded here:
//   Event { double wall_time = 1; int64 step = 2; oneof { string file_version = 3;
//           Summary summary = 5; SessionLog session_log = 7; } }
//   Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
//   SessionLog { enum status = 1 (START = 1); }
// A file starts with a file_version "brain.Event:2" event.
//
// Resume contract (so that each step shows exactly once, with the value of metrics.jsonl's
// final view): truncate_after(S) rewrites every existing event file of the directory keeping
// only events of steps <= S (and drops a record torn by a crash), and the new file then starts
// with a SessionLog START event at step S+1, which makes a TensorBoard that already loaded the
// dropped events purge every event of step >= S+1 (its restart handling). Files sort by name in
// creation order (the timestamp of a new file is made larger than every existing one's), the
// order in which TensorBoard reads them.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace olmo::train {

struct TbScalar {
  std::string tag;
  float value;
};

// Serialized Event messages (the record data).
std::string tb_file_version_event(double wall_time);
std::string tb_scalars_event(double wall_time, int64_t step, const std::vector<TbScalar>& values);
std::string tb_session_start_event(double wall_time, int64_t step);

// One TFRecord: the framing around `data`.
std::string tfrecord_frame(std::string_view data);
// The records of a TFRecord byte string, in order, up to the first incomplete or corrupt one
// (a tail torn by a crash); *valid_bytes (if given) is the length of that intact prefix.
std::vector<std::string> tfrecord_split(std::string_view bytes, size_t* valid_bytes = nullptr);
// The fields of an Event the resume filter needs: step (0 when absent) and whether it is the
// file_version header.
struct TbEventHead {
  int64_t step = 0;
  bool file_version = false;
};
TbEventHead tb_event_head(std::string_view event);

class TfEventsWriter {
 public:
  // Events go to files in `dir` (created on the first write); an empty dir disables the writer.
  explicit TfEventsWriter(std::string dir);
  ~TfEventsWriter();
  TfEventsWriter(const TfEventsWriter&) = delete;
  TfEventsWriter& operator=(const TfEventsWriter&) = delete;

  // One event holding all `values` (nothing when empty), flushed at once.
  void write_scalars(double wall_time, int64_t step, const std::vector<TbScalar>& values);
  // See the resume contract above. Called before this writer's first event. Returns whether
  // any event of an earlier job remains (false for a run dir from before event files were
  // written, or after a wipe of tb/: the caller may backfill from metrics.jsonl).
  bool truncate_after(int64_t step);
  const std::string& path() const { return path_; }  // this job's file ("" until opened)

 private:
  void open();
  void append(const std::string& event);

  std::string dir_, path_;
  FILE* f_ = nullptr;
  int64_t restart_step_ = -1;  // >= 0: the START event the new file begins with
};

}  // namespace olmo::train
