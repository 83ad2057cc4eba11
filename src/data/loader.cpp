// OLMo-core NumpyFSLDataLoader equivalent (see loader.h).
#include "data/loader.h"

#include <algorithm>

#include "core/error.h"
#include "core/hash.h"
#include "data/pcg64.h"

namespace olmo::data {

DataLoader::DataLoader(const InstanceSource& ds, int64_t global_batch_instances, uint64_t seed,
                       int rank, int world, bool shuffle)
    : ds_(ds), gb_(global_batch_instances), seed_(seed), rank_(rank), world_(world),
      shuffle_(shuffle) {
  OLMO_CHECK(world_ >= 1 && rank_ >= 0 && rank_ < world_, "data loader: rank ", rank_,
             " is not in a world of size ", world_);
  check_batch_shape(gb_);
}

void DataLoader::check_batch_shape(int64_t b) const {
  OLMO_CHECK(b >= 1, "data loader: global batch must be >= 1 instance, got ", b);
  OLMO_CHECK((b + chunk_ - 1) / chunk_ >= world_, "data loader: global batch of ", b,
             " instances in rank chunks of ", chunk_, " leaves some of the ", world_,
             " ranks without an instance");
  OLMO_CHECK(ds_.size() >= b, "data loader: dataset of ", ds_.size(),
             " instances is smaller than one global batch of ", b, " instances");
}

const std::vector<uint32_t>& DataLoader::epoch_order(int64_t e) {
  if (order_epoch_ != e || order_seed_ != seed_) {
    order_ = global_order(ds_.size(), seed_, e, shuffle_);
    order_epoch_ = e;
    order_seed_ = seed_;
  }
  return order_;
}

std::vector<int64_t> DataLoader::global_batch(int64_t e, int64_t b) {
  OLMO_CHECK(b >= 0 && b < batches_per_epoch(), "data loader: batch ", b, " out of range [0, ",
             batches_per_epoch(), ")");
  const auto& ord = epoch_order(e);
  std::vector<int64_t> out(static_cast<size_t>(gb_));
  for (int64_t i = 0; i < gb_; ++i) out[i] = ord[b * gb_ + i];
  return out;
}

uint64_t DataLoader::global_batch_hash(int64_t e, int64_t b) {
  std::vector<int64_t> idx = global_batch(e, b);
  Hasher h;
  for (int64_t i : idx) ds_.hash_into(h, i);
  return h.digest();
}

bool DataLoader::next(Batch& out) {
  if (batches_processed_ >= batches_per_epoch()) {
    if (max_epochs_ > 0 && epoch_ >= max_epochs_) return false;
    ++epoch_;  // Trainer: epoch += 1, data_loader.reset(), reshuffle(epoch)
    batches_processed_ = 0;
    tokens_processed_ = 0;
  }
  const int64_t b = batches_processed_;
  const int64_t T = ds_.seq_len();
  const int64_t local = rank_slice_len(gb_, rank_, world_, chunk_);
  const auto& ord = epoch_order(epoch_);
  const uint32_t* row = ord.data() + b * gb_;
  out.B = local;
  out.T = T;
  out.epoch = epoch_;
  out.batch_index = b;
  out.tokens.resize(static_cast<size_t>(local * T));
  out.instance_indices.resize(static_cast<size_t>(local));
  for (int64_t k = 0; k < local; ++k) {
    // k-th instance of this rank: chunk (k / c) of this rank, position k % c in it.
    const int64_t c = chunk_;
    const int64_t idx = row[((k / c) * world_ + rank_) * c + k % c];
    out.instance_indices[k] = idx;
    ds_.read(idx, out.tokens.data() + k * T);
  }
  Hasher h;
  for (int64_t i = 0; i < gb_; ++i) ds_.hash_into(h, row[i]);
  out.global_hash = h.digest();
  ++batches_processed_;
  tokens_processed_ += gb_ * T;
  return true;
}

int64_t rank_slice_len(int64_t B, int rank, int world, int64_t c) {
  // Chunk j (columns [j c, min(B, (j+1) c))) belongs to rank j % W.
  int64_t n = 0;
  for (int64_t j = rank; j * c < B; j += world) n += std::min(c, B - j * c);
  return n;
}

nlohmann::json DataLoader::state() const {
  return {
      {"dataset_fingerprint_version", ds_.fingerprint_version()},
      {"dataset_fingerprint", ds_.fingerprint()},
      {"batches_processed", batches_processed_},
      {"tokens_processed", tokens_processed_},
      {"seed", seed_},
      {"epoch", epoch_},
      {"dataset_type", ds_.dataset_type()},
      {"sequence_length", ds_.seq_len()},
      {"max_target_sequence_length", nullptr},
  };
}

void DataLoader::load_state(const nlohmann::json& st, bool ignore_fingerprint_mismatch) {
  OLMO_CHECK(st.is_object(), "data loader state: expected a JSON object");
  auto need = [&](const char* k) -> const nlohmann::json& {
    OLMO_CHECK(st.contains(k), "data loader state: missing key '", k, "'");
    return st.at(k);
  };
  try {
    OLMO_CHECK(need("dataset_type").get<std::string>() == ds_.dataset_type(),
               "data loader state: dataset_type '",
               need("dataset_type").get<std::string>(),
               "' cannot be restored into a fixed sequence length dataset");
    OLMO_CHECK(!st.contains("max_target_sequence_length") ||
                   st.at("max_target_sequence_length").is_null(),
               "data loader state: max_target_sequence_length ",
               st.at("max_target_sequence_length").dump(),
               " differs from this dataset's (None); not supported");
    // As OLMo-core: a different fingerprint version only warns (the fingerprint is not compared).
    if (need("dataset_fingerprint_version").get<std::string>() == ds_.fingerprint_version()) {
      std::string fp = need("dataset_fingerprint").get<std::string>();
      OLMO_CHECK(fp == ds_.fingerprint() || ignore_fingerprint_mismatch,
                 "data loader state: dataset fingerprint ", fp, " does not match this dataset's ",
                 ds_.fingerprint(),
                 " (different files, sizes or settings); pass ignore_fingerprint_mismatch to "
                 "resume anyway, which will probably change the data order");
    }
    const uint64_t seed = need("seed").get<uint64_t>();
    const int64_t tokens = need("tokens_processed").get<int64_t>();
    need("batches_processed");
    OLMO_CHECK(tokens >= 0, "data loader state: negative tokens_processed");
    int64_t epoch = epoch_;
    if (!need("epoch").is_null()) epoch = st.at("epoch").get<int64_t>();
    OLMO_CHECK(epoch >= 1, "data loader state: epoch must be >= 1, got ", epoch);
    seed_ = seed;  // the checkpoint's seed wins, for data order consistency
    tokens_processed_ = tokens;
    batches_processed_ = tokens / global_batch_tokens();
    epoch_ = epoch;
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("data loader state: ", e.what()));
  }
}

void DataLoader::set_rank_chunk(int64_t c) {
  OLMO_CHECK(c >= 1, "data loader: rank chunk must be >= 1 instance, got ", c);
  const int64_t old = chunk_;
  chunk_ = c;
  try {
    check_batch_shape(gb_);
  } catch (...) {
    chunk_ = old;
    throw;
  }
}

void DataLoader::set_global_batch_instances(int64_t b) {
  check_batch_shape(b);
  if (b > gb_) {
    OLMO_CHECK(b % gb_ == 0, "data loader: global batch can only grow by an integer factor (",
               gb_, " -> ", b, ")");
    int64_t r = b / gb_;
    OLMO_CHECK(batches_processed_ % r == 0, "data loader: growing the global batch by ", r,
               "x needs batches_processed (", batches_processed_, ") divisible by ", r);
    batches_processed_ /= r;
  } else if (b < gb_) {
    OLMO_CHECK(gb_ % b == 0, "data loader: global batch can only shrink by an integer factor (",
               gb_, " -> ", b, ")");
    batches_processed_ *= gb_ / b;
  }
  gb_ = b;
}

}  // namespace olmo::data
