// Learning-rate schedules of OLMo-core (olmo_core/optim/scheduler.py), same double arithmetic in
// the same order, so the LR equals OLMo-core's bit for bit. `current` is OLMo-core's 1-based
// trainer.global_step (incremented before the batch is trained) or tokens seen (units "tokens");
// `t_max` the trainer's max_steps / max_tokens unless the schedule sets its own t_max.
//   constant               lr0
//   constant_with_warmup   current <= W ? warmup : lr0
//   cos_with_warmup        current < W ? warmup : current >= T ? eta_min
//                          : eta_min + (lr0-eta_min)*(1+cos(pi*(c-W)/(T-W)))/2, eta_min = lr0*alpha_f
//   half_cos_with_warmup   second half of that cosine; warmup goes to (eta_min+lr0)/2
//   linear_with_warmup     current < W ? warmup : current >= T ? eta_min
//                          : lr0 - (lr0-eta_min)*((c-W)/(T-W))
//   wsd                    current <= W ? warmup : current >= T-D ? linear decay to decay_min_lr : lr0
// warmup = warmup_min_lr + (lr0 - warmup_min_lr)*min(c, W)/W. W = warmup or round(T*fraction)
// (Python round: half to even), D likewise. Invalid configs throw olmo::Error naming the field,
// as OLMo-core's __post_init__ checks.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace olmo::optim {

// The schedules of the table above; kScheduleNames holds their names in this order (the form of
// JSON, YAML and messages; the trainer config's scheduler.name choice reads this list).
enum class ScheduleKind {
  constant, constant_with_warmup, cos_with_warmup, half_cos_with_warmup, linear_with_warmup, wsd
};
inline constexpr const char* kScheduleNames[] = {"constant",           "constant_with_warmup",
                                                 "cos_with_warmup",    "half_cos_with_warmup",
                                                 "linear_with_warmup", "wsd"};
const char* schedule_name(ScheduleKind k);
// A name of kScheduleNames; anything else throws "<where>: unknown schedule ..." listing them.
ScheduleKind parse_schedule_name(const std::string& s, const std::string& where);

struct ScheduleConfig {
  ScheduleKind name = ScheduleKind::cos_with_warmup;  // see the table above
  std::string units = "steps";           // "steps" | "tokens"
  std::optional<int64_t> warmup;         // exactly one of warmup / warmup_fraction (not constant)
  std::optional<double> warmup_fraction;
  double warmup_min_lr = 0.0;
  double alpha_f = 0.1;                  // cos / half_cos / linear: eta_min = lr0 * alpha_f
  std::optional<int64_t> t_max;          // overrides the trainer's t_max (cos / half_cos / linear)
  std::optional<int64_t> decay;          // wsd: decay steps; else decay_fraction (default 0.1)
  std::optional<double> decay_fraction;
  double decay_min_lr = 0.0;
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  // initial_lr: the group's peak LR; current, t_max as described above.
  virtual double get_lr(double initial_lr, int64_t current, int64_t t_max) const = 0;
  const ScheduleConfig& config() const { return cfg_; }

 protected:
  explicit Schedule(ScheduleConfig c) : cfg_(std::move(c)) {}
  ScheduleConfig cfg_;
};

// Validates and builds. Throws olmo::Error("schedule.<field>: ...") on a bad config.
std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& cfg);

// From a JSON object (e.g. the trainer's YAML "scheduler:" block converted to JSON): keys are the
// ScheduleConfig field names; an unknown key or a wrong type throws olmo::Error naming
// `where`.<key>. to_json is the inverse (absent optionals are omitted).
ScheduleConfig schedule_config_from_json(const nlohmann::json& j, const std::string& where = "scheduler");
nlohmann::json schedule_config_to_json(const ScheduleConfig& cfg);

}  // namespace olmo::optim
