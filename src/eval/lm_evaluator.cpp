// Held-out loss / perplexity (see lm_evaluator.h).
#include "eval/lm_evaluator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/timer.h"
#include "data/token_paths.h"

namespace fs = std::filesystem;

namespace olmo::eval {

LmEvaluator::LmEvaluator(std::string label, const std::string& path, int64_t seq_len,
                         uint32_t vocab_size, data::FslOptions opt, int64_t max_instances,
                         int64_t batch_instances)
    : label_(std::move(label)), batch_(std::max<int64_t>(1, batch_instances)) {
  try {
    ds_ = std::make_unique<data::EvalDataset>(data::expand_token_paths(path), seq_len, vocab_size, opt);
  } catch (const Error& e) {
    throw Error(cat("held-out set '", label_, "': ", e.what()));
  }
  n_ = max_instances > 0 ? std::min(max_instances, ds_->size()) : ds_->size();
}

EvalResult LmEvaluator::run(model::Olmo3& m) const {
  EvalResult r;
  r.label = label_;
  double t0 = now_seconds();
  const int64_t T = ds_->seq_len();
  std::vector<int32_t> in(batch_ * T), tg(batch_ * T), in_c, tg_c;
  double ce = 0;
  int64_t count = 0;
  for (int64_t first = 0; first < n_; first += batch_) {
    int64_t b = std::min(batch_, n_ - first);
    ds_->read_batch(first, b, in.data(), tg.data());
    int64_t L = 1;
    for (int64_t i = 0; i < b; ++i) L = std::max(L, ds_->length(first + i));
    in_c.resize(b * L);
    tg_c.resize(b * L);
    for (int64_t i = 0; i < b; ++i) {
      std::copy_n(in.data() + i * T, L, in_c.data() + i * L);
      std::copy_n(tg.data() + i * T, L, tg_c.data() + i * L);
    }
    kernels::LossSums s = m.forward_loss(in_c.data(), tg_c.data(), nullptr, b, L, 0.0f);
    ce += s.ce_sum;
    count += s.count;
  }
  r.instances = n_;
  r.tokens = count;
  r.loss = count > 0 ? ce / double(count) : 0.0;
  r.ppl = std::exp(r.loss);
  r.seconds = now_seconds() - t0;
  return r;
}

}  // namespace olmo::eval
