// BpeModel: a BPE model's vocab and ranked merges, and the merge loop that
// turns one pre-tokenized piece into ids (the same algorithm and tie-breaks
// as `tokenizers`' Word::merge_all: lowest merge rank first, then leftmost).
// Internal to lora_text.
//
// Thread-safety: Tokenize() is const and may run concurrently; the word cache
// is guarded by a mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tune::text {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a piece that is a whole vocab entry skips merging
  // A character without a vocab entry becomes the <0xNN> tokens of its UTF-8
  // bytes when all of them are in the vocab (SentencePiece-style BPE).
  bool byte_fallback = false;
};

class BpeModel {
 public:
  // InvalidArgument if a merge's parts or result are not in the vocab, naming
  // the merge index ("model.merges[12]").
  static Result<BpeModel> Build(std::unordered_map<std::string, int32_t> vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges,
                                BpeOptions options);
  BpeModel(BpeModel&& other) noexcept;

  // Appends the ids of `piece` to *ids. Characters without a vocab entry
  // become their <0xNN> byte tokens (byte_fallback), else unk_token if there
  // is one (consecutive ones fused with fuse_unk), else are dropped (as
  // `tokenizers`).
  void Tokenize(std::string_view piece, std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenId(std::string_view token) const;
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  BpeModel() = default;
  void Merge(std::string_view piece, std::vector<int32_t>* ids) const;

  struct MergeTarget {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  int32_t byte_ids_[256];  // byte_fallback: id of "<0xNN>", or -1

  // Hashing for lookups by string_view without building a std::string.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  // piece -> ids; cleared when it grows past kMaxCacheEntries.
  static constexpr size_t kMaxCacheEntries = 1 << 18;
  static constexpr size_t kMaxCachedPieceBytes = 256;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace tune::text
