// Tokenizer: a Hugging Face `tokenizer.json` with a BPE model, encode and
// decode: byte-level BPE (GPT-2, Qwen2, Llama-3, SmolLM2) and
// SentencePiece-style BPE with byte fallback (Llama-2, Mistral, TinyLlama).
// No libtorch.
//
// Supported (anything else is an InvalidArgument naming the JSON field):
//   normalizer     null | NFC | NFD | NFKC | NFKD (utf8proc) | Prepend{prepend}
//                  | Replace{pattern {Regex|String}, content} | Sequence of those
//   pre_tokenizer  null | ByteLevel{add_prefix_space, use_regex}
//                  | Split{pattern {Regex|String}, behavior, invert} (PCRE2, UTF+UCP)
//                  | Digits{individual_digits}
//                  | Metaspace{replacement, prepend_scheme, split} | Sequence of those
//   model          BPE{vocab, merges ("a b" or ["a","b"]), ignore_merges,
//                  continuing_subword_prefix, end_of_word_suffix, unk_token,
//                  fuse_unk, byte_fallback (<0xNN> tokens)}
//   added_tokens   matched before normalization and pre-tokenization
//                  (leftmost-longest; lstrip, rstrip, single_word, normalized)
//   post_processor null | ByteLevel | TemplateProcessing | Sequence of those
//   decoder        null | ByteLevel | Replace | ByteFallback | Fuse | Strip
//                  | Metaspace | Sequence of those
//   truncation, padding: ignored (LoadJsonl truncates; the trainer pads)
// Encode() yields exactly the ids of `tokenizers`' `encode(text,
// add_special_tokens=add_special).ids` (checked against golden fixtures).
//
// Thread-safety: a loaded Tokenizer is immutable apart from an internal
// per-pre-token cache guarded by a mutex; all const methods may be called
// concurrently. Copies are cheap and share the loaded tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tune::text {

class Tokenizer {
 public:
  // Reads and validates `tokenizer_json_path`. If a `tokenizer_config.json`
  // sits next to it, its eos_token / bos_token / pad_token name the special
  // ids (otherwise well-known names are looked up, see eos_id()), and its
  // add_bos_token / add_eos_token, where present, replace the
  // post-processor's prefix / suffix with [bos] / [eos] or nothing.
  // NotFound if the file is missing; InvalidArgument for bad JSON or an
  // unsupported feature, naming the field (e.g. `pre_tokenizer.type`).
  static Result<Tokenizer> Load(const std::string& tokenizer_json_path);
  // Same from the JSON text itself; `origin` is used in error messages.
  static Result<Tokenizer> FromJson(std::string_view json_text,
                                    const std::string& origin = "tokenizer.json");

  // Token ids of `text` (UTF-8; invalid bytes are replaced by U+FFFD first).
  // Added/special tokens written inside `text` are recognised. With
  // `add_special`, the post-processor's template is applied (e.g. Llama-3's
  // leading <|begin_of_text|>); ByteLevel post-processors add nothing.
  std::vector<int32_t> Encode(std::string_view text, bool add_special = false) const;

  // Text of `ids` (special tokens included, as `tokenizers`' decode with
  // skip_special_tokens=False). Unknown ids are skipped. Byte sequences that
  // are not valid UTF-8 become U+FFFD.
  std::string Decode(const std::vector<int32_t>& ids) const;

  // Rows an embedding table needs: 1 + the largest id of vocab and added tokens.
  int32_t vocab_size() const;
  // Id of a token string as it appears in the vocab or added_tokens
  // (byte-level form, e.g. "Ġthe"), or nullopt.
  std::optional<int32_t> TokenId(std::string_view token) const;
  // The token string of `id` (byte-level form), or nullopt.
  std::optional<std::string> IdToken(int32_t id) const;

  // Special ids from tokenizer_config.json when present, else the first
  // known name in the vocab: eos <|endoftext|>, <|end_of_text|>, </s>, <eos>;
  // bos <|begin_of_text|>, <s>, <bos>, <|startoftext|>; pad <|pad|>, <pad>,
  // <|finetune_right_pad_id|>.
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> pad_id() const;

  // Ids the post-processor puts before / after the text with add_special
  // (empty for ByteLevel). Lets callers encode a prompt and a response
  // separately and still frame the whole example once.
  const std::vector<int32_t>& special_prefix() const;
  const std::vector<int32_t>& special_suffix() const;

  // Opaque loaded state (defined in tokenizer.cc).
  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace tune::text
