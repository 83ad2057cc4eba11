// The one definition of the dolma2 (OLMo 2/3) special token ids and of the loss's ignore index,
// shared by the tokenizer, the datasets, the loss kernel, evaluation and HF export.
// dolma2 layout: cl100k ranks 0..100255, 22 specials at 100256..100277, vocab 100278 (the model
// pads it to 100352), no BOS; <|endoftext|> = 100257 ends every document, <|pad|> = 100277.
// Targets equal to kIgnoreIndex (-100, PyTorch's cross_entropy default) are not supervised.
#pragma once
#include <cstdint>

namespace olmo {

inline constexpr uint32_t kDolma2FirstSpecial = 100256;
inline constexpr uint32_t kDolma2VocabSize = 100278;
inline constexpr uint32_t kDolma2Eos = 100257;
inline constexpr uint32_t kDolma2Pad = 100277;
inline constexpr int32_t kIgnoreIndex = -100;

}  // namespace olmo
