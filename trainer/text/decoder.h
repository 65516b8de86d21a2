// Decoder: turns the token strings of ids back into text, as a
// tokenizer.json `decoder` describes: a chain of steps, each mapping the list
// of token strings to a new list (tokenizers' decode_chain), joined at the
// end. Internal to lora_text. Immutable, thread-safe.
//
// Steps (tokenizers' semantics):
//   ByteLevel     every token whose characters are all in GPT-2's byte map
//                 becomes those bytes, any other its own UTF-8; the whole list
//                 becomes one string (ill-formed UTF-8 -> U+FFFD)
//   Replace       pattern matches in each token replaced by `content`
//   ByteFallback  runs of <0xNN> tokens become their bytes as one string, or
//                 one U+FFFD per byte when the run is not valid UTF-8
//   Fuse          the list joined into one string
//   Strip         up to `start` leading / `stop` trailing `content`
//                 characters cut from each token
//   Metaspace     `replacement` -> ' ' in each token, except in the first
//                 token when the prepend scheme is not "never" (dropped there)
// With no steps (decoder: null) the tokens are joined by single spaces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainer/text/regex.h"

namespace tune::text {

struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kByteLevel;
  std::shared_ptr<const Regex> pattern;  // kReplace
  std::string content;  // kReplace: replacement; kStrip: the character; kMetaspace: replacement
  size_t start = 0, stop = 0;  // kStrip
  bool strip_first = true;     // kMetaspace: prepend_scheme != never
};

class Decoder {
 public:
  Decoder() = default;  // decoder: null
  explicit Decoder(std::vector<DecoderStep> steps) : steps_(std::move(steps)) {}

  // `tokens` are valid UTF-8; so is the result.
  std::string Decode(std::vector<std::string> tokens) const;

 private:
  std::vector<DecoderStep> steps_;
};

}  // namespace tune::text
