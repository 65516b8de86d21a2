// Normalizer: the Unicode normal forms a tokenizer.json `normalizer` may ask
// for (NFC, NFD, NFKC, NFKD, or a Sequence of them), done by utf8proc.
// Internal to lora_text. Immutable, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tune::text {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

class Normalizer {
 public:
  Normalizer() = default;  // identity (normalizer: null)
  explicit Normalizer(std::vector<NormalForm> steps) : steps_(std::move(steps)) {}

  // `text` must be valid UTF-8. Pure ASCII is returned unchanged.
  std::string Normalize(std::string_view text) const;
  bool empty() const { return steps_.empty(); }

 private:
  std::vector<NormalForm> steps_;
};

}  // namespace tune::text
