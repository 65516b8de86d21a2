// tokenize: encodes texts with a tokenizer.json as lora_train does, for
// checking ids against another implementation (scripts/check-real-model.sh).
//
//   tokenize --tokenizer DIR/tokenizer.json --in texts.jsonl [--add-special]
//
// Reads one JSON object per line with a "text" string; writes one line per
// input to stdout: {"ids": [...], "decoded": "..."} (decoded = Decode(ids)).
// Exit 0 on success, 1 on a failure (message on stderr), 2 on bad usage or
// bad input.
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "trainer/text/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app{"tokenize: ids and decodes of JSONL texts with a tokenizer.json"};
  std::string tokenizer_path, in_path;
  bool add_special = false;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json (tokenizer_config.json next to it is read)")
      ->required();
  app.add_option("--in", in_path, "JSONL file, one {\"text\": ...} per line")->required();
  app.add_flag("--add-special", add_special, "apply the post-processor's special tokens (bos, ...)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto tok = tune::text::Tokenizer::Load(tokenizer_path);
  if (!tok.ok()) {
    std::cerr << "tokenize: " << tok.status().message() << "\n";
    return tok.status().IsNotFound() ? 1 : 2;
  }
  std::ifstream in(in_path, std::ios::binary);
  if (!in) {
    std::cerr << "tokenize: " << in_path << ": cannot open\n";
    return 1;
  }
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) {
      std::cerr << "tokenize: " << in_path << ":" << line_no << ": expected {\"text\": string}\n";
      return 2;
    }
    std::vector<int32_t> ids = tok->Encode(j["text"].get<std::string>(), add_special);
    nlohmann::json out = {{"ids", ids}, {"decoded", tok->Decode(ids)}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
