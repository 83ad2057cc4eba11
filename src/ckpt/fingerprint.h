// Layout-independent fingerprints of checkpointed state: the same value for a global tensor
// whatever the world size, shard layout or piece order that holds it, so a resume can prove that
// the state it loaded (any world size, resharded or not) is the state that was saved.
//
// Tensor fingerprint of a global tensor x of n 32-bit elements (flattened row-major):
//   F(x) = sum over i of  t_i * c[i div L]   (mod 2^64),
//   t_i  = bits(x_i) * b[i mod L]   (mod 2^32, as an unsigned 32-bit integer)
// with L = 1024 and fixed pseudo-random odd coefficients b (32-bit) and c (64-bit). F is a sum
// of per-element terms, so any split of [0, n) into pieces gives partial sums that add up (mod 2^64) to F:
// ranks fingerprint their own shards and one integer sum combines them. A change of any single
// element always changes F (t_i is a bijection of x_i because b is odd, so t_i changes by some
// d with 0 < |d| < 2^32, and d times the odd c is nonzero mod 2^64); several changes cancel
// with probability about 2^-64. Not cryptographic.
// Cost: a 32-bit multiply and a few adds per element, vectorised per ISA (fingerprint_body.h);
// OpenMP over chunks; no allocation. tests/ckpt/fingerprint_test.cpp prints the ns/element.
//
// JSON fingerprint: hash64 (XXH3) of the value's canonical dump (nlohmann sorts object keys).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace olmo::ckpt {

// Partial fingerprint of elements [begin, begin + n) of a global tensor whose element `begin`
// is data[0] (data holds 32-bit values: f32 or u32/i32 bit patterns).
// threads: OpenMP over chunks for large n (false: this thread only, e.g. from a helper thread).
uint64_t fingerprint_partial(const void* data, size_t n, size_t begin, bool threads = true);

// Slow, readable reference of fingerprint_partial (one element at a time); tests hold them equal.
uint64_t fingerprint_partial_reference(const void* data, size_t n, size_t begin);

uint64_t fingerprint_json(const nlohmann::json& j);

class CheckpointReader;

// Fingerprint of every global tensor of a checkpoint computed from its stored pieces (any world
// size wrote them), name -> F. Checks that each tensor's pieces cover it exactly once (no hole,
// no overlap; errors name the checkpoint and the tensor). 32-bit dtypes (f32, i32, u32) only;
// other tensors are skipped. Cost: one read of every stored byte.
std::map<std::string, uint64_t> checkpoint_tensor_fingerprints(const CheckpointReader& r);

}  // namespace olmo::ckpt
