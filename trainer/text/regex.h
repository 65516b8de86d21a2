// Regex: a compiled PCRE2 pattern in UTF + UCP mode with JIT, so \p{L},
// \p{N}, (?i:...) and \s+(?!\S) behave as in the Oniguruma engine
// `tokenizers` uses. Shared by the Split pre-tokenizer, the Replace
// normalizer and the Replace decoder. Internal to lora_text.
//
// Immutable after Compile(); FindAll() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tune::text {

class Regex {
 public:
  // `literal`: the pattern is a plain string (tokenizer.json's
  // {"String": ...}). InvalidArgument with PCRE2's message and offset on a
  // bad pattern.
  static Result<std::shared_ptr<const Regex>> Compile(const std::string& pattern, bool literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches [begin, end) of the pattern in valid UTF-8 `s`,
  // left to right (an empty match advances by one code point).
  void FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>* matches) const;

  // `s` with every match replaced by `content` (tokenizers' Replace).
  std::string ReplaceAll(std::string_view s, std::string_view content) const;

 private:
  explicit Regex(void* code) : code_(code) {}
  void* code_;  // pcre2_code_8*
};

}  // namespace tune::text
