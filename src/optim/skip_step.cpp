// Skip-step rule of OLMo-core's SkipStepOptimizer (see skip_step.h).
#include "optim/skip_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace olmo::optim {

void std_mean_f32(const float* x, size_t n, float& std_out, float& mean_out) {
  // ATen WelfordOps<float, double, int64_t>: reduce() then project() with correction 1.
  double mean = 0, m2 = 0;
  int64_t cnt = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t new_n = cnt + 1;
    const double new_nf = static_cast<double>(new_n);
    const double delta = static_cast<double>(x[i]) - mean;
    const double new_mean = mean + delta / new_nf;
    const double new_delta = static_cast<double>(x[i]) - new_mean;
    m2 = m2 + delta * new_delta;
    mean = new_mean;
    cnt = new_n;
  }
  if (n == 0) {
    std_out = mean_out = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const double nf = static_cast<double>(cnt);
  const double divisor = nf > 1.0 ? nf - 1.0 : 0.0;
  const double var = m2 / divisor;
  std_out = static_cast<float>(std::sqrt(var));
  mean_out = static_cast<float>(mean);
}

SkipStep::SkipStep(int rolling_interval_length, double sigma_factor)
    : len_(rolling_interval_length), sigma_(static_cast<float>(sigma_factor)) {
  OLMO_CHECK(rolling_interval_length >= 1, "skip_step.rolling_interval_length: must be >= 1, got ",
             rolling_interval_length);
  OLMO_CHECK(sigma_factor > 0, "skip_step.sigma_factor: must be > 0, got ", sigma_factor);
}

namespace {
// (latest - mean) <= sigma * std over the window minus its last element, fp32 like torch.
bool within(const std::deque<float>& w, float sigma) {
  std::vector<float> prev(w.begin(), w.end() - 1);
  float sd, mean;
  std_mean_f32(prev.data(), prev.size(), sd, mean);
  const float latest = w.back();
  return (latest - mean) <= sigma * sd;
}
}  // namespace

bool SkipStep::step_factor() const {
  if (losses_.size() < static_cast<size_t>(std::max(2, len_ / 2))) return true;
  bool ok = within(losses_, sigma_);
  if (!grad_norms_.empty()) ok = ok && within(grad_norms_, sigma_);
  return ok;
}

bool SkipStep::record(float loss, std::optional<float> grad_norm) {
  losses_.push_back(loss);
  while (losses_.size() > static_cast<size_t>(len_) + 1) losses_.pop_front();
  if (grad_norm) {
    grad_norms_.push_back(*grad_norm);
    while (grad_norms_.size() > static_cast<size_t>(len_) + 1) grad_norms_.pop_front();
  }
  return step_factor();
}

nlohmann::json SkipStep::state_json() const {
  // fp32 -> double is exact, and nlohmann prints doubles round-trip exactly. NaN/inf are not
  // JSON numbers: they are stored as strings.
  auto enc = [](const std::deque<float>& d) {
    nlohmann::json a = nlohmann::json::array();
    for (float x : d) {
      if (std::isfinite(x)) a.push_back(static_cast<double>(x));
      else a.push_back(std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf"));
    }
    return a;
  };
  return {{"rolling_interval_length", len_}, {"sigma_factor", static_cast<double>(sigma_)},
          {"losses", enc(losses_)}, {"grad_norms", enc(grad_norms_)}};
}

void SkipStep::load_state_json(const nlohmann::json& j) {
  OLMO_CHECK(j.is_object(), "skip_step state: expected an object");
  for (const char* k : {"rolling_interval_length", "losses", "grad_norms"})
    OLMO_CHECK(j.contains(k), "skip_step state: missing field '", k, "'");
  OLMO_CHECK(j["rolling_interval_length"].is_number_integer() &&
                 j["rolling_interval_length"].get<int>() == len_,
             "skip_step state.rolling_interval_length: checkpoint has ", j["rolling_interval_length"].dump(),
             ", config has ", len_);
  auto dec = [](const nlohmann::json& a, const char* key) {
    OLMO_CHECK(a.is_array(), "skip_step state.", key, ": expected an array");
    std::deque<float> d;
    for (size_t i = 0; i < a.size(); ++i) {
      const auto& x = a[i];
      if (x.is_number()) d.push_back(static_cast<float>(x.get<double>()));
      else if (x == "nan") d.push_back(std::numeric_limits<float>::quiet_NaN());
      else if (x == "inf") d.push_back(std::numeric_limits<float>::infinity());
      else if (x == "-inf") d.push_back(-std::numeric_limits<float>::infinity());
      else throw Error(cat("skip_step state.", key, "[", i, "]: not a number: ", x.dump()));
    }
    return d;
  };
  auto l = dec(j["losses"], "losses");
  auto g = dec(j["grad_norms"], "grad_norms");
  OLMO_CHECK(l.size() <= static_cast<size_t>(len_) + 1 && g.size() <= static_cast<size_t>(len_) + 1,
             "skip_step state: window longer than rolling_interval_length + 1");
  losses_ = std::move(l);
  grad_norms_ = std::move(g);
}

}  // namespace olmo::optim
