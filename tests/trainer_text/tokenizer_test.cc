// Tokenizer against golden ids made by Hugging Face `tokenizers`
// (golden/make_golden.py), decode round trips and load errors.
#include "trainer/text/tokenizer.h"

#include "tests/trainer_text/scratch.h"

#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace tune::text {
namespace {

const std::string kGolden = std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/";

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

void CheckVariant(const std::string& name) {
  nlohmann::json golden = ReadJson(kGolden + "ids.json")[name];
  auto tok = Tokenizer::Load(kGolden + name + "/tokenizer.json");
  INFO(tok.status().message());
  REQUIRE(tok.ok());
  CHECK(tok->vocab_size() == golden["vocab_size"].get<int32_t>());
  REQUIRE(golden["cases"].size() > 10);
  for (const auto& c : golden["cases"]) {
    std::string text = c["text"].get<std::string>();
    INFO(name << ": text \"" << text << "\"");
    std::vector<int32_t> ids = tok->Encode(text);
    CHECK(ids == c["ids"].get<std::vector<int32_t>>());
    CHECK(tok->Encode(text, /*add_special=*/true) == c["ids_special"].get<std::vector<int32_t>>());
    CHECK(tok->Decode(ids) == c["decoded"].get<std::string>());
  }
}

TEST_CASE("golden ids: GPT-2 style ByteLevel, string merges", "[tokenizer]") { CheckVariant("gpt2"); }
TEST_CASE("golden ids: ByteLevel add_prefix_space, pair merges", "[tokenizer]") {
  CheckVariant("gpt2_prefix");
}
TEST_CASE("golden ids: Qwen2 Split regex + ByteLevel, added tokens", "[tokenizer]") {
  CheckVariant("qwen2");
}
TEST_CASE("golden ids: Llama-3 regex, ignore_merges, TemplateProcessing", "[tokenizer]") {
  CheckVariant("llama3");
}
TEST_CASE("golden ids: Split behaviours, Digits, NFKC", "[tokenizer]") { CheckVariant("splits"); }
TEST_CASE("golden ids: SentencePiece-style BPE, legacy Llama-2 layout", "[tokenizer]") {
  CheckVariant("llama2");
}
TEST_CASE("golden ids: Metaspace prepend_scheme first (legacy=false layout)", "[tokenizer]") {
  CheckVariant("llama2_first");
}
TEST_CASE("golden ids: Metaspace always + split, Metaspace decoder, NFKC", "[tokenizer]") {
  CheckVariant("metaspace");
}
TEST_CASE("golden ids: Metaspace never", "[tokenizer]") { CheckVariant("metaspace_never"); }
TEST_CASE("golden ids: byte fallback with missing bytes, fused unk", "[tokenizer]") {
  CheckVariant("sp_unk");
}
TEST_CASE("golden ids: GGUF-converted byte-level BPE (byte_fallback, Sequence decoder)", "[tokenizer]") {
  CheckVariant("gguf");
}
TEST_CASE("golden ids: bpe_train output read by tokenizers", "[tokenizer]") {
  CheckVariant("bpe_train");
}

TEST_CASE("decode round-trips text, special tokens and invalid UTF-8", "[tokenizer]") {
  auto tok = Tokenizer::Load(kGolden + "qwen2/tokenizer.json");
  REQUIRE(tok.ok());
  for (std::string s : {"plain ascii", "  many   spaces \n\n\t tabs", "안녕하세요 😀 e\xcc\x81",
                        "<|im_start|>user\nhi<|im_end|>", "x=1234567890;"}) {
    // NFC changes e + U+0301 into U+00E9; compare with the composed form.
    std::string expect = s;
    if (auto at = expect.find("e\xcc\x81"); at != std::string::npos) expect.replace(at, 3, "\xc3\xa9");
    CHECK(tok->Decode(tok->Encode(s)) == expect);
  }
  // Invalid bytes are replaced by U+FFFD before encoding.
  CHECK(tok->Decode(tok->Encode("a\xff" "b")) == "a\xef\xbf\xbd" "b");
  // A byte-level token cut in the middle of a UTF-8 character decodes to U+FFFD.
  std::vector<int32_t> korean = tok->Encode("한");
  REQUIRE(!korean.empty());
  auto byte_token = tok->TokenId("\xc3\xac");  // byte 0xEC, the first byte of '한'
  REQUIRE(byte_token.has_value());
  CHECK(tok->Decode({*byte_token}) == "\xef\xbf\xbd");
}

TEST_CASE("token lookups and special ids", "[tokenizer]") {
  auto tok = Tokenizer::Load(kGolden + "qwen2/tokenizer.json");
  REQUIRE(tok.ok());
  auto eot = tok->TokenId("<|endoftext|>");
  REQUIRE(eot.has_value());
  CHECK(tok->eos_id() == eot);
  CHECK(tok->IdToken(*eot) == std::optional<std::string>("<|endoftext|>"));
  CHECK(tok->TokenId("Ġthe").has_value());
  CHECK_FALSE(tok->TokenId("no such token").has_value());
  CHECK_FALSE(tok->IdToken(-1).has_value());
  CHECK_FALSE(tok->IdToken(tok->vocab_size()).has_value());
  CHECK(tok->special_prefix().empty());

  auto llama = Tokenizer::Load(kGolden + "llama3/tokenizer.json");
  REQUIRE(llama.ok());
  CHECK(llama->bos_id() == llama->TokenId("<|begin_of_text|>"));
  CHECK(llama->eos_id() == llama->TokenId("<|end_of_text|>"));
  CHECK(llama->special_prefix() == std::vector<int32_t>{*llama->bos_id()});
  CHECK(llama->Encode("", true) == std::vector<int32_t>{*llama->bos_id()});
}

// Writes `json` as tokenizer.json in a fresh directory and loads it.
Result<Tokenizer> LoadText(const std::string& json, const std::string& config = "") {
  static int n = 0;
  std::string dir = Scratch() + "/tok" + std::to_string(n++);
  std::string cmd = "mkdir -p '" + dir + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ofstream(dir + "/tokenizer.json") << json;
  std::remove((dir + "/tokenizer_config.json").c_str());
  if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
  return Tokenizer::Load(dir + "/tokenizer.json");
}

std::string WithField(const std::string& field, const nlohmann::json& value) {
  nlohmann::json j = ReadJson(kGolden + "gpt2/tokenizer.json");
  nlohmann::json* at = &j;
  std::stringstream ss(field);
  std::string part, last;
  std::vector<std::string> parts;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  for (size_t i = 0; i + 1 < parts.size(); ++i) at = &(*at)[parts[i]];
  (*at)[parts.back()] = value;
  return j.dump();
}

TEST_CASE("tokenizer_config.json add_bos_token / add_eos_token set the special frame", "[tokenizer]") {
  std::ifstream in(kGolden + "llama2/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  auto plain = LoadText(text.str());
  REQUIRE(plain.ok());
  const int32_t bos = *plain->TokenId("<s>"), eos = *plain->TokenId("</s>");
  CHECK(plain->special_prefix() == std::vector<int32_t>{bos});  // the post-processor's
  CHECK(plain->special_suffix().empty());

  auto both = LoadText(text.str(), R"({"add_bos_token": true, "add_eos_token": true,
                                       "bos_token": "<s>", "eos_token": {"content": "</s>"}})");
  REQUIRE(both.ok());
  std::vector<int32_t> body = plain->Encode("hi there");
  std::vector<int32_t> framed = {bos};
  framed.insert(framed.end(), body.begin(), body.end());
  framed.push_back(eos);
  CHECK(both->Encode("hi there", /*add_special=*/true) == framed);

  auto none = LoadText(text.str(), R"({"add_bos_token": false})");
  REQUIRE(none.ok());
  CHECK(none->Encode("hi there", /*add_special=*/true) == body);

  auto no_eos = LoadText(text.str(), R"({"add_eos_token": true, "eos_token": "<nope>"})");
  REQUIRE_FALSE(no_eos.ok());
  CHECK_THAT(no_eos.status().message(),
             Catch::Contains("tokenizer_config.json: add_eos_token is true but eos_token"));
  auto bad = LoadText(text.str(), R"({"add_bos_token": "yes"})");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("add_bos_token: expected true or false"));
}

TEST_CASE("bad tokenizer files give errors naming the field", "[tokenizer]") {
  auto missing = Tokenizer::Load(kGolden + "no/such/tokenizer.json");
  CHECK(missing.status().IsNotFound());

  auto not_json = LoadText("{\"model\": ");
  CHECK(not_json.status().IsInvalidArgument());
  CHECK_THAT(not_json.status().message(), Catch::Contains("not valid JSON"));

  struct Case {
    std::string field;
    nlohmann::json value;
    std::string expect;
  };
  auto J = [](const char* text) { return nlohmann::json::parse(text); };
  std::vector<Case> cases = {
      {"model.type", "WordPiece", "model.type: \"WordPiece\" is not supported"},
      {"normalizer", J(R"({"type": "Lowercase"})"), "normalizer.type: \"Lowercase\" is not supported"},
      {"pre_tokenizer", J(R"({"type": "Whitespace"})"), "pre_tokenizer.type: \"Whitespace\" is not supported"},
      {"pre_tokenizer", J(R"({"type": "Metaspace"})"), "pre_tokenizer.replacement: missing or not a string"},
      {"pre_tokenizer", J(R"({"type": "Metaspace", "replacement": "ab"})"),
       "pre_tokenizer.replacement: expected a single character"},
      {"pre_tokenizer", J(R"({"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"})"),
       "pre_tokenizer.prepend_scheme: \"sometimes\" is not supported"},
      {"normalizer", J(R"({"type": "Sequence", "normalizers": [{"type": "Prepend"}]})"),
       "normalizer.normalizers[0].prepend: missing or not a string"},
      {"normalizer", J(R"({"type": "Replace", "pattern": {"Glob": "*"}, "content": "x"})"),
       "normalizer.pattern: expected {\"Regex\": ...} or {\"String\": ...}"},
      {"decoder", J(R"({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": -1, "stop": 0}]})"),
       "decoder.decoders[1].start: expected a non-negative integer"},
      {"decoder", J(R"({"type": "Replace", "pattern": {"String": "x"}})"), "decoder.content: missing or not a string"},
      {"pre_tokenizer",
       J(R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(unclosed"}}]})"),
       "pre_tokenizer.pretokenizers[0].pattern: bad regex"},
      {"pre_tokenizer", J(R"({"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Sideways"})"),
       "pre_tokenizer.behavior: \"Sideways\" is not supported"},
      {"decoder", J(R"({"type": "WordPiece"})"), "decoder.type: \"WordPiece\" is not supported"},
      {"post_processor", J(R"({"type": "BertProcessing"})"), "post_processor.type: \"BertProcessing\""},
      {"model.merges", J(R"(["nosuchpiece x"])"),
       "model.merges[0] (\"nosuchpiece\", \"x\"): \"nosuchpiece\" is not in model.vocab"},
      {"model.merges", J("[42]"), "model.merges[0]: expected"},
      {"model.vocab", J(R"({"a": "zero"})"), "model.vocab[\"a\"]"},
      {"model.unk_token", "<nope>", "model.unk_token \"<nope>\" is not in model.vocab"},
      {"added_tokens", J(R"([{"content": "x"}])"), "added_tokens[0]"},
      // Ids must be integers that fit: floats were cast, big ids wrapped.
      {"model.vocab", J(R"({"a": 1.5})"), "model.vocab[\"a\"]: expected a token id"},
      {"model.vocab", J(R"({"a": 4294967296})"), "model.vocab[\"a\"]: expected a token id"},
      {"added_tokens", J(R"([{"id": 2e88, "content": "x"}])"), "added_tokens[0]"},
      {"added_tokens", J(R"([{"id": 2147483648, "content": "x"}])"), "added_tokens[0]"},
      // A string field of another type threw out of the parser (fuzzer).
      {"model.type", 42, "a field has the wrong type"},
      {"pre_tokenizer", J(R"({"type": "Split", "pattern": {"Regex": "x"}, "behavior": 1})"),
       "a field has the wrong type"},
      // Ids index a dense table: one of 333333344 asked for 10 GB (fuzzer).
      {"added_tokens", J(R"([{"id": 333333344, "content": "x"}])"),
       "added_tokens (\"x\"): expected a token id of at most 4194303, got 333333344"},
      {"decoder", J(R"({"type": "Strip", "content": " ", "start": 1.0, "stop": 0})"),
       "decoder.start: expected a non-negative integer"},
  };
  for (const Case& c : cases) {
    INFO(c.field << " = " << c.value.dump());
    auto tok = LoadText(WithField(c.field, c.value));
    REQUIRE_FALSE(tok.ok());
    CHECK(tok.status().IsInvalidArgument());
    CHECK_THAT(tok.status().message(), Catch::Contains(c.expect));
    CHECK_THAT(tok.status().message(), Catch::Contains("tokenizer.json"));
  }
}

TEST_CASE("truncation and padding settings are ignored", "[tokenizer]") {
  auto plain = Tokenizer::Load(kGolden + "gpt2/tokenizer.json");
  REQUIRE(plain.ok());
  nlohmann::json j = ReadJson(kGolden + "gpt2/tokenizer.json");
  j["truncation"] = nlohmann::json::parse(R"({"max_length": 2, "strategy": "LongestFirst", "stride": 0})");
  j["padding"] = nlohmann::json::parse(R"({"strategy": {"Fixed": 64}, "pad_id": 0})");
  auto tok = LoadText(j.dump());
  REQUIRE(tok.ok());
  std::string text = "a sentence much longer than two tokens";
  CHECK(tok->Encode(text) == plain->Encode(text));
  CHECK(tok->Encode(text).size() > 2);
}

TEST_CASE("tokenizer_config.json names the special tokens", "[tokenizer]") {
  std::string json = ReadJson(kGolden + "qwen2/tokenizer.json").dump();
  auto tok = LoadText(json, R"({"eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"}})");
  REQUIRE(tok.ok());
  CHECK(tok->eos_id() == tok->TokenId("<|im_end|>"));
  CHECK(tok->pad_id() == tok->TokenId("<|endoftext|>"));
  auto bad = LoadText(json, "{oops");
  CHECK_THAT(bad.status().message(), Catch::Contains("tokenizer_config.json"));
}

}  // namespace
}  // namespace tune::text

namespace tune::text {
namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST_CASE("random bytes: ill-formed UTF-8 is replaced as Python and Rust do", "[tokenizer]") {
  // golden/bytes.json: random byte strings; ids are tokenizers' encoding of
  // bytes.decode("utf-8", errors="replace").
  nlohmann::json golden = ReadJson(kGolden + "bytes.json");
  for (const std::string name : {"llama3", "qwen2", "llama2", "sp_unk"}) {
    auto tok = Tokenizer::Load(kGolden + name + "/tokenizer.json");
    REQUIRE(tok.ok());
    REQUIRE(golden[name].size() >= 100);
    for (const auto& c : golden[name]) {
      std::string bytes = FromHex(c["hex"].get<std::string>());
      INFO(name << ": bytes " << c["hex"].get<std::string>());
      std::vector<int32_t> ids = tok->Encode(bytes);
      CHECK(ids == c["ids"].get<std::vector<int32_t>>());
      CHECK(tok->Decode(ids) == c["decoded"].get<std::string>());
    }
  }
}

}  // namespace
}  // namespace tune::text
