// AdamW step over a flat fp32 buffer, the op order of OLMo-core's foreach SkipStepAdamW (see
// adamw.h). Plain C++ on purpose: the baseline x86-64 build has no FMA, so the compiler cannot
// contract a*b+c and every operation rounds once, as torch's fp32 kernels do.
#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

#include "core/det_math.h"
#include "core/error.h"

namespace olmo::optim {

namespace {

// Per-step scalars, computed exactly as torch computes them from Python floats and the fp32
// step tensor (python scalars are cast to fp32 when combined with an fp32 tensor).
struct StepScalars {
  float decay, w1, omw1, w2, omw2, sbc2, neg_step_size, eps;
};

StepScalars step_scalars(float step, double lr, double weight_decay, const AdamWConfig& cfg) {
  StepScalars s;
  const float f = 1.0f;  // step factor of an applied step
  s.decay = 1.0f - f * static_cast<float>(lr * weight_decay);
  s.w1 = f * static_cast<float>(1.0 - cfg.beta1);
  s.omw1 = 1.0f - s.w1;
  s.w2 = f * static_cast<float>(1.0 - cfg.beta2);
  s.omw2 = 1.0f - s.w2;
  const float sp1 = step + 1.0f;
  const float bc1 = 1.0f - det::powf(static_cast<float>(cfg.beta1), sp1);
  const float bc2 = 1.0f - det::powf(static_cast<float>(cfg.beta2), sp1);
  const float step_size = (1.0f / bc1) * static_cast<float>(lr);
  s.neg_step_size = -f * step_size;
  s.sbc2 = std::sqrt(bc2);
  s.eps = static_cast<float>(cfg.eps);
  return s;
}

inline void update_one(float& p, float g, float& m, float& v, const StepScalars& s) {
  float pi = p * s.decay;
  float mi = m * s.omw1;
  mi = mi + g * s.w1;
  float vi = v * s.omw2;
  vi = vi + (g * g) * s.w2;
  float denom = std::sqrt(vi) / s.sbc2;
  denom = denom + s.eps;
  float u = (mi / denom) * s.neg_step_size;
  p = pi + u;
  m = mi;
  v = vi;
}

}  // namespace

AdamW::AdamW(size_t numel, std::vector<ParamGroup> groups, AdamWConfig cfg)
    : AdamW(numel, std::move(groups), cfg, 0, numel) {}

AdamW::AdamW(size_t numel, std::vector<ParamGroup> groups, AdamWConfig cfg, size_t shard_begin,
             size_t shard_end)
    : numel_(numel), lo_(shard_begin), hi_(shard_end), groups_(std::move(groups)), cfg_(cfg) {
  OLMO_CHECK(lo_ <= hi_ && hi_ <= numel_, "optimizer shard [", lo_, ", ", hi_,
             ") outside the ", numel_, "-element buffer");
  OLMO_CHECK(cfg_.beta1 >= 0 && cfg_.beta1 <= 1, "optimizer.betas[0]: must be in [0, 1], got ", cfg_.beta1);
  OLMO_CHECK(cfg_.beta2 >= 0 && cfg_.beta2 <= 1, "optimizer.betas[1]: must be in [0, 1], got ", cfg_.beta2);
  OLMO_CHECK(cfg_.eps >= 0, "optimizer.eps: must be >= 0, got ", cfg_.eps);
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ParamGroup& g = groups_[i];
    OLMO_CHECK(g.offset <= numel_ && g.numel <= numel_ - g.offset, "optimizer group ", i, " '", g.name,
               "': range [", g.offset, ", ", g.offset + g.numel, ") outside the ", numel_, "-element buffer");
    for (auto& [o, n] : ranges)
      OLMO_CHECK(g.offset + g.numel <= o || o + n <= g.offset || g.numel == 0 || n == 0,
                 "optimizer group ", i, " '", g.name, "' overlaps an earlier group");
    ranges.emplace_back(g.offset, g.numel);
  }
  m_.assign(hi_ - lo_, 0.0f);
  v_.assign(hi_ - lo_, 0.0f);
  steps_.assign(groups_.size(), 0.0f);
}

void AdamW::step(float* params, const float* grads, double lr, bool skip,
                 const BlockFn* block_done) {
  if (skip) return;  // f = 0: no weight, moment or step-count change
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& g = groups_[gi];
    const StepScalars s = step_scalars(steps_[gi], lr, g.weight_decay, cfg_);
    // The group's part inside this shard, in shard coordinates.
    const size_t a = std::max(g.offset, lo_), b = std::min(g.offset + g.numel, hi_);
    const size_t off = a - lo_;
    float* p = params + off;
    const float* gr = grads + off;
    float* m = m_.data() + off;
    float* v = v_.data() + off;
    const int64_t n = b > a ? static_cast<int64_t>(b - a) : 0;
    const int64_t bs = int64_t(kBlock), nb = (n + bs - 1) / bs;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < nb; ++k) {
      const int64_t i0 = k * bs, i1 = std::min(n, i0 + bs);
      for (int64_t i = i0; i < i1; ++i) update_one(p[i], gr[i], m[i], v[i], s);
      if (block_done) (*block_done)(a + size_t(i0), a + size_t(i1));
    }
    steps_[gi] = steps_[gi] + 1.0f;
  }
}

void adamw_reference(float* p, const float* g, float* m, float* v, size_t n, float& step,
                     double lr, double weight_decay, const AdamWConfig& cfg, bool skip) {
  if (skip) return;
  // Written out term by term from OLMo-core's foreach_adamw_step.
  const float f = 1.0f;
  const float decay = 1.0f - f * static_cast<float>(lr * weight_decay);
  const float w1 = f * static_cast<float>(1.0 - cfg.beta1);
  const float w2 = f * static_cast<float>(1.0 - cfg.beta2);
  const float bc1 = 1.0f - det::powf(static_cast<float>(cfg.beta1), step + 1.0f);
  const float bc2 = 1.0f - det::powf(static_cast<float>(cfg.beta2), step + 1.0f);
  const float step_size = (1.0f / bc1) * static_cast<float>(lr);
  for (size_t i = 0; i < n; ++i) {
    p[i] = p[i] * decay;                                   // _foreach_mul_(params, 1 - f*lr*wd)
    m[i] = m[i] * (1.0f - w1);                             // _foreach_mul_(exp_avgs, 1 - w1)
    m[i] = m[i] + g[i] * w1;                               // _foreach_add_(exp_avgs, g*w1)
    const float g2 = g[i] * g[i];                          // grad_squares
    v[i] = v[i] * (1.0f - w2);                             // _foreach_mul_(exp_avg_sqs, 1 - w2)
    v[i] = v[i] + g2 * w2;                                 // _foreach_add_(exp_avg_sqs, g2*w2)
    float denom = std::sqrt(v[i]);                         // _foreach_sqrt
    denom = denom / std::sqrt(bc2);                        // _foreach_div_(denoms, sqrt(bc2))
    denom = denom + static_cast<float>(cfg.eps);           // _foreach_add_(denoms, eps)
    float u = m[i] / denom;                                // _foreach_div(exp_avgs, denoms)
    u = u * (-f * step_size);                              // _foreach_mul_(updates, -f*step_size)
    p[i] = p[i] + u;                                       // _foreach_add_(params, updates)
  }
  step = step + f;
}

// The group layout and settings as the checkpoint keeps them.
static nlohmann::json groups_json(const std::vector<ParamGroup>& groups) {
  nlohmann::json a = nlohmann::json::array();
  for (const ParamGroup& g : groups)
    a.push_back({{"name", g.name}, {"offset", g.offset}, {"numel", g.numel},
                 {"weight_decay", g.weight_decay}});
  return a;
}

// (save mode reads the fields only)
nlohmann::json AdamW::state_json() const {
  return state_to_json([this](StateVisitor& v) { const_cast<AdamW*>(this)->visit_state(v); })
      .at("optim");
}

void AdamW::load_state_json(const nlohmann::json& j) {
  state_from_json([this](StateVisitor& v) { visit_state(v); }, {{"optim", j}});
}

void AdamW::visit_state(StateVisitor& v) {
  StateVisitor::Section s(v, "optim");
  v.check("numel", numel_, {"optim"});
  v.check("groups", groups_json(groups_), {"optim", {"offset", "numel"}});  // the layout must agree
  v.field("steps", steps_, {"optim"});
  OLMO_CHECK(steps_.size() == groups_.size(), "optimizer state.steps: expected ", groups_.size(),
             " entries, got ", steps_.size());
  v.info("beta1", cfg_.beta1);  // (a phase start may change betas, eps, weight decay on purpose)
  v.info("beta2", cfg_.beta2);
  v.info("eps", cfg_.eps);
  v.flat("optim.exp_avg/", m_.data(), lo_, hi_);
  v.flat("optim.exp_avg_sq/", v_.data(), lo_, hi_);
}

}  // namespace olmo::optim
