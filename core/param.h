// ParamValue: one hyperparameter value, as the user sees it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace tune {

// int64_t for int parameters and integer choices, double for float ones,
// std::string and bool for categorical choices.
using ParamValue = std::variant<int64_t, double, std::string, bool>;
// Ordered by name, so iteration (and thus sampling) is reproducible.
using ParamMap = std::map<std::string, ParamValue>;

// Text form used in `${name}` substitution, TUNE_PARAM_<NAME> and tables:
// integers in decimal, doubles with the shortest round-trip form (%.17g
// trimmed), strings as-is, bools as "true"/"false".
std::string ParamToString(const ParamValue& v);

// JSON text of one value and of a whole map (`{"lr": 0.001, "r": 8}`).
std::string ParamToJson(const ParamValue& v);
std::string ParamsToJson(const ParamMap& params);

bool ParamEquals(const ParamValue& a, const ParamValue& b);

}  // namespace tune
