#include "trial_runner/last_line.h"

#include <cctype>

namespace tune {

std::string LastLine(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t nl = text.rfind('\n', end - 1);
    size_t begin = nl == std::string_view::npos ? 0 : nl + 1;
    std::string line(text.substr(begin, end - begin));
    end = nl == std::string_view::npos ? 0 : nl;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    if (line.size() > 200) line = line.substr(0, 197) + "...";
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    return line;
  }
  return "";
}

}  // namespace tune
