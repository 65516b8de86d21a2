// ParamCodec: the type-preserving text form of a ParamMap in the database.
//
// `trials.params_json` holds ParamsToJson(params) (core/param.h):
// integers without a decimal point, doubles always with one (or an exponent)
// in their shortest round-trip form, booleans as true/false and strings as
// JSON strings. ParamsFromJson reads it back with the exact same types and
// bits, so a stored config can be fed back as a fixed one.
#pragma once

#include <string>

#include "core/param.h"
#include "core/status.h"

namespace tune {

// Parses the text of a JSON object of parameters. A JSON integer becomes
// int64_t, a JSON number with a fraction or exponent a double, true/false a
// bool and a string a std::string. InvalidArgument for anything else
// (nested values, null, integers beyond int64, text that is not an object).
Result<ParamMap> ParamsFromJson(const std::string& json);

// "int", "float", "bool" or "string": the `trial_params.type` column.
const char* ParamTypeName(const ParamValue& v);

// Non-finite doubles have no JSON form and are refused by storage.
bool ParamIsStorable(const ParamValue& v);

}  // namespace tune
