// Training data for the LoRA trainer: JSONL examples and packed text corpora,
// tokenized with a Tokenizer. No libtorch. See docs/trainer-data.md.
//
// Thread-safety: free functions with no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "trainer/text/tokenizer.h"

namespace tune::text {

// One tokenized sequence. loss_mask has the size of ids; loss_mask[i] == 1
// means ids[i] is a target: the loss includes predicting ids[i] from
// ids[0..i-1] (the trainer shifts by one; loss_mask[0] is thus never used).
struct Example {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss_mask;
};

// The Alpaca-style default prompt. The paragraph containing {input} (text
// between blank lines) is left out when an example has no or an empty input,
// unless that paragraph also holds {instruction}.
inline constexpr const char* kDefaultPromptTemplate =
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{response}";

struct DataOptions {
  // Longest example in tokens; longer ones are truncated (the end is cut).
  int seq_len = 256;
  // Must contain {instruction} and {response} once; {input} is optional.
  // Text before {response} is the prompt (no loss); {response} and what
  // follows it are the targets.
  std::string prompt_template = kDefaultPromptTemplate;
  // A malformed line is fatal ("file:line: reason") unless this is set; then
  // malformed lines are counted and reported once on stderr.
  bool skip_malformed = false;
  // Append the tokenizer's eos token (when it has one) to every example, as a
  // target, so the model learns to stop.
  bool append_eos = true;
};

// What LoadJsonl saw (optional out-parameter).
struct DataStats {
  int64_t lines = 0;          // non-blank lines read
  int64_t examples = 0;       // examples returned
  int64_t malformed = 0;      // lines skipped as malformed (skip_malformed)
  int64_t truncated = 0;      // examples cut to seq_len
  int64_t no_targets = 0;     // dropped: no target token left within seq_len
};

// Reads a JSONL file, one object per line: {"text": ...} (every token is a
// target) or {"instruction": ..., "input": ... (optional), "response": ...}
// ("output" is accepted for "response", as in Alpaca data; targets are the
// response tokens only). Other keys are ignored; blank lines are skipped.
// Each example is [special_prefix] prompt response [eos] [special_suffix],
// the prompt and the response encoded separately. NotFound if the file is
// missing; InvalidArgument "file:line: reason" on a malformed line unless
// opt.skip_malformed, or when the options are invalid.
Result<std::vector<Example>> LoadJsonl(const std::string& path, const Tokenizer& tok,
                                       const DataOptions& opt, DataStats* stats = nullptr);

// Reads a plain-text corpus for pretraining: documents are separated by blank
// lines, each is encoded on its own and followed by eos (when the tokenizer
// has one); the token stream is cut into consecutive chunks of seq_len tokens
// (a final shorter chunk is kept if it has at least 2 tokens). Every token is
// a target. NotFound if missing; InvalidArgument if seq_len < 2.
Result<std::vector<Example>> LoadCorpus(const std::string& path, const Tokenizer& tok,
                                        int seq_len);

// Deterministic Fisher-Yates shuffle: the same seed gives the same order on
// every platform (own SplitMix64 generator, not std::shuffle).
void Shuffle(std::vector<Example>& v, uint64_t seed);

// Shuffles `all` by `seed` and splits it into (train, eval) with
// round(eval_fraction * n) eval examples; at least one of each when n >= 2
// and 0 < eval_fraction < 1. eval_fraction <= 0 gives an empty eval set.
std::pair<std::vector<Example>, std::vector<Example>> SplitEval(std::vector<Example> all,
                                                                double eval_fraction,
                                                                uint64_t seed);

}  // namespace tune::text
