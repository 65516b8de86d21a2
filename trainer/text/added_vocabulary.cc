#include "trainer/text/added_vocabulary.h"

#include <algorithm>
#include <cctype>

#include "trainer/text/byte_level.h"

namespace tune::text {
namespace {

bool IsWhitespace(char32_t c) {
  // Rust's char::is_whitespace (the Unicode White_Space property).
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool IsWordChar(char32_t c) {
  // Rust's regex \w, close enough for single_word: letters, digits, '_'.
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  return !IsWhitespace(c);
}

char32_t LastChar(std::string_view s) {
  size_t p = s.size();
  while (p > 0 && (static_cast<unsigned char>(s[p - 1]) & 0xC0) == 0x80) --p;
  if (p > 0) --p;
  char32_t cp;
  bool valid;
  DecodeUtf8(s, p, &cp, &valid);
  return cp;
}

char32_t FirstChar(std::string_view s) {
  char32_t cp;
  bool valid;
  DecodeUtf8(s, 0, &cp, &valid);
  return cp;
}

}  // namespace

void AddedVocabulary::Add(AddedToken token) {
  by_content_[token.content] = token.id;
  tokens_.push_back(std::move(token));
}

void AddedVocabulary::Build(const Normalizer& normalizer) {
  std::sort(tokens_.begin(), tokens_.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  match_.clear();
  for (auto& pass : by_first_byte_) {
    for (auto& bucket : pass) bucket.clear();
  }
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    match_.push_back(t.normalized ? normalizer.Normalize(t.content) : t.content);
    if (match_.back().empty()) continue;
    by_first_byte_[t.normalized ? 1 : 0][static_cast<unsigned char>(match_.back()[0])].push_back(
        static_cast<int>(i));
  }
  for (auto& pass : by_first_byte_) {
    for (auto& bucket : pass) {
      std::stable_sort(bucket.begin(), bucket.end(),
                       [&](int a, int b) { return match_[a].size() > match_[b].size(); });
    }
  }
}

std::optional<int32_t> AddedVocabulary::TokenId(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

void AddedVocabulary::Split(const std::string& s, bool normalized, std::vector<Segment>* out) const {
  struct Match {
    size_t begin, end;
    int32_t id;
  };
  std::vector<Match> matches;
  size_t pos = 0;
  size_t start_offset = 0;
  while (pos < s.size()) {
    const AddedToken* best = nullptr;
    size_t best_len = 0;
    for (int index : by_first_byte_[normalized ? 1 : 0][static_cast<unsigned char>(s[pos])]) {
      const std::string& m = match_[index];
      if (m.size() > s.size() - pos) continue;
      if (s.compare(pos, m.size(), m) == 0) {
        best = &tokens_[index];  // longest first
        best_len = m.size();
        break;
      }
    }
    if (best == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + best_len;
    pos = end;  // non-overlapping, as aho-corasick's find_iter
    if (best->single_word) {
      bool start_ok = begin == 0 || !IsWordChar(LastChar(std::string_view(s).substr(0, begin)));
      bool stop_ok = end == s.size() || !IsWordChar(FirstChar(std::string_view(s).substr(end)));
      if (!start_ok || !stop_ok) continue;
    }
    if (best->lstrip) {
      size_t b = begin;
      while (b > 0) {
        size_t p = b - 1;
        while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
        char32_t cp;
        bool valid;
        DecodeUtf8(s, p, &cp, &valid);
        if (!IsWhitespace(cp)) break;
        b = p;
      }
      begin = std::max(b, start_offset);
    }
    if (best->rstrip) {
      while (end < s.size()) {
        char32_t cp;
        bool valid;
        size_t n = DecodeUtf8(s, end, &cp, &valid);
        if (!IsWhitespace(cp)) break;
        end += n;
      }
      pos = std::max(pos, end);
    }
    matches.push_back({begin, end, best->id});
    start_offset = end;
  }
  size_t prev = 0;
  for (const Match& m : matches) {
    if (m.begin > prev) out->push_back({s.substr(prev, m.begin - prev), -1});
    out->push_back({std::string(), m.id});
    prev = m.end;
  }
  if (prev < s.size()) out->push_back({s.substr(prev), -1});
}

}  // namespace tune::text
