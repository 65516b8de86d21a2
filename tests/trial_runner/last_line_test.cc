// LastLine: what a failed trial's message quotes from its log (OneLine,
// which makes it fit one line, is tested in tests/core/one_line_test.cc).
#include "trial_runner/last_line.h"

#include <catch2/catch.hpp>
#include <string>

namespace tune {
namespace {

TEST_CASE("LastLine takes the last non-empty line, trimmed", "[last_line]") {
  CHECK(LastLine("loading\nTraceback (most recent call last):\n  File x\nValueError: bad lr\n") ==
        "ValueError: bad lr");
  CHECK(LastLine("one\ntwo  \r\n\n \n") == "two");
  CHECK(LastLine("only") == "only");
  CHECK(LastLine("\nfirst line after a newline") == "first line after a newline");
  CHECK(LastLine("  indented\n") == "  indented");
}

TEST_CASE("LastLine returns nothing for empty or blank text", "[last_line]") {
  CHECK(LastLine("").empty());
  CHECK(LastLine("\n\n  \n\t\n").empty());
}

TEST_CASE("LastLine keeps one printable line of at most 200 bytes", "[last_line]") {
  std::string long_line(500, 'x');
  std::string got = LastLine("a\n" + long_line + "\n");
  CHECK(got.size() == 200);
  CHECK(got.substr(197) == "...");
  CHECK(got.substr(0, 197) == long_line.substr(0, 197));
  CHECK(LastLine("progress\r50%\x1b[0m done\n") == "progress 50% [0m done");
}

}  // namespace
}  // namespace tune
