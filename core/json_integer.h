// Reads a JSON number as an integer of a given type, only when it is an
// integer and fits.
//
// nlohmann's get<T>() on a float converts by a plain cast, so 2e88 as a
// uint64_t is undefined behaviour and 576.5 as an int64_t is silently 576;
// an integer that does not fit T wraps. Every reader of integers from files
// or servers goes through JsonInteger instead.
#ifndef TUNE_CORE_JSON_INTEGER_H_
#define TUNE_CORE_JSON_INTEGER_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace tune {

// The value of `v` as T, or nullopt when `v` is not an integer JSON number
// or lies outside T's range.
template <typename T>
std::optional<T> JsonInteger(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || static_cast<uint64_t>(i) > std::numeric_limits<T>::max()) return std::nullopt;
    } else {
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) return std::nullopt;
    }
    return static_cast<T>(i);
  }
  return std::nullopt;
}

}  // namespace tune

#endif  // TUNE_CORE_JSON_INTEGER_H_
