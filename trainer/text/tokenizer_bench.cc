// tokenizer_bench: encode throughput of Tokenizer on a text file.
//
//   tokenizer_bench TOKENIZER_JSON TEXT_FILE [REPEATS]
//
// Prints one line: bytes, tokens, and the CPU seconds and MB/s (per CPU
// second, so that a busy machine does not skew it) of a cold pass (empty
// word cache) and of the best of REPEATS warm passes, encoding line by line.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "trainer/text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER_JSON TEXT_FILE [REPEATS]\n");
    return 2;
  }
  auto tok = tune::text::Tokenizer::Load(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().message().c_str());
    return 1;
  }
  int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<std::string> lines;
  size_t bytes = 0;
  for (std::string l; std::getline(in, l);) {
    bytes += l.size() + 1;
    lines.push_back(l + "\n");
  }
  auto pass = [&](size_t* tokens) {
    auto cpu_now = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return ts.tv_sec + ts.tv_nsec * 1e-9;
    };
    double t0 = cpu_now();
    size_t n = 0;
    for (const std::string& l : lines) n += tok->Encode(l).size();
    *tokens = n;
    return cpu_now() - t0;
  };
  size_t tokens = 0;
  double cold = pass(&tokens);
  double warm = 1e30;
  for (int r = 0; r < repeats; ++r) warm = std::min(warm, pass(&tokens));
  std::printf("bytes=%zu tokens=%zu cold_cpu_s=%.3f cold_MBps=%.2f warm_cpu_s=%.3f warm_MBps=%.2f\n", bytes,
              tokens, cold, bytes / cold / 1e6, warm, bytes / warm / 1e6);
  return 0;
}
