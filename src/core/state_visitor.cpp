// JSON views of a state visit (see state_visitor.h): the fields only, tensors ignored.
#include "core/state_visitor.h"

using nlohmann::json;

namespace olmo {

json project_fields(const json& v, const std::vector<std::string>& keys) {
  if (keys.empty()) return v;
  auto one = [&](const json& o) {
    if (!o.is_object()) return o;
    json r = json::object();
    for (const std::string& k : keys)
      if (o.contains(k)) r[k] = o[k];
    return r;
  };
  if (!v.is_array()) return one(v);
  json a = json::array();
  for (const json& e : v) a.push_back(one(e));
  return a;
}

std::string field_difference(const std::string& key, const json& have, const json& want) {
  if (have.is_array() && want.is_array() && have.size() == want.size())
    for (size_t i = 0; i < have.size(); ++i)
      if (have[i] != want[i]) return cat(key, "[", i, "]");
  return key;
}

namespace {

class JsonVisitor final : public StateVisitor {
 public:
  JsonVisitor(Mode mode, nlohmann::json& doc) : mode_(mode), doc_(doc) {}
  Mode mode() const override { return mode_; }
  void begin_section(const std::string& name) override { cur_ = name; }
  void end_section() override { cur_.clear(); }
  bool has_section(const std::string& s) const override { return mode_ != Mode::load || doc_.contains(s); }
  void json(const std::string& key, nlohmann::json& value, FieldKind kind, const FieldFp& fp) override {
    if (mode_ != Mode::load) {
      doc_[cur_][key] = value;
      return;
    }
    OLMO_CHECK(doc_.contains(cur_) && doc_[cur_].is_object() && doc_[cur_].contains(key),
               cur_, " state: missing field '", key, "'");
    const nlohmann::json& have = doc_[cur_][key];
    if (kind == FieldKind::restore) value = have;
    if (kind != FieldKind::check) return;
    const nlohmann::json a = project_fields(have, fp.keys), b = project_fields(value, fp.keys);
    OLMO_CHECK(a == b, cur_, " state.", field_difference(key, a, b), ": stored ", a.dump(),
               ", this object has ", b.dump());
  }
  void whole(nlohmann::json& value, const FieldFp&) override {
    if (mode_ != Mode::load) doc_[cur_] = value;
    else {
      OLMO_CHECK(doc_.contains(cur_), "state: missing section '", cur_, "'");
      value = doc_[cur_];
    }
  }
  void flat(const std::string&, float*, size_t, size_t) override {}
  void flat_replicated(const std::string&, float*) override {}

 private:
  Mode mode_;
  nlohmann::json& doc_;
  std::string cur_;
};

}  // namespace

json state_to_json(const std::function<void(StateVisitor&)>& visit) {
  json doc = json::object();
  JsonVisitor v(StateVisitor::Mode::save, doc);
  visit(v);
  return doc;
}

void state_from_json(const std::function<void(StateVisitor&)>& visit, const json& sections) {
  json doc = sections;
  JsonVisitor v(StateVisitor::Mode::load, doc);
  visit(v);
}

}  // namespace olmo
