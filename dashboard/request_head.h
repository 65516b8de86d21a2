// ScanRequestHead: where one HTTP/1.1 request head ends in the bytes a
// connection sent, with a cap on its size and on its number of lines, read
// before cpp-httplib sees any of it (Debian's cpp-httplib 0.11.4 has no
// run-time limit on either).
//
// The head ends as cpp-httplib's reader ends it: the request line is the
// first line (up to '\n'); then each line up to '\n' is a header line, and
// the first one that is exactly "\r\n" ends the head.
//
// The head passed on leaves out the header lines that the read-only
// dashboard ignores: `Range` and `If-Range` (cpp-httplib 0.11.4 would answer
// 3,000 ranges with 3,000 copies of the body: RFC 9110 lets a server
// ignore Range) and `Expect` (only for a request body, which is refused).
// Names are compared as cpp-httplib compares them: the text before ':',
// without case.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tune {

struct HeadLimits {
  size_t max_bytes = 16 * 1024;  // request line, header lines and the blank line
  int max_lines = 100;           // the request line and the header lines
};

enum class HeadState {
  kIncomplete,  // more bytes needed; none of the limits is passed yet
  kComplete,    // `head` and `consumed` are set
  kTooLarge,    // larger than max_bytes or more lines than max_lines
};

struct ScannedHead {
  HeadState state = HeadState::kIncomplete;
  size_t consumed = 0;  // bytes of the input up to and including the blank line
  std::string head;     // those bytes less the ignored header lines
};

// Pure: the first head in `bytes` (a connection's input from the start of
// a request). Bytes after it (a pipelined next request) are not looked at.
ScannedHead ScanRequestHead(std::string_view bytes, const HeadLimits& limits);

}  // namespace tune
