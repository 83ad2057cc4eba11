// Cross-framework reference runs (issue 19): a run dir written by scripts/olmo_core_run.py, i.e.
// OLMo-core's own Trainer on the same config, data and initial weights, and the comparison of an
// olmo.cpp run against it, step by step (`olmo compare RUN REF`, validation.reference).
//
// A reference run dir holds reference.json (framework, versions), config.yaml (the olmo.cpp
// config it mirrors), metrics.jsonl ({"kind":"train"} per step with instances and
// tokens_digest; an {"kind":"info","event":"end"} record), validation.jsonl when validation ran,
// and noise_floor.json (scripts/noise_floor.py): per step the |difference| between the reference
// and its twins, the same OLMo-core run with one numerics-only change each (noise_twin: initial
// weights nudged up by one ulp; clip_twin: the clipping norm in float64), the floor being the
// larger of the two:
//   {"method": ..., "train": {quantity: {step: floor}}, "validation": {quantity: {step: floor}},
//    "set_by": {"train.<q>": {step: twin name}}, "twins": {name: {"method": ..., ...}}}
// (a file without "set_by" / "twins", from one twin, names it by its "twin" key).
// Quantities: train loss, z_loss, grad_norm (against the reference's grad_norm_f64, the float64
// norm of OLMo-core's gradient, when recorded: its logged norm is torch's fp32 one); validation heldout.<set>, gap.<set>, model_entropy,
// marginal_entropy_bits; param_rms weight.<group> / update.<group> (per parameter group the
// weight RMS and the update RMS of a step, monitor/param_rms.h; compared at every step both runs
// recorded, named "param_rms.weight.<group>": a recipe deviation on one group, e.g. weight
// decay on the embeddings, moves its group's RMS long before the loss).
//
// Checks (compare_with_reference):
//   exact   instances (the global instance indices of each step), tokens_digest (the tokens
//           OLMo-core served vs our dataset's tokens at our indices), lr (bit-equal doubles),
//           skipped, served_entropy_bits (|diff| <= 1e-9)
//   close   |ours - ref| <= multiple * envelope(step) + kRelSlack * |ref| (kUpdateRelSlack for
//           param_rms.update.*), envelope(step) =
//           the largest noise-floor difference of that quantity at any step <= step (the
//           spread only grows in a chaotic system; a lucky small value must not tighten it);
//           multiple = validation.reference_floor_multiple of the compared run's config
//           (default 20) unless the caller gives one (`olmo compare --floor-multiple X`).
// Errors (olmo::Error) name the dir and the missing piece: not a reference run, incomplete run
// (no end record, missing steps or files), a run without instance indices
// (trainer.log_batch_indices), a model/data config that differs (field by field).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/config.h"

namespace olmo::train {

// Relative slack on top (covers steps where the floor is 0 to float precision).
constexpr double kRelSlack = 1e-6;
// The relative slack of the update RMS (param_rms.update.<group>). In the first steps the twins
// have not diverged yet (1-ulp twin: <= 1.6e-5 relative at steps 1-5), while olmo.cpp's update
// of a small group (the 128 k_norm weights of tiny.yaml) differs from OLMo-core's by up to
// 1.7e-4 relative (a few elements whose tiny gradient rounds differently): the floor alone
// would flag it. 1e-3 stays 6x above that and 100x below a 1.1x lr multiplier.
constexpr double kUpdateRelSlack = 1e-3;

struct ReferenceRun {
  std::string dir;
  nlohmann::json info;                                 // reference.json
  std::map<int64_t, nlohmann::json> train;             // step -> train record
  std::map<int64_t, nlohmann::json> validation;        // step -> validation record
  std::map<int64_t, nlohmann::json> param_rms;         // step -> param_rms record
  // "train.loss" / "validation.heldout.x" / "param_rms.weight.embed"
  std::map<std::string, std::map<int64_t, double>> floor;
  std::map<std::string, std::map<int64_t, std::string>> floor_by;  // the twin that set floor[q][s]
  std::string floor_method;
  std::vector<std::pair<std::string, std::string>> twins;  // name, method
};

// The running max of a quantity's floor up to step, and the twin that set it (value NaN when
// the floor has no value at or before step).
struct FloorEnvelope {
  double value = 0;
  std::string set_by;
};

// True when dir holds reference.json (written by scripts/olmo_core_run.py).
bool is_reference_run(const std::string& dir);
// Reads and checks a complete reference run. Throws naming dir and the missing piece.
ReferenceRun load_reference_run(const std::string& dir);
// The bound for `quantity` ("train.loss", "validation.model_entropy", ...) at `step`:
// multiple x envelope(step) + kRelSlack x |ref_value|; NaN when the floor has no value at or
// before step.
double reference_bound(const ReferenceRun& ref, const std::string& quantity, int64_t step,
                       double ref_value, double multiple);
FloorEnvelope reference_envelope(const ReferenceRun& ref, const std::string& quantity,
                                 int64_t step);

struct Deviation {
  int64_t step = 0;
  std::string quantity;
  std::string ours, ref;  // printed values
  std::string bound;      // "exact" or the numeric bound (and the twin that set its floor)
};

struct QuantitySummary {
  int64_t checked = 0;
  double max_abs = 0;       // largest |ours - ref|
  int64_t max_abs_step = 0;
  double max_ratio = 0;     // largest |ours - ref| / max(envelope, 1 fp32 ulp of ref)
  int64_t max_ratio_step = 0;
  double max_floor = 0;     // largest envelope
  std::string floor_by;     // the twin that set the envelope at max_ratio_step
};

struct ReferenceComparison {
  std::vector<Deviation> failures;
  std::map<std::string, QuantitySummary> summary;
  int64_t steps = 0;       // train steps compared
  int64_t first_step = 0;  // the run's first step (later than 1 after a migration)
  double multiple = 0;     // the noise-floor multiple the bounds used
};

// Compares the olmo.cpp run in run_dir (its config.yaml, metrics.jsonl, validation.jsonl) with
// ref, from the run's first train step on (a run continued from an imported OLMo-core checkpoint
// is compared with the reference continuing itself). multiple: the noise-floor multiple of the
// bounds (> 0); nullopt = the run's validation.reference_floor_multiple. Throws on a config
// mismatch (model.* / data.*), a run without instance indices or a multiple <= 0.
ReferenceComparison compare_with_reference(const std::string& run_dir, const ReferenceRun& ref,
                                           std::optional<double> multiple = std::nullopt);

}  // namespace olmo::train
