#include "trainer/text/decoder.h"

#include <string_view>

#include "trainer/text/byte_level.h"

namespace tune::text {
namespace {

using Tokens = std::vector<std::string>;

Tokens ByteLevel(const Tokens& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    if (!ByteLevelDecode(t, &bytes)) bytes.append(t);
  }
  return {LossyUtf8(bytes)};
}

Tokens Replace(const Tokens& tokens, const DecoderStep& step) {
  Tokens out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) out.push_back(step.pattern->ReplaceAll(t, step.content));
  return out;
}

// A <0xNN> token's byte, or -1.
int ByteToken(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    char c = t[i];
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

Tokens ByteFallback(const Tokens& tokens) {
  Tokens out;
  std::string run;
  auto flush = [&] {
    if (run.empty()) return;
    if (IsValidUtf8(run)) {
      out.push_back(run);
    } else {
      for (size_t i = 0; i < run.size(); ++i) out.push_back("\xEF\xBF\xBD");  // U+FFFD
    }
    run.clear();
  };
  for (const std::string& t : tokens) {
    int b = ByteToken(t);
    if (b >= 0) {
      run.push_back(static_cast<char>(b));
    } else {
      flush();
      out.push_back(t);
    }
  }
  flush();
  return out;
}

Tokens Fuse(const Tokens& tokens) {
  std::string all;
  for (const std::string& t : tokens) all.append(t);
  return {all};
}

// Byte offsets of the code points of `t`, plus t.size().
std::vector<size_t> CharStarts(std::string_view t) {
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < t.size();) {
    starts.push_back(pos);
    char32_t cp;
    bool valid;
    pos += DecodeUtf8(t, pos, &cp, &valid);
  }
  starts.push_back(t.size());
  return starts;
}

Tokens Strip(const Tokens& tokens, const DecoderStep& step) {
  Tokens out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) {
    std::vector<size_t> starts = CharStarts(t);
    size_t n = starts.size() - 1;
    auto is_content = [&](size_t i) {
      return std::string_view(t).substr(starts[i], starts[i + 1] - starts[i]) == step.content;
    };
    size_t first = 0;
    while (first < step.start && first < n && is_content(first)) ++first;
    size_t last = n;  // one past the kept characters
    for (size_t i = 0; i < step.stop && last > first && is_content(last - 1); ++i) --last;
    out.push_back(t.substr(starts[first], starts[last] - starts[first]));
  }
  return out;
}

Tokens Metaspace(const Tokens& tokens, const DecoderStep& step) {
  Tokens out;
  out.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const std::string& r = step.content;
    std::string s;
    for (size_t pos = 0; pos < t.size();) {
      if (!r.empty() && t.compare(pos, r.size(), r) == 0) {
        if (!(i == 0 && step.strip_first)) s.push_back(' ');
        pos += r.size();
      } else {
        s.push_back(t[pos++]);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string Decoder::Decode(std::vector<std::string> tokens) const {
  if (steps_.empty()) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined.push_back(' ');
      joined.append(tokens[i]);
    }
    return joined;
  }
  for (const DecoderStep& step : steps_) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel: tokens = ByteLevel(tokens); break;
      case DecoderStep::Kind::kReplace: tokens = Replace(tokens, step); break;
      case DecoderStep::Kind::kByteFallback: tokens = ByteFallback(tokens); break;
      case DecoderStep::Kind::kFuse: tokens = Fuse(tokens); break;
      case DecoderStep::Kind::kStrip: tokens = Strip(tokens, step); break;
      case DecoderStep::Kind::kMetaspace: tokens = Metaspace(tokens, step); break;
    }
  }
  std::string joined;
  for (const std::string& t : tokens) joined.append(t);
  return joined;
}

}  // namespace tune::text
