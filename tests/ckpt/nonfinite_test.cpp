// The checkpoint writer refuses NaN/Inf (issue 11, item 4): an f32 or f64 tensor holding a
// non-finite value is an olmo::Error naming the checkpoint, the tensor and the element; nothing
// of the failed checkpoint is left (no stepN, no stepN-tmp) and the previous complete
// checkpoint stays the newest one and verifies. Finite extremes (max, denormals, -0) pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/error.h"

namespace fs = std::filesystem;
using namespace olmo;
using namespace olmo::ckpt;

namespace {

std::string fresh(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("olmo_ckpt_nonfinite_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  return p.string();
}

void save(const std::string& run, int64_t step, const std::vector<float>& w,
          const std::vector<double>& extra = {}) {
  CheckpointWriter cw(run, step);
  cw.add_tensor("model.w", w.data(), {int64_t(w.size())});
  if (!extra.empty()) cw.add_raw("stats", DType::f64, extra.data(), {int64_t(extra.size())});
  cw.add_json("trainer", {{"step", step}});
  cw.commit();
}

}  // namespace

TEST(CheckpointNonFinite, RefusedAndPreviousKept) {
  const std::string run = fresh("refuse");
  const float fmax = std::numeric_limits<float>::max();
  const float denorm = std::numeric_limits<float>::denorm_min();
  save(run, 1, {1.f, -0.f, fmax, -fmax, denorm});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> w;
    std::vector<double> extra;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{1.f, nan, 2.f}, {}, "tensor 'model.w' holds a non-finite value (nan at element 1 of 3)"},
      {{inf, 0.f}, {}, "tensor 'model.w' holds a non-finite value (inf at element 0 of 2)"},
      {{0.f, 0.f, -inf}, {}, "(-inf at element 2 of 3)"},
      {{1.f}, {0.5, std::nan("")}, "tensor 'stats' holds a non-finite value (nan at element 1"},
  };
  int64_t step = 2;
  for (const Case& c : cases) {
    try {
      save(run, step, c.w, c.extra);
      ADD_FAILURE() << "non-finite checkpoint written: " << c.want;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("step" + std::to_string(step) + "-tmp"),
                std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(run + "/step" + std::to_string(step)));
    EXPECT_FALSE(fs::exists(run + "/step" + std::to_string(step) + "-tmp"));
    ++step;
  }
  EXPECT_EQ(list_checkpoints(run), std::vector<int64_t>{1});
  ASSERT_TRUE(latest_complete(run));
  EXPECT_EQ(*latest_complete(run), run + "/step1");
  CheckpointReader r(run + "/step1");
  r.verify();
  std::vector<float> back(5);
  r.read_tensor("model.w", back.data(), {5});
  EXPECT_EQ(back[2], fmax);
  EXPECT_EQ(back[4], denorm);
  EXPECT_TRUE(std::signbit(back[1]));
  fs::remove_all(run);
}
