// The one interface through which every stateful object saves, loads and fingerprints its part
// of a checkpoint (issue 36 item 1; the idea of OLMo-core's state_dict / gemma.cpp's
// VisitFields): an object declares each of its fields ONCE, in a `visit_state(StateVisitor&)`
// method, and the checkpoint module's visitors (ckpt/state_io.h) do the rest:
//   save        the field goes into its JSON section of the checkpoint / the tensor's pieces
//               are written;
//   load        the field is restored from the checkpoint (kind restore), or compared with the
//               stored value and a difference refused (kind check), or ignored (kind info);
//   fingerprint the field's in-memory value enters its fingerprint group (FieldFp), which a
//               resume compares with the one recorded at save time.
// The on-disk layout (file names, index, where a section lives) is known only to the checkpoint
// module; objects know only their section name, field names and flat tensor buffers.
// This header is in core (the lowest layer) so that optim/, data/ and distributed/, which do not
// link ckpt/, can implement visit_state.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace olmo {

// What a load does with a field.
enum class FieldKind {
  restore,  // the stored value replaces the object's
  check,    // the stored value must equal the object's (projected on FieldFp::keys if given)
  info,     // saved for people and tools (betas, the config), never read back
};

// The fingerprint group a field enters ("" = none) and, for an object or an array of objects,
// the keys that enter (empty = the whole value). Group fingerprints: ckpt/state_io.h.
struct FieldFp {
  FieldFp() = default;
  FieldFp(std::string g, std::vector<std::string> k = {}) : group(std::move(g)), keys(std::move(k)) {}
  std::string group;
  std::vector<std::string> keys;
};

class StateVisitor {
 public:
  enum class Mode { save, load, fingerprint };
  virtual ~StateVisitor() = default;
  virtual Mode mode() const = 0;
  bool loading() const { return mode() == Mode::load; }

  // Fields between begin_section(name) and end_section() belong to JSON section `name`.
  virtual void begin_section(const std::string& name) = 0;
  virtual void end_section() = 0;
  struct Section {  // RAII: StateVisitor::Section s(v, "optim");
    Section(StateVisitor& v, const std::string& name) : v_(v) { v_.begin_section(name); }
    ~Section() { v_.end_section(); }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;
    StateVisitor& v_;
  };
  // Load: whether the checkpoint holds `section` (optional state of an older writer); else true.
  virtual bool has_section(const std::string& section) const = 0;

  // One field of the current section as JSON (load: `value` receives the stored value for
  // restore, is compared for check).
  virtual void json(const std::string& key, nlohmann::json& value, FieldKind kind,
                    const FieldFp& fp) = 0;
  // The whole current section as one JSON object (objects that keep their state as a JSON
  // dict: the data loader's OLMo-core state). Load: `value` receives the stored section.
  // fp.keys: the section keys that enter fingerprint group fp.group.
  virtual void whole(nlohmann::json& value, const FieldFp& fp) = 0;

  // Flat fp32 tensors: elements [lo, hi) of the flat buffer laid out by the visitor's layout
  // (named global tensors at offsets: the model's parameters), base[0] = element lo, stored as
  // the pieces of tensors `prefix + name`. The ranges of all ranks partition the buffer (ZeRO
  // shards). Load fills [lo, hi) from whatever pieces another world size wrote.
  virtual void flat(const std::string& prefix, float* base, size_t lo, size_t hi) = 0;
  // A flat buffer every rank holds whole (the unsharded weights): rank 0 saves it, every rank
  // loads it whole, each rank fingerprints its part of the visitor's fingerprint partition.
  virtual void flat_replicated(const std::string& prefix, float* base) = 0;

  // Typed fields (T converts to and from nlohmann::json).
  template <class T>
  void field(const std::string& key, T& v, const FieldFp& fp = {}) {
    nlohmann::json j = loading() ? nlohmann::json() : nlohmann::json(v);
    json(key, j, FieldKind::restore, fp);
    if (loading()) get(key, j, v);
  }
  template <class T>
  void check(const std::string& key, const T& v, const FieldFp& fp = {}) {
    nlohmann::json j(v);
    json(key, j, FieldKind::check, fp);
  }
  template <class T>
  void info(const std::string& key, const T& v, const FieldFp& fp = {}) {
    if (loading()) return;
    nlohmann::json j(v);
    json(key, j, FieldKind::info, fp);
  }

 private:
  template <class T>
  static void get(const std::string& key, const nlohmann::json& j, T& v) {
    try {
      v = j.get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(cat("checkpoint field '", key, "' holds ", j.dump(), ": ", e.what()));
    }
  }
};

// An object that keeps its state as one JSON value (to_json / from_json: its own state_json and
// load_state_json) visited as the whole section `section`, fingerprint fp.
inline void visit_json_state(StateVisitor& v, const std::string& section, const FieldFp& fp,
                             const std::function<nlohmann::json()>& to_json,
                             const std::function<void(const nlohmann::json&)>& from_json) {
  StateVisitor::Section s(v, section);
  nlohmann::json j = v.loading() ? nlohmann::json() : to_json();
  v.whole(j, fp);
  if (v.loading()) from_json(j);
}

// A value projected on keys: an object keeps the listed keys, an array of objects keeps them in
// every element; no keys: the value itself (what a check compares, what a group fingerprints).
nlohmann::json project_fields(const nlohmann::json& v, const std::vector<std::string>& keys);

// A refused check-field as "<key>" or, for arrays of one length, "<key>[i]" with i the first
// element that differs (messages).
std::string field_difference(const std::string& key, const nlohmann::json& have,
                             const nlohmann::json& want);

// The JSON fields of a visit, tensors ignored: {section: {field: value}} (whole sections as
// they are), and back (restore fields set, check fields compared: olmo::Error naming
// section.field and both values). For unit tests and objects' own JSON views of their state;
// checkpoints go through ckpt/state_io.h.
nlohmann::json state_to_json(const std::function<void(StateVisitor&)>& visit);
void state_from_json(const std::function<void(StateVisitor&)>& visit, const nlohmann::json& sections);

}  // namespace olmo
