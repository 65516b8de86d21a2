#include "trainer/text/pre_tokenizer.h"

#include <algorithm>
#include <cctype>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "trainer/text/byte_level.h"

namespace tune::text {

const char kGpt2SplitPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------
// Regex

Result<std::shared_ptr<const Regex>> Regex::Compile(const std::string& pattern, bool literal) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  std::string source = pattern;
  if (literal) {
    // PCRE2_LITERAL excludes PCRE2_UCP: escape instead.
    source.clear();
    for (char c : pattern) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x80 && !std::isalnum(u)) source.push_back('\\');
      source.push_back(c);
    }
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(error, buf, sizeof(buf));
    return Status::InvalidArgument("bad regex /" + pattern + "/ at offset " +
                                   std::to_string(offset) + ": " +
                                   reinterpret_cast<const char*>(buf));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is absent
  return std::shared_ptr<const Regex>(new Regex(code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>* matches) const {
  auto* code = static_cast<pcre2_code*>(code_);
  // Match data is per call: a Regex is shared between threads.
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t start = 0;
  while (start <= s.size()) {
    int rc = pcre2_match(code, subject, s.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Very long runs (e.g. megabytes of spaces) overflow the JIT stack.
      rc = pcre2_match(code, subject, s.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                       nullptr);
    }
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH (or a resource limit: treat as no match)
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {
      // Empty match: skip one code point.
      if (b >= s.size()) break;
      size_t next = b + 1;
      while (next < s.size() && (static_cast<unsigned char>(s[next]) & 0xC0) == 0x80) ++next;
      start = next;
      continue;
    }
    matches->emplace_back(b, e);
    start = e;
  }
  pcre2_match_data_free(md);
}

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

void PreTokenizer::Split(std::string_view text, std::vector<std::string>* pieces) const {
  std::vector<std::string> current;
  current.emplace_back(text);
  std::vector<std::string> next;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (std::string& piece : current) {
      if (piece.empty()) continue;
      if (step.kind == PreTokenizerStep::Kind::kByteLevel) {
        if (step.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
        std::vector<std::pair<size_t, size_t>> ranges;
        if (step.regex) {
          ranges = ApplyBehavior(FindSpans(*step.regex, piece, false), SplitBehavior::kIsolated);
        } else {
          ranges.emplace_back(0, piece.size());
        }
        for (auto [b, e] : ranges) {
          if (b == e) continue;
          std::string mapped;
          ByteLevelEncode(std::string_view(piece).substr(b, e - b), &mapped);
          next.push_back(std::move(mapped));
        }
      } else {
        for (auto [b, e] : ApplyBehavior(FindSpans(*step.regex, piece, step.invert), step.behavior)) {
          if (b != e) next.emplace_back(piece, b, e - b);
        }
      }
    }
    current.swap(next);
  }
  for (std::string& p : current) {
    if (!p.empty()) pieces->push_back(std::move(p));
  }
}

}  // namespace tune::text
