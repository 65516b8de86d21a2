// Fuzzes ParseMetricLine (trial_runner/metric_parser.h) with one line of
// trial output. Beyond "no crash, no undefined behaviour", it checks what
// the contract promises: every metric has a non-empty name made of
// [A-Za-z0-9_.\-/], and a line without '=' (text form) or '{' (JSON form)
// is never a metric line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trial_runner/metric_parser.h"

namespace {

bool NameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c == '/';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto metrics = tune::ParseMetricLine(line);
  if (!metrics) return 0;
  const bool json_form = line.find('{') != std::string_view::npos;
  if (!json_form && line.find('=') == std::string_view::npos) std::abort();
  if (!json_form) {
    for (const auto& [name, value] : *metrics) {
      if (name.empty()) std::abort();
      for (char c : name) {
        if (!NameChar(c)) std::abort();
      }
    }
  }
  return 0;
}
