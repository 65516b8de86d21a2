// Metric line parsing (docs/architecture.md, section 4.4): Katib text form and JSON form.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tune {

// Parses one line of rank-0 output.
// - JSON form: the line (trimmed) is one JSON object; its numeric members
//   (and booleans as 0/1) are the metrics; other members are ignored.
// - Katib text form (as Katib's StdOut collector): every `name=value` pair
//   on the line, where name matches [A-Za-z0-9_.\-/]+ and starts the line or
//   follows a space, comma or tab, and value is a decimal or scientific
//   number (also nan, inf) ending at a space, comma or the line's end. An
//   RFC 3339 timestamp or any other words may stand before or between the
//   pairs, as Katib allows: "2024-01-02T03:04:05Z epoch 3: loss=0.2".
//   A line with no such pair is ordinary log output.
// Returns nullopt for ordinary log output.
std::optional<std::map<std::string, double>> ParseMetricLine(std::string_view line);

}  // namespace tune
