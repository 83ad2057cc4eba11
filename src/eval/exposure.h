// Canary exposure (Carlini et al. 2019, "The Secret Sharer"), rank-based:
//   exposure(c) = log2 |R| - log2 rank(c),   rank(c) = 1 + #{r in R, r != c : ll(r) > ll(c)}
// where R is the canary's own secret plus |R|-1 reference secrets that training never saw, all
// scored in the canary's own format: ll(s) = sum log p(" d d d ..." | [eos] + prefix) over the
// secret's tokens (eos stands in front as before every training document). The references are
// the control secrets (canaries.json entries with count 0, never inserted) followed by random
// secrets of the same length (splitmix64 digits, fixed seed), excluding every canary secret; the
// same list serves every canary (a control skips its own secret). A never-seen secret has
// expected exposure ~log2(e) = 1.44 bits; memorised ones approach log2 |R|.
// canaries.json (written by `olmo corpus build`): [{"name", "count", "secret", "prefix",
// "text"}, ...]; when "text" is present it must tokenize exactly as prefix + secret tokens
// (checked at load), so the scored tokens are the ones the model trained on.
// Cost: |R| forwards of ~|prefix| + 2*digits tokens per canary (batch 1).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "model/olmo3.h"

namespace olmo::eval {

struct CanarySpec {
  std::string name, prefix, secret, text;
  int count = 0;
};

// Reads canaries.json; errors name the file and the entry.
std::vector<CanarySpec> load_canaries(const std::string& path);
// Keeps the first per_count canaries of every count (file order); per_count <= 0 keeps all.
std::vector<CanarySpec> take_per_count(const std::vector<CanarySpec>& all, int64_t per_count);
// " d d d ..." : how a secret follows its prefix in the canary text.
std::string secret_text(const std::string& secret);
// The shared reference list (see the header comment): `n` secrets, distinct, none equal to a
// canary secret of count > 0; controls first. Needs every secret to have the same length.
std::vector<std::string> reference_secrets(const std::vector<CanarySpec>& all, int64_t n,
                                           uint64_t seed = 0x65787073);  // "exps"
// exposure from the canary's score and the references' scores.
double exposure_from_scores(double ll_canary, const std::vector<double>& ll_refs, int64_t* rank);

struct CanaryExposure {
  std::string name;
  int count = 0;
  double ll = 0;                 // the canary secret's log-likelihood
  int64_t rank = 0, candidates = 0;
  double exposure = 0;
  std::vector<std::string> refs;  // reference secrets used (canary's own excluded)
  std::vector<double> ref_ll;
};
struct CountExposure {
  int64_t canaries = 0;
  double mean = 0, min = 0, max = 0;
};
struct ExposureResult {
  std::vector<CanaryExposure> canaries;
  std::map<int, CountExposure> by_count;  // repetition count -> summary (0 = controls)
  int64_t candidates = 0, forwards = 0;
  double seconds = 0;
};

class ExposureEvaluator {
 public:
  // candidates = |R| (>= 2) per canary; per_count as take_per_count. Throws naming the file.
  ExposureEvaluator(const std::string& canaries_path, const tokenizer::Tokenizer& tok,
                    int64_t candidates, int64_t per_count);
  ExposureResult run(model::Olmo3& m) const;
  int64_t canaries() const { return int64_t(items_.size()); }
  int64_t candidates() const { return candidates_; }

 private:
  struct Item {
    CanarySpec spec;
    std::vector<int32_t> prefix, secret;        // [eos] + prefix tokens; the secret's tokens
    std::vector<std::string> refs;
    std::vector<std::vector<int32_t>> ref_tokens;
  };
  std::string path_;
  std::vector<Item> items_;
  int64_t candidates_ = 0;
  uint32_t max_id_ = 0;
};

}  // namespace olmo::eval
