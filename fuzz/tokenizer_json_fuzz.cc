// Fuzzes the tokenizer.json reader (trainer/text/tokenizer.h): the input is
// the JSON text. A file it accepts is then used as the trainer would use it:
// encode and decode a fixed sample and the input itself, and look up the
// special ids. Every id Encode returns must be below vocab_size().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainer/text/tokenizer.h"

namespace {

void CheckIds(const tune::text::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tok = tune::text::Tokenizer::FromJson(text, "fuzz/tokenizer.json");
  if (!tok.ok()) return 0;
  for (std::string_view sample : {std::string_view("Hello world, it's 2024!\n\t  <|endoftext|> e\xcc\x81 \xf0\x9f\x98\x80"),
                                  text.substr(0, 256)}) {
    for (bool add_special : {false, true}) {
      std::vector<int32_t> ids = tok->Encode(sample, add_special);
      CheckIds(*tok, ids);
      (void)tok->Decode(ids);
    }
  }
  (void)tok->eos_id();
  (void)tok->bos_id();
  (void)tok->pad_id();
  for (int32_t id = -1; id <= 3; ++id) {
    if (auto token = tok->IdToken(id)) (void)tok->TokenId(*token);
  }
  return 0;
}
