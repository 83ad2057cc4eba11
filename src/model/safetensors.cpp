// safetensors reader/writer (format rules in safetensors.h).
#include "model/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace olmo::model {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4},  {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};
constexpr uint64_t kMaxHeader = 100u << 20;  // same limit as the reference implementation
}  // namespace

const char* dtype_name(DType t) { return kDTypes[int(t)].name; }
size_t dtype_size(DType t) { return kDTypes[int(t)].size; }
bool parse_dtype(const std::string& s, DType* out) {
  for (auto& d : kDTypes)
    if (s == d.name) {
      *out = d.t;
      return true;
    }
  return false;
}

size_t TensorView::numel() const {
  size_t n = 1;
  for (int64_t s : shape) n *= size_t(s);
  return n;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ------------------------------------------------------------------------------------ reader

SafetensorsFile::SafetensorsFile(const std::string& path) {
  OLMO_CHECK(file_exists(path), path, ": safetensors file not found");
  file_ = MappedFile(path);
  const size_t size = file_.size();
  OLMO_CHECK(size >= 8, path, ": truncated: file is ", size,
             " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | file_.data()[i];
  OLMO_CHECK(n <= kMaxHeader, path, ": header length ", n, " exceeds the 100 MiB limit");
  OLMO_CHECK(n <= size - 8, path, ": truncated: header length ", n, " but only ", size - 8,
             " bytes follow the length field");
  const char* hdr = reinterpret_cast<const char*>(file_.data() + 8);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(hdr, hdr + n);
  } catch (const nlohmann::json::exception& e) {  // also out_of_range (1e99999)
    throw Error(cat(path, ": header is not valid JSON: ", e.what()));
  }
  OLMO_CHECK(j.is_object(), path, ": header must be a JSON object");
  const uint8_t* data = file_.data() + 8 + n;
  const size_t data_size = size - 8 - n;

  struct Span {
    size_t b, e;
    std::string name;
  };
  std::vector<Span> spans;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      OLMO_CHECK(v.is_object(), path, ": __metadata__ must be an object of strings");
      for (auto& [k, s] : v.items()) {
        OLMO_CHECK(s.is_string(), path, ": __metadata__[\"", k, "\"] is not a string");
        metadata_[k] = s.get<std::string>();
      }
      continue;
    }
    const std::string& tname = name;  // (clang 14 cannot capture a structured binding)
    auto where = [&] { return cat(path, ": tensor '", tname, "': "); };
    OLMO_CHECK(v.is_object(), where(), "header entry must be an object");
    OLMO_CHECK(v.contains("dtype") && v["dtype"].is_string(), where(), "missing \"dtype\"");
    OLMO_CHECK(v.contains("shape") && v["shape"].is_array(), where(), "missing \"shape\"");
    OLMO_CHECK(v.contains("data_offsets") && v["data_offsets"].is_array() &&
                   v["data_offsets"].size() == 2,
               where(), "missing or malformed \"data_offsets\" (need [begin, end])");
    TensorView t;
    t.name = name;
    std::string ds = v["dtype"].get<std::string>();
    OLMO_CHECK(parse_dtype(ds, &t.dtype), where(), "unknown dtype \"", ds, "\"");
    // Each extent and their product (the element count, and its byte size) must fit int64:
    // a shape such as [2^62, 4] would otherwise wrap to 0 elements and pass the size check.
    uint64_t numel = 1;
    bool zero = false, overflow = false;
    for (auto& s : v["shape"]) {
      OLMO_CHECK(s.is_number_unsigned() || (s.is_number_integer() && s.get<int64_t>() >= 0),
                 where(), "shape entries must be non-negative integers, got ", s.dump());
      const uint64_t d = s.get<uint64_t>();
      OLMO_CHECK(d <= uint64_t(INT64_MAX), where(), "shape entry ", s.dump(), " exceeds 2^63-1");
      t.shape.push_back(int64_t(d));
      if (d == 0) zero = true;
      else if (numel > uint64_t(INT64_MAX) / d) overflow = true;
      else numel *= d;
    }
    OLMO_CHECK(zero || (!overflow && numel <= uint64_t(INT64_MAX) / 8), where(), "shape ",
               v["shape"].dump(), " has more elements than fit in 64 bits");
    for (auto& o : v["data_offsets"])
      OLMO_CHECK(o.is_number_unsigned() || (o.is_number_integer() && o.get<int64_t>() >= 0),
                 where(), "data_offsets must be non-negative integers, got ", o.dump());
    size_t b = v["data_offsets"][0].get<uint64_t>(), e = v["data_offsets"][1].get<uint64_t>();
    OLMO_CHECK(b <= e, where(), "data_offsets [", b, ", ", e, "] has begin > end");
    OLMO_CHECK(e <= data_size, where(), "data_offsets [", b, ", ", e,
               "] out of range: the data buffer has ", data_size, " bytes (file truncated?)");
    size_t want = t.numel() * dtype_size(t.dtype);
    OLMO_CHECK(e - b == want, where(), "data_offsets [", b, ", ", e, "] span ", e - b,
               " bytes but shape and dtype ", ds, " need ", want);
    t.data = data + b;
    t.nbytes = e - b;
    spans.push_back({b, e, name});
    tensors_.emplace(name, std::move(t));
  }
  std::sort(spans.begin(), spans.end(), [](auto& x, auto& y) {
    return x.b != y.b ? x.b < y.b : x.e < y.e;
  });
  size_t at = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    auto& s = spans[i];
    OLMO_CHECK(s.b >= at, path, ": tensor '", s.name, "' data_offsets [", s.b, ", ", s.e,
               "] overlap tensor '", spans[i - 1].name, "' (ends at ", at, ")");
    OLMO_CHECK(s.b == at, path, ": gap in the data buffer: bytes [", at, ", ", s.b,
               ") before tensor '", s.name, "' belong to no tensor");
    at = s.e;
  }
  OLMO_CHECK(at == data_size, path, ": data buffer has ", data_size - at,
             " trailing bytes after the last tensor (ends at ", at, ")");
}

const TensorView& SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  OLMO_CHECK(it != tensors_.end(), path(), ": tensor '", name, "' not found");
  return it->second;
}

void SafetensorsFile::read_f32(const std::string& name, float* out) const {
  const TensorView& t = get(name);
  const size_t n = t.numel();
  switch (t.dtype) {
    case DType::F32:
      if (n > 0) std::memcpy(out, t.data, n * 4);  // little-endian host (out may be null if n == 0)
      return;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, t.data + 8 * i, 8);
        out[i] = float(d);
      }
      return;
    case DType::F16:
    case DType::BF16: {
      const bool bf = t.dtype == DType::BF16;
#pragma omp parallel for schedule(static) if (n > (1u << 20))
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = bf ? bf16_to_float(h) : half_to_float(h);
      }
      return;
    }
    default:
      throw Error(cat(path(), ": tensor '", name, "' has dtype ", dtype_name(t.dtype),
                      "; expected a floating-point dtype (F32, BF16, F16, F64)"));
  }
}

// ------------------------------------------------------------------------------------ writer

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            const void* data) {
  OLMO_CHECK(name != "__metadata__", "safetensors: '__metadata__' is not a tensor name");
  for (auto& e : entries_) OLMO_CHECK(e.name != name, "safetensors: duplicate tensor '", name, "'");
  entries_.push_back({name, dtype, std::move(shape), data});
}

void SafetensorsWriter::write(const std::string& path,
                              const std::function<void(uint64_t)>& on_tensor) const {
  nlohmann::json j = nlohmann::json::object();
  if (!metadata_.empty()) j["__metadata__"] = metadata_;
  std::vector<size_t> nbytes;
  size_t off = 0;
  for (auto& e : entries_) {
    size_t n = dtype_size(e.dtype);
    for (int64_t s : e.shape) n *= size_t(s);
    j[e.name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"data_offsets", {off, off + n}}};
    nbytes.push_back(n);
    off += n;
  }
  std::string hdr = j.dump();
  hdr.append((8 - hdr.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(hdr.size()) >> (8 * i));

  AtomicFile f(path);  // core: temporary, fsync, rename, fsync dir; removed on failure
  f.write(len, 8);
  f.write(hdr);
  uint64_t written = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (nbytes[i] > 0) f.write(entries_[i].data, nbytes[i]);
    written += nbytes[i];
    if (on_tensor) on_tensor(written);
  }
  f.commit();
}

}  // namespace olmo::model
