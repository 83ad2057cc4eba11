// The three state visitors (save, load, fingerprint) and the functions that run them over a
// checkpoint (see state_io.h). The only code that maps visited fields and flat buffers to the
// checkpoint's sections and tensor pieces.
#include "ckpt/state_io.h"

#include <algorithm>

#include "ckpt/checkpoint.h"
#include "ckpt/fingerprint.h"
#include "ckpt/flat_range.h"
#include "ckpt/fused_fingerprint.h"
#include "core/error.h"
#include "core/hash.h"

using nlohmann::json;

namespace olmo::ckpt {

size_t TensorPiece::numel() const {
  size_t n = 1;
  for (int64_t d : local_shape) n *= size_t(d);
  return n;
}

void write_pieces(CheckpointWriter& w, const std::vector<TensorPiece>& pieces, bool rank0) {
  for (const TensorPiece& p : pieces) w.add_tensor(p.name, p.data, p.shape, p.offset, p.local_shape);
  if (rank0) w.sync_data();
  else w.close_shard();
}

namespace {

// The fingerprint groups of one visit: group -> {field key: projected value}, and the spec.
struct Groups {
  json objects = json::object(), spec = json::object();
  void add(const std::string& section, const std::string& key, const json& v, const FieldFp& fp) {
    if (fp.group.empty()) return;
    json& o = objects[fp.group];
    if (o.is_null()) o = json::object();
    const json p = project_fields(v, fp.keys);
    if (key.empty()) {
      for (auto it = p.begin(); it != p.end(); ++it) o[it.key()] = it.value();
    } else {
      o[key] = p;
    }
    spec[fp.group].push_back(json::array({section, key, fp.keys}));
  }
  json fingerprints() const {
    json r = json::object();
    for (auto it = objects.begin(); it != objects.end(); ++it)
      r[it.key()] = hex64(fingerprint_json(it.value()));
    return r;
  }
};

// The spec of checkpoints written before the spec was recorded (the same groups and fields).
json legacy_spec() {
  auto f = [](const char* s, const char* k, std::vector<std::string> keys = {}) {
    return json::array({s, k, keys});
  };
  return {{"trainer", {f("trainer", "step"), f("trainer", "tokens_seen")}},
          {"schedule", {f("trainer", "t_max"), f("trainer", "lr0"), f("trainer", "scheduler")}},
          {"loader", {f("loader", "", {"seed", "epoch", "tokens_processed"})}},
          {"skip_step", {f("skip_step", "", {"rolling_interval_length", "losses", "grad_norms"})}},
          {"optim", {f("optim", "numel"), f("optim", "steps"), f("optim", "groups", {"offset", "numel"})}}};
}

// [a, b): the part of tensor t inside [lo, hi) of the flat buffer (a >= b: none).
struct Overlap {
  size_t a, b;
  Overlap(const FlatTensor& t, size_t lo, size_t hi)
      : a(std::max(lo, t.offset)), b(std::min(hi, t.offset + t.numel)) {}
  bool empty() const { return a >= b; }
};

class VisitorBase : public StateVisitor {
 public:
  void begin_section(const std::string& name) override {
    OLMO_CHECK(cur_.empty(), "state visitor: section '", name, "' opened inside '", cur_, "'");
    cur_ = name;
  }
  void end_section() override { cur_.clear(); }

 protected:
  const std::string& section(const std::string& what) const {
    OLMO_CHECK(!cur_.empty(), "state visitor: ", what, " outside a section");
    return cur_;
  }
  std::string cur_;
};

class SaveVisitor final : public VisitorBase {
 public:
  SaveVisitor(const FlatLayout& layout, int rank, StateSnapshot& out)
      : layout_(layout), rank_(rank), out_(out) {}
  Mode mode() const override { return Mode::save; }
  bool has_section(const std::string&) const override { return true; }
  void json(const std::string& key, nlohmann::json& value, FieldKind, const FieldFp& fp) override {
    nlohmann::json& s = out_.sections[section(key)];
    if (s.is_null()) s = nlohmann::json::object();
    OLMO_CHECK(s.is_object() && !s.contains(key), "state visitor: field '", cur_, ".", key,
               "' declared twice");
    s[key] = value;
    groups_.add(cur_, key, value, fp);
  }
  void whole(nlohmann::json& value, const FieldFp& fp) override {
    OLMO_CHECK(!out_.sections.contains(section("a whole section")), "state visitor: section '",
               cur_, "' declared twice");
    out_.sections[cur_] = value;
    groups_.add(cur_, "", value, fp);
  }
  void flat(const std::string& prefix, float* base, size_t lo, size_t hi) override {
    for (const FlatTensor& t : layout_) {
      out_.tensor_names.push_back(prefix + t.name);
      const Overlap o(t, lo, hi);
      if (o.empty()) continue;
      for (const FlatBlock& blk : flat_range_blocks(t.shape, o.a - t.offset, o.b - t.offset))
        out_.pieces.push_back({prefix + t.name, base + (t.offset + blk.flat_begin - lo), t.shape,
                               blk.offset, blk.local_shape});
    }
  }
  void flat_replicated(const std::string& prefix, float* base) override {
    for (const FlatTensor& t : layout_) {
      out_.tensor_names.push_back(prefix + t.name);
      if (rank_ == 0)
        out_.pieces.push_back({prefix + t.name, base + t.offset, t.shape,
                               std::vector<int64_t>(t.shape.size(), 0), t.shape});
    }
  }
  void finish() {
    out_.state_fp = groups_.fingerprints();
    out_.spec = groups_.spec;
  }

 private:
  const FlatLayout& layout_;
  int rank_;
  StateSnapshot& out_;
  Groups groups_;
};

class LoadVisitor final : public VisitorBase {
 public:
  LoadVisitor(const CheckpointReader& r, const FlatLayout& layout) : r_(r), layout_(layout) {}
  Mode mode() const override { return Mode::load; }
  bool has_section(const std::string& s) const override { return r_.has_json(s); }
  void json(const std::string& key, nlohmann::json& value, FieldKind kind, const FieldFp& fp) override {
    const nlohmann::json& s = r_.json(section(key));
    OLMO_CHECK(s.is_object() && s.contains(key), r_.dir(), "/state.json: section '", cur_,
               "' has no field '", key, "'");
    if (kind == FieldKind::restore) {
      value = s[key];
    } else if (kind == FieldKind::check) {
      const nlohmann::json have = project_fields(s[key], fp.keys), want = project_fields(value, fp.keys);
      OLMO_CHECK(have == want, r_.dir(), ": checkpoint ", cur_, ".",
                 field_difference(key, have, want), " is ", have.dump(), " but this run has ",
                 want.dump());
    }
  }
  void whole(nlohmann::json& value, const FieldFp&) override { value = r_.json(section("a whole section")); }
  void flat(const std::string& prefix, float* base, size_t lo, size_t hi) override {
    for (const FlatTensor& t : layout_) {
      const Overlap o(t, lo, hi);
      if (o.empty()) continue;
      const std::string name = prefix + t.name;
      OLMO_CHECK(r_.has_tensor(name) && r_.shape(name) == t.shape, r_.dir(), ": tensor '", name,
                 "' missing or of another shape");
      for (const FlatBlock& blk : flat_range_blocks(t.shape, o.a - t.offset, o.b - t.offset))
        r_.read_slice(name, DType::f32, base + (t.offset + blk.flat_begin - lo), blk.offset,
                      blk.local_shape);
    }
  }
  void flat_replicated(const std::string& prefix, float* base) override {
    for (const FlatTensor& t : layout_) r_.read_tensor(prefix + t.name, base + t.offset, t.shape);
  }

 private:
  const CheckpointReader& r_;
  const FlatLayout& layout_;
};

class FingerprintVisitor final : public VisitorBase {
 public:
  FingerprintVisitor(const FlatLayout& layout, size_t fp_lo, size_t fp_hi, StateFingerprint& out,
                     const FusedTensorFingerprint* fused)
      : layout_(layout), fp_lo_(fp_lo), fp_hi_(fp_hi), out_(out), fused_(fused) {}
  Mode mode() const override { return Mode::fingerprint; }
  bool has_section(const std::string&) const override { return true; }
  void json(const std::string& key, nlohmann::json& value, FieldKind, const FieldFp& fp) override {
    groups_.add(section(key), key, value, fp);
  }
  void whole(nlohmann::json& value, const FieldFp& fp) override {
    groups_.add(section("a whole section"), "", value, fp);
  }
  // base[0] is element lo; this rank fingerprints [max(lo, flo), min(hi, fhi)).
  // (the sums of `fused` where it added this buffer's whole range)
  void part(const std::string& prefix, const float* base, size_t lo, size_t hi, size_t flo, size_t fhi) {
    const size_t r0 = std::max(lo, flo), r1 = std::min(hi, fhi);
    for (size_t ti = 0; ti < layout_.size(); ++ti) {
      const FlatTensor& t = layout_[ti];
      uint64_t& f = out_.tensor_partials[prefix + t.name];
      const Overlap o(t, r0, r1);
      if (o.empty()) continue;
      if (!fused_ || !fused_->partial(prefix, base, r0, r1, ti, f))
        f = fingerprint_partial(base + (o.a - lo), o.b - o.a, o.a - t.offset);
    }
  }
  void flat(const std::string& prefix, float* base, size_t lo, size_t hi) override {
    part(prefix, base, lo, hi, lo, hi);
  }
  void flat_replicated(const std::string& prefix, float* base) override {
    part(prefix, base, 0, SIZE_MAX, fp_lo_, fp_hi_);
  }
  void finish() { out_.state = groups_.fingerprints(); }

 private:
  const FlatLayout& layout_;
  size_t fp_lo_, fp_hi_;
  StateFingerprint& out_;
  const FusedTensorFingerprint* fused_;
  Groups groups_;
};

}  // namespace

StateSnapshot snapshot_state(const StateFn& visit, const FlatLayout& layout, int rank) {
  StateSnapshot s;
  SaveVisitor v(layout, rank, s);
  visit(v);
  v.finish();
  return s;
}

std::string commit_state(CheckpointWriter& w, const StateSnapshot& s,
                         const std::map<std::string, uint64_t>& tensor_fingerprints) {
  for (auto it = s.sections.begin(); it != s.sections.end(); ++it) w.add_json(it.key(), it.value());
  json tensors = json::object();
  for (const auto& [name, f] : tensor_fingerprints) tensors[name] = hex64(f);
  w.add_json("fingerprint",
             json{{"version", 1}, {"tensors", tensors}, {"state", s.state_fp}, {"spec", s.spec}});
  return w.commit();
}

std::string save_state(const std::string& run_dir, int64_t step, const StateFn& visit,
                       const FlatLayout& layout) {
  const StateSnapshot s = snapshot_state(visit, layout, 0);
  CheckpointWriter w(run_dir, step);
  write_pieces(w, s.pieces, true);
  std::map<std::string, uint64_t> fps;
  for (const std::string& n : s.tensor_names) {
    auto it = w.fingerprints().find(n);
    fps[n] = it == w.fingerprints().end() ? 0 : it->second;
  }
  return commit_state(w, s, fps);
}

void load_state(const CheckpointReader& r, const StateFn& visit, const FlatLayout& layout) {
  LoadVisitor v(r, layout);
  visit(v);
}

StateFingerprint fingerprint_state(const StateFn& visit, const FlatLayout& layout, int,
                                   size_t fp_lo, size_t fp_hi,
                                   const FusedTensorFingerprint* fused) {
  StateFingerprint f;
  FingerprintVisitor v(layout, fp_lo, fp_hi, f, fused);
  visit(v);
  v.finish();
  return f;
}

json stored_state_fingerprints(const CheckpointReader& r) {
  const bool recorded = r.has_json("fingerprint") && r.json("fingerprint").contains("spec");
  const json spec = recorded ? r.json("fingerprint")["spec"] : legacy_spec();
  Groups g;
  for (auto it = spec.begin(); it != spec.end(); ++it)
    for (const json& e : it.value()) {
      OLMO_CHECK(e.is_array() && e.size() == 3 && e[0].is_string() && e[1].is_string() &&
                     e[2].is_array(),
                 r.dir(), "/state.json: malformed fingerprint spec of group '", it.key(), "'");
      const std::string section = e[0].get<std::string>(), key = e[1].get<std::string>();
      const json& s = r.json(section);
      OLMO_CHECK(key.empty() || (s.is_object() && s.contains(key)), r.dir(),
                 "/state.json: section '", section, "' has no field '", key, "'");
      g.add(section, key, key.empty() ? s : s[key],
            FieldFp{it.key(), e[2].get<std::vector<std::string>>()});
    }
  return g.fingerprints();
}

json state_sections(const StateFn& visit) {
  static const FlatLayout none;
  return snapshot_state(visit, none, -1).sections;
}

}  // namespace olmo::ckpt
