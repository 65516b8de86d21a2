// OneLine (core/one_line.h): any text as one printable line of at most a
// given number of bytes, as error messages and tables quote it.
#include "core/one_line.h"

#include <catch2/catch.hpp>

namespace tune {
namespace {

TEST_CASE("OneLine blanks control characters and never cuts inside a UTF-8 sequence", "[core][one_line]") {
  CHECK(OneLine("exit status 1,\nby signal 9", 100) == "exit status 1, by signal 9");
  CHECK(OneLine("abcdef", 6) == "abcdef");
  CHECK(OneLine("abcdefg", 6) == "abc...");
  // "é" is two bytes (C3 A9): a cut at byte 4 would split the second one.
  CHECK(OneLine("ab\xC3\xA9\xC3\xA9xyz", 7) == "ab\xC3\xA9...");
  CHECK(OneLine("a\xC3\xA9\xC3\xA9xyz", 7) == "a\xC3\xA9...");
}

}  // namespace
}  // namespace tune
