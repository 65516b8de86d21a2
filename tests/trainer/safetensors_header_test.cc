// The safetensors header checks, without libtorch: what a reader may trust
// before it copies bytes, and the sentence it gets otherwise. Inputs here
// include those the fuzzer (fuzz/safetensors_header_fuzz.cc) found.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "trainer/safetensors_header.h"

namespace tune {
namespace {

// A file: 8-byte little-endian length, `header`, `data`.
std::string File(const std::string& header, const std::string& data = "") {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

TEST_CASE("safetensors header: a valid file lists its tensors in name order", "[trainer][safetensors]") {
  const std::string header = R"({"b":{"dtype":"F16","shape":[2,1],"data_offsets":[8,12]},)"
                             R"("a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                             R"("__metadata__":{"format":"pt","n":1}})";
  auto h = ParseSafetensorsFile(File(header, std::string(12, '\0')), "m.safetensors");
  REQUIRE(h.ok());
  REQUIRE(h->tensors.size() == 2);
  CHECK(h->tensors[0].name == "a");
  CHECK(h->tensors[0].dtype == "I64");
  CHECK(h->tensors[0].element_size == 8);
  CHECK(h->tensors[1].name == "b");
  CHECK(h->tensors[1].shape == std::vector<int64_t>{2, 1});
  CHECK(h->tensors[1].begin == 8);
  CHECK(h->tensors[1].end == 12);
  CHECK(h->metadata == std::map<std::string, std::string>{{"format", "pt"}});
  CHECK(h->data_start == 8 + header.size());
}

TEST_CASE("safetensors header: an empty tensor has no bytes", "[trainer][safetensors]") {
  auto h = ParseSafetensorsFile(File(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})"), "e");
  REQUIRE(h.ok());
  CHECK(h->tensors.at(0).end == 0);
}

TEST_CASE("safetensors header: bad files get one sentence naming the file and the tensor",
          "[trainer][safetensors]") {
  auto error = [](const std::string& bytes) {
    auto h = ParseSafetensorsFile(bytes, "x.safetensors");
    REQUIRE_FALSE(h.ok());
    CHECK(h.status().IsInvalidArgument());
    CHECK_THAT(h.status().message(), Catch::StartsWith("x.safetensors: "));
    return h.status().message();
  };
  CHECK_THAT(error("abc"), Catch::Contains("no header length"));
  CHECK_THAT(error(std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10)), Catch::Contains("exceeds the file size"));
  CHECK_THAT(error(File("[1]")), Catch::Contains("not a JSON object"));
  CHECK_THAT(error(File("{")), Catch::Contains("not valid JSON"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"F32","shape":[1]}})")), Catch::Contains("'w'"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab")),
             Catch::Contains("'w'") && Catch::Contains("unsupported dtype F8_E4M3"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})")),
             Catch::Contains("negative dimension"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0'))),
             Catch::Contains("'w' F32[3] has data_offsets [0,8] inconsistent"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "abc")),
             Catch::Contains("inconsistent with its size or the file"));
  CHECK_THAT(error(File(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[5,4]}})", "abcde")),
             Catch::Contains("inconsistent"));
}

// Numbers of the wrong kind. The fuzzer found data_offsets [2e88, ...]: the
// reader converted the float to uint64 by a plain cast, undefined behaviour.
TEST_CASE("safetensors header: offsets and dimensions must be integers of the right sign", "[trainer][safetensors]") {
  auto error = [](const std::string& header) {
    auto h = ParseSafetensorsFile(File(header, "abcd"), "n.safetensors");
    REQUIRE_FALSE(h.ok());
    return h.status().message();
  };
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[2e+88,4]}})"),
             Catch::Contains("'w': \"data_offsets\" must be two non-negative integers"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4.0]}})"), Catch::Contains("data_offsets"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[-1,3]}})"), Catch::Contains("data_offsets"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4,4]}})"), Catch::Contains("data_offsets"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":"0,4"}})"), Catch::Contains("data_offsets"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[1e30],"data_offsets":[0,4]}})"),
             Catch::Contains("'w': \"shape\" must be an array of integers"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[4.5],"data_offsets":[0,4]}})"), Catch::Contains("shape"));
  CHECK_THAT(error(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,4]}})"),
             Catch::Contains("must be an array of integers, got 18446744073709551615"));
  CHECK(ParseSafetensorsFile(File(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "abcd"), "ok").ok());
}

// Shapes whose byte size overflows: the reader used to multiply the
// dimensions in int64 (undefined behaviour past 2^63) and the byte size in
// uint64, where 2^62 * 4 wrapped to 0, matched data_offsets [0,0] and asked
// libtorch for a tensor of 2^62 floats.
TEST_CASE("safetensors header: a shape whose byte size overflows 64 bits is refused", "[trainer][safetensors]") {
  for (const char* header : {R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})",
                             R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
                             R"({"w":{"dtype":"F64","shape":[9223372036854775807,2],"data_offsets":[0,0]}})"}) {
    auto h = ParseSafetensorsFile(File(header), "big.safetensors");
    REQUIRE_FALSE(h.ok());
    CHECK_THAT(h.status().message(), Catch::Contains("'w'") && Catch::Contains("too large"));
  }
}

}  // namespace
}  // namespace tune
