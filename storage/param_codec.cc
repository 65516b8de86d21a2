#include "core/json_text.h"
#include "storage/param_codec.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace tune {

Result<ParamMap> ParamsFromJson(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("parameters are not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) {
    return Status::InvalidArgument("parameters must be a JSON object, got " + json);
  }
  ParamMap params;
  for (const auto& [name, v] : doc.items()) {
    if (v.is_number_integer() && !v.is_number_unsigned()) {
      params[name] = v.get<int64_t>();
    } else if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::InvalidArgument("parameter '" + name + "' is an integer beyond int64: " +
                                       DumpJson(v));
      }
      params[name] = static_cast<int64_t>(u);
    } else if (v.is_number_float()) {
      params[name] = v.get<double>();
    } else if (v.is_boolean()) {
      params[name] = v.get<bool>();
    } else if (v.is_string()) {
      params[name] = v.get<std::string>();
    } else {
      return Status::InvalidArgument("parameter '" + name +
                                     "' must be a number, boolean or string, got " + DumpJson(v));
    }
  }
  return params;
}

const char* ParamTypeName(const ParamValue& v) {
  if (std::holds_alternative<int64_t>(v)) return "int";
  if (std::holds_alternative<double>(v)) return "float";
  if (std::holds_alternative<bool>(v)) return "bool";
  return "string";
}

bool ParamIsStorable(const ParamValue& v) {
  const double* d = std::get_if<double>(&v);
  return d == nullptr || std::isfinite(*d);
}

}  // namespace tune
