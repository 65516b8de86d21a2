// Text made fit for one line of a message or a table cell.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tune {

// `text` with control characters (newlines included) replaced by spaces,
// cut to at most `max_bytes` (>= 3), then ending in "...", never inside a
// UTF-8 sequence.
std::string OneLine(std::string_view text, size_t max_bytes);

}  // namespace tune
