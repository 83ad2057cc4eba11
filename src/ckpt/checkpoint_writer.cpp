// CheckpointWriter: streams tensors into stepN-tmp/, then index, marker, fsync and atomic rename.
#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "ckpt/checkpoint_detail.h"
#include "core/error.h"
#include "core/file_io.h"
#include "ckpt/fingerprint.h"
#include "core/hash.h"
#include "core/timer.h"

namespace fs = std::filesystem;

namespace olmo::ckpt {

using namespace detail;

// ---------------------------------------------------------------------------------------------
// Writer

namespace {

// The fingerprint partial sum (ckpt/fingerprint.h) of one stored piece, walked in order: add(p, e1)
// covers the piece's local elements from where the last call stopped up to e1 (p: the piece's
// first byte). The piece is cut into runs contiguous in the global tensor: the whole block
// when every dimension after the first is complete (whole tensors, flat_range_blocks' full-row
// blocks), else one row of the last dimension.
class PieceFingerprint {
 public:
  explicit PieceFingerprint(const TensorEntry& e) : e_(e), rank_(int64_t(e.local_shape.size())) {
    bool whole_rows = true;
    for (int64_t d = 1; d < rank_; ++d)
      whole_rows &= e.local_shape[size_t(d)] == e.global_shape[size_t(d)];
    run_ = rank_ == 0 ? 1 : (whole_rows ? numel_of(e.local_shape) : e.local_shape.back());
    idx_.assign(size_t(std::max<int64_t>(rank_, 1)), 0);
  }
  uint64_t add(const char* p, int64_t e1, bool threads) {
    uint64_t f = 0;
    while (run_ > 0 && row_start_ < e1) {
      int64_t g = 0;  // global flat index of the run's first element
      for (int64_t d = 0; d < rank_; ++d)
        g = g * e_.global_shape[size_t(d)] + e_.offset[size_t(d)] + idx_[size_t(d)];
      const int64_t a = std::max(row_start_, done_), b = std::min(row_start_ + run_, e1);
      f += fingerprint_partial(p + 4 * a, size_t(b - a), size_t(g + (a - row_start_)), threads);
      done_ = b;
      if (row_start_ + run_ > e1) break;  // the run continues in the next call
      row_start_ += run_;
      for (int64_t d = rank_ - 1; d-- > 0;) {
        if (++idx_[size_t(d)] < e_.local_shape[size_t(d)]) break;
        idx_[size_t(d)] = 0;
      }
    }
    return f;
  }

 private:
  const TensorEntry& e_;
  int64_t rank_, run_ = 0;
  std::vector<int64_t> idx_;  // the run's index (last dimension 0)
  int64_t row_start_ = 0;     // local element index where the run starts
  int64_t done_ = 0;          // local elements fingerprinted so far
};

}  // namespace

static std::string rank_file(const char* stem, int rank, const char* ext) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%05d.%s", stem, rank, ext);
  return buf;
}

CheckpointWriter::CheckpointWriter(const std::string& run_dir, int64_t step, int rank, int world)
    : run_dir_(run_dir), step_(step), rank_(rank), world_(world) {
  OLMO_CHECK(step >= 0, "checkpoint step must be >= 0, got ", step);
  OLMO_CHECK(world >= 1 && rank >= 0 && rank < world, "checkpoint writer: rank ", rank,
             " not in a world of ", world);
  file_name_ = rank_file("tensors", rank, "bin");
  if (rank > 0) {
    tmp_dir_ = cat(run_dir, "/step", step, "-tmp");
    final_dir_ = cat(run_dir, "/step", step);
    OLMO_CHECK(fs::is_directory(tmp_dir_), tmp_dir_, ": rank ", rank,
               ": temporary checkpoint directory missing (rank 0 creates it first)");
    data_file_ = cat(tmp_dir_, "/", file_name_);
    fd_ = ::open(data_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    OLMO_CHECK(fd_ >= 0, data_file_, ": cannot create: ", std::strerror(errno));
    return;
  }
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  OLMO_CHECK(!ec && fs::is_directory(run_dir), "run dir ", run_dir, ": cannot create directory: ",
             ec ? ec.message() : "exists and is not a directory");
  tmp_dir_ = cat(run_dir, "/step", step, "-tmp");
  final_dir_ = cat(run_dir, "/step", step);
  fs::remove_all(tmp_dir_, ec);
  OLMO_CHECK(!ec, tmp_dir_, ": cannot remove stale temporary checkpoint: ", ec.message());
  fs::create_directory(tmp_dir_, ec);
  OLMO_CHECK(!ec, tmp_dir_, ": cannot create checkpoint directory: ", ec.message());
  data_file_ = cat(tmp_dir_, "/", file_name_);
  fd_ = ::open(data_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const std::string e = std::strerror(errno);
    fs::remove_all(tmp_dir_, ec);
    throw Error(cat(data_file_, ": cannot create: ", e));
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && rank_ == 0) {
    std::error_code ec;
    fs::remove_all(tmp_dir_, ec);  // best effort; a leftover stepN-tmp is ignored by readers
  }
}

void CheckpointWriter::write_bytes(const void* p, size_t n) {
  OLMO_CHECK(fd_ >= 0, data_file_, ": writer already committed or failed");
  write_all(fd_, data_file_, p, n);
  pos_ += n;
}

void CheckpointWriter::add_raw(const std::string& name, DType dtype, const void* data,
                               std::vector<int64_t> global_shape, std::vector<int64_t> offset,
                               std::vector<int64_t> local_shape) {
  const std::string where = cat("checkpoint ", tmp_dir_, ": tensor '", name, "'");
  OLMO_CHECK(!name.empty(), "checkpoint ", tmp_dir_, ": empty tensor name");
  if (offset.empty()) offset.assign(global_shape.size(), 0);
  if (local_shape.empty()) local_shape = global_shape;
  OLMO_CHECK(offset.size() == global_shape.size() && local_shape.size() == global_shape.size(), where,
             ": offset ", shape_str(offset), " / local shape ", shape_str(local_shape),
             " rank differs from global shape ", shape_str(global_shape));
  for (size_t d = 0; d < global_shape.size(); ++d)
    OLMO_CHECK(global_shape[d] >= 0 && offset[d] >= 0 && local_shape[d] >= 0 &&
                   offset[d] + local_shape[d] <= global_shape[d],
               where, ": block offset ", shape_str(offset), " + local shape ", shape_str(local_shape),
               " outside global shape ", shape_str(global_shape));
  for (const TensorEntry& t : tensors_)
    OLMO_CHECK(!(t.name == name && t.offset == offset), where, ": added twice");
  const uint64_t nbytes = static_cast<uint64_t>(numel_of(local_shape)) * dtype_size(dtype);
  OLMO_CHECK(nbytes == 0 || data != nullptr, where, ": null data");
  // A checkpoint must never carry a NaN/Inf (weights or optimizer moments): a poisoned state
  // would become the newest "complete" one and every restart would resume from it. Checked over
  // the whole tensor before any of its bytes is written.
  auto refuse_nonfinite = [&](auto* v, size_t n) {
    for (size_t i = 0; i < n; ++i)
      OLMO_CHECK(std::isfinite(v[i]), where, " holds a non-finite value (", double(v[i]),
                 " at element ", i, " of ", n, "): refusing to write a checkpoint with NaN/Inf "
                 "weights or optimizer state; the earlier checkpoints are untouched");
  };
  if (dtype == DType::f32) refuse_nonfinite(static_cast<const float*>(data), nbytes / 4);
  if (dtype == DType::f64) refuse_nonfinite(static_cast<const double*>(data), nbytes / 8);
  if (pos_ % kAlign) {
    static const char zeros[kAlign] = {0};
    write_bytes(zeros, kAlign - pos_ % kAlign);
  }
  TensorEntry e;
  e.name = name;
  e.dtype = dtype;
  e.global_shape = std::move(global_shape);
  e.offset = std::move(offset);
  e.local_shape = std::move(local_shape);
  e.file = file_name_;
  e.byte_offset = pos_;
  e.nbytes = nbytes;
  // The checksum and the write read each 256 KiB slice while it is in cache; the
  // layout-independent fingerprint (32-bit dtypes) reads it there too, or, for large pieces,
  // runs beside them on a second thread (its cost then hides behind the write).
  uint64_t& fp = fingerprints_[e.name];
  Hasher h;
  const char* bytes = static_cast<const char*>(data);
  constexpr size_t kSlice = size_t(1) << 18;  // bytes
  const bool fingerprinted = dtype_size(dtype) == 4;
  const bool beside = fingerprinted && nbytes >= (uint64_t(1) << 22);
  PieceFingerprint walker(e);
  uint64_t fp_beside = 0;
  double fp_beside_s = 0;
  std::thread helper;
  if (beside)
    helper = std::thread([&] {
      const double t0 = now_seconds();
      fp_beside = walker.add(bytes, int64_t(nbytes / 4), /*threads=*/false);
      fp_beside_s = now_seconds() - t0;
    });
  try {
    for (uint64_t at = 0; at < nbytes; at += kSlice) {
      const size_t len = size_t(std::min<uint64_t>(kSlice, nbytes - at));
      h.update(bytes + at, len);
      if (fingerprinted && !beside) {
        const double t0 = now_seconds();
        fp += walker.add(bytes, int64_t((at + len) / 4), /*threads=*/false);
        fp_time_.inline_s += now_seconds() - t0;
      }
      write_bytes(bytes + at, len);
    }
  } catch (...) {
    if (helper.joinable()) helper.join();
    throw;
  }
  if (helper.joinable()) {
    const double t0 = now_seconds();
    helper.join();
    fp += fp_beside;
    fp_time_.wait_s += now_seconds() - t0;
    fp_time_.helper_s += fp_beside_s;
  }
  e.checksum = h.digest();
  tensors_.push_back(std::move(e));
}

void CheckpointWriter::add_tensor(const std::string& name, const float* data, std::vector<int64_t> g,
                                  std::vector<int64_t> o, std::vector<int64_t> l) {
  add_raw(name, DType::f32, data, std::move(g), std::move(o), std::move(l));
}
void CheckpointWriter::add_tensor(const std::string& name, const int64_t* data, std::vector<int64_t> g,
                                  std::vector<int64_t> o, std::vector<int64_t> l) {
  add_raw(name, DType::i64, data, std::move(g), std::move(o), std::move(l));
}
void CheckpointWriter::add_tensor(const std::string& name, const uint8_t* data, std::vector<int64_t> g,
                                  std::vector<int64_t> o, std::vector<int64_t> l) {
  add_raw(name, DType::u8, data, std::move(g), std::move(o), std::move(l));
}

void CheckpointWriter::add_json(const std::string& key, const nlohmann::json& value) {
  OLMO_CHECK(rank_ == 0, "checkpoint ", tmp_dir_, ": JSON section '", key, "' from rank ", rank_,
             " (only rank 0 writes JSON sections)");
  OLMO_CHECK(!key.empty(), "checkpoint ", tmp_dir_, ": empty JSON section key");
  OLMO_CHECK(!sections_.contains(key), "checkpoint ", tmp_dir_, ": JSON section '", key, "' added twice");
  sections_[key] = value;
}

static nlohmann::json entry_json(const TensorEntry& t) {
  return {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"global_shape", t.global_shape},
          {"offset", t.offset}, {"local_shape", t.local_shape}, {"file", t.file},
          {"byte_offset", t.byte_offset}, {"nbytes", t.nbytes}, {"checksum", hex64(t.checksum)}};
}

void CheckpointWriter::close_shard() {
  OLMO_CHECK(rank_ > 0, "checkpoint ", tmp_dir_, ": close_shard() is for ranks > 0");
  OLMO_CHECK(!committed_ && fd_ >= 0, "checkpoint ", tmp_dir_, ": close_shard() called twice");
  if (::fsync(fd_) != 0) throw Error(cat(data_file_, ": fsync failed: ", std::strerror(errno)));
  const int rc = ::close(fd_);
  fd_ = -1;
  OLMO_CHECK(rc == 0, data_file_, ": close failed: ", std::strerror(errno));
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorEntry& t : tensors_) tensors.push_back(entry_json(t));
  const nlohmann::json shard = {{"rank", rank_}, {"world", world_}, {"step", step_},
                                {"file", file_name_}, {"nbytes", pos_}, {"tensors", tensors}};
  write_whole_file(cat(tmp_dir_, "/", rank_file("shard", rank_, "json")), shard.dump(1));
  fsync_dir(tmp_dir_);
  committed_ = true;  // this rank's part is done
}

void CheckpointWriter::sync_data() {
  OLMO_CHECK(rank_ == 0, "checkpoint ", tmp_dir_, ": sync_data() is for rank 0 (others: close_shard)");
  OLMO_CHECK(!committed_ && fd_ >= 0 && !data_synced_, "checkpoint ", tmp_dir_,
             ": sync_data() called twice or after a failure");
  if (::fsync(fd_) != 0) throw Error(cat(data_file_, ": fsync failed: ", std::strerror(errno)));
  const int rc = ::close(fd_);
  fd_ = -1;
  OLMO_CHECK(rc == 0, data_file_, ": close failed: ", std::strerror(errno));
  data_synced_ = true;
}

std::string CheckpointWriter::commit() {
  OLMO_CHECK(rank_ == 0, "checkpoint ", tmp_dir_, ": commit() is for rank 0 (others: close_shard)");
  OLMO_CHECK(!committed_ && (fd_ >= 0 || data_synced_), "checkpoint ", tmp_dir_,
             ": commit() called twice or after a failure");
  // 1. Data file durable (done already when sync_data() ran).
  if (!data_synced_) sync_data();
  // 1b. Every other rank's shard (entries + data file size), as written by close_shard().
  nlohmann::json files = {{file_name_, {{"nbytes", pos_}}}};
  std::vector<TensorEntry> all = tensors_;
  for (int r = 1; r < world_; ++r) {
    const std::string sp = cat(tmp_dir_, "/", rank_file("shard", r, "json"));
    OLMO_CHECK(fs::exists(sp), sp, ": rank ", r, " did not finish its checkpoint shard");
    nlohmann::json sh = parse_json_file(sp, read_file(sp));
    try {
      OLMO_CHECK(sh.at("rank").get<int>() == r && sh.at("step").get<int64_t>() == step_, sp,
                 ": shard of rank ", sh.at("rank").dump(), " step ", sh.at("step").dump(),
                 ", expected rank ", r, " step ", step_);
      files[sh.at("file").get<std::string>()] = {{"nbytes", sh.at("nbytes")}};
      for (const auto& t : sh.at("tensors")) {
        TensorEntry e;
        e.name = t.at("name").get<std::string>();
        e.dtype = dtype_from_name(t.at("dtype").get<std::string>());
        e.global_shape = t.at("global_shape").get<std::vector<int64_t>>();
        e.offset = t.at("offset").get<std::vector<int64_t>>();
        e.local_shape = t.at("local_shape").get<std::vector<int64_t>>();
        e.file = t.at("file").get<std::string>();
        e.byte_offset = t.at("byte_offset").get<uint64_t>();
        e.nbytes = t.at("nbytes").get<uint64_t>();
        e.checksum = parse_hex64(t.at("checksum").get<std::string>(), sp);
        all.push_back(std::move(e));
      }
    } catch (const nlohmann::json::exception& ex) {
      throw Error(cat(sp, ": bad shard file: ", ex.what()));
    }
  }
  // 2. JSON sections.
  std::string state;
  try {
    state = sections_.dump(1);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("checkpoint ", tmp_dir_, ": JSON sections cannot be serialised: ", e.what()));
  }
  write_whole_file(tmp_dir_ + "/state.json", state);
  // 3. Index.
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorEntry& t : all) tensors.push_back(entry_json(t));
  files["state.json"] = {{"nbytes", state.size()}, {"checksum", hex64(hash64(state.data(), state.size()))}};
  nlohmann::json index = {{"format", kFormat}, {"version", kVersion}, {"step", step_},
                          {"world", world_}, {"files", files}, {"tensors", tensors}};
  const std::string index_text = index.dump(1);
  write_whole_file(tmp_dir_ + "/index.json", index_text);
  // 4. Marker last, then the directory itself.
  const nlohmann::json marker = {{"step", step_}, {"index_checksum", hex64(hash64(index_text.data(), index_text.size()))}};
  write_whole_file(cat(tmp_dir_, "/", kMarker), marker.dump() + "\n");
  fsync_dir(tmp_dir_);
  // 5. Atomic publish (core publish_dir): an existing stepN (re-save of the same step) is moved
  // aside to stepN-old-tmp and deleted only after the new one is in place; run_dir fsynced.
  publish_dir(tmp_dir_, final_dir_);
  committed_ = true;
  return final_dir_;
}

}  // namespace olmo::ckpt
