// GPT-2's byte-to-unicode map (the "byte-level" of byte-level BPE) and the
// small UTF-8 helpers the tokenizer needs. Internal to lora_text.
//
// Byte-level BPE never sees raw bytes: every byte 0..255 is first replaced
// by a printable code point (printable Latin-1 bytes by themselves, the rest
// by U+0100 upward, e.g. ' ' -> 'Ġ', '\n' -> 'Ċ'), so every vocab entry is a
// valid UTF-8 string. Thread-safe (immutable tables built on first use).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tune::text {

// UTF-8 of the code point that stands for `byte`.
const std::string& ByteToUnicode(unsigned char byte);
// The byte a code point stands for, or -1 if it is not in the map.
int UnicodeToByte(char32_t cp);

// Maps every byte of `bytes` to its code point (appended as UTF-8 to *out).
void ByteLevelEncode(std::string_view bytes, std::string* out);
// Maps a byte-level token back to bytes, appended to *out. Returns false (and
// appends nothing) if some code point is not in the map.
bool ByteLevelDecode(std::string_view token, std::string* out);

// Decodes one code point at s[pos]. Returns the number of bytes it used
// (>= 1 when pos < size). *valid is false for an ill-formed sequence, which
// then spans its maximal valid prefix (Unicode's "maximal subpart" rule, as
// Rust's from_utf8_lossy and Python's decode(errors="replace")).
size_t DecodeUtf8(std::string_view s, size_t pos, char32_t* cp, bool* valid);
void AppendUtf8(char32_t cp, std::string* out);
bool IsValidUtf8(std::string_view s);
// `s` with every ill-formed sequence replaced by U+FFFD.
std::string LossyUtf8(std::string_view s);

}  // namespace tune::text
