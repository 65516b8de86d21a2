// JSON text from values that may hold outside bytes.
//
// Strings in a document often come from outside: a trial's output, a path,
// an error message, a server's answer. nlohmann's dump() throws
// type_error.316 on a byte sequence that is not UTF-8, which ended whole
// processes. Every document `tune` writes goes through DumpJson instead: a
// bad byte becomes U+FFFD in the text, while the value itself (and what
// storage keeps) is unchanged.
#ifndef TUNE_CORE_JSON_TEXT_H_
#define TUNE_CORE_JSON_TEXT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace tune {

// `j` as JSON text; `indent` < 0 is compact. Never throws on invalid UTF-8:
// each bad byte is written as U+FFFD.
inline std::string DumpJson(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tune

#endif  // TUNE_CORE_JSON_TEXT_H_
