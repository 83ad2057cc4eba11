// ZeRO-3 parameter sharding: gather per unit, reduce per unit (see zero3_params.h).
#include "distributed/zero3_params.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace olmo::dist {

Zero3Params::Zero3Params(GradReducer& reducer, const model::Olmo3& m)
    : reducer_(reducer), units_(m.units()) {
  OLMO_CHECK(reducer_.mode() == ReduceMode::exact,
             "dist.zero_stage 3 needs dist.reduce exact");
  size_t largest = 0;
  for (const model::UnitRange& u : units_) largest = std::max(largest, u.size());
  shard_.assign(reducer_.shard_len(), 0.0f);
  work_ = model::FloatBuffer(largest);
  gwork_ = model::FloatBuffer(largest);
}

void Zero3Params::attach(model::Olmo3& m) { m.set_param_provider(this); }

size_t Zero3Params::buffer_bytes() const {
  return (shard_.size() + work_.size() + gwork_.size()) * sizeof(float);
}

void Zero3Params::check_open(const char* what) const {
  OLMO_CHECK(open_, "dist.zero_stage 3: ", what, " outside a training step (the parameters are "
             "sharded; evaluation and inference need the full parameters on one process)");
}

const float* Zero3Params::acquire(int64_t u) {
  check_open("a forward pass");
  OLMO_CHECK(held_ < 0, "Zero3Params: unit ", u, " acquired while unit ", held_, " is held");
  const model::UnitRange& r = units_[size_t(u)];
  reducer_.gather_range(shard_.data(), r.begin, r.end, work_.data());
  held_ = u;
  return work_.data();
}

void Zero3Params::release(int64_t u) {
  OLMO_CHECK(held_ == u, "Zero3Params: release of unit ", u, " but unit ", held_, " is held");
  held_ = -1;
}

float* Zero3Params::grad(int64_t u) {
  check_open("a backward pass");
  OLMO_CHECK(grad_open_ < 0, "Zero3Params: gradient of unit ", u, " opened while unit ",
             grad_open_, "'s is open");
  std::memset(gwork_.data(), 0, units_[size_t(u)].size() * sizeof(float));
  grad_open_ = u;
  return gwork_.data();
}

void Zero3Params::grad_done(int64_t u) {
  OLMO_CHECK(grad_open_ == u, "Zero3Params: grad_done of unit ", u, " but unit ", grad_open_,
             "'s is open");
  const model::UnitRange& r = units_[size_t(u)];
  reducer_.add_range(gwork_.data(), r.begin, r.end);
  grad_open_ = -1;
}

}  // namespace olmo::dist
