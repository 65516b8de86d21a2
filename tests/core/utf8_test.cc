// ValidUtf8 (core/utf8.h): what tables, CSV and progress lines print
// of a trial's bytes, and that it matches what DumpJson writes.
#include "core/utf8.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace tune {
namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST_CASE("ValidUtf8 keeps valid text and replaces each maximal ill-formed subpart", "[utf8]") {
  CHECK(ValidUtf8("") == "");
  CHECK(ValidUtf8("plain ascii\t\n") == "plain ascii\t\n");
  CHECK(ValidUtf8(std::string("nul\0inside", 10)) == std::string("nul\0inside", 10));
  CHECK(ValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF");
  CHECK(ValidUtf8("caf\xE9 failed") == "caf" + R + " failed");   // Latin-1
  CHECK(ValidUtf8("\x80\xBF") == R + R);                          // lone continuation bytes
  CHECK(ValidUtf8("\xC0\xAF") == R + R);                          // overlong '/'
  CHECK(ValidUtf8("\xE0\x80\xAF") == R + R + R);                  // overlong, 3 bytes
  CHECK(ValidUtf8("\xED\xA0\x80") == R + R + R);                  // a surrogate
  CHECK(ValidUtf8("\xF4\x90\x80\x80") == R + R + R + R);          // above U+10FFFF
  CHECK(ValidUtf8("\xF5\xFF\xFE") == R + R + R);
  CHECK(ValidUtf8("cut\xE2\x82") == "cut" + R);                   // ends mid-sequence
  CHECK(ValidUtf8("\xE2\x82" "a") == R + "a");                    // broken off, then ASCII
  CHECK(ValidUtf8("\xF0\x9F\x98" "\xC3\xA9") == R + "\xC3\xA9");  // broken off, then valid
}

TEST_CASE("ValidUtf8 replaces exactly as DumpJson writes JSON text", "[utf8]") {
  std::mt19937 rng(28);
  // Bytes near the edges of the valid ranges, with ASCII between them.
  const std::string alphabet = std::string("a \x7F\x80\x8F\x90\x9F\xA0\xBF\xC0\xC1\xC2\xDF\xE0\xE1\xEC\xED\xEE\xEF"
                                           "\xF0\xF1\xF3\xF4\xF5\xFF", 26);
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const int len = static_cast<int>(rng() % 12);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    const std::string via_json = nlohmann::json::parse(DumpJson(nlohmann::json(s))).get<std::string>();
    INFO("round " << round);
    REQUIRE(ValidUtf8(s) == via_json);
  }
}

}  // namespace
}  // namespace tune
