// Tokenizer::Impl, the loaded state of a Tokenizer, and the tokenizer.json
// reader that builds it (tokenizer_json.cc). Internal to lora_text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/text/added_vocabulary.h"
#include "trainer/text/bpe_model.h"
#include "trainer/text/decoder.h"
#include "trainer/text/normalizer.h"
#include "trainer/text/pre_tokenizer.h"
#include "trainer/text/tokenizer.h"

namespace tune::text {

struct Tokenizer::Impl {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::optional<BpeModel> model;
  AddedVocabulary added;
  std::vector<std::string> id_to_token;  // vocab and added tokens
  std::vector<uint8_t> id_is_added;
  int32_t vocab_size = 0;
  Decoder decoder;
  std::vector<int32_t> prefix, suffix;  // TemplateProcessing around $A
  std::optional<int32_t> eos, bos, pad;

  // Added tokens, normalization, pre-tokenization, BPE; appends to *ids.
  void EncodeText(std::string_view text, std::vector<int32_t>* ids) const;
};

// Parses tokenizer.json text; `origin` prefixes error messages.
Result<std::shared_ptr<Tokenizer::Impl>> ParseTokenizerJson(std::string_view json_text,
                                                            const std::string& origin);
// Takes eos/bos/pad from a tokenizer_config.json, if the file exists, and
// add_bos_token / add_eos_token (when present, they set the special prefix /
// suffix, as transformers' Llama tokenizers rebuild the post-processor).
// InvalidArgument if it exists but is not valid JSON, or names a token that
// is not in the vocabulary while asking for it to be added.
Status ApplyTokenizerConfig(const std::string& config_path, Tokenizer::Impl* impl);

}  // namespace tune::text
