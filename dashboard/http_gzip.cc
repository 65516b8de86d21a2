#include "dashboard/http_gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <new>
#include <optional>

namespace tune {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The weight of one element "coding;q=0.5;..." (1 without a q parameter;
// 0 for one that does not parse, so a malformed weight never admits).
double Weight(std::string_view params) {
  while (!params.empty()) {
    size_t semi = params.find(';');
    std::string_view p = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (p.size() < 2 || std::tolower(static_cast<unsigned char>(p[0])) != 'q' || p[1] != '=') continue;
    std::string q(Trim(p.substr(2)));
    char* end = nullptr;
    double w = std::strtod(q.c_str(), &end);
    if (q.empty() || end != q.c_str() + q.size() || !(w >= 0 && w <= 1)) return 0;
    return w;
  }
  return 1;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  std::optional<double> gzip, any;
  while (!accept_encoding.empty()) {
    size_t comma = accept_encoding.find(',');
    std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    size_t semi = element.find(';');
    std::string_view coding = Trim(element.substr(0, semi));
    double w = Weight(semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1));
    if (EqualsNoCase(coding, "gzip") || EqualsNoCase(coding, "x-gzip")) {
      gzip = std::max(gzip.value_or(0), w);
    } else if (coding == "*") {
      any = std::max(any.value_or(0), w);
    }
  }
  if (gzip) return *gzip > 0;
  return any && *any > 0;
}

std::string GzipCompress(std::string_view data, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::bad_alloc();
  // deflateBound's room holds the whole stream; zlib counts in 32 bits, so
  // input and output go through in pieces of at most 1 GiB.
  constexpr size_t kPiece = size_t{1} << 30;
  std::string out(deflateBound(&z, data.size()), '\0');
  size_t in = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t n = std::min(data.size() - in, kPiece);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in));
    z.avail_in = static_cast<uInt>(n);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + z.total_out);
    z.avail_out = static_cast<uInt>(std::min(out.size() - z.total_out, kPiece));
    const uLong consumed_before = z.total_in;
    rc = deflate(&z, in + n == data.size() ? Z_FINISH : Z_NO_FLUSH);
    in += z.total_in - consumed_before;
  }
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::bad_alloc();
  return out;
}

}  // namespace tune
