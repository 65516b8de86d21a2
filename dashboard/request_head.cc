#include "dashboard/request_head.h"

#include <strings.h>

namespace tune {
namespace {

// Header lines the dashboard ignores (see request_head.h).
bool Ignored(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view name = line.substr(0, colon);
  for (std::string_view ignored : {"Range", "If-Range", "Expect"}) {
    if (name.size() == ignored.size() && strncasecmp(name.data(), ignored.data(), name.size()) == 0) return true;
  }
  return false;
}

}  // namespace

ScannedHead ScanRequestHead(std::string_view bytes, const HeadLimits& limits) {
  ScannedHead out;
  size_t start = 0;
  int lines = 0;
  while (true) {
    const size_t newline = bytes.find('\n', start);
    const size_t end = newline == std::string_view::npos ? bytes.size() : newline + 1;
    if (end > limits.max_bytes) {
      out.state = HeadState::kTooLarge;
      return out;
    }
    if (newline == std::string_view::npos) return out;  // incomplete
    const std::string_view line = bytes.substr(start, end - start);
    if (lines > 0 && line == "\r\n") {
      out.state = HeadState::kComplete;
      out.consumed = end;
      out.head.append("\r\n");
      return out;
    }
    if (++lines > limits.max_lines) {
      out.state = HeadState::kTooLarge;
      return out;
    }
    if (lines == 1 || !Ignored(line)) out.head.append(line);
    start = end;
  }
}

}  // namespace tune
