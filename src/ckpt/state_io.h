// Checkpoint <-> stateful objects, through core/state_visitor.h (issue 36 item 1). Every writer
// and reader of training state (the trainer's save/resume, `olmo ckpt import-olmo-core` /
// `export-olmo-core`, the HF <-> OLMo-core converters, `olmo ckpt verify`) goes through these
// functions; the objects declare their fields once (visit_state) and never see the on-disk
// layout (checkpoint.h: files, index, sections).
//
// A checkpoint's state is a StateFn: a function that visits every stateful object of the run in
// a fixed order (the model's weights, the optimizer, the trainer position, the loader, ...).
//
// Fingerprints (ckpt/fingerprint.h): every tensor's layout-independent fingerprint, and one per
// fingerprint group: fingerprint_json of the object {field key: value projected on FieldFp::keys}
// over the group's fields (a whole section contributes its selected keys directly). The groups
// and their fields ("spec") are recorded in the checkpoint's "fingerprint" section beside the
// values, so `olmo ckpt verify` recomputes them from the stored sections alone; a checkpoint
// written before the spec was recorded is verified with the legacy spec (the same groups).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/state_visitor.h"

namespace olmo::ckpt {

class CheckpointReader;
class CheckpointWriter;

// One named global tensor of a flat fp32 buffer (the model's parameters in params_info order).
struct FlatTensor {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0, numel = 0;
};
using FlatLayout = std::vector<FlatTensor>;

// One f32 tensor piece of this rank's part of a checkpoint: `data` points at local_shape's
// elements, row-major, inside the object that owns them (no copy).
struct TensorPiece {
  std::string name;
  const float* data = nullptr;
  std::vector<int64_t> shape, offset, local_shape;
  size_t numel() const;
};

using StateFn = std::function<void(StateVisitor&)>;

// Everything a save takes at the step boundary (cheap: JSON and pointers).
struct StateSnapshot {
  nlohmann::json sections = nlohmann::json::object();  // section name -> value
  std::vector<TensorPiece> pieces;                     // this rank's pieces
  std::vector<std::string> tensor_names;               // every flat tensor visited (all ranks alike)
  nlohmann::json state_fp = nlohmann::json::object();  // group -> hex64 fingerprint
  nlohmann::json spec = nlohmann::json::object();      // group -> [[section, key, [keys]], ...]
};

// Save-mode visit: the sections (meaningful on rank 0, which writes them), this rank's pieces
// (rank 0 also the replicated buffers) and the group fingerprints.
StateSnapshot snapshot_state(const StateFn& visit, const FlatLayout& layout, int rank);

// Rank 0, after every rank's pieces are durable: writes the sections and the "fingerprint"
// section ({"version":1, "tensors": name -> hex64 (the global sums), "state": the snapshot's
// group fingerprints, "spec"}) and commits. Returns the checkpoint dir.
std::string commit_state(CheckpointWriter& w, const StateSnapshot& s,
                         const std::map<std::string, uint64_t>& tensor_fingerprints);

// Writes the pieces into w in order, then makes this rank's data durable: sync_data() on rank
// 0, close_shard() on the others (the synchronous save, and the asynchronous writer's thread).
void write_pieces(CheckpointWriter& w, const std::vector<TensorPiece>& pieces, bool rank0);

// One process: snapshot, write, commit run_dir/stepN (the importers). Returns the dir.
std::string save_state(const std::string& run_dir, int64_t step, const StateFn& visit,
                       const FlatLayout& layout);

// Load-mode visit over the checkpoint r (checks and restores; errors name r's dir, the section
// and the field or tensor).
void load_state(const CheckpointReader& r, const StateFn& visit, const FlatLayout& layout);

// Fingerprint-mode visit of the state in memory: this rank's partial tensor fingerprints (every
// visited tensor, 0 where this rank holds none of it; sum them over ranks mod 2^64) and the
// group fingerprints. Replicated buffers are fingerprinted over [fp_lo, fp_hi) by this rank.
// fused (optional): the tensor sums its pass already added (ckpt/fused_fingerprint.h; the same
// values, without a second read of the buffers it covers).
struct StateFingerprint {
  std::map<std::string, uint64_t> tensor_partials;
  nlohmann::json state = nlohmann::json::object();  // group -> hex64
};
class FusedTensorFingerprint;
StateFingerprint fingerprint_state(const StateFn& visit, const FlatLayout& layout, int rank,
                                   size_t fp_lo, size_t fp_hi,
                                   const FusedTensorFingerprint* fused = nullptr);

// The group fingerprints recomputed from r's stored sections (its recorded spec, or the legacy
// one of checkpoints that predate it).
nlohmann::json stored_state_fingerprints(const CheckpointReader& r);

// All sections of a save-mode visit as one JSON object (no tensors): the interchange form of
// the small state (`olmo ckpt export-olmo-core` hands it to OLMo-core's side).
nlohmann::json state_sections(const StateFn& visit);

}  // namespace olmo::ckpt
