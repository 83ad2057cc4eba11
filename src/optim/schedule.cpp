// OLMo-core learning-rate schedules (see schedule.h); each get_lr mirrors the Python expression
// term by term so the doubles agree exactly (math.cos and std::cos are the same libm cos).
// The cos stays libm's, not det::cos (core/det_math.h), for that bit parity (ctest
// optim_olmo_core_parity): glibc 2.36's cos is not correctly rounded at about 0.1% of the OLMo 3
// 7B schedule's steps, where det::cos would move the double LR by 1 ulp but not the fp32 lr and
// lr * wd AdamW uses (none of 9 M values, ctest core_det_math_callers).
#include "optim/schedule.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace olmo::optim {

namespace {

constexpr double kPi = 3.141592653589793;  // math.pi

// Python round(x) for a double: half to even.
int64_t py_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

double linear_warmup(double initial_lr, int64_t current, int64_t warmup, double warmup_min_lr) {
  OLMO_CHECK(0 <= warmup_min_lr && warmup_min_lr < initial_lr, "schedule.warmup_min_lr: must satisfy 0 <= ",
             warmup_min_lr, " < initial lr ", initial_lr);
  OLMO_CHECK(warmup > 0, "schedule.warmup: warmup of 0 steps reached in the warmup branch (division by zero)");
  return warmup_min_lr + (initial_lr - warmup_min_lr) * static_cast<double>(std::min(current, warmup)) /
                             static_cast<double>(warmup);
}

double linear_decay(double initial_lr, int64_t step_from_end, int64_t decay, double decay_min_lr) {
  OLMO_CHECK(0 <= decay_min_lr && decay_min_lr < initial_lr, "schedule.decay_min_lr: must satisfy 0 <= ",
             decay_min_lr, " < lr ", initial_lr);
  OLMO_CHECK(decay > 0, "schedule.decay: decay of 0 steps reached in the decay branch (division by zero)");
  return decay_min_lr + (initial_lr - decay_min_lr) * static_cast<double>(std::min(step_from_end, decay)) /
                            static_cast<double>(decay);
}

int64_t resolve_warmup(const ScheduleConfig& c, int64_t t_max) {
  return c.warmup ? *c.warmup : py_round(static_cast<double>(t_max) * *c.warmup_fraction);
}

class Constant : public Schedule {
 public:
  explicit Constant(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t, int64_t) const override { return lr0; }
};

class ConstantWithWarmup : public Schedule {
 public:
  explicit ConstantWithWarmup(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t c, int64_t t_max) const override {
    const int64_t w = resolve_warmup(cfg_, t_max);
    if (c <= w) return linear_warmup(lr0, c, w, cfg_.warmup_min_lr);
    return lr0;
  }
};

class Wsd : public Schedule {
 public:
  explicit Wsd(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t c, int64_t t_max) const override {
    const int64_t w = resolve_warmup(cfg_, t_max);
    if (c <= w) return linear_warmup(lr0, c, w, cfg_.warmup_min_lr);
    const int64_t d = cfg_.decay ? *cfg_.decay : py_round(static_cast<double>(t_max) * *cfg_.decay_fraction);
    if (c >= t_max - d) return linear_decay(lr0, t_max - c, d, cfg_.decay_min_lr);
    return lr0;
  }
};

class LinearWithWarmup : public Schedule {
 public:
  explicit LinearWithWarmup(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t c, int64_t t_max) const override {
    if (cfg_.t_max) t_max = *cfg_.t_max;
    const double eta_min = lr0 * cfg_.alpha_f;
    const int64_t w = resolve_warmup(cfg_, t_max);
    if (c < w) return linear_warmup(lr0, c, w, cfg_.warmup_min_lr);
    if (c >= t_max) return eta_min;
    c -= w;
    t_max -= w;
    return lr0 - (lr0 - eta_min) * (static_cast<double>(c) / static_cast<double>(t_max));
  }
};

class CosWithWarmup : public Schedule {
 public:
  explicit CosWithWarmup(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t c, int64_t t_max) const override {
    if (cfg_.t_max) t_max = *cfg_.t_max;
    const double eta_min = lr0 * cfg_.alpha_f;
    const int64_t w = resolve_warmup(cfg_, t_max);
    if (c < w) return linear_warmup(lr0, c, w, cfg_.warmup_min_lr);
    if (c >= t_max) return eta_min;
    c -= w;
    t_max -= w;
    return eta_min + (lr0 - eta_min) * (1.0 + std::cos(kPi * static_cast<double>(c) / static_cast<double>(t_max))) / 2.0;
  }
};

class HalfCosWithWarmup : public Schedule {
 public:
  explicit HalfCosWithWarmup(ScheduleConfig c) : Schedule(std::move(c)) {}
  double get_lr(double lr0, int64_t c, int64_t t_max) const override {
    if (cfg_.t_max) t_max = *cfg_.t_max;
    const double eta_min = lr0 * cfg_.alpha_f;
    const int64_t w = resolve_warmup(cfg_, t_max);
    if (c < w) {
      const double max_lr = eta_min + (lr0 - eta_min) / 2.0;
      return linear_warmup(max_lr, c, w, cfg_.warmup_min_lr);
    }
    if (c >= t_max) return eta_min;
    c -= w;
    t_max -= w;
    c += t_max;
    t_max *= 2;
    return eta_min + (lr0 - eta_min) * (1.0 + std::cos(kPi * static_cast<double>(c) / static_cast<double>(t_max))) / 2.0;
  }
};

void check_warmup_fields(const ScheduleConfig& c) {
  OLMO_CHECK(c.warmup.has_value() != c.warmup_fraction.has_value(), "schedule '",
             schedule_name(c.name),
             "': exactly one of 'warmup' or 'warmup_fraction' must be specified");
  if (c.warmup_fraction)
    OLMO_CHECK(*c.warmup_fraction >= 0 && *c.warmup_fraction <= 1, "schedule.warmup_fraction: must be between 0 and 1, got ",
               *c.warmup_fraction);
  if (c.warmup) OLMO_CHECK(*c.warmup >= 0, "schedule.warmup: must be >= 0, got ", *c.warmup);
}

}  // namespace

const char* schedule_name(ScheduleKind k) { return kScheduleNames[int(k)]; }

ScheduleKind parse_schedule_name(const std::string& s, const std::string& where) {
  std::string known;
  for (int i = 0; i < int(std::size(kScheduleNames)); ++i) {
    if (s == kScheduleNames[i]) return ScheduleKind(i);
    known += cat(i ? ", " : "", kScheduleNames[i]);
  }
  throw Error(cat(where, ": unknown schedule '", s, "' (known: ", known, ")"));
}

std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& cfg) {
  ScheduleConfig c = cfg;
  OLMO_CHECK(c.units == "steps" || c.units == "tokens", "schedule.units: must be 'steps' or 'tokens', got '",
             c.units, "'");
  if (c.t_max) OLMO_CHECK(*c.t_max > 0, "schedule.t_max: must be > 0, got ", *c.t_max);
  using K = ScheduleKind;
  const char* name = schedule_name(c.name);
  const bool uses_tmax =
      c.name == K::cos_with_warmup || c.name == K::half_cos_with_warmup || c.name == K::linear_with_warmup;
  const bool uses_decay = c.name == K::wsd;
  if (!uses_tmax) OLMO_CHECK(!c.t_max, "schedule.t_max: not a field of '", name, "'");
  if (!uses_decay)
    OLMO_CHECK(!c.decay && !c.decay_fraction, "schedule.decay: not a field of '", name, "'");
  if (c.name == K::constant) {
    OLMO_CHECK(!c.warmup && !c.warmup_fraction, "schedule.warmup: not a field of 'constant'");
    return std::make_unique<Constant>(c);
  }
  check_warmup_fields(c);
  switch (c.name) {
    case K::constant_with_warmup: return std::make_unique<ConstantWithWarmup>(c);
    case K::cos_with_warmup: return std::make_unique<CosWithWarmup>(c);
    case K::half_cos_with_warmup: return std::make_unique<HalfCosWithWarmup>(c);
    case K::linear_with_warmup: return std::make_unique<LinearWithWarmup>(c);
    case K::constant:  // returned above
    case K::wsd: break;
  }
  // wsd. OLMo-core's default decay_fraction is 0.1; naming `decay` alone selects decay steps.
  OLMO_CHECK(!(c.decay && c.decay_fraction), "schedule 'wsd': 'decay' and 'decay_fraction' given, never both");
  if (!c.decay && !c.decay_fraction) c.decay_fraction = 0.1;
  if (c.decay_fraction)
    OLMO_CHECK(*c.decay_fraction >= 0 && *c.decay_fraction <= 1, "schedule.decay_fraction: must be between 0 and 1, got ",
               *c.decay_fraction);
  if (c.decay) OLMO_CHECK(*c.decay >= 0, "schedule.decay: must be >= 0, got ", *c.decay);
  return std::make_unique<Wsd>(c);
}

ScheduleConfig schedule_config_from_json(const nlohmann::json& j, const std::string& where) {
  OLMO_CHECK(j.is_object(), where, ": expected a mapping");
  ScheduleConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    const std::string at = cat(where, ".", k);
    auto get_int = [&]() -> int64_t {
      if (v.is_number_integer()) return v.get<int64_t>();
      if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 9e15)
        return static_cast<int64_t>(v.get<double>());
      throw Error(cat(at, ": expected an integer, got ", v.dump()));
    };
    auto get_num = [&]() -> double {
      OLMO_CHECK(v.is_number(), at, ": expected a number, got ", v.dump());
      return v.get<double>();
    };
    auto get_str = [&]() -> std::string {
      OLMO_CHECK(v.is_string(), at, ": expected a string, got ", v.dump());
      return v.get<std::string>();
    };
    if (v.is_null()) continue;  // `key: null` / `key: ~` means "not set"
    if (k == "name") c.name = parse_schedule_name(get_str(), "schedule.name");
    else if (k == "units") c.units = get_str();
    else if (k == "warmup") c.warmup = get_int();
    else if (k == "warmup_fraction") c.warmup_fraction = get_num();
    else if (k == "warmup_min_lr") c.warmup_min_lr = get_num();
    else if (k == "alpha_f") c.alpha_f = get_num();
    else if (k == "t_max") c.t_max = get_int();
    else if (k == "decay") c.decay = get_int();
    else if (k == "decay_fraction") c.decay_fraction = get_num();
    else if (k == "decay_min_lr") c.decay_min_lr = get_num();
    else
      throw Error(cat(at, ": unknown key (known: name, units, warmup, warmup_fraction, warmup_min_lr, "
                          "alpha_f, t_max, decay, decay_fraction, decay_min_lr)"));
  }
  return c;
}

nlohmann::json schedule_config_to_json(const ScheduleConfig& c) {
  nlohmann::json j = {{"name", schedule_name(c.name)}, {"units", c.units}, {"warmup_min_lr", c.warmup_min_lr},
                      {"alpha_f", c.alpha_f}, {"decay_min_lr", c.decay_min_lr}};
  if (c.warmup) j["warmup"] = *c.warmup;
  if (c.warmup_fraction) j["warmup_fraction"] = *c.warmup_fraction;
  if (c.t_max) j["t_max"] = *c.t_max;
  if (c.decay) j["decay"] = *c.decay;
  if (c.decay_fraction) j["decay_fraction"] = *c.decay_fraction;
  return j;
}

}  // namespace olmo::optim
