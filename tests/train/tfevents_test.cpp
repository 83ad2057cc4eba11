// CRC-32C against RFC 3720 (iSCSI) appendix B.4 test vectors and the TFRecord framing of the
// TensorBoard event writer (src/train/tfevents.h): frame/split round trip, a torn tail, the
// Event head decoder, and the resume filter on a real directory. The files themselves are read
// back by TensorBoard's own reader in tests/train/tensorboard_test.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/file_io.h"
#include "train/metrics_log.h"
#include "train/tfevents.h"

namespace fs = std::filesystem;
using namespace olmo;
using namespace olmo::train;

TEST(Crc32c, Rfc3720Vectors) {
  std::vector<uint8_t> b(32);
  std::fill(b.begin(), b.end(), 0x00);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x8A9136AAu);
  std::fill(b.begin(), b.end(), 0xFF);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) b[size_t(i)] = uint8_t(i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) b[size_t(i)] = uint8_t(31 - i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x113FDB5Cu);
  // An iSCSI SCSI Read (10) command PDU (RFC 3720 B.4).
  const uint8_t pdu[48] = {0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                           0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
                           0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(crc32c(pdu, sizeof pdu), 0xD9963A56u);
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the common check value
  // Streaming: two halves continue into the whole.
  EXPECT_EQ(crc32c("56789", 5, crc32c("1234", 4)), 0xE3069283u);
}

TEST(Crc32c, MaskRoundTrip) {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) EXPECT_EQ(crc32c_unmask(crc32c_mask(c)), c);
  EXPECT_EQ(crc32c_mask(0), 0xa282ead8u);
}

TEST(TfRecord, FrameSplitAndTornTail) {
  const std::string a = tb_scalars_event(1.5, 7, {{"train/loss", 2.5f}});
  const std::string b = tb_file_version_event(2.0);
  const std::string bytes = tfrecord_frame(a) + tfrecord_frame(b);
  EXPECT_EQ(bytes.size(), a.size() + b.size() + 32);
  size_t valid = 0;
  auto recs = tfrecord_split(bytes, &valid);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0], a);
  EXPECT_EQ(recs[1], b);
  EXPECT_EQ(valid, bytes.size());
  // A crash mid-record: the intact prefix only.
  recs = tfrecord_split(std::string_view(bytes).substr(0, bytes.size() - 3), &valid);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(valid, a.size() + 16);
  // A flipped data byte fails its CRC.
  std::string bad = bytes;
  bad[14] ^= 0x10;
  EXPECT_TRUE(tfrecord_split(bad).empty());
}

TEST(TfEvents, EventHead) {
  EXPECT_EQ(tb_event_head(tb_scalars_event(1.0, 123456789012LL, {{"x", 1.0f}})).step,
            123456789012LL);
  EXPECT_FALSE(tb_event_head(tb_scalars_event(1.0, 3, {})).file_version);
  EXPECT_TRUE(tb_event_head(tb_file_version_event(1.0)).file_version);
  EXPECT_EQ(tb_event_head(tb_session_start_event(1.0, 11)).step, 11);
}

TEST(TfEvents, TruncateAfterKeepsStepsUpToN) {
  const fs::path dir = fs::temp_directory_path() / ("olmo_tfevents_" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string first;
  {
    TfEventsWriter w(dir.string());
    for (int s = 1; s <= 8; ++s) w.write_scalars(100.0 + s, s, {{"train/loss", float(s)}});
    first = w.path();
  }
  {
    std::string torn = read_file(first);
    write_file_atomic(first, torn + tfrecord_frame(tb_scalars_event(9, 9, {{"a", 1}})).substr(0, 20));
  }
  TfEventsWriter w(dir.string());
  w.truncate_after(5);
  w.write_scalars(200.0, 6, {{"train/loss", 60.0f}});
  ASSERT_NE(w.path(), first);
  EXPECT_LT(fs::path(first).filename().string(), fs::path(w.path()).filename().string());
  std::vector<int64_t> steps;
  for (const auto& r : tfrecord_split(read_file(first))) steps.push_back(tb_event_head(r).step);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));  // header, steps <= 5, no torn tail
  steps.clear();
  for (const auto& r : tfrecord_split(read_file(w.path()))) steps.push_back(tb_event_head(r).step);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 6, 6}));  // header, START at 6, step 6
  fs::remove_all(dir);
}

TEST(TfEvents, ScalarTags) {
  auto tags = [](const nlohmann::json& r) {
    std::vector<std::string> t;
    for (auto& s : tensorboard_scalars(r)) t.push_back(s.tag);
    return t;
  };
  EXPECT_EQ(tags({{"kind", "eval"}, {"step", 5}, {"set", "c4"}, {"loss", 3.0}, {"note", "x"}}),
            (std::vector<std::string>{"eval/c4/loss"}));
  EXPECT_EQ(tags({{"kind", "alarm"}, {"step", 5}, {"source", "data"}, {"cause", "dup"}}),
            (std::vector<std::string>{"alarm/data/dup"}));
  EXPECT_EQ(tags({{"kind", "validation"}, {"step", 5}, {"heldout", {{"a", 1.0}}}}),
            (std::vector<std::string>{"validation/heldout/a"}));
  EXPECT_TRUE(tags({{"kind", "info"}, {"step", 5}, {"seconds", 1.0}}).empty());
  EXPECT_TRUE(tags({{"kind", "train"}, {"loss", 1.0}}).empty());  // no step
}
