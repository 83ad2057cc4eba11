// CheckpointReader: index/marker/checksum verification and (resharding) tensor reads.
#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "ckpt/checkpoint_detail.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace olmo::ckpt {

using namespace detail;

namespace {
// Element count of a shape, or -1 when an extent is negative or the product exceeds int64.
int64_t checked_numel(const std::vector<int64_t>& s) {
  for (int64_t d : s)
    if (d < 0) return -1;
  if (std::find(s.begin(), s.end(), int64_t(0)) != s.end()) return 0;
  int64_t n = 1;
  for (int64_t d : s) {
    if (n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Reader

CheckpointReader::CheckpointReader(const std::string& dir) : dir_(dir) {
  OLMO_CHECK(fs::is_directory(dir), "checkpoint ", dir, ": not a directory");
  const std::string marker_path = cat(dir, "/", kMarker);
  OLMO_CHECK(file_exists(marker_path), "checkpoint ", dir, ": incomplete (no ", kMarker, " marker)");
  const nlohmann::json marker = parse_json_file(marker_path, read_file(marker_path));
  OLMO_CHECK(marker.is_object() && marker.contains("index_checksum") && marker["index_checksum"].is_string(),
             marker_path, ": missing 'index_checksum'");
  const std::string index_path = dir + "/index.json";
  OLMO_CHECK(file_exists(index_path), index_path, ": missing");
  const std::string index_text = read_file(index_path);
  const uint64_t want = parse_hex64(marker["index_checksum"].get<std::string>(), marker_path);
  const uint64_t got = hash64(index_text.data(), index_text.size());
  OLMO_CHECK(want == got, index_path, ": checksum mismatch (", kMarker, " says ", hex64(want), ", file hashes to ",
             hex64(got), ")");
  const nlohmann::json index = parse_json_file(index_path, index_text);
  try {
    OLMO_CHECK(index.value("format", "") == kFormat, index_path, ": not an olmo.cpp checkpoint index");
    OLMO_CHECK(index.value("version", 0) == kVersion, index_path, ": unsupported version ", index.value("version", 0));
    step_ = index.at("step").get<int64_t>();
    // state.json
    const auto& sf = index.at("files").at("state.json");
    const std::string state_path = dir + "/state.json";
    OLMO_CHECK(file_exists(state_path), state_path, ": missing");
    const std::string state = read_file(state_path);
    OLMO_CHECK(state.size() == sf.at("nbytes").get<uint64_t>(), state_path, ": size ", state.size(), " != ",
               sf.at("nbytes").get<uint64_t>(), " recorded in index.json (truncated?)");
    const uint64_t sw = parse_hex64(sf.at("checksum").get<std::string>(), index_path);
    const uint64_t sg = hash64(state.data(), state.size());
    OLMO_CHECK(sw == sg, state_path, ": checksum mismatch (index says ", hex64(sw), ", file hashes to ", hex64(sg), ")");
    sections_ = parse_json_file(state_path, state);
    OLMO_CHECK(sections_.is_object(), state_path, ": expected a JSON object");
    // tensors
    std::map<std::string, uint64_t> sizes;
    for (const auto& t : index.at("tensors")) {
      TensorEntry e;
      e.name = t.at("name").get<std::string>();
      const std::string where = cat(index_path, ": tensor '", e.name, "'");
      try {
        e.dtype = dtype_from_name(t.at("dtype").get<std::string>());
      } catch (const Error& err) {
        throw Error(cat(where, ": ", err.what()));
      }
      e.global_shape = t.at("global_shape").get<std::vector<int64_t>>();
      e.offset = t.at("offset").get<std::vector<int64_t>>();
      e.local_shape = t.at("local_shape").get<std::vector<int64_t>>();
      e.file = t.at("file").get<std::string>();
      e.byte_offset = t.at("byte_offset").get<uint64_t>();
      e.nbytes = t.at("nbytes").get<uint64_t>();
      e.checksum = parse_hex64(t.at("checksum").get<std::string>(), where);
      OLMO_CHECK(e.offset.size() == e.global_shape.size() && e.local_shape.size() == e.global_shape.size(), where,
                 ": rank mismatch between global_shape, offset and local_shape");
      for (size_t d = 0; d < e.global_shape.size(); ++d)  // (written so that nothing overflows)
        OLMO_CHECK(e.global_shape[d] >= 0 && e.offset[d] >= 0 && e.local_shape[d] >= 0 &&
                       e.offset[d] <= e.global_shape[d] && e.local_shape[d] <= e.global_shape[d] - e.offset[d],
                   where, ": block outside the global shape");
      OLMO_CHECK(checked_numel(e.global_shape) >= 0, where, ": global shape ", shape_str(e.global_shape),
                 " has more elements than fit in 64 bits");
      const int64_t lnumel = checked_numel(e.local_shape);
      OLMO_CHECK(lnumel >= 0 && uint64_t(lnumel) <= UINT64_MAX / dtype_size(e.dtype) &&
                     e.nbytes == uint64_t(lnumel) * dtype_size(e.dtype),
                 where, ": nbytes ", e.nbytes, " does not match local shape ", shape_str(e.local_shape), " of ",
                 dtype_name(e.dtype));
      // Data files live inside the checkpoint dir: no path separators, no "." / "..", and a
      // regular file (a symlink to a device such as /dev/zero is refused).
      OLMO_CHECK(e.file.find('/') == std::string::npos && !e.file.empty() && e.file != "." && e.file != "..",
                 where, ": bad file name '", e.file, "' (must be a plain file name inside the checkpoint)");
      const std::string fpath = cat(dir, "/", e.file);
      auto it = sizes.find(e.file);
      if (it == sizes.end()) {
        OLMO_CHECK(file_exists(fpath), fpath, ": missing (holds tensor '", e.name, "')");
        OLMO_CHECK(fs::is_regular_file(fpath), fpath, ": not a regular file (holds tensor '", e.name, "')");
        it = sizes.emplace(e.file, file_size(fpath)).first;
      }
      OLMO_CHECK(e.nbytes <= it->second && e.byte_offset <= it->second - e.nbytes, fpath, ": truncated: tensor '",
                 e.name, "' needs ", e.nbytes, " bytes at offset ", e.byte_offset, " but the file has ", it->second);
      tensors_.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(index_path, ": malformed index: ", e.what()));
  }
}

void CheckpointReader::verify() const {
  std::map<std::string, std::unique_ptr<MappedFile>> maps;
  for (const TensorEntry& t : tensors_) {
    auto& mf = maps[t.file];
    if (!mf) mf = std::make_unique<MappedFile>(cat(dir_, "/", t.file));
    OLMO_CHECK(t.nbytes <= mf->size() && t.byte_offset <= mf->size() - t.nbytes, mf->path(),
               ": truncated: tensor '", t.name, "'");
    const uint64_t h = hash64(mf->data() + t.byte_offset, t.nbytes);
    OLMO_CHECK(h == t.checksum, mf->path(), ": checksum mismatch in tensor '", t.name, "' (index says ",
               hex64(t.checksum), ", data hashes to ", hex64(h), ")");
  }
}

bool CheckpointReader::has_tensor(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const TensorEntry& t) { return t.name == name; });
}

bool CheckpointReader::has_json(const std::string& key) const { return sections_.contains(key); }

std::vector<int64_t> CheckpointReader::shape(const std::string& name) const {
  for (const TensorEntry& t : tensors_)
    if (t.name == name) return t.global_shape;
  throw Error(cat("checkpoint ", dir_, ": no tensor '", name, "'"));
}

const nlohmann::json& CheckpointReader::json(const std::string& key) const {
  OLMO_CHECK(sections_.contains(key), "checkpoint ", dir_, "/state.json: no section '", key, "'");
  return sections_[key];
}

void CheckpointReader::read_slice(const std::string& name, DType dtype, void* out, const std::vector<int64_t>& offset,
                                  const std::vector<int64_t>& local_shape) const {
  const std::string where = cat("checkpoint ", dir_, ": tensor '", name, "'");
  std::vector<const TensorEntry*> pieces;
  for (const TensorEntry& t : tensors_)
    if (t.name == name) pieces.push_back(&t);
  OLMO_CHECK(!pieces.empty(), where, ": not in the checkpoint");
  const auto& gshape = pieces[0]->global_shape;
  const size_t rank = gshape.size();
  for (const TensorEntry* p : pieces) {
    OLMO_CHECK(p->dtype == dtype, where, ": stored as ", dtype_name(p->dtype), ", requested as ", dtype_name(dtype));
    OLMO_CHECK(p->global_shape == gshape, where, ": pieces disagree on the global shape");
  }
  OLMO_CHECK(offset.size() == rank && local_shape.size() == rank, where, ": requested block rank ", offset.size(),
             " but the tensor has rank ", rank);
  for (size_t d = 0; d < rank; ++d)
    OLMO_CHECK(offset[d] >= 0 && local_shape[d] >= 0 && offset[d] <= gshape[d] &&
                   local_shape[d] <= gshape[d] - offset[d],
               where, ": requested block ", shape_str(offset), "+", shape_str(local_shape), " outside global shape ",
               shape_str(gshape));
  // Pieces must not overlap where they meet the request: overlapping pieces would count some
  // elements twice and could hide a hole in the coverage check below.
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t j = i + 1; j < pieces.size(); ++j) {
      bool overlap = true;
      for (size_t d = 0; d < rank && overlap; ++d) {
        const int64_t lo = std::max({offset[d], pieces[i]->offset[d], pieces[j]->offset[d]});
        const int64_t hi = std::min({offset[d] + local_shape[d], pieces[i]->offset[d] + pieces[i]->local_shape[d],
                                     pieces[j]->offset[d] + pieces[j]->local_shape[d]});
        overlap = lo < hi;
      }
      OLMO_CHECK(!overlap, where, ": stored pieces at ", shape_str(pieces[i]->offset), " and ",
                 shape_str(pieces[j]->offset), " overlap");
    }
  const size_t es = dtype_size(dtype);
  const int64_t want = numel_of(local_shape);
  int64_t copied = 0;
  char* dst = static_cast<char*>(out);
  for (const TensorEntry* p : pieces) {
    // Intersection of the piece with the requested block.
    std::vector<int64_t> lo(rank), hi(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::max(offset[d], p->offset[d]);
      hi[d] = std::min(offset[d] + local_shape[d], p->offset[d] + p->local_shape[d]);
      if (lo[d] >= hi[d]) empty = true;
    }
    if (empty || p->nbytes == 0) continue;
    MappedFile mf(cat(dir_, "/", p->file));
    OLMO_CHECK(p->nbytes <= mf.size() && p->byte_offset <= mf.size() - p->nbytes, mf.path(),
               ": truncated: tensor '", name, "'");
    const uint8_t* src = mf.data() + p->byte_offset;
    const uint64_t h = hash64(src, p->nbytes);
    OLMO_CHECK(h == p->checksum, mf.path(), ": checksum mismatch in tensor '", name, "' (index says ",
               hex64(p->checksum), ", data hashes to ", hex64(h), ")");
    if (rank == 0) {
      std::memcpy(dst, src, es);
      copied += 1;
      continue;
    }
    // Row-major strides (in elements) of the piece and of the output block.
    std::vector<int64_t> ps(rank, 1), os(rank, 1);
    for (size_t d = rank - 1; d > 0; --d) {
      ps[d - 1] = ps[d] * p->local_shape[d];
      os[d - 1] = os[d] * local_shape[d];
    }
    const int64_t run = hi[rank - 1] - lo[rank - 1];
    std::vector<int64_t> idx(lo.begin(), lo.end());  // current index (global coords), last dim fixed at lo
    for (;;) {
      int64_t si = 0, di = 0;
      for (size_t d = 0; d < rank; ++d) {
        si += (idx[d] - p->offset[d]) * ps[d];
        di += (idx[d] - offset[d]) * os[d];
      }
      std::memcpy(dst + di * es, src + si * es, static_cast<size_t>(run) * es);
      copied += run;
      // Advance the outer dims.
      size_t d = rank - 1;
      bool done = true;
      while (d-- > 0) {
        if (++idx[d] < hi[d]) {
          done = false;
          break;
        }
        idx[d] = lo[d];
      }
      if (done) break;
    }
  }
  OLMO_CHECK(copied == want, where, ": requested block ", shape_str(offset), "+", shape_str(local_shape),
             " is not covered by the stored pieces (", copied, " of ", want, " elements)");
}

namespace {
template <class T>
void read_whole(const CheckpointReader& r, const std::string& name, DType dt, T* out, const std::vector<int64_t>& expected) {
  const std::vector<int64_t> s = r.shape(name);
  OLMO_CHECK(s == expected, "checkpoint ", r.dir(), ": tensor '", name, "' has shape ", shape_str(s), ", expected ",
             shape_str(expected));
  r.read_slice(name, dt, out, std::vector<int64_t>(s.size(), 0), s);
}
}  // namespace

void CheckpointReader::read_tensor(const std::string& name, float* out, const std::vector<int64_t>& e) const {
  read_whole(*this, name, DType::f32, out, e);
}
void CheckpointReader::read_tensor(const std::string& name, int64_t* out, const std::vector<int64_t>& e) const {
  read_whole(*this, name, DType::i64, out, e);
}
void CheckpointReader::read_tensor(const std::string& name, uint8_t* out, const std::vector<int64_t>& e) const {
  read_whole(*this, name, DType::u8, out, e);
}

}  // namespace olmo::ckpt
