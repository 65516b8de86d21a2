// BpeTrainer: learns a byte-level BPE tokenizer from a text corpus, as
// `tokenizers`' BpeTrainer with a ByteLevel pre-tokenizer does: NFC, GPT-2's
// pre-tokenization regex, then repeatedly merge the most frequent adjacent
// pair of symbols (ties: the pair of lower ids), counting each distinct
// pre-token once with its frequency. The result is a complete tokenizer.json
// that both `tokenizers` and Tokenizer::Load read.
//
// Not thread-safe (one trainer per thread).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tune::text {

struct BpeTrainerOptions {
  // Final vocab size: special tokens + 256 byte symbols + merges.
  int vocab_size = 4000;
  // Added as special tokens with ids 0, 1, ... and never split or merged.
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  // Pairs seen fewer times than this are never merged (training may then
  // stop below vocab_size).
  int64_t min_frequency = 2;
};

struct BpeTrainerStats {
  int64_t bytes = 0;          // corpus bytes fed
  int64_t distinct_words = 0; // distinct pre-tokens
  int64_t merges = 0;
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions options);
  ~BpeTrainer();
  BpeTrainer(const BpeTrainer&) = delete;
  BpeTrainer& operator=(const BpeTrainer&) = delete;

  // Counts the pre-tokens of `text` (call any number of times; documents
  // may be fed one by one). Invalid UTF-8 is replaced by U+FFFD.
  void Feed(std::string_view text);

  // Learns the merges and returns the tokenizer.json text.
  // InvalidArgument if vocab_size is smaller than specials + 256.
  Result<std::string> Train(BpeTrainerStats* stats = nullptr);

 private:
  struct State;
  BpeTrainerOptions options_;
  State* state_;  // owned
};

}  // namespace tune::text
