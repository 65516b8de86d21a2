// bpe_train: learns a byte-level BPE tokenizer.json from a text corpus.
//
//   bpe_train --corpus FILE --vocab-size N --out tokenizer.json
//             [--special "<|endoftext|>,<|im_start|>"] [--min-frequency 2]
//
// Exit 0 on success, 1 on a failure (message on stderr), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "trainer/text/bpe_trainer.h"
#include "trainer/text/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app{"bpe_train: learn a byte-level BPE tokenizer.json from a text corpus"};
  std::string corpus, out, specials = "<|endoftext|>";
  tune::text::BpeTrainerOptions opt;
  app.add_option("--corpus", corpus, "UTF-8 text file")->required();
  app.add_option("--vocab-size", opt.vocab_size, "final vocab size (specials + 256 bytes + merges)")
      ->required();
  app.add_option("--out", out, "tokenizer.json to write")->required();
  app.add_option("--special", specials, "comma-separated special tokens (ids 0, 1, ...)");
  app.add_option("--min-frequency", opt.min_frequency, "never merge pairs seen fewer times");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  opt.special_tokens.clear();
  std::stringstream ss(specials);
  for (std::string s; std::getline(ss, s, ',');) {
    if (!s.empty()) opt.special_tokens.push_back(s);
  }

  auto t0 = std::chrono::steady_clock::now();
  std::ifstream in(corpus, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bpe_train: %s: cannot open corpus file\n", corpus.c_str());
    return 1;
  }
  tune::text::BpeTrainer trainer(opt);
  // Feed about 1 MiB at a time, cut at line ends.
  std::string chunk, line;
  while (std::getline(in, line)) {
    chunk += line;
    chunk += '\n';
    if (chunk.size() >= (1u << 20)) {
      trainer.Feed(chunk);
      chunk.clear();
    }
  }
  trainer.Feed(chunk);
  tune::text::BpeTrainerStats stats;
  auto json = trainer.Train(&stats);
  if (!json.ok()) {
    std::fprintf(stderr, "bpe_train: %s\n", json.status().message().c_str());
    return 1;
  }
  {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    f << *json;
    if (!f.good()) {
      std::fprintf(stderr, "bpe_train: %s: cannot write\n", out.c_str());
      return 1;
    }
  }
  // The file must load back.
  auto tok = tune::text::Tokenizer::Load(out);
  if (!tok.ok()) {
    std::fprintf(stderr, "bpe_train: wrote an unreadable file: %s\n", tok.status().message().c_str());
    return 1;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "bpe_train: %lld bytes, %lld distinct pre-tokens, %lld merges, vocab %d -> %s "
               "(%.1f s)\n",
               static_cast<long long>(stats.bytes), static_cast<long long>(stats.distinct_words),
               static_cast<long long>(stats.merges), tok->vocab_size(), out.c_str(), secs);
  return 0;
}
