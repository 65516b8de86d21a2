#include "trial_runner/last_line.h"

#include <cctype>

#include "core/one_line.h"

namespace tune {

std::string LastLine(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t nl = text.rfind('\n', end - 1);
    size_t begin = nl == std::string_view::npos ? 0 : nl + 1;
    std::string_view line = text.substr(begin, end - begin);
    end = nl == std::string_view::npos ? 0 : nl;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (!line.empty()) return OneLine(line, 200);
  }
  return "";
}

}  // namespace tune
