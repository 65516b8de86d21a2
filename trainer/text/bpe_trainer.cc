#include "trainer/text/bpe_trainer.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "trainer/text/byte_level.h"
#include "trainer/text/normalizer.h"
#include "trainer/text/pre_tokenizer.h"

namespace tune::text {

struct BpeTrainer::State {
  Normalizer normalizer{std::vector<NormalizerStep>{{NormalizerStep::Kind::kNormalForm, NormalForm::kNfc, "", nullptr}}};
  PreTokenizer pre_tokenizer;
  std::unordered_map<std::string, int64_t> word_counts;  // byte-level form
  int64_t bytes = 0;
};

BpeTrainer::BpeTrainer(BpeTrainerOptions options) : options_(std::move(options)), state_(new State) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kByteLevel;
  step.add_prefix_space = false;
  step.regex = Regex::Compile(kGpt2SplitPattern, false).value();  // a constant: cannot fail
  state_->pre_tokenizer = PreTokenizer({step});
}

BpeTrainer::~BpeTrainer() { delete state_; }

void BpeTrainer::Feed(std::string_view text) {
  state_->bytes += static_cast<int64_t>(text.size());
  std::string input = IsValidUtf8(text) ? std::string(text) : LossyUtf8(text);
  // Special tokens in the corpus are cut out, never learned from.
  std::vector<std::string> chunks;
  size_t pos = 0;
  while (pos <= input.size()) {
    size_t best = std::string::npos, best_len = 0;
    for (const std::string& s : options_.special_tokens) {
      if (s.empty()) continue;
      size_t at = input.find(s, pos);
      if (at < best || (at == best && s.size() > best_len)) {
        best = at;
        best_len = s.size();
      }
    }
    if (best == std::string::npos) {
      chunks.push_back(input.substr(pos));
      break;
    }
    chunks.push_back(input.substr(pos, best - pos));
    pos = best + best_len;
  }
  std::vector<std::string> pieces;
  for (const std::string& c : chunks) {
    if (c.empty()) continue;
    pieces.clear();
    state_->pre_tokenizer.Split(state_->normalizer.Normalize(c), &pieces);
    for (std::string& p : pieces) ++state_->word_counts[std::move(p)];
  }
}

namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct HeapEntry {
  int64_t count;
  uint64_t pair;
  // Max-heap on count; ties: the smaller pair (lower left id, then right).
  bool operator<(const HeapEntry& o) const {
    return count != o.count ? count < o.count : pair > o.pair;
  }
};

}  // namespace

Result<std::string> BpeTrainer::Train(BpeTrainerStats* stats) {
  const int n_special = static_cast<int>(options_.special_tokens.size());
  if (options_.vocab_size < n_special + 256) {
    return Status::InvalidArgument("vocab size " + std::to_string(options_.vocab_size) +
                                   " is smaller than the " + std::to_string(n_special) +
                                   " special tokens + 256 byte symbols");
  }
  // Vocab: special tokens, then the 256 byte symbols in byte order.
  std::vector<std::string> id_to_token(options_.special_tokens);
  std::unordered_map<std::string, int32_t> token_to_id;
  for (int i = 0; i < n_special; ++i) token_to_id.emplace(id_to_token[i], i);
  std::vector<int32_t> byte_id(256);
  for (int b = 0; b < 256; ++b) {
    const std::string& t = ByteToUnicode(static_cast<unsigned char>(b));
    auto [it, inserted] = token_to_id.emplace(t, static_cast<int32_t>(id_to_token.size()));
    if (inserted) id_to_token.push_back(t);
    byte_id[b] = it->second;
  }

  // Words as symbol-id sequences, sorted so that the result never depends
  // on hash-map order.
  std::vector<std::pair<std::string, int64_t>> sorted(state_->word_counts.begin(),
                                                      state_->word_counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<int32_t>> words(sorted.size());
  std::vector<int64_t> counts(sorted.size());
  for (size_t w = 0; w < sorted.size(); ++w) {
    std::string bytes;
    ByteLevelDecode(sorted[w].first, &bytes);
    for (unsigned char c : bytes) words[w].push_back(byte_id[c]);
    counts[w] = sorted[w].second;
  }

  std::unordered_map<uint64_t, int64_t> pair_counts;
  std::unordered_map<uint64_t, std::unordered_set<int32_t>> where;
  for (size_t w = 0; w < words.size(); ++w) {
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      uint64_t p = PairKey(words[w][i], words[w][i + 1]);
      pair_counts[p] += counts[w];
      where[p].insert(static_cast<int32_t>(w));
    }
  }
  std::priority_queue<HeapEntry> heap;
  for (const auto& [p, c] : pair_counts) heap.push({c, p});

  std::vector<std::pair<int32_t, int32_t>> merges;
  std::unordered_map<uint64_t, int64_t> changed;
  while (static_cast<int>(id_to_token.size()) < options_.vocab_size && !heap.empty()) {
    HeapEntry top = heap.top();
    heap.pop();
    auto pc = pair_counts.find(top.pair);
    int64_t current = pc == pair_counts.end() ? 0 : pc->second;
    if (current != top.count) {
      if (current > 0) heap.push({current, top.pair});
      continue;
    }
    if (top.count < options_.min_frequency || top.count <= 0) break;
    int32_t a = static_cast<int32_t>(top.pair >> 32);
    int32_t b = static_cast<int32_t>(top.pair & 0xFFFFFFFFu);
    std::string merged = id_to_token[a] + id_to_token[b];
    auto [it, inserted] = token_to_id.emplace(merged, static_cast<int32_t>(id_to_token.size()));
    if (inserted) id_to_token.push_back(merged);
    int32_t new_id = it->second;
    merges.emplace_back(a, b);

    // Re-count the pairs of every word that holds (a, b).
    std::vector<int32_t> affected(where[top.pair].begin(), where[top.pair].end());
    std::sort(affected.begin(), affected.end());
    changed.clear();
    for (int32_t w : affected) {
      std::vector<int32_t>& sym = words[w];
      const int64_t c = counts[w];
      for (size_t i = 0; i + 1 < sym.size(); ++i) changed[PairKey(sym[i], sym[i + 1])] -= c;
      std::vector<int32_t> out;
      out.reserve(sym.size());
      for (size_t i = 0; i < sym.size();) {
        if (i + 1 < sym.size() && sym[i] == a && sym[i + 1] == b) {
          out.push_back(new_id);
          i += 2;
        } else {
          out.push_back(sym[i++]);
        }
      }
      sym.swap(out);
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        uint64_t p = PairKey(sym[i], sym[i + 1]);
        changed[p] += c;
        where[p].insert(w);
      }
    }
    for (const auto& [p, delta] : changed) {
      if (delta == 0) continue;
      int64_t& pcount = pair_counts[p];
      pcount += delta;
      if (pcount > 0 && delta > 0) heap.push({pcount, p});
    }
    pair_counts.erase(top.pair);
    where.erase(top.pair);
  }

  // tokenizer.json, in the layout `tokenizers` writes.
  using ojson = nlohmann::ordered_json;
  ojson vocab = ojson::object();
  for (size_t i = 0; i < id_to_token.size(); ++i) vocab[id_to_token[i]] = i;
  ojson merge_list = ojson::array();
  for (auto [a, b] : merges) merge_list.push_back(id_to_token[a] + " " + id_to_token[b]);
  ojson added = ojson::array();
  for (int i = 0; i < n_special; ++i) {
    added.push_back({{"id", i}, {"content", options_.special_tokens[i]}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  auto byte_level = [](bool add_prefix_space, bool trim_offsets) {
    return ojson{{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space},
                 {"trim_offsets", trim_offsets}, {"use_regex", true}};
  };
  ojson j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer", byte_level(false, true)},
      {"post_processor", byte_level(true, false)},
      {"decoder", byte_level(true, true)},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                 {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                 {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                 {"vocab", vocab}, {"merges", merge_list}}},
  };
  if (stats) {
    stats->bytes = state_->bytes;
    stats->distinct_words = static_cast<int64_t>(words.size());
    stats->merges = static_cast<int64_t>(merges.size());
  }
  return j.dump(2) + "\n";
}

}  // namespace tune::text
