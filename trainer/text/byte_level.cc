#include "trainer/text/byte_level.h"

#include <array>
#include <cstdint>
#include <vector>

namespace tune::text {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_utf8;
  std::vector<int16_t> cp_to_byte;  // indexed by code point (< 0x200)
  Tables() : cp_to_byte(0x200, -1) {
    // GPT-2's bytes_to_unicode(): printable bytes map to themselves, the
    // others to 256, 257, ... in byte order.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      AppendUtf8(cp, &byte_to_utf8[b]);
      cp_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

}  // namespace

const std::string& ByteToUnicode(unsigned char byte) { return GetTables().byte_to_utf8[byte]; }

int UnicodeToByte(char32_t cp) {
  const Tables& t = GetTables();
  return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

void ByteLevelEncode(std::string_view bytes, std::string* out) {
  const Tables& t = GetTables();
  for (unsigned char c : bytes) out->append(t.byte_to_utf8[c]);
}

bool ByteLevelDecode(std::string_view token, std::string* out) {
  size_t start = out->size();
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp;
    bool valid;
    pos += DecodeUtf8(token, pos, &cp, &valid);
    int b = valid ? UnicodeToByte(cp) : -1;
    if (b < 0) {
      out->resize(start);
      return false;
    }
    out->push_back(static_cast<char>(b));
  }
  return true;
}

size_t DecodeUtf8(std::string_view s, size_t pos, char32_t* cp, bool* valid) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b0 = byte(pos);
  *valid = false;
  *cp = 0xFFFD;
  if (b0 < 0x80) {
    *cp = b0;
    *valid = true;
    return 1;
  }
  int need;
  char32_t value;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    value = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    value = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    value = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t i = pos + 1;
  for (int k = 0; k < need; ++k, ++i) {
    if (i >= s.size()) return i - pos;
    unsigned char b = byte(i);
    unsigned char l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
    if (b < l || b > h) return i - pos;
    value = (value << 6) | (b & 0x3F);
  }
  *cp = value;
  *valid = true;
  return i - pos;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsValidUtf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    char32_t cp;
    bool valid;
    pos += DecodeUtf8(s, pos, &cp, &valid);
    if (!valid) return false;
  }
  return true;
}

std::string LossyUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp;
    bool valid;
    size_t n = DecodeUtf8(s, pos, &cp, &valid);
    if (valid) {
      out.append(s.substr(pos, n));
    } else {
      AppendUtf8(0xFFFD, &out);
    }
    pos += n;
  }
  return out;
}

}  // namespace tune::text
