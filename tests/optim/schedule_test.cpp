// Schedules: hand-computed values at the OLMo 3 phase boundaries (1-based steps), the JSON config
// mapping (unknown key, wrong type, null = unset) and the config checks OLMo-core makes, each
// refused with a message naming the field. (Bit parity with OLMo-core's scheduler classes over
// ~15k points: tests/optim/olmo_core_parity.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "optim/schedule.h"

using namespace olmo::optim;

static void expect_error(const nlohmann::json& j, const std::string& needle) {
  try {
    make_schedule(schedule_config_from_json(j));
    FAIL() << "accepted: " << j.dump();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Schedule, Olmo3Values) {
  auto cos = make_schedule(schedule_config_from_json({{"name", "cos_with_warmup"}, {"warmup", 2000}, {"alpha_f", 0.1}}));
  EXPECT_DOUBLE_EQ(cos->get_lr(3e-4, 1, 1192093), 3e-4 / 2000);
  EXPECT_DOUBLE_EQ(cos->get_lr(3e-4, 2000, 1192093), 3e-4);
  EXPECT_DOUBLE_EQ(cos->get_lr(3e-4, 1192093, 1192093), 3e-5);
  auto lin = make_schedule(schedule_config_from_json({{"name", "linear_with_warmup"}, {"warmup", 0}, {"alpha_f", 0.0}}));
  const double lr0 = 2.0712352850360292e-4;
  EXPECT_DOUBLE_EQ(lin->get_lr(lr0, 1, 47684), lr0 * (1.0 - 1.0 / 47684));
  EXPECT_EQ(lin->get_lr(lr0, 47684, 47684), 0.0);
  auto half = make_schedule(schedule_config_from_json({{"name", "half_cos_with_warmup"}, {"warmup", 597046}, {"alpha_f", 0.1}}));
  EXPECT_NEAR(half->get_lr(3e-4, 1413814, 1668931), 3.93e-5, 1e-7);  // spec 4.3: LR at end of epoch
  EXPECT_DOUBLE_EQ(half->get_lr(3e-4, 597046, 1668931), 1.65e-4);
  auto wsd = make_schedule(schedule_config_from_json({{"name", "wsd"}, {"warmup", 10}, {"decay", 20}}));
  EXPECT_DOUBLE_EQ(wsd->get_lr(1e-3, 50, 100), 1e-3);
  EXPECT_DOUBLE_EQ(wsd->get_lr(1e-3, 90, 100), 1e-3 * 10 / 20);
  auto c = make_schedule(schedule_config_from_json({{"name", "constant"}}));
  EXPECT_EQ(c->get_lr(1e-3, 12345, 10), 1e-3);
}

TEST(Schedule, ConfigErrorsNameTheField) {
  expect_error({{"name", "cos_with_warmup"}, {"warmup", 10}, {"warmup_fraction", 0.1}}, "warmup_fraction");
  expect_error({{"name", "cos_with_warmup"}}, "warmup");
  expect_error({{"name", "cosine"}, {"warmup", 1}}, "schedule.name");
  expect_error({{"name", "cos_with_warmup"}, {"warmup", 1}, {"warmpu", 3}}, "scheduler.warmpu");
  expect_error({{"name", "cos_with_warmup"}, {"warmup", "ten"}}, "scheduler.warmup");
  expect_error({{"name", "cos_with_warmup"}, {"warmup", 1.5}}, "scheduler.warmup");
  expect_error({{"name", "wsd"}, {"warmup", 1}, {"t_max", 100}}, "t_max");
  expect_error({{"name", "wsd"}, {"warmup", 1}, {"decay", 5}, {"decay_fraction", 0.1}}, "never both");
  expect_error({{"name", "linear_with_warmup"}, {"warmup_fraction", 1.5}}, "warmup_fraction");
  expect_error({{"name", "constant"}, {"warmup", 5}}, "warmup");
  expect_error({{"name", "constant"}, {"units", "epochs"}}, "units");
  // warmup_min_lr must stay below the peak (OLMo-core's assert in _linear_warmup).
  auto s = make_schedule(schedule_config_from_json({{"name", "cos_with_warmup"}, {"warmup", 10}, {"warmup_min_lr", 1e-2}}));
  EXPECT_THROW(s->get_lr(1e-3, 1, 100), olmo::Error);
  // null means unset
  auto n = make_schedule(schedule_config_from_json({{"name", "cos_with_warmup"}, {"warmup", 10}, {"t_max", nullptr}}));
  EXPECT_FALSE(n->config().t_max.has_value());
  // to_json round trip
  ScheduleConfig cfg = schedule_config_from_json({{"name", "wsd"}, {"warmup_fraction", 0.1}, {"decay", 7}});
  EXPECT_EQ(schedule_config_to_json(schedule_config_from_json(schedule_config_to_json(cfg))), schedule_config_to_json(cfg));
}
