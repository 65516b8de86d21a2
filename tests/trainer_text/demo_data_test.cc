// scripts/make-demo-data.sh run for real on Debian's fortunes and WordNet
// (with a small vocab to stay fast), and its output read back.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/trainer_text/scratch.h"
#include "trainer/text/data.h"
#include "trainer/text/tokenizer.h"

namespace tune::text {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> Words(const std::string& jsonl) {
  std::set<std::string> words;
  std::stringstream ss(ReadAll(jsonl));
  const std::string marker = "Define the word: ";
  for (std::string line; std::getline(ss, line);) {
    size_t at = line.find(marker);
    REQUIRE(at != std::string::npos);
    words.insert(line.substr(at + marker.size(), line.find('"', at) - at - marker.size()));
  }
  return words;
}

TEST_CASE("make-demo-data.sh builds a consistent, cached data set", "[demo_data]") {
  if (!Exists("/usr/share/games/fortunes/fortunes") || !Exists("/usr/share/wordnet/data.noun")) {
    WARN("fortunes or wordnet-base not installed (scripts/install-deps.sh): not run");
    return;
  }
  const std::string out = Scratch() + "/demo";
  const std::string cmd = std::string(TUNE_SOURCE_DIR) + "/scripts/make-demo-data.sh --out " + out +
                          " --bpe-train " + TUNE_BIN_DIR + "/bpe_train --vocab-size 400 > " + out +
                          ".log 2>&1";
  REQUIRE(std::system(("rm -rf '" + out + "'").c_str()) == 0);
  REQUIRE(std::system(cmd.c_str()) == 0);
  INFO(ReadAll(out + ".log"));

  auto tok = Tokenizer::Load(out + "/tokenizer.json");
  REQUIRE(tok.ok());
  CHECK(tok->vocab_size() == 400);
  CHECK(tok->eos_id() == std::optional<int32_t>(0));

  DataStats st;
  auto train = LoadJsonl(out + "/train.jsonl", *tok, DataOptions(), &st);
  REQUIRE(train.ok());
  CHECK(train->size() > 2000);
  CHECK(st.malformed == 0);
  CHECK(st.no_targets == 0);
  auto eval = LoadJsonl(out + "/eval.jsonl", *tok, DataOptions());
  REQUIRE(eval.ok());
  CHECK(eval->size() > 200);
  CHECK(eval->size() < train->size() / 5);

  // Train and eval ask about different words.
  std::set<std::string> train_words = Words(out + "/train.jsonl");
  std::set<std::string> eval_words = Words(out + "/eval.jsonl");
  CHECK(train_words.size() == train->size());
  for (const std::string& w : eval_words) CHECK(train_words.count(w) == 0);

  // The corpus has the cookies without their % separators, and glosses.
  std::string corpus = ReadAll(out + "/corpus.txt");
  CHECK(corpus.size() > 1000000);
  CHECK(corpus.find("\n%\n") == std::string::npos);
  CHECK(corpus.find("abbey: a monastery ruled by an abbot") == std::string::npos);  // a task word
  auto chunks = LoadCorpus(out + "/corpus.txt", *tok, 256);
  REQUIRE(chunks.ok());
  CHECK(chunks->size() > 1000);

  // A second run is a cached no-op.
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK_THAT(ReadAll(out + ".log"), Catch::Contains("up to date"));
}

TEST_CASE("a Tokenizer is shared safely between threads", "[tokenizer]") {
  auto tok = Tokenizer::Load(std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/qwen2/tokenizer.json");
  REQUIRE(tok.ok());
  std::string text = ReadAll(std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/corpus.txt");
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  std::vector<std::vector<int32_t>> serial;
  {
    auto fresh = Tokenizer::Load(std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/qwen2/tokenizer.json");
    REQUIRE(fresh.ok());
    for (const std::string& l : lines) serial.push_back(fresh->Encode(l));
  }
  std::vector<std::vector<std::vector<int32_t>>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Tokenizer copy = *tok;  // copies share the tables and the cache
      for (size_t i = 0; i < lines.size(); ++i) {
        // Different threads walk the lines in different orders.
        size_t k = t % 2 == 0 ? i : lines.size() - 1 - i;
        results[t].push_back(copy.Encode(lines[k]));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    for (size_t i = 0; i < lines.size(); ++i) {
      size_t k = t % 2 == 0 ? i : lines.size() - 1 - i;
      REQUIRE(results[t][i] == serial[k]);
    }
  }
}

}  // namespace
}  // namespace tune::text
