// train::plan, the dry-run plan of a config (see run_plan.h).
#include "train/run_plan.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/format.h"
#include "data/fsl_dataset.h"
#include "distributed/zero.h"
#include "train/model_setup.h"
#include "train/training_data.h"

namespace fs = std::filesystem;

namespace olmo::train {

// The named mix's census or the mix file's presence; fills p.mix_note, returns whether every
// token file is there.
static bool plan_mix(const Config& c, RunPlan& p) {
  try {
    NamedMixStatus nm = named_mix_status(c);
    if (nm.name.empty()) return fs::exists(c.data.mix);
    const auto& n = nm.census;
    p.mix_note = cat("mix ", nm.name, " (OLMo-core 3.0.0 list, ", commas(n.files),
                     " token files) under data.root ", c.data.root, ": ", commas(n.present),
                     " of ", commas(n.files), " files present, ", commas(int64_t(n.tokens)),
                     " tokens",
                     n.present == n.files ? std::string()
                                          : cat("; first missing: ", n.first_missing));
    return n.present == n.files;
  } catch (const Error& e) {
    p.mix_note = cat("data.mix '", c.data.mix, "': ", e.what());
    return false;
  }
}

RunPlan plan(const Config& c) {
  validate(c, false);
  RunPlan p;
  p.model = model_config_for_this_cpu(c, resumed_precision(c));
  const model::ModelConfig& mc = p.model;
  p.params = model::count_params(mc);
  p.flops_per_token = model::flops_per_token(mc, c.data.seq_len);
  p.olmo_core_flops_per_token = model::olmo_core_flops_per_token(mc, c.data.seq_len);

  p.micro_instances = forward_instances(c);
  p.micro_batches = micro_batches(c);
  p.processes = std::max<int64_t>(1, c.data.processes);
  p.exact = c.dist.reduce == dist::ReduceMode::exact;
  p.local_accumulator = dist::local_accumulator(c.dist.exact_accumulator, p.processes,
                                                p.micro_batches);
  p.memory = model::memory_plan(mc, c.data.seq_len, p.micro_instances, p.processes, p.exact,
                                p.micro_batches, p.local_accumulator, int(c.dist.zero_stage),
                                c.dist.overlap);

  if (plan_mix(c, p)) {
    try {
      data::FslOptions opt;
      opt.validate = false;
      data::FslDataset ds(training_paths(c), c.data.seq_len, uint32_t(mc.vocab_size), opt);
      p.batches_per_epoch = ds.size() / batch_instances(c);
      p.data_note = cat(commas(ds.size()), " instances, ", commas(p.batches_per_epoch),
                        " batches per epoch",
                        c.data.dataset == DatasetKind::packed_fsl
                            ? " (as fixed-length windows; packing makes somewhat more instances)"
                            : "");
    } catch (const Error& e) {
      p.data_note = cat("cannot open: ", e.what());
    }
  } else if (p.mix_note.empty()) {
    p.data_note = cat("data.mix not found (", c.data.mix, "): needed to train");
  } else if (p.mix_note.rfind("mix ", 0) == 0) {
    p.data_note = "needed to train: every token file of the mix";
  }
  p.global_instances = batch_instances(c);
  p.schedule_steps = schedule_steps(c);
  p.run_steps = run_steps(c, p.batches_per_epoch);
  return p;
}

}  // namespace olmo::train
