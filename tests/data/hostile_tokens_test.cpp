// Token files whose ids lie outside the vocabulary (issue 11): an id equal to the vocab size,
// 2^31 (negative once cast to the int32 the model reads) and 2^32-1. Every reader of token files
// that feeds a model (FslDataset, PackedFslDataset, EvalDataset; validating at open or only on
// read) must refuse them with an olmo::Error naming the file and the offending offset, so no
// out-of-range id ever reaches an embedding lookup. The same for token-id line files
// (`olmo logits --tokens`, parse_token_lines): out-of-range, negative and 30-digit ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/eval_dataset.h"
#include "data/fsl_dataset.h"
#include "data/packed_dataset.h"
#include "data/token_lines.h"

namespace fs = std::filesystem;
using namespace olmo::data;

namespace {

constexpr uint32_t kVocab = 1000;

std::string write_tokens(const std::string& name, const std::vector<uint32_t>& ids) {
  const fs::path d = fs::temp_directory_path() / ("olmo_hostile_tok_" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string p = (d / name).string();
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), ids.size() * 4);
  return p;
}

struct Cleanup {
  ~Cleanup() { fs::remove_all(fs::temp_directory_path() / ("olmo_hostile_tok_" + std::to_string(::getpid()))); }
} cleanup;

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// 3 instances of 4 tokens; the bad id sits at token offset 6 (instance 1).
std::vector<uint32_t> with_bad(uint32_t bad) { return {5, 6, 7, 0, 9, 10, bad, 0, 11, 12, 13, 0}; }

const uint32_t kBad[] = {kVocab, 1u << 31, UINT32_MAX};

}  // namespace

TEST(HostileTokens, FslDatasetRefusesAtOpen) {
  for (uint32_t bad : kBad) {
    const std::string p = write_tokens("fsl.npy", with_bad(bad));
    const std::string m = error_of([&] { FslDataset ds({p}, 4, kVocab); });
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("token id " + std::to_string(bad)), std::string::npos) << m;
    EXPECT_NE(m.find("offset 6"), std::string::npos) << m;
  }
}

TEST(HostileTokens, FslDatasetWithoutValidationRefusesOnRead) {
  for (uint32_t bad : kBad) {
    const std::string p = write_tokens("fsl_lazy.npy", with_bad(bad));
    FslOptions opt;
    opt.validate = false;
    FslDataset ds({p}, 4, kVocab, opt);
    std::vector<int32_t> out(4);
    ds.read(0, out.data());  // clean instance
    EXPECT_EQ(out[0], 5);
    const std::string m = error_of([&] { ds.read(1, out.data()); });
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("is >= vocab size 1000"), std::string::npos) << m;
  }
}

TEST(HostileTokens, PackedDatasetRefuses) {
  for (bool validate : {true, false}) {
    const std::string p = write_tokens("packed.npy", with_bad(UINT32_MAX));
    PackedOptions opt;
    opt.eos_id = 0;
    opt.pad_id = 1;
    opt.validate = validate;
    const std::string m = error_of([&] {
      PackedFslDataset ds({p}, 4, kVocab, opt);
      std::vector<int32_t> out(4);
      for (int64_t i = 0; i < ds.size(); ++i) ds.read(i, out.data());
    });
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("4294967295"), std::string::npos) << m;
  }
}

TEST(HostileTokens, EvalDatasetRefuses) {
  for (bool validate : {true, false}) {
    const std::string p = write_tokens("eval.npy", with_bad(1u << 31));
    FslOptions opt;
    opt.eos_id = 0;
    opt.pad_id = 1;
    opt.validate = validate;
    const std::string m = error_of([&] {
      EvalDataset ds({p}, 8, kVocab, opt);
      std::vector<int32_t> in(8), tg(8);
      for (int64_t i = 0; i < ds.size(); ++i) ds.read(i, in.data(), tg.data(), nullptr);
    });
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("2147483648"), std::string::npos) << m;
  }
}

TEST(HostileTokens, TokenLinesOutsideTheVocabularyRefused) {
  EXPECT_EQ(parse_token_lines("1 2 999\n\n3\r\n", kVocab, "t.txt"),
            (std::vector<std::vector<int32_t>>{{1, 2, 999}, {3}}));
  for (const std::string bad : {"1000", "-1", "4294967296", "2147483648",
                                "123456789012345678901234567890"}) {
    const std::string m = error_of([&] { parse_token_lines("1 2\n3 " + bad + "\n", kVocab, "t.txt"); });
    EXPECT_NE(m.find("t.txt:2: token id " + bad + " outside the vocabulary [0, 1000)"),
              std::string::npos)
        << m;
  }
  EXPECT_NE(error_of([&] { parse_token_lines("1 0x10\n", kVocab, "t.txt"); }).find("t.txt:1: '0x10' is not a token id"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_token_lines(" \n\n", kVocab, "t.txt"); }).find("t.txt: no token sequences"),
            std::string::npos);
}
