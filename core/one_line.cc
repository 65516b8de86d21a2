#include "core/one_line.h"

namespace tune {

std::string OneLine(std::string_view text, size_t max_bytes) {
  std::string line(text);
  if (line.size() > max_bytes) {
    size_t cut = max_bytes - 3;
    // Back to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line = line.substr(0, cut) + "...";
  }
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line;
}

}  // namespace tune
