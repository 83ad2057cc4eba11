// The first difference between two checkpoints' states (see state_diff.h).
#include "ckpt/state_diff.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/state_io.h"
#include "core/error.h"

using nlohmann::json;

namespace olmo::ckpt {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += cat(i ? ", " : "", s[i]);
  return t + "]";
}

// One element as people read it: the value (floats: 9 significant digits) and its bits.
std::string element_text(DType d, const unsigned char* p) {
  char buf[96];
  if (d == DType::f32) {
    float x;
    uint32_t b;
    std::memcpy(&x, p, 4);
    std::memcpy(&b, p, 4);
    std::snprintf(buf, sizeof buf, "%.9g (bits 0x%08x)", double(x), b);
  } else if (d == DType::f64) {
    double x;
    std::memcpy(&x, p, 8);
    std::snprintf(buf, sizeof buf, "%.17g", x);
  } else {
    uint64_t v = 0;
    std::memcpy(&v, p, dtype_size(d));
    std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  }
  return buf;
}

const TensorEntry& entry(const CheckpointReader& r, const std::string& name) {
  for (const TensorEntry& t : r.tensors())
    if (t.name == name) return t;
  throw Error(cat(r.dir(), ": no tensor '", name, "'"));
}

// Whole global tensor as bytes (any world size wrote its pieces).
std::vector<unsigned char> read_whole(const CheckpointReader& r, const TensorEntry& t) {
  size_t n = 1;
  for (int64_t d : t.global_shape) n *= size_t(d);
  std::vector<unsigned char> out(n * dtype_size(t.dtype));
  if (n > 0)
    r.read_slice(t.name, t.dtype, out.data(), std::vector<int64_t>(t.global_shape.size(), 0),
                 t.global_shape);
  return out;
}

}  // namespace

StateDiff diff_state(const CheckpointReader& want, const CheckpointReader& have) {
  StateDiff d;
  auto differ = [&](std::string tensor, int64_t element, std::string section, std::string what) {
    d.same = false;
    d.tensor = std::move(tensor);
    d.element = element;
    d.section = std::move(section);
    d.what = std::move(what);
    return d;
  };
  std::set<std::string> names, seen;
  for (const TensorEntry& t : have.tensors()) names.insert(t.name);
  for (const TensorEntry& t : want.tensors()) {
    if (!seen.insert(t.name).second) continue;  // another piece of a tensor already compared
    if (!names.count(t.name))
      return differ(t.name, -1, "", cat("tensor '", t.name, "' is in ", want.dir(), " but not in ",
                                        have.dir()));
    const TensorEntry& h = entry(have, t.name);
    if (h.global_shape != t.global_shape || h.dtype != t.dtype)
      return differ(t.name, -1, "", cat("tensor '", t.name, "' is ", dtype_name(t.dtype),
                                        shape_text(t.global_shape), " in ", want.dir(), " but ",
                                        dtype_name(h.dtype), shape_text(h.global_shape), " in ",
                                        have.dir()));
    const std::vector<unsigned char> a = read_whole(want, t), b = read_whole(have, h);
    if (a == b) continue;
    const size_t es = dtype_size(t.dtype);
    size_t i = 0;
    while (std::memcmp(a.data() + i * es, b.data() + i * es, es) == 0) ++i;
    size_t count = 0;
    for (size_t j = i; j < a.size() / es; ++j)
      count += std::memcmp(a.data() + j * es, b.data() + j * es, es) != 0;
    return differ(t.name, int64_t(i), "",
                  cat("tensor '", t.name, "' differs in ", count, " of ", a.size() / es,
                      " elements; the first, element ", i, ": ", element_text(t.dtype, a.data() + i * es),
                      " in ", want.dir(), ", ", element_text(t.dtype, b.data() + i * es), " in ",
                      have.dir()));
  }
  for (const std::string& n : names)
    if (!seen.count(n))
      return differ(n, -1, "", cat("tensor '", n, "' is in ", have.dir(), " but not in ", want.dir()));
  // The state sections, through their fingerprint groups (recomputed from the stored sections).
  const json fw = stored_state_fingerprints(want), fh = stored_state_fingerprints(have);
  for (auto it = fw.begin(); it != fw.end(); ++it)
    if (!fh.contains(it.key()) || fh[it.key()] != *it)
      return differ("", -1, it.key(),
                    cat("the ", it.key(), " state differs (fingerprint ", it->get<std::string>(),
                        " in ", want.dir(), ", ", fh.contains(it.key()) ? fh[it.key()].dump() : "none",
                        " in ", have.dir(), ")"));
  const bool rw = want.has_json("reduce"), rh = have.has_json("reduce");
  if (rw != rh || (rw && want.json("reduce") != have.json("reduce")))
    return differ("", -1, "reduce",
                  cat("the exact reduction's scales (section reduce) differ: ",
                      rw ? want.json("reduce").dump() : "none", " in ", want.dir(), ", ",
                      rh ? have.json("reduce").dump() : "none", " in ", have.dir()));
  return d;
}

}  // namespace olmo::ckpt
