// The settings of the gradient reduction (dist.reduce, dist.exact_accumulator), as enums with
// their names: the config table (train/config.cpp choice_fields), the reference docs and
// `olmo info --reduce / --exact-accumulator` use these lists. See zero.h for what they do.
#pragma once
#include <cstdint>
#include <string>

namespace olmo::dist {

enum class ReduceMode { exact, fast };
// The valid names of dist.reduce, in ReduceMode order.
inline constexpr const char* kReduceModeNames[] = {"exact", "fast"};
// Throws olmo::Error naming the valid values for any other string.
ReduceMode parse_reduce_mode(const std::string& s);

// dist.exact_accumulator: which accumulator exact mode sums micro-batches into.
enum class AccumulatorSetting { automatic, local, sharded };
// The valid names, in AccumulatorSetting order.
inline constexpr const char* kAccumulatorSettingNames[] = {"auto", "local", "sharded"};

// dist.exact_accumulator -> true for the local accumulator, false for the sharded one.
// local / sharded as given; auto (the default) picks local on one process (the same
// memory either way) and otherwise sharded when it costs no extra
// traffic (one micro-batch per rank per step: the same one reduce-scatter, 1/W the memory) or
// when the world is large (world > kLocalAccumulatorMaxWorld: 8 B per parameter on every rank
// would dwarf the ZeRO-sharded state; olmo3-7b at 64 ranks: 54.4 GiB local vs 0.85 GiB
// sharded), local otherwise. The trainer also falls back to sharded when the local plan does
// not fit the available memory. Either accumulator gives the same bits.
constexpr int64_t kLocalAccumulatorMaxWorld = 8;
bool local_accumulator(AccumulatorSetting setting, int64_t world, int64_t micro_batches_per_rank);
// The same from the setting's name (throws olmo::Error naming the valid values for another).
bool local_accumulator(const std::string& setting, int64_t world, int64_t micro_batches_per_rank);

}  // namespace olmo::dist
