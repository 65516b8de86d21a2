#include "tracking/mlflow_keys.h"

#include <cstdint>

namespace tune::tracking {
namespace {

constexpr size_t kMaxKeyLength = 250;  // MLflow's MAX_ENTITY_KEY_LENGTH

// The length of the UTF-8 sequence at `s[i]`, 0 if it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;                                   // overlong
  if (n == 3 && c == 0xe0 && b(i + 1) < 0xa0) return 0;               // overlong
  if (n == 3 && c == 0xed && b(i + 1) >= 0xa0) return 0;              // surrogate
  if (n == 4 && (c > 0xf4 || (c == 0xf0 && b(i + 1) < 0x90) || (c == 0xf4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

bool Allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ' ' || c == ':' || c == '/';
}

}  // namespace

std::string MlflowKeyProblem(std::string_view key) {
  if (key.empty()) return "is empty";
  size_t chars = 0;
  for (size_t i = 0; i < key.size();) {
    const size_t n = Utf8Length(key, i);
    if (n == 0) return "is not valid UTF-8";
    if (n == 1 && !Allowed(key[i])) {
      return "has a character other than letters, digits, '_', '-', '.', ' ', ':' and '/'";
    }
    i += n;
    ++chars;
  }
  if (chars > kMaxKeyLength) return "is longer than 250 characters";
  if (key.substr(0, 2) == "..") return "starts with \"..\"";
  // posixpath.normpath(key) == key: no empty, "." or ".." part.
  size_t start = 0;
  while (true) {
    const size_t slash = key.find('/', start);
    const std::string_view part = key.substr(start, slash == std::string_view::npos ? std::string_view::npos
                                                                                     : slash - start);
    if (part.empty() || part == "." || part == "..") {
      return "is not a normalised path (a leading, trailing or double '/', or a \".\" or \"..\" part)";
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return "";
}

}  // namespace tune::tracking
