// Helpers for the end-to-end tests: they drive the real `tune` binary (and
// trial programs) through a shell and inspect files and /proc.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tune::e2e {

namespace fs = std::filesystem;

inline const std::string kBin = TUNE_BIN_DIR;

// A fresh directory under the temp dir ($TMPDIR, else /tmp), removed with
// everything in it, also when a REQUIRE fails.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tune_e2e_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Output {
  int code = -1;
  std::string out;  // stdout and stderr, interleaved
};

// Runs a shell command line, capturing stdout and stderr.
inline Output Sh(const std::string& cmd) {
  Output o;
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.out.append(buf, n);
  int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return o;
}

// `s` as one shell word (single quotes; a ' inside becomes '\'').
inline std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The `tune` binary of this build with `args`, as a shell command line.
inline std::string Tune(const std::string& args) { return Quote(kBin + "/tune") + " " + args; }

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
