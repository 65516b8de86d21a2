#include "trainer/text/bpe_model.h"

#include <cstdio>
#include <cstring>
#include <queue>

#include "trainer/text/byte_level.h"

namespace tune::text {

Result<BpeModel> BpeModel::Build(std::unordered_map<std::string, int32_t> vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                 BpeOptions options) {
  BpeModel m;
  m.vocab_ = std::move(vocab);
  m.options_ = std::move(options);
  if (m.options_.unk_token) {
    auto it = m.vocab_.find(*m.options_.unk_token);
    if (it == m.vocab_.end()) {
      return Status::InvalidArgument("model.unk_token \"" + *m.options_.unk_token +
                                     "\" is not in model.vocab");
    }
    m.unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = m.vocab_.find(name);
    m.byte_ids_[b] = it == m.vocab_.end() ? -1 : it->second;
  }
  size_t prefix_len = m.options_.continuing_subword_prefix.size();
  m.merges_.reserve(merges.size() * 2);
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    auto ia = m.vocab_.find(a);
    auto ib = m.vocab_.find(b);
    std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : b);
    auto in = m.vocab_.find(merged);
    std::string where = "model.merges[" + std::to_string(i) + "] (\"" + a + "\", \"" + b + "\")";
    if (ia == m.vocab_.end()) return Status::InvalidArgument(where + ": \"" + a + "\" is not in model.vocab");
    if (ib == m.vocab_.end()) return Status::InvalidArgument(where + ": \"" + b + "\" is not in model.vocab");
    if (in == m.vocab_.end()) return Status::InvalidArgument(where + ": \"" + merged + "\" is not in model.vocab");
    // The first occurrence of a pair wins (later duplicates have higher rank).
    m.merges_.try_emplace(PairKey(ia->second, ib->second),
                          MergeTarget{static_cast<int32_t>(i), in->second});
  }
  return m;
}

BpeModel::BpeModel(BpeModel&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      merges_(std::move(other.merges_)),
      options_(std::move(other.options_)),
      unk_id_(other.unk_id_) {
  std::memcpy(byte_ids_, other.byte_ids_, sizeof(byte_ids_));
}

std::optional<int32_t> BpeModel::TokenId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::Tokenize(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(std::string(piece));
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  bool cacheable = piece.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word;
  Merge(piece, &word);
  ids->insert(ids->end(), word.begin(), word.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(piece), std::move(word));
  }
}

// The symbols of the piece form a doubly linked list; a min-heap holds the
// candidate merges (rank, position). A popped candidate is stale if either
// symbol changed since it was pushed; it is then skipped.
void BpeModel::Merge(std::string_view piece, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  // Initial symbols: one per character (with prefix / suffix decorations).
  std::vector<std::pair<size_t, size_t>> chars;
  for (size_t pos = 0; pos < piece.size();) {
    char32_t cp;
    bool valid;
    size_t n = DecodeUtf8(piece, pos, &cp, &valid);
    chars.emplace_back(pos, n);
    pos += n;
  }
  // As tokenizers' BPE::merge_word: an unknown character is held back as a
  // pending unk (grown in place with fuse_unk) and emitted before the next
  // known character; byte-fallback tokens do not flush it.
  int32_t pending_unk = -1;
  std::string s;
  for (size_t i = 0; i < chars.size(); ++i) {
    s.clear();
    if (i > 0) s = options_.continuing_subword_prefix;
    s.append(piece.substr(chars[i].first, chars[i].second));
    if (i + 1 == chars.size()) s.append(options_.end_of_word_suffix);
    auto it = vocab_.find(s);
    if (it != vocab_.end()) {
      if (pending_unk >= 0) symbols.push_back({pending_unk, 0, 0, true});
      pending_unk = -1;
      symbols.push_back({it->second, 0, 0, true});
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char c : s) all = all && byte_ids_[c] >= 0;
      if (all) {
        for (unsigned char c : s) symbols.push_back({byte_ids_[c], 0, 0, true});
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !options_.fuse_unk) symbols.push_back({pending_unk, 0, 0, true});
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) symbols.push_back({pending_unk, 0, 0, true});
  int n = static_cast<int>(symbols.size());
  for (int i = 0; i < n; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push_pair = [&](int left) {
    int right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(PairKey(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    auto it = merges_.find(PairKey(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (s.alive) ids->push_back(s.id);
  }
}

}  // namespace tune::text
