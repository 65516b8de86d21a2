// PreTokenizer: splits normalized text into the pieces BPE encodes one by
// one, as a tokenizer.json `pre_tokenizer` describes (Split with a regex,
// ByteLevel, Digits, or a Sequence of them). Regexes are PCRE2 in UTF + UCP
// mode with JIT, so \p{L}, \p{N}, (?i:...) and \s+(?!\S) behave as in the
// Oniguruma engine `tokenizers` uses. Internal to lora_text.
//
// Immutable after construction; Split() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/core/status.h"

namespace tune::text {

// A compiled PCRE2 pattern.
class Regex {
 public:
  // `literal`: the pattern is a plain string (Split's {"String": ...}).
  // InvalidArgument with PCRE2's message and offset on a bad pattern.
  static Result<std::shared_ptr<const Regex>> Compile(const std::string& pattern, bool literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches [begin, end) of the pattern in valid UTF-8 `s`,
  // left to right (an empty match advances by one code point).
  void FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>* matches) const;

 private:
  explicit Regex(void* code) : code_(code) {}
  void* code_;  // pcre2_code_8*
};

// `tokenizers`' SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel };
  Kind kind = Kind::kSplit;
  std::shared_ptr<const Regex> regex;  // kSplit; kByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // kByteLevel
};

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex = true).
extern const char kGpt2SplitPattern[];

class PreTokenizer {
 public:
  PreTokenizer() = default;  // no pre-tokenizer: the whole text is one piece
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}

  // Appends the pieces of `text` to *pieces (no empty pieces). Pieces that
  // went through a ByteLevel step are in byte-level form ("Ġthe").
  void Split(std::string_view text, std::vector<std::string>* pieces) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace tune::text
