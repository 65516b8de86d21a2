// Helpers for the end-to-end tests: they drive the real `tune` binary (and
// trial programs) through a shell (tests/common/run_tune.h) and inspect
// files and /proc.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/common/run_tune.h"
#include "tests/common/temp_dir.h"

namespace tune::e2e {

namespace fs = std::filesystem;

// The common helpers (tests/common), under the names these tests use.
using testing::kBin;
using testing::Output;
using testing::Quote;
using testing::Sh;
using testing::TempDir;
using testing::Tune;

// Number of live (not zombie) processes whose command line contains `needle`.
inline int CountProcesses(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    // A process may end between the listing and the read, which then fails
    // with ESRCH: read through operator<<, which turns that into "".
    auto read = [](const fs::path& p) {
      std::ifstream f(p);
      std::ostringstream out;
      out << f.rdbuf();
      return out.str();
    };
    std::string cmd = read(e.path() / "cmdline");
    std::string stat = read(e.path() / "stat");
    auto close = stat.rfind(')');
    bool zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    if (!zombie && cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace tune::e2e
