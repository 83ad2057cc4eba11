// Activation checkpointing: the choice of checkpointed blocks (act_checkpoint.h; the mode names
// and validate() are in config.cpp, which the HF-config fuzz target builds alone).
#include "model/act_checkpoint.h"

#include "model/config.h"
#include "model/flops.h"

namespace olmo::model {

namespace {
// k blocks of L checkpointed, spread evenly: block i when floor((i+1)k/L) > floor(ik/L).
std::vector<char> spread(int64_t L, int64_t k) {
  std::vector<char> m(size_t(L), 0);
  for (int64_t i = 0; i < L; ++i) m[size_t(i)] = (i + 1) * k / L > i * k / L;
  return m;
}
}  // namespace

std::vector<char> checkpointed_blocks(const ModelConfig& c) {
  const int64_t L = c.n_layers;
  const ActCheckpointing& a = c.act_ckpt;
  switch (a.mode) {
    case AcMode::none:
      return std::vector<char>(size_t(L), 0);
    case AcMode::full:
      return std::vector<char>(size_t(L), 1);
    case AcMode::selected_blocks: {
      std::vector<char> m(size_t(L), 0);
      for (int64_t i = 0; i < L; ++i) m[size_t(i)] = i % a.block_interval == 0;
      return m;
    }
    case AcMode::budget: {
      const double limit = a.budget * double(activation_floats_per_token(c, spread(L, 0)));
      for (int64_t k = 0; k < L; ++k)
        if (double(activation_floats_per_token(c, spread(L, k))) <= limit) return spread(L, k);
      return spread(L, L);
    }
  }
  return std::vector<char>(size_t(L), 0);
}

}  // namespace olmo::model
