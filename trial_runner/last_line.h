// The last thing a failed trial said, for its failure message.
#pragma once

#include <string>
#include <string_view>

namespace tune {

// The last non-empty line of `text` (a log's tail, a Kubernetes termination
// message), trailing whitespace removed, cut to at most 200 bytes (ending
// in "...") and with control characters replaced by spaces, so it fits in
// one line of a message. "" if `text` has no such line.
std::string LastLine(std::string_view text);

}  // namespace tune
