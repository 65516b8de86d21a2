// What a failed trial said last, for its one-line failure message.
#pragma once

#include <string>
#include <string_view>

namespace tune {

// The last non-empty line of `text` (a log's tail, a Kubernetes termination
// message), trailing whitespace removed, as OneLine(line, 200)
// (core/one_line.h). "" if `text` has no such line.
std::string LastLine(std::string_view text);

}  // namespace tune
