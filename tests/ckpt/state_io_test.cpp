// ckpt/state_io.h through a toy stateful object that declares its fields once (visit): a save /
// load round trip restores restore-fields and tensors and leaves info-fields alone; a changed
// check-field or a missing field is refused naming section and field; the group fingerprints
// computed at save, from memory (fingerprint mode) and from the stored sections alone agree, and
// a checkpoint without a recorded spec is verified with the legacy groups (their formula written
// out here independently); two ranks' flat shards add up to the whole tensor's fingerprint.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/state_io.h"
#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace olmo;
using namespace olmo::ckpt;

namespace {

// Two tensors in one flat buffer: a [2, 3] at 0, b [4] at 6.
const FlatLayout kLayout = {{"a", {2, 3}, 0, 6}, {"b", {4}, 6, 4}};

struct Toy {
  int64_t step = 0;
  std::vector<float> steps = {0, 0};
  size_t numel = 10;
  double beta = 0.9;
  std::vector<float> buf = std::vector<float>(10, 0.f);
  json dict = json::object();
  bool extra = false;  // declares one more field (a newer writer's)
  void visit(StateVisitor& v) {
    {
      StateVisitor::Section s(v, "toy");
      v.field("step", step, {"pos"});
      v.field("steps", steps, {"toy"});
      v.check("numel", numel, {"toy"});
      v.info("beta", beta);
      if (extra) v.field("extra", step);
      v.flat("m/", buf.data(), 0, buf.size());
    }
    StateVisitor::Section s(v, "dict");
    v.whole(dict, {"dict", {"seed", "epoch"}});
  }
  StateFn fn() {
    return [this](StateVisitor& v) { visit(v); };
  }
};

Toy filled() {
  Toy t;
  t.step = 42;
  t.steps = {3, 4};
  t.beta = 0.5;
  for (size_t i = 0; i < t.buf.size(); ++i) t.buf[i] = 0.25f * float(i) - 1.f;
  t.dict = {{"seed", 7}, {"epoch", 2}, {"note", "not fingerprinted"}};
  return t;
}

struct TmpDir {
  std::string path;
  TmpDir() {
    char tmpl[] = "/tmp/olmo_state_io_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TmpDir() { fs::remove_all(path); }
};

}  // namespace

TEST(StateIo, SaveLoadRoundTrip) {
  TmpDir d;
  Toy a = filled();
  const std::string dir = save_state(d.path, 42, a.fn(), kLayout);
  EXPECT_EQ(dir, d.path + "/step42");
  CheckpointReader r(dir);
  r.verify();
  EXPECT_EQ(r.json("toy")["beta"], 0.5);  // info: saved
  Toy b;
  load_state(r, b.fn(), kLayout);
  EXPECT_EQ(b.step, 42);
  EXPECT_EQ(b.steps, a.steps);
  EXPECT_EQ(b.buf, a.buf);
  EXPECT_EQ(b.dict, a.dict);
  EXPECT_EQ(b.beta, 0.9);  // info: never read back
  // The tensors are stored per name with their global shapes.
  EXPECT_EQ(r.shape("m/a"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.shape("m/b"), (std::vector<int64_t>{4}));
}

TEST(StateIo, CheckAndMissingFieldsRefusedByName) {
  TmpDir d;
  Toy a = filled();
  CheckpointReader r(save_state(d.path, 1, a.fn(), kLayout));
  Toy b;
  b.numel = 11;
  try {
    load_state(r, b.fn(), kLayout);
    FAIL() << "a changed check-field loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("toy.numel is 10 but this run has 11"), std::string::npos)
        << e.what();
  }
  Toy c;
  c.extra = true;
  try {
    load_state(r, c.fn(), kLayout);
    FAIL() << "a missing field loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("section 'toy' has no field 'extra'"), std::string::npos)
        << e.what();
  }
}

TEST(StateIo, FingerprintsAgreeAtSaveInMemoryAndOnDisk) {
  TmpDir d;
  Toy a = filled();
  const StateSnapshot snap = snapshot_state(a.fn(), kLayout, 0);
  EXPECT_EQ(snap.state_fp.size(), 3u);  // groups pos, toy, dict
  // The dict group holds only its selected keys: the formula written out.
  EXPECT_EQ(snap.state_fp["dict"], hex64(fingerprint_json(json{{"seed", 7}, {"epoch", 2}})));
  EXPECT_EQ(snap.state_fp["pos"], hex64(fingerprint_json(json{{"step", 42}})));
  const StateFingerprint mem = fingerprint_state(a.fn(), kLayout, 0, 0, 10);
  EXPECT_EQ(mem.state, snap.state_fp);
  CheckpointReader r(save_state(d.path, 5, a.fn(), kLayout));
  EXPECT_EQ(stored_state_fingerprints(r), snap.state_fp);
  const auto disk = checkpoint_tensor_fingerprints(r);
  EXPECT_EQ(disk.at("m/a"), mem.tensor_partials.at("m/a"));
  EXPECT_EQ(disk.at("m/b"), mem.tensor_partials.at("m/b"));
  EXPECT_EQ(r.json("fingerprint")["tensors"]["m/a"], hex64(disk.at("m/a")));
  // A changed non-fingerprinted key leaves the group; a changed fingerprinted one moves it.
  Toy b = filled();
  b.dict["note"] = "changed";
  EXPECT_EQ(fingerprint_state(b.fn(), kLayout, 0, 0, 10).state, snap.state_fp);
  b.dict["epoch"] = 3;
  EXPECT_NE(fingerprint_state(b.fn(), kLayout, 0, 0, 10).state["dict"], snap.state_fp["dict"]);
}

TEST(StateIo, ShardsOfTwoRanksAddUp) {
  // Rank 0 holds [0, 4) of the flat buffer, rank 1 [4, 10): a's rows are cut across ranks.
  Toy a = filled();
  auto shard = [&](size_t lo, size_t hi) {
    return [&a, lo, hi](StateVisitor& v) {
      StateVisitor::Section s(v, "toy");
      v.flat("m/", a.buf.data() + lo, lo, hi);
    };
  };
  const StateSnapshot s0 = snapshot_state(shard(0, 4), kLayout, 0);
  const StateSnapshot s1 = snapshot_state(shard(4, 10), kLayout, 1);
  EXPECT_EQ(s0.tensor_names, s1.tensor_names);  // every rank names every tensor
  size_t n = 0;
  for (const auto& p : s0.pieces) n += p.numel();
  for (const auto& p : s1.pieces) n += p.numel();
  EXPECT_EQ(n, 10u);
  const auto f0 = fingerprint_state(shard(0, 4), kLayout, 0, 0, 4).tensor_partials;
  const auto f1 = fingerprint_state(shard(4, 10), kLayout, 1, 4, 10).tensor_partials;
  const auto whole = fingerprint_state(a.fn(), kLayout, 0, 0, 10).tensor_partials;
  for (const char* t : {"m/a", "m/b"}) EXPECT_EQ(f0.at(t) + f1.at(t), whole.at(t)) << t;
}

TEST(StateIo, LegacyCheckpointVerifiedWithLegacyGroups) {
  // A checkpoint as olmo.cpp wrote it before the spec was recorded: the five groups of
  // trainer / loader / skip_step / optim sections.
  TmpDir d;
  const json trainer = {{"step", 3}, {"tokens_seen", 96}, {"t_max", 10}, {"lr0", 1e-3},
                        {"scheduler", {{"name", "constant"}}}, {"lr", 1e-3}};
  const json loader = {{"seed", 1}, {"epoch", 1}, {"tokens_processed", 96}, {"batches_processed", 3}};
  const json skip = {{"rolling_interval_length", 4}, {"sigma_factor", 6.0}, {"losses", {1.0, 2.0}},
                     {"grad_norms", {0.5, 0.25}}};
  const json optim = {{"numel", 10}, {"steps", {3.0}}, {"beta1", 0.9},
                      {"groups", {{{"name", "default"}, {"offset", 0}, {"numel", 10}, {"weight_decay", 0.1}}}}};
  CheckpointWriter w(d.path, 3);
  w.add_json("trainer", trainer);
  w.add_json("loader", loader);
  w.add_json("skip_step", skip);
  w.add_json("optim", optim);
  w.add_json("fingerprint", json{{"version", 1}, {"tensors", json::object()}, {"state", json::object()}});
  CheckpointReader r(w.commit());
  auto fp = [](const json& j) { return hex64(fingerprint_json(j)); };
  const json want = {
      {"trainer", fp({{"step", 3}, {"tokens_seen", 96}})},
      {"schedule", fp({{"t_max", 10}, {"lr0", 1e-3}, {"scheduler", {{"name", "constant"}}}})},
      {"loader", fp({{"seed", 1}, {"epoch", 1}, {"tokens_processed", 96}})},
      {"skip_step", fp({{"rolling_interval_length", 4}, {"losses", {1.0, 2.0}}, {"grad_norms", {0.5, 0.25}}})},
      {"optim", fp({{"numel", 10}, {"steps", {3.0}}, {"groups", {{{"offset", 0}, {"numel", 10}}}}})}};
  EXPECT_EQ(stored_state_fingerprints(r), want);
}
