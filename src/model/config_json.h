// ModelConfig <-> JSON, field by field from the one description (config_fields.h): the
// checkpoint's "model" section and `olmo info`'s model table. Every field is written; reading
// requires every field (a missing or unknown key, or a value of the wrong type, is an error
// naming the key and `where`) and validates the result.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace olmo::model {

nlohmann::json model_config_to_json(const ModelConfig& c);
ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& where);
// "name: value" lines of every field (values as JSON), for `olmo info` and --dry-run.
std::string model_config_text(const ModelConfig& c, const std::string& indent = "  ");
// Names of every field, in description order.
std::vector<std::string> model_config_field_names();

Precision parse_precision(const std::string& s, const std::string& where);  // fp32 | bf16_mixed

}  // namespace olmo::model
