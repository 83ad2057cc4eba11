// Deliberate loader faults for audit tests (see fault_inject.h).
#include "data/fault_inject.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "data/packed_dataset.h"

namespace olmo::data {

FaultInjector::FaultInjector(const InstanceSource& ds, FaultOptions opt) : ds_(ds), opt_(opt) {
  OLMO_CHECK(opt_.kind == "none" || opt_.kind == "pool" || opt_.kind == "stride" ||
                 opt_.kind == "repeat_batch",
             "fault injection: unknown fault '", opt_.kind, "'");
  if (opt_.stride <= 0) opt_.stride = std::max<int64_t>(1, ds_.seq_len() / 2);
  OLMO_CHECK(opt_.pool_size >= 1 && opt_.every >= 1, "fault injection: pool_size and every must be >= 1");
}

bool FaultInjector::apply(int64_t step, DataLoader::Batch& b) {
  const int64_t T = b.T;
  bool faulty = opt_.kind != "none" && step >= opt_.start_step;
  bool did = false;
  if (faulty && opt_.kind == "pool") {
    if (pool_.empty())
      for (int64_t k = 0; k < std::min<int64_t>(opt_.pool_size, b.B); ++k)
        pool_.push_back(b.instance_indices[size_t(k)]);
    for (int64_t k = 0; k < b.B; ++k) {
      int64_t idx = pool_[size_t((step + k) % int64_t(pool_.size()))];
      b.instance_indices[size_t(k)] = idx;
      ds_.read(idx, b.tokens.data() + k * T);
    }
    did = true;
  } else if (faulty && opt_.kind == "stride") {
    for (int64_t k = 0; k < b.B; ++k)
      stride_row(b.instance_indices[size_t(k)], b.tokens.data() + k * T);
    did = true;
  } else if (faulty && opt_.kind == "repeat_batch" &&
             (step - opt_.start_step) % opt_.every == 0 && prev_step_ == step - 1 &&
             prev_.B == b.B) {
    b.tokens = prev_.tokens;
    b.instance_indices = prev_.instance_indices;
    did = true;
  }
  if (opt_.kind == "repeat_batch") {
    prev_ = b;
    prev_step_ = step;
  }
  return did;
}

void FaultInjector::stride_row(int64_t index, int32_t* out) const {
  const int64_t T = ds_.seq_len();
  if (const auto* fsl = dynamic_cast<const FslDataset*>(&ds_)) {
    auto [f, local] = fsl->locate(index);
    // Token offset local * stride of file f, as instance `local * stride / T` of that file
    // plus a shift: read the two instances it straddles.
    int64_t off = local * opt_.stride;
    int64_t first = fsl->offsets()[size_t(f)] + off / T, shift = off % T;
    const uint32_t* a = fsl->view(first);
    for (int64_t i = 0; i < T - shift; ++i) out[i] = int32_t(a[shift + i]);
    if (shift > 0) {
      const uint32_t* c = fsl->view(first + 1 < fsl->offsets()[size_t(f) + 1] ? first + 1 : first);
      for (int64_t i = T - shift; i < T; ++i) out[i] = int32_t(c[i - (T - shift)]);
    }
    return;
  }
  const auto* packed = dynamic_cast<const PackedFslDataset*>(&ds_);
  OLMO_CHECK(packed, "fault injection 'stride': unknown dataset type");
  ds_.read(index, out);  // the padding stays
  int64_t t = 0;
  for (const auto& d : packed->instance_documents(index)) {
    const int64_t len = d.end - d.start, n = packed->file_tokens(d.file);
    int64_t from = d.start >= opt_.stride ? d.start - opt_.stride : d.start + opt_.stride;
    if (from + len > n) from = d.start;  // no room to shift: this document stays right
    const uint32_t* src = packed->file_data(d.file) + from;
    for (int64_t i = 0; i < len; ++i) out[t + i] = int32_t(src[i]);
    t += len;
  }
}

}  // namespace olmo::data
