#include "core/utf8.h"

#include <cstdint>

namespace tune {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The well-formed byte sequences (Unicode 15, table 3-7): the lead byte
// fixes the length and the range of the first continuation byte; the
// others are 80..BF.
struct Lead {
  int length = 0;  // 0: not a lead byte
  uint8_t low = 0x80, high = 0xBF;
};

Lead LeadOf(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // at most U+10FFFF
  return {};
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  size_t copied = 0;  // text[0, copied) is in `out` (once something changed)
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const Lead lead = LeadOf(b);
    size_t j = i + 1;
    bool ok = lead.length > 0;
    for (int k = 1; ok && k < lead.length; ++k, ++j) {
      const uint8_t low = k == 1 ? lead.low : 0x80, high = k == 1 ? lead.high : 0xBF;
      if (j >= n || static_cast<uint8_t>(text[j]) < low || static_cast<uint8_t>(text[j]) > high) ok = false;
      if (!ok) break;
    }
    if (ok) {
      i = j;
      continue;
    }
    // text[i, j) is a maximal subpart: one U+FFFD, then on from j.
    out.append(text.substr(copied, i - copied));
    out += kReplacement;
    i = copied = j;
  }
  if (copied == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

}  // namespace tune
