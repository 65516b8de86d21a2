// bpe_train, run as a process: deterministic output that Tokenizer loads and
// round-trips (the committed golden/bpe_train/tokenizer.json was made by it
// and checked against Hugging Face `tokenizers` in make_golden.py).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/trainer_text/scratch.h"
#include "trainer/text/bpe_trainer.h"
#include "trainer/text/tokenizer.h"

namespace tune::text {
namespace {

const std::string kGolden = std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/";
std::string Tmp() { return Scratch() + "/bpe"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Run(const std::string& args) {
  std::string cmd = std::string(TUNE_BIN_DIR) + "/bpe_train " + args + " 2>" + Tmp() + "/stderr.txt";
  return WEXITSTATUS(std::system(cmd.c_str()));
}

TEST_CASE("bpe_train reproduces the golden tokenizer.json", "[bpe_train]") {
  REQUIRE(std::system(("mkdir -p '" + Tmp() + "'").c_str()) == 0);
  std::string out = Tmp() + "/tokenizer.json";
  std::remove(out.c_str());
  REQUIRE(Run("--corpus " + kGolden + "corpus.txt --vocab-size 700 --out " + out +
              " --special '<|endoftext|>,<|im_start|>,<|im_end|>'") == 0);
  CHECK(ReadAll(out) == ReadAll(kGolden + "bpe_train/tokenizer.json"));

  auto tok = Tokenizer::Load(out);
  REQUIRE(tok.ok());
  CHECK(tok->vocab_size() == 700);
  CHECK(tok->TokenId("<|endoftext|>") == std::optional<int32_t>(0));
  CHECK(tok->TokenId("<|im_end|>") == std::optional<int32_t>(2));
  CHECK(tok->eos_id() == std::optional<int32_t>(0));
  std::string text = ReadAll(kGolden + "corpus.txt").substr(0, 4000);
  std::vector<int32_t> ids = tok->Encode(text);
  CHECK(tok->Decode(ids) == text);
  // Merges compress the training text well below one token per byte.
  CHECK(ids.size() * 2 < text.size());
}

TEST_CASE("bpe_train usage errors", "[bpe_train]") {
  REQUIRE(std::system(("mkdir -p '" + Tmp() + "'").c_str()) == 0);
  CHECK(Run("--corpus " + kGolden + "corpus.txt --out " + Tmp() + "/x.json") == 2);
  CHECK(Run("--corpus /nonexistent/corpus.txt --vocab-size 500 --out " + Tmp() + "/x.json") == 1);
  CHECK_THAT(ReadAll(Tmp() + "/stderr.txt"), Catch::Contains("cannot open corpus"));
  CHECK(Run("--corpus " + kGolden + "corpus.txt --vocab-size 100 --out " + Tmp() + "/x.json") == 1);
  CHECK_THAT(ReadAll(Tmp() + "/stderr.txt"), Catch::Contains("256 byte symbols"));
}

TEST_CASE("BpeTrainer learns the most frequent pairs first", "[bpe_train]") {
  BpeTrainerOptions opt;
  opt.special_tokens = {"<|endoftext|>"};
  opt.vocab_size = 1 + 256 + 3;
  BpeTrainer trainer(opt);
  trainer.Feed("abab abab abab<|endoftext|>abab cd cd");
  auto json_text = trainer.Train();
  REQUIRE(json_text.ok());
  auto j = nlohmann::json::parse(*json_text);
  // "a b" (8 times in the four "abab"s) first, then "ab ab" (4); the special
  // token splits the text and never takes part.
  auto merges = j["model"]["merges"].get<std::vector<std::string>>();
  REQUIRE(merges.size() == 3);
  CHECK(merges[0] == "a b");
  CHECK(merges[1] == "ab ab");
  CHECK(j["model"]["vocab"]["abab"].get<int>() == 258);
  CHECK(j["added_tokens"][0]["content"] == "<|endoftext|>");
  auto tok = Tokenizer::FromJson(*json_text);
  REQUIRE(tok.ok());
  CHECK(tok->Encode("abab") == std::vector<int32_t>{258});
}

}  // namespace
}  // namespace tune::text
