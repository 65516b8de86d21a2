// gzip for the dashboard's answers (RFC 1952, through zlib), when the
// client says it accepts it (Accept-Encoding, RFC 9110 section 12.5.3).
//
// Why not cpp-httplib's own compression: Debian's build prefers Brotli at
// its highest quality whenever a client offers "br" (every browser does),
// which took 26 s for a 7.4 MB experiment document; its gzip cannot be
// chosen over it. So the server sends JSON and scripts with a type that
// cpp-httplib leaves alone and compresses them here at a fast level.
#pragma once

#include <string>
#include <string_view>

namespace tune {

// Whether an Accept-Encoding value admits gzip: "gzip" (or "x-gzip"), or
// "*" without gzip named, with a quality above 0 ("gzip;q=0" refuses it).
// Codings are case-insensitive; an empty or absent header admits none.
bool AcceptsGzip(std::string_view accept_encoding);

// `data` as one gzip member, compressed at zlib level `level` (1 fastest
// .. 9 smallest). Throws std::bad_alloc only.
std::string GzipCompress(std::string_view data, int level);

}  // namespace tune
