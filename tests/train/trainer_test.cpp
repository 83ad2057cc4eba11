// Trainer tests on tests/configs/tiny.yaml with synthetic token files:
//   * phases: a stage-2 start from a stage-1 checkpoint (load_trainer_state=false,
//     load_optim_state=true, new mix, new seed, LinearWithWarmup(0) to 0) carries weights, AdamW
//     moments and step counts bit for bit, and resets trainer step, tokens, data position,
//     skip-step window and schedule; load_optim_state=false starts the moments from zero;
//   * a run dir locked by another live process is refused and left unchanged;
//   * a checkpoint write that fails (ENOSPC injected at the writer) leaves the previous complete
//     checkpoint intact and loadable, with no partial directory left behind;
//   * the step's loss normalisation: one step's loss equals sum CE / total target tokens computed
//     from per-micro-batch forward sums (grad accumulation invariant to the micro-batch size).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "ckpt/checkpoint.h"
#include "ckpt/run_lock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "monitor/callbacks.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace olmo;
using namespace olmo::train;

namespace {

std::string src(const std::string& rel) { return std::string(OLMO_SOURCE_DIR) + "/" + rel; }

struct Tmp {
  fs::path dir;
  Tmp() {
    dir = fs::temp_directory_path() / ("olmo_trainer_test_" + std::to_string(getpid()) + "_" +
                                       std::to_string(counter()++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Tmp() { fs::remove_all(dir); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

// A token file of n ids in [2, 512) (EOS 0 every ~60 tokens) and a one-line mix file for it.
std::string make_mix(const fs::path& dir, const std::string& name, int n, uint32_t seed) {
  fs::create_directories(dir / name);
  std::mt19937 rng(seed);
  std::vector<uint32_t> tok(n);
  uint32_t t = 2;
  for (int i = 0; i < n; ++i) {
    if (i % 61 == 60) { tok[i] = 0; continue; }
    t = (5 * t + 3) % 512;
    if (t < 2) t += 2;
    if (rng() % 10 == 0) t = 2 + rng() % 510;
    tok[i] = t;
  }
  std::ofstream(dir / name / "part-0.npy", std::ios::binary)
      .write(reinterpret_cast<const char*>(tok.data()), n * 4);
  std::ofstream(dir / (name + ".mix")) << name << "," << name << "/part-0.npy\n";
  return (dir / (name + ".mix")).string();
}

Config tiny(const std::string& mix, const fs::path& run, std::vector<std::string> more = {}) {
  std::vector<std::string> ov = {"data.mix=" + mix, "trainer.run_dir=" + run.string(),
                                 "trainer.progress=off", "trainer.peak_interval=-1"};
  ov.insert(ov.end(), more.begin(), more.end());
  return load_config(src("tests/configs/tiny.yaml"), ov);
}

std::vector<float> read_all(const ckpt::CheckpointReader& r, model::Olmo3& m,
                            const std::string& prefix) {
  std::vector<float> out(m.num_params());
  for (auto& p : m.params_info()) r.read_tensor(prefix + p.name, out.data() + p.offset, p.shape);
  return out;
}

TEST(Trainer, Stage1ToStage2CarriesModelAndOptimizerResetsTrainer) {
  Tmp tmp;
  std::string mix1 = make_mix(tmp.dir, "s1", 64 * 8 * 12, 1);
  std::string mix2 = make_mix(tmp.dir, "s2", 64 * 8 * 12, 2);
  fs::path run1 = tmp.dir / "run1", run2 = tmp.dir / "run2";
  {
    Trainer t1(tiny(mix1, run1, {"trainer.max_steps=6"}));
    add_default_callbacks(t1);
    t1.fit();
    EXPECT_EQ(t1.step(), 6);
  }
  ckpt::CheckpointReader ck((run1 / "step6").string());
  std::vector<std::string> s2 = {
      "data.seed=99", "scheduler.name=linear_with_warmup", "scheduler.warmup_steps=0",
      "scheduler.alpha_f=0.0", "optim.lr=1e-3", "trainer.max_steps=10",
      "trainer.load_path=" + run1.string(), "trainer.load_trainer_state=false",
      "trainer.load_optim_state=true"};
  Trainer t2(tiny(mix2, run2, s2));
  EXPECT_EQ(t2.start_kind(), StartKind::phase);
  EXPECT_EQ(t2.start_from(), (run1 / "step6").string());
  // Carried, bit for bit.
  auto w = read_all(ck, t2.model(), "");
  auto m = read_all(ck, t2.model(), "optim.exp_avg/");
  auto v = read_all(ck, t2.model(), "optim.exp_avg_sq/");
  size_t n = t2.model().num_params();
  EXPECT_EQ(0, std::memcmp(w.data(), t2.model().params(), n * 4));
  EXPECT_EQ(0, std::memcmp(m.data(), t2.optimizer().exp_avg(), n * 4));
  EXPECT_EQ(0, std::memcmp(v.data(), t2.optimizer().exp_avg_sq(), n * 4));
  ASSERT_FALSE(t2.optimizer().steps().empty());
  for (float s : t2.optimizer().steps()) EXPECT_EQ(s, 6.0f);
  // Reset.
  EXPECT_EQ(t2.step(), 0);
  EXPECT_EQ(t2.tokens_seen(), 0);
  EXPECT_EQ(t2.loader().batches_processed(), 0);
  EXPECT_EQ(t2.loader().seed(), 99u);
  EXPECT_TRUE(t2.skip_step().losses().empty());
  EXPECT_EQ(t2.schedule_steps(), 10);
  EXPECT_DOUBLE_EQ(t2.lr_at(1), 1e-3 * (1.0 - 1.0 / 10.0));  // LinearWithWarmup(0) to 0
  EXPECT_EQ(t2.lr_at(10), 0.0);
  // The first stage-2 batch is the first batch of the new mix with the new seed.
  data::FslDataset ds2({(tmp.dir / "s2" / "part-0.npy").string()}, 64, 512);
  data::DataLoader fresh(ds2, 8, 99);
  data::DataLoader::Batch b;
  ASSERT_TRUE(fresh.next(b));
  StepResult r = t2.train_step();
  EXPECT_EQ(r.batch_hash, b.global_hash);
  EXPECT_EQ(r.step, 1);
  for (float s : t2.optimizer().steps()) EXPECT_EQ(s, 7.0f);

  // load_optim_state=false: weights carried, moments and step counts fresh.
  fs::path run3 = tmp.dir / "run3";
  s2.back() = "trainer.load_optim_state=false";
  Trainer t3(tiny(mix2, run3, s2));
  EXPECT_EQ(0, std::memcmp(w.data(), t3.model().params(), n * 4));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(t3.optimizer().exp_avg()[i], 0.0f);
  for (float s : t3.optimizer().steps()) EXPECT_EQ(s, 0.0f);
}

std::map<std::string, uint64_t> snapshot(const fs::path& dir) {
  std::map<std::string, uint64_t> s;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != ".lock") {
      std::string b = read_file(e.path().string());
      s[e.path().string()] = hash64(b.data(), b.size());
    }
  return s;
}

TEST(Trainer, LockedRunDirIsRefusedAndUntouched) {
  Tmp tmp;
  std::string mix = make_mix(tmp.dir, "s1", 64 * 8 * 6, 3);
  fs::path run = tmp.dir / "run";
  {  // stopped at step 2 of 4 (the schedule of a 4-step run, resumed below)
    Trainer t(tiny(mix, run, {"trainer.max_steps=4", "trainer.hard_stop_steps=2"}));
    add_default_callbacks(t);
    t.fit();
  }
  auto before = snapshot(run);
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // another process holding the run dir
    ckpt::RunDirLock lock(run.string());
    char c = 'x';
    (void)!write(fds[1], &c, 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(1, read(fds[0], &c, 1));
  try {
    Trainer t(tiny(mix, run, {"trainer.max_steps=4"}));
    ADD_FAILURE() << "a locked run dir was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  }
  EXPECT_EQ(before, snapshot(run));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // Once the holder is gone the run resumes.
  Trainer t(tiny(mix, run, {"trainer.max_steps=4"}));
  EXPECT_EQ(t.start_kind(), StartKind::resume);
  EXPECT_EQ(t.step(), 2);
}

TEST(Trainer, FailedSaveKeepsPreviousCheckpoint) {
  Tmp tmp;
  std::string mix = make_mix(tmp.dir, "s1", 64 * 8 * 6, 4);
  fs::path run = tmp.dir / "run";
  Trainer t(tiny(mix, run));
  t.train_step();
  t.train_step();
  std::string good = t.save_checkpoint();
  auto before = snapshot(run / "step2");
  t.train_step();
  ckpt::set_write_fault_hook([](const std::string&, size_t) { return false; });  // disk full
  EXPECT_THROW(t.save_checkpoint(), Error);
  ckpt::set_write_fault_hook(nullptr);
  EXPECT_EQ(ckpt::list_checkpoints(run.string()), std::vector<int64_t>{2});
  EXPECT_FALSE(fs::exists(run / "step3"));
  EXPECT_FALSE(fs::exists(run / "step3-tmp"));
  auto latest = ckpt::latest_complete(run.string());
  ASSERT_TRUE(latest);
  EXPECT_EQ(*latest, good);
  EXPECT_EQ(before, snapshot(run / "step2"));
  // After the failure the next save works.
  EXPECT_NO_THROW(t.save_checkpoint());
}

TEST(Trainer, LossIsOneDivisionOverAllMicroBatches) {
  Tmp tmp;
  std::string mix = make_mix(tmp.dir, "s1", 64 * 8 * 6, 5);
  // Same step with 4 micro-batches of 2 and with 1 micro-batch of 8: the same loss (sum / total)
  // and the same gradient up to fp32 summation order.
  Trainer a(tiny(mix, tmp.dir / "a"));
  Trainer b(tiny(mix, tmp.dir / "b", {"data.micro_batch_tokens=512"}));
  StepResult ra = a.train_step(), rb = b.train_step();
  EXPECT_EQ(ra.target_tokens, 8 * 63);
  EXPECT_NEAR(ra.loss, rb.loss, 1e-6 * rb.loss);
  EXPECT_NEAR(ra.grad_norm, rb.grad_norm, 1e-4 * rb.grad_norm);
  // Independent check of the normalisation: per-instance forward sums over the same batch.
  Trainer c(tiny(mix, tmp.dir / "c"));
  data::DataLoader::Batch batch;
  data::FslDataset ds({(tmp.dir / "s1" / "part-0.npy").string()}, 64, 512);
  data::DataLoader l(ds, 8, 7);
  ASSERT_TRUE(l.next(batch));
  double ce = 0;
  int64_t count = 0;
  for (int i = 0; i < 8; ++i) {
    auto tg = data::make_targets(batch.tokens.data() + i * 64, 1, 64);
    auto s = c.model().forward_loss(batch.tokens.data() + i * 64, tg.data(), nullptr, 1, 64, 0.f);
    ce += s.ce_sum;
    count += s.count;
  }
  EXPECT_EQ(count, ra.target_tokens);
  EXPECT_NEAR(ra.loss, ce / double(count), 1e-5 * ra.loss);
}

}  // namespace
