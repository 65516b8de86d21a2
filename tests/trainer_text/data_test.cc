// JSONL and corpus loading: loss masks, truncation, malformed lines,
// deterministic shuffle and split.
#include "tests/trainer_text/scratch.h"
#include "trainer/text/data.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <catch2/catch.hpp>

namespace tune::text {
namespace {

const std::string kGolden = std::string(TUNE_SOURCE_DIR) + "/tests/trainer_text/golden/";

std::string TmpFile(const std::string& name, const std::string& content) {
  std::string dir = Scratch() + "/data";
  REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

Tokenizer Tok() {
  auto tok = Tokenizer::Load(kGolden + "bpe_train/tokenizer.json");
  REQUIRE(tok.ok());
  return *tok;
}

std::vector<int32_t> Targets(const Example& ex) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < ex.ids.size(); ++i) {
    if (ex.loss_mask[i]) out.push_back(ex.ids[i]);
  }
  return out;
}

TEST_CASE("text examples: every token is a target, eos appended", "[data]") {
  Tokenizer tok = Tok();
  // A byte order mark, a blank line, CRLF and extra keys are all fine.
  std::string path = TmpFile("text.jsonl",
                             "\xEF\xBB\xBF{\"text\": \"Hello, world!\"}\r\n\n{\"text\": \"second line\", \"id\": 7}\n");
  DataStats st;
  auto ex = LoadJsonl(path, tok, DataOptions(), &st);
  REQUIRE(ex.ok());
  REQUIRE(ex->size() == 2);
  std::vector<int32_t> want = tok.Encode("Hello, world!");
  want.push_back(*tok.eos_id());
  CHECK((*ex)[0].ids == want);
  CHECK((*ex)[0].loss_mask == std::vector<uint8_t>(want.size(), 1));
  CHECK(st.lines == 2);
  CHECK(st.examples == 2);

  DataOptions no_eos;
  no_eos.append_eos = false;
  auto ex2 = LoadJsonl(path, tok, no_eos);
  REQUIRE(ex2.ok());
  CHECK((*ex2)[0].ids == tok.Encode("Hello, world!"));
}

TEST_CASE("a Llama-2 frame (add_bos_token, add_eos_token): bos, one eos as a target", "[data]") {
  std::string dir = Scratch() + "/llama2_frame";
  REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
  {
    std::ifstream in(kGolden + "llama2/tokenizer.json", std::ios::binary);
    std::ofstream(dir + "/tokenizer.json", std::ios::binary) << in.rdbuf();
  }
  std::ofstream(dir + "/tokenizer_config.json") << R"({"add_bos_token": true, "add_eos_token": true,
      "bos_token": "<s>", "eos_token": "</s>"})";
  auto tok = Tokenizer::Load(dir + "/tokenizer.json");
  REQUIRE(tok.ok());
  std::string path = TmpFile("llama2_frame.jsonl", "{\"text\": \"Hello, world!\"}\n");
  auto ex = LoadJsonl(path, *tok, DataOptions());
  REQUIRE(ex.ok());
  REQUIRE(ex->size() == 1);
  std::vector<int32_t> want = {*tok->bos_id()};
  std::vector<int32_t> body = tok->Encode("Hello, world!");
  want.insert(want.end(), body.begin(), body.end());
  want.push_back(*tok->eos_id());
  CHECK((*ex)[0].ids == want);
  std::vector<uint8_t> mask(want.size(), 1);
  mask[0] = 0;
  CHECK((*ex)[0].loss_mask == mask);
}

TEST_CASE("instruction examples: loss only on the response", "[data]") {
  Tokenizer tok = Tok();
  std::string path = TmpFile("inst.jsonl",
                             R"({"instruction": "Define the word: cat", "response": "a small domesticated feline"})"
                             "\n"
                             R"({"instruction": "Translate", "input": "chat", "output": "cat"})"
                             "\n");
  auto ex = LoadJsonl(path, tok, DataOptions());
  REQUIRE(ex.ok());
  REQUIRE(ex->size() == 2);
  const Example& a = (*ex)[0];
  std::vector<int32_t> prompt = tok.Encode("### Instruction:\nDefine the word: cat\n\n### Response:\n");
  std::vector<int32_t> response = tok.Encode("a small domesticated feline");
  response.push_back(*tok.eos_id());
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), response.begin(), response.end());
  CHECK(a.ids == all);
  CHECK(Targets(a) == response);
  for (size_t i = 0; i < prompt.size(); ++i) CHECK(a.loss_mask[i] == 0);
  CHECK(tok.Decode(a.ids) ==
        "### Instruction:\nDefine the word: cat\n\n### Response:\na small domesticated feline<|endoftext|>");

  // With an input, its paragraph is kept; "output" is read as the response.
  const Example& b = (*ex)[1];
  CHECK(tok.Decode(b.ids) ==
        "### Instruction:\nTranslate\n\n### Input:\nchat\n\n### Response:\ncat<|endoftext|>");
  std::vector<int32_t> cat = tok.Encode("cat");
  cat.push_back(*tok.eos_id());
  CHECK(Targets(b) == cat);

  // A custom template; placeholders inside values are not expanded again.
  DataOptions opt;
  opt.prompt_template = "Q: {instruction}\nA: {response}\n";
  std::string p2 = TmpFile("inst2.jsonl", R"({"instruction": "say {input}", "response": "ok"})" "\n");
  auto ex3 = LoadJsonl(p2, tok, opt);
  REQUIRE(ex3.ok());
  CHECK(tok.Decode((*ex3)[0].ids) == "Q: say {input}\nA: ok\n<|endoftext|>");
  std::vector<int32_t> ok_nl = tok.Encode("ok\n");
  ok_nl.push_back(*tok.eos_id());
  CHECK(Targets((*ex3)[0]) == ok_nl);

  // {input} in the instruction's paragraph: only the placeholder goes.
  opt.prompt_template = "Q: {instruction}{input}\nA: {response}";
  std::string p3 = TmpFile("inst3.jsonl", R"({"instruction": "why", "response": "because"})" "\n"
                                          R"({"instruction": "why", "input": " not", "response": "no"})" "\n");
  auto ex4 = LoadJsonl(p3, tok, opt);
  REQUIRE(ex4.ok());
  REQUIRE(ex4->size() == 2);
  CHECK(tok.Decode((*ex4)[0].ids) == "Q: why\nA: because<|endoftext|>");
  CHECK(tok.Decode((*ex4)[1].ids) == "Q: why not\nA: no<|endoftext|>");

  opt.prompt_template = "no response placeholder {instruction}";
  CHECK(LoadJsonl(p2, tok, opt).status().IsInvalidArgument());
}

TEST_CASE("truncation to seq_len and examples without targets", "[data]") {
  Tokenizer tok = Tok();
  std::string long_text(2000, 'x');
  std::string path = TmpFile("long.jsonl",
                             "{\"text\": \"" + long_text + " and more words here\"}\n" +
                                 R"({"instruction": ")" + std::string(500, 'y') + R"(", "response": "lost"})" "\n" +
                                 R"({"instruction": "short", "response": "kept response"})" "\n");
  // Room for the short example's prompt and a few response tokens.
  const int prompt_len =
      static_cast<int>(tok.Encode("### Instruction:\nshort\n\n### Response:\n").size());
  REQUIRE(prompt_len > 3);
  DataOptions opt;
  opt.seq_len = prompt_len + 3;
  DataStats st;
  auto ex = LoadJsonl(path, tok, opt, &st);
  REQUIRE(ex.ok());
  REQUIRE(ex->size() == 2);
  for (const Example& e : *ex) {
    CHECK(e.ids.size() <= static_cast<size_t>(opt.seq_len));
    CHECK(e.ids.size() == e.loss_mask.size());
  }
  CHECK((*ex)[0].ids.size() == static_cast<size_t>(opt.seq_len));
  std::vector<int32_t> full = tok.Encode(long_text + " and more words here");
  CHECK((*ex)[0].ids == std::vector<int32_t>(full.begin(), full.begin() + opt.seq_len));
  // The short example keeps its prompt and the first response tokens.
  CHECK(tok.Decode((*ex)[1].ids) == tok.Decode(std::vector<int32_t>(
      (*ex)[1].ids.begin(), (*ex)[1].ids.begin() + prompt_len)) + tok.Decode(Targets((*ex)[1])));
  CHECK(Targets((*ex)[1]).size() == 3);
  CHECK(st.truncated >= 2);
  CHECK(st.no_targets == 1);  // the prompt alone fills seq_len
  CHECK(st.examples == 2);
}

TEST_CASE("malformed lines: fatal with file:line, or skipped and counted", "[data]") {
  Tokenizer tok = Tok();
  std::string path = TmpFile("bad.jsonl",
                             "{\"text\": \"fine\"}\n"
                             "{\"text\": \"unterminated}\n"
                             "[1, 2]\n"
                             "{\"instruction\": \"no response\"}\n"
                             "{\"text\": 5}\n"
                             "{\"text\": \"also fine\"}\n");
  auto fatal = LoadJsonl(path, tok, DataOptions());
  REQUIRE_FALSE(fatal.ok());
  CHECK(fatal.status().IsInvalidArgument());
  CHECK_THAT(fatal.status().message(), Catch::StartsWith(path + ":2: invalid JSON"));

  DataOptions skip;
  skip.skip_malformed = true;
  DataStats st;
  auto ex = LoadJsonl(path, tok, skip, &st);
  REQUIRE(ex.ok());
  CHECK(ex->size() == 2);
  CHECK(st.malformed == 4);
  CHECK(st.lines == 6);

  // Each reason, on its own.
  struct Case {
    std::string line, reason;
  };
  for (const Case& c : std::vector<Case>{{"[1, 2]", "expected a JSON object"},
                                         {R"({"instruction": "x"})", "missing \"response\""},
                                         {R"({"response": "x"})", "missing \"instruction\""},
                                         {R"({"text": 5})", "\"text\" must be a string"},
                                         {R"({"other": 1})", "expected \"text\" or"},
                                         {R"({"text": "a", "response": "b"})", "has both"}}) {
    std::string p = TmpFile("one.jsonl", "\n" + c.line + "\n");
    auto r = LoadJsonl(p, tok, DataOptions());
    INFO(c.line);
    CHECK_THAT(r.status().message(), Catch::StartsWith(p + ":2: " + c.reason));
  }
  CHECK(LoadJsonl(path + ".missing", tok, DataOptions()).status().IsNotFound());
}

std::vector<Example> Numbered(int n) {
  std::vector<Example> v(n);
  for (int i = 0; i < n; ++i) v[i].ids = {i};
  return v;
}

std::vector<int32_t> Firsts(const std::vector<Example>& v) {
  std::vector<int32_t> out;
  for (const Example& e : v) out.push_back(e.ids[0]);
  return out;
}

TEST_CASE("shuffle and split are deterministic by seed", "[data]") {
  std::vector<Example> a = Numbered(100), b = Numbered(100), c = Numbered(100);
  Shuffle(a, 42);
  Shuffle(b, 42);
  Shuffle(c, 43);
  CHECK(Firsts(a) == Firsts(b));
  CHECK(Firsts(a) != Firsts(c));
  CHECK(Firsts(a) != Firsts(Numbered(100)));
  std::vector<int32_t> sorted = Firsts(a);
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == Firsts(Numbered(100)));

  auto [train, eval] = SplitEval(Numbered(100), 0.1, 7);
  CHECK(train.size() == 90);
  CHECK(eval.size() == 10);
  auto [train2, eval2] = SplitEval(Numbered(100), 0.1, 7);
  CHECK(Firsts(eval) == Firsts(eval2));
  std::set<int32_t> seen;
  for (int32_t x : Firsts(train)) seen.insert(x);
  for (int32_t x : Firsts(eval)) seen.insert(x);
  CHECK(seen.size() == 100);

  auto [t3, e3] = SplitEval(Numbered(3), 0.01, 1);
  CHECK(t3.size() == 2);
  CHECK(e3.size() == 1);
  auto [t4, e4] = SplitEval(Numbered(3), 0.0, 1);
  CHECK(t4.size() == 3);
  CHECK(e4.empty());
}

TEST_CASE("corpus: documents joined by eos, packed into seq_len chunks", "[data]") {
  Tokenizer tok = Tok();
  std::string path = TmpFile("corpus.txt", "First document,\non two lines.\n\n\nSecond one.\n");
  auto ex = LoadCorpus(path, tok, 8);
  REQUIRE(ex.ok());
  std::vector<int32_t> stream = tok.Encode("First document,\non two lines.");
  stream.push_back(*tok.eos_id());
  std::vector<int32_t> second = tok.Encode("Second one.");
  stream.insert(stream.end(), second.begin(), second.end());
  stream.push_back(*tok.eos_id());
  std::vector<int32_t> joined;
  for (const Example& e : *ex) {
    CHECK(e.ids.size() <= 8);
    CHECK(e.loss_mask == std::vector<uint8_t>(e.ids.size(), 1));
    joined.insert(joined.end(), e.ids.begin(), e.ids.end());
  }
  for (size_t i = 0; i + 1 < ex->size(); ++i) CHECK((*ex)[i].ids.size() == 8);
  // Only a final 1-token chunk may be dropped.
  CHECK(joined.size() + 1 >= stream.size());
  CHECK(std::vector<int32_t>(stream.begin(), stream.begin() + joined.size()) == joined);
  CHECK(LoadCorpus(path, tok, 1).status().IsInvalidArgument());
}

}  // namespace
}  // namespace tune::text
