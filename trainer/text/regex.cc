#include "trainer/text/regex.h"

#include <cctype>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace tune::text {

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

std::string Regex::ReplaceAll(std::string_view s, std::string_view content) const {
  std::vector<std::pair<size_t, size_t>> m;
  FindAll(s, &m);
  if (m.empty()) return std::string(s);
  std::string out;
  size_t prev = 0;
  for (auto [b, e] : m) {
    out.append(s.substr(prev, b - prev));
    out.append(content);
    prev = e;
  }
  out.append(s.substr(prev));
  return out;
}

}  // namespace tune::text
