// AddedVocabulary: a tokenizer.json's `added_tokens` (special tokens such as
// <|endoftext|> and user-added ones), found in text before normalization and
// pre-tokenization, as `tokenizers`' AddedVocabulary does: leftmost-longest
// matches, non-overlapping, with lstrip / rstrip / single_word; tokens with
// `normalized` are matched on normalized text, the others on raw text.
// Internal to lora_text. Immutable after Build(); Split() is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainer/text/normalizer.h"

namespace tune::text {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;  // only where not inside a word
  bool lstrip = false;       // also takes the whitespace before it
  bool rstrip = false;       // also takes the whitespace after it
  bool normalized = false;   // matched on normalized text
  bool special = false;
};

// A run of text, or an added token already resolved to an id (id >= 0).
struct Segment {
  std::string text;
  int32_t id = -1;
};

class AddedVocabulary {
 public:
  void Add(AddedToken token);
  // Call once after the last Add(): normalizes the `normalized` tokens with
  // `normalizer` and builds the lookup tables.
  void Build(const Normalizer& normalizer);

  // Splits `s` into text runs and added tokens, matching either the raw
  // (normalized == false) or the normalized tokens. Appends to *out.
  void Split(const std::string& s, bool normalized, std::vector<Segment>* out) const;

  std::optional<int32_t> TokenId(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }  // sorted by id

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> match_;  // per token: the string searched for
  std::unordered_map<std::string, int32_t> by_content_;
  // Indices into tokens_ by the first byte of their match string, per pass
  // ([0] raw, [1] normalized), longest first.
  std::vector<int> by_first_byte_[2][256];
};

}  // namespace tune::text
