#include "trainer/text/pre_tokenizer.h"

#include <algorithm>

#include "trainer/text/byte_level.h"

namespace tune::text {

const char kGpt2SplitPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------
// Split behaviours, as tokenizers' NormalizedString::split.

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The whole of `s` as alternating non-match / match spans.
std::vector<Span> FindSpans(const Regex& re, std::string_view s, bool invert) {
  std::vector<Span> spans;
  if (s.empty()) {
    spans.push_back({0, 0, false});
  } else {
    std::vector<std::pair<size_t, size_t>> m;
    re.FindAll(s, &m);
    size_t prev = 0;
    for (auto [b, e] : m) {
      if (prev != b) spans.push_back({prev, b, false});
      spans.push_back({b, e, true});
      prev = e;
    }
    if (prev != s.size()) spans.push_back({prev, s.size(), false});
  }
  if (invert) {
    for (Span& sp : spans) sp.is_match = !sp.is_match;
  }
  return spans;
}

// Returns the kept [begin, end) ranges.
std::vector<std::pair<size_t, size_t>> ApplyBehavior(const std::vector<Span>& spans,
                                                     SplitBehavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) out.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) out.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().first = it->begin;
        } else {
          out.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  return out;
}

}  // namespace

void PreTokenizer::Split(std::string_view text, std::vector<std::string>* pieces,
                         bool at_text_start) const {
  struct Piece {
    std::string text;
    bool at_start;  // begins the whole input
  };
  std::vector<Piece> current;
  current.push_back({std::string(text), at_text_start});
  std::vector<Piece> next;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (Piece& piece : current) {
      std::string& s = piece.text;
      if (s.empty()) continue;
      ranges.clear();
      switch (step.kind) {
        case PreTokenizerStep::Kind::kByteLevel: {
          if (step.add_prefix_space && s[0] != ' ') s.insert(0, " ");
          if (step.regex) {
            ranges = ApplyBehavior(FindSpans(*step.regex, s, false), SplitBehavior::kIsolated);
          } else {
            ranges.emplace_back(0, s.size());
          }
          for (auto [b, e] : ranges) {
            if (b == e) continue;
            std::string mapped;
            ByteLevelEncode(std::string_view(s).substr(b, e - b), &mapped);
            next.push_back({std::move(mapped), piece.at_start && b == 0});
          }
          continue;
        }
        case PreTokenizerStep::Kind::kMetaspace: {
          std::string replaced;
          replaced.reserve(s.size() + step.replacement.size());
          for (char c : s) {
            if (c == ' ') replaced.append(step.replacement);
            else replaced.push_back(c);
          }
          s.swap(replaced);
          bool starts = s.compare(0, step.replacement.size(), step.replacement) == 0;
          if (!starts && (step.prepend_scheme == PrependScheme::kAlways ||
                          (step.prepend_scheme == PrependScheme::kFirst && piece.at_start))) {
            s.insert(0, step.replacement);
          }
          if (step.regex) {
            ranges = ApplyBehavior(FindSpans(*step.regex, s, false), SplitBehavior::kMergedWithNext);
          } else {
            ranges.emplace_back(0, s.size());
          }
          break;
        }
        case PreTokenizerStep::Kind::kSplit:
          ranges = ApplyBehavior(FindSpans(*step.regex, s, step.invert), step.behavior);
          break;
      }
      for (auto [b, e] : ranges) {
        if (b != e) next.push_back({s.substr(b, e - b), piece.at_start && b == 0});
      }
    }
    current.swap(next);
  }
  for (Piece& p : current) {
    if (!p.text.empty()) pieces->push_back(std::move(p.text));
  }
}

}  // namespace tune::text
