// ModelConfig <-> JSON through visit_model_fields (see config_json.h).
#include "model/config_json.h"

#include <set>

#include "core/error.h"
#include "model/config_fields.h"

namespace olmo::model {

using nlohmann::json;

Precision parse_precision(const std::string& s, const std::string& where) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16_mixed") return Precision::bf16_mixed;
  throw Error(cat(where, ": precision '", s, "' must be fp32 or bf16_mixed"));
}

namespace {

json to_json_value(const YarnVariant& v) { return yarn_variant_name(v); }
json to_json_value(const Precision& p) { return precision_name(p); }
json to_json_value(const float& f) { return double(f); }
template <class T>
json to_json_value(const T& x) { return json(x); }

void from_json_value(const json& j, std::string& out, const std::string& where) {
  OLMO_CHECK(j.is_string(), where, ": expected a string, got ", j.dump());
  out = j.get<std::string>();
}
void from_json_value(const json& j, int64_t& out, const std::string& where) {
  OLMO_CHECK(j.is_number_integer(), where, ": expected an integer, got ", j.dump());
  out = j.get<int64_t>();
}
void from_json_value(const json& j, double& out, const std::string& where) {
  OLMO_CHECK(j.is_number(), where, ": expected a number, got ", j.dump());
  out = j.get<double>();
}
void from_json_value(const json& j, float& out, const std::string& where) {
  OLMO_CHECK(j.is_number(), where, ": expected a number, got ", j.dump());
  out = float(j.get<double>());
}
void from_json_value(const json& j, std::vector<int64_t>& out, const std::string& where) {
  OLMO_CHECK(j.is_array(), where, ": expected an array of integers, got ", j.dump());
  out.clear();
  for (const json& e : j) {
    OLMO_CHECK(e.is_number_integer(), where, ": expected an array of integers, got ", j.dump());
    out.push_back(e.get<int64_t>());
  }
}
void from_json_value(const json& j, YarnVariant& out, const std::string& where) {
  OLMO_CHECK(j.is_string(), where, ": expected a string, got ", j.dump());
  out = parse_yarn_variant(j.get<std::string>(), where);
}
void from_json_value(const json& j, Precision& out, const std::string& where) {
  OLMO_CHECK(j.is_string(), where, ": expected a string, got ", j.dump());
  out = parse_precision(j.get<std::string>(), where);
}

}  // namespace

json model_config_to_json(const ModelConfig& c) {
  json j = json::object();
  visit_model_fields(c, [&](const char* name, const auto& member, const char*, FieldUse) {
    j[name] = to_json_value(member);
  });
  return j;
}

ModelConfig model_config_from_json(const json& j, const std::string& where) {
  OLMO_CHECK(j.is_object(), where, ": the model section must be a JSON object");
  ModelConfig c;
  std::set<std::string> known;
  visit_model_fields(c, [&](const char* name, auto& member, const char*, FieldUse) {
    known.insert(name);
    OLMO_CHECK(j.contains(name), where, ": the model section has no field '", name, "'");
    from_json_value(j.at(name), member, cat(where, ": model field '", name, "'"));
  });
  for (auto it = j.begin(); it != j.end(); ++it)
    OLMO_CHECK(known.count(it.key()), where, ": unknown model field '", it.key(), "'");
  validate(c, where);
  return c;
}

std::string model_config_text(const ModelConfig& c, const std::string& indent) {
  std::string out;
  visit_model_fields(c, [&](const char* name, const auto& member, const char*, FieldUse) {
    out += cat(indent, name, ": ", to_json_value(member).dump(), "\n");
  });
  return out;
}

std::vector<std::string> model_config_field_names() {
  std::vector<std::string> v;
  ModelConfig c;
  visit_model_fields(c, [&](const char* name, const auto&, const char*, FieldUse) {
    v.push_back(name);
  });
  return v;
}

}  // namespace olmo::model
