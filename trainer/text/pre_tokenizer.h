// PreTokenizer: splits normalized text into the pieces BPE encodes one by
// one, as a tokenizer.json `pre_tokenizer` describes (Split with a regex,
// ByteLevel, Digits, Metaspace, or a Sequence of them). Regexes are PCRE2 in UTF + UCP
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

#include "core/status.h"
#include "trainer/text/regex.h"

namespace tune::text {

// `tokenizers`' SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Metaspace's prepend_scheme: when the replacement is put before a piece
// that does not start with it.
enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  Kind kind = Kind::kSplit;
  // kSplit; kByteLevel with use_regex; kMetaspace with split (the
  // replacement as a literal, split MergedWithNext).
  std::shared_ptr<const Regex> regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // kByteLevel
  std::string replacement;        // kMetaspace: every ' ' becomes this (e.g. "▁")
  PrependScheme prepend_scheme = PrependScheme::kAlways;  // kMetaspace
  // kFirst prepends only to the piece that starts the input text, i.e. not
  // after an added token (tokenizers: original offset 0).
};

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex = true).
extern const char kGpt2SplitPattern[];

class PreTokenizer {
 public:
  PreTokenizer() = default;  // no pre-tokenizer: the whole text is one piece
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}

  // Appends the pieces of `text` to *pieces (no empty pieces). Pieces that
  // went through a ByteLevel step are in byte-level form ("Ġthe").
  // `at_text_start`: `text` begins the whole input (Metaspace kFirst).
  void Split(std::string_view text, std::vector<std::string>* pieces,
             bool at_text_start = true) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace tune::text
