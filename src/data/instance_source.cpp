// Training targets and document ids for a batch of instances (see instance_source.h).
#include "data/instance_source.h"

#include <algorithm>

#include "core/error.h"
#include "data/doc_lengths.h"
#include "data/fsl_dataset.h"
#include "data/packed_dataset.h"

namespace olmo::data {

void batch_targets(const InstanceSource& ds, const std::vector<int64_t>& indices,
                   const int32_t* tokens, int64_t B, int64_t T, int32_t* targets,
                   int32_t* doc_ids) {
  OLMO_CHECK(int64_t(indices.size()) == B, "batch_targets: ", indices.size(),
             " instance indices for a batch of ", B);
  OLMO_CHECK(T == ds.seq_len(), "batch_targets: sequence length ", T, " != dataset's ",
             ds.seq_len());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = ds.label_length(indices[size_t(b)]);
    const int32_t* x = tokens + b * T;
    int32_t* y = targets + b * T;
    for (int64_t t = 0; t < T; ++t) y[t] = t + 1 < n ? x[t + 1] : kIgnoreIndex;
    if (doc_ids) {
      std::vector<int32_t> ids = document_ids_from_lengths(ds.document_lengths(indices[size_t(b)]));
      OLMO_CHECK(int64_t(ids.size()) == T, "batch_targets: document lengths of instance ",
                 indices[size_t(b)], " sum to ", ids.size(), ", not ", T);
      std::copy(ids.begin(), ids.end(), doc_ids + b * T);
    }
  }
}

std::unique_ptr<InstanceSource> open_instance_source(const DatasetSpec& spec) {
  std::vector<std::string> paths =
      spec.permutation_seed != 0 ? permute_sources(spec.paths, spec.permutation_seed) : spec.paths;
  if (spec.kind == "fsl") {
    FslOptions o;
    if (spec.eos_id >= 0) o.eos_id = uint32_t(spec.eos_id);
    if (spec.pad_id >= 0) o.pad_id = uint32_t(spec.pad_id);
    o.validate = spec.validate;
    return std::make_unique<FslDataset>(std::move(paths), spec.seq_len, spec.vocab_size, o);
  }
  if (spec.kind == "packed_fsl") {
    PackedOptions o;
    o.eos_id = spec.eos_id;
    if (spec.pad_id >= 0) o.pad_id = uint32_t(spec.pad_id);
    o.source_group_size = spec.source_group_size;
    o.validate = spec.validate;
    return std::make_unique<PackedFslDataset>(std::move(paths), spec.seq_len, spec.vocab_size, o);
  }
  throw Error(cat("dataset kind '", spec.kind, "' must be fsl or packed_fsl"));
}

}  // namespace olmo::data
