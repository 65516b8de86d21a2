// Fuzzes the byte-level BPE encoder and decoder (trainer/text/tokenizer.h):
// the input is text, encoded by the committed golden tokenizers (GPT-2,
// Qwen2 and Llama-3 style, tests/trainer_text/golden/). Checks, beyond "no
// crash, no undefined behaviour":
// - every id is below vocab_size();
// - Llama-3 (no normalizer, no stripping added tokens): decoding the ids of
//   valid UTF-8 text gives the text back, byte for byte;
// - every tokenizer: decoding gives valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/text/tokenizer.h"

namespace {

using tune::text::Tokenizer;

struct Loaded {
  std::vector<Tokenizer> all;
  const Tokenizer* llama3 = nullptr;
};

const Loaded& Tokenizers() {
  static const Loaded* loaded = [] {
    auto* l = new Loaded;
    for (const char* name : {"gpt2", "qwen2", "llama3"}) {
      auto tok = Tokenizer::Load(std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/" + name +
                                 "/tokenizer.json");
      if (!tok.ok()) {
        std::fprintf(stderr, "bpe_encode_fuzz: %s\n", tok.status().message().c_str());
        std::abort();
      }
      l->all.push_back(*tok);
    }
    l->llama3 = &l->all.back();
    return l;
  }();
  return *loaded;
}

// Well-formed UTF-8 (Unicode Table 3-7: no overlongs, no surrogates, at most
// U+10FFFF).
bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) n = 0;
    else if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) n = 2, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) n = 2;
    else if (c == 0xED) n = 2, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) n = 2;
    else if (c == 0xF0) n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) n = 3, hi = 0x8F;
    else return false;
    if (i + n >= s.size() && n > 0) return false;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      const uint8_t t = b(i + k);
      if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Loaded& tokenizers = Tokenizers();
  const bool valid = ValidUtf8(text);
  for (const Tokenizer& tok : tokenizers.all) {
    for (bool add_special : {false, true}) {
      std::vector<int32_t> ids = tok.Encode(text, add_special);
      for (int32_t id : ids) {
        if (id < 0 || id >= tok.vocab_size()) std::abort();
      }
      const std::string decoded = tok.Decode(ids);
      if (!ValidUtf8(decoded)) std::abort();
      if (&tok == tokenizers.llama3 && !add_special && valid && decoded != text) std::abort();
    }
  }
  return 0;
}
