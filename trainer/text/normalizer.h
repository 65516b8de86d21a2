// Normalizer: the steps a tokenizer.json `normalizer` may ask for, applied in
// order: Unicode normal forms (NFC, NFD, NFKC, NFKD, by utf8proc), Prepend
// (a string before non-empty text, e.g. SentencePiece's "▁") and Replace (a
// literal or regex pattern by a string, e.g. " " by "▁"); a Sequence is the
// list of its steps. Internal to lora_text. Immutable, thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/text/regex.h"

namespace tune::text {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

struct NormalizerStep {
  enum class Kind { kNormalForm, kPrepend, kReplace };
  Kind kind = Kind::kNormalForm;
  NormalForm form = NormalForm::kNfc;  // kNormalForm
  std::string content;                 // kPrepend: the prefix; kReplace: the replacement
  std::shared_ptr<const Regex> pattern;  // kReplace
};

class Normalizer {
 public:
  Normalizer() = default;  // identity (normalizer: null)
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

  // `text` must be valid UTF-8; the result is valid UTF-8.
  std::string Normalize(std::string_view text) const;
  bool empty() const { return steps_.empty(); }

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace tune::text
