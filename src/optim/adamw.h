// AdamW over one flat fp32 parameter buffer, bit-for-bit the update of OLMo-core's SkipStepAdamW
// (olmo_core/optim/adamw.py, foreach path = SkipStepAdamWConfig's default), step factor f in {0,1}.
//
// Per element, in fp32, in exactly this order (every op one IEEE fp32 rounding, no FMA):
//   p  = p * (1 - f*float(lr*wd))
//   m  = m * (1 - w1) + g * w1                      w1 = f * float(1 - beta1)
//   v  = v * (1 - w2) + (g * g) * w2                w2 = f * float(1 - beta2)
//   bc1 = 1 - powf(float(beta1), s + 1); bc2 = 1 - powf(float(beta2), s + 1)    (s: fp32 step;
//                                                   powf: det::powf, core/det_math.h)
//   step_size = (1 / bc1) * float(lr)               (torch's `lr / t` is reciprocal(t) * lr)
//   denom = sqrt(v) / sqrt(bc2) + float(eps)
//   p  = p + (m / denom) * (-f * step_size)
//   s  = s + f
// A skipped step (f = 0) leaves p, m, v and s untouched (identical to OLMo-core for finite
// gradients; OLMo-core would also spread a NaN/inf gradient into m and v, we do not).
// Step counts: OLMo-core keeps one fp32 step per parameter tensor; every tensor gets a gradient
// on every step and f is global, so all of them are equal: we keep one fp32 counter per group.
// ZeRO-1: an AdamW may own only a shard [shard_begin, shard_end) of the flat buffer: moments are
// allocated for the shard, step() updates the shard (params/grads point at the shard's first
// element), groups stay global (their intersection with the shard is updated) and so do the
// step counts and state_json(), so a checkpoint of any shard layout restores into any other.
// Cost: ~28 bytes of memory traffic per parameter (read p,g,m,v; write p,m,v); OpenMP over
// elements with a static schedule, each element independent => deterministic for any thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/state_visitor.h"

namespace olmo::optim {

// A contiguous range [offset, offset+numel) of the flat parameter buffer with its weight decay.
// OLMo 3: the token embedding gets weight_decay 0, everything else (norms, lm_head too) 0.1.
struct ParamGroup {
  size_t offset = 0;
  size_t numel = 0;
  double weight_decay = 0.1;
  std::string name;  // for messages and checkpoints, e.g. "embeddings" / "default"
};

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
};

class AdamW {
 public:
  // numel: size of the flat buffer. Groups must not overlap and must lie inside [0, numel);
  // elements in no group are never updated. Throws olmo::Error on a bad layout or config.
  AdamW(size_t numel, std::vector<ParamGroup> groups, AdamWConfig cfg = {});
  // Shard [shard_begin, shard_end) of the numel-element buffer.
  AdamW(size_t numel, std::vector<ParamGroup> groups, AdamWConfig cfg, size_t shard_begin,
        size_t shard_end);

  // One optimizer step. params/grads: shard_numel() floats each (the whole buffer unsharded). lr: this step's learning rate (double,
  // exactly as OLMo-core's scheduler returns it). skip: the skip-step decision (f = 0).
  // block_done (optional): called with each block [a, b) of global flat indices (at most
  // kBlock elements, inside one group) as soon as its p, m and v hold this step's values, on the
  // OpenMP thread that updated it (concurrently with other blocks; each index once; never on a
  // skipped step), while the block is still in cache (the trainer's state fingerprint).
  using BlockFn = std::function<void(size_t a, size_t b)>;
  static constexpr size_t kBlock = 16384;  // 64 KB of each of p, g, m, v
  void step(float* params, const float* grads, double lr, bool skip = false,
            const BlockFn* block_done = nullptr);

  size_t numel() const { return numel_; }
  size_t shard_begin() const { return lo_; }
  size_t shard_end() const { return hi_; }
  size_t shard_numel() const { return hi_ - lo_; }
  // Bytes of optimizer state held by this object (the two moment vectors).
  size_t state_bytes() const { return (m_.size() + v_.size()) * sizeof(float); }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  const AdamWConfig& config() const { return cfg_; }

  // State, for checkpoints: exp_avg / exp_avg_sq are shard_numel floats (zero outside groups),
  // steps() has one fp32 step count per group (same order as groups()).
  float* exp_avg() { return m_.data(); }
  float* exp_avg_sq() { return v_.data(); }
  const float* exp_avg() const { return m_.data(); }
  const float* exp_avg_sq() const { return v_.data(); }
  std::vector<float>& steps() { return steps_; }
  const std::vector<float>& steps() const { return steps_; }

  // Small state as JSON: {"steps":[...], "groups":[{"name","offset","numel","weight_decay"}],
  // "beta1","beta2","eps"}. load_state_json checks the group layout matches (error names the
  // field) and restores the step counts; moments are restored through exp_avg()/exp_avg_sq().
  nlohmann::json state_json() const;
  void load_state_json(const nlohmann::json& j);
  // The optimizer's checkpoint part (core/state_visitor.h), section "optim": every field declared
  // once, saved / loaded / fingerprinted (group "optim": numel, steps, group layout) alike; both
  // moments as the tensors "optim.exp_avg/<name>", "optim.exp_avg_sq/<name>" (this shard).
  void visit_state(StateVisitor& v);

 private:
  size_t numel_, lo_ = 0, hi_ = 0;
  std::vector<ParamGroup> groups_;
  AdamWConfig cfg_;
  std::vector<float> m_, v_, steps_;
};

// Slow readable reference of one group's update (scalar loop, same formulas); tests hold
// AdamW::step equal to it bit for bit.
void adamw_reference(float* p, const float* g, float* m, float* v, size_t n, float& step,
                     double lr, double weight_decay, const AdamWConfig& cfg, bool skip);

}  // namespace olmo::optim
