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
#include <string>

namespace tune::e2e {

namespace fs = std::filesystem;

inline const std::string kBin = TUNE_BIN_DIR;

// A fresh directory under /tmp, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tune_e2e_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
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

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The `tune` binary of this build with `args`, as a shell command line.
inline std::string Tune(const std::string& args) { return Quote(kBin + "/tune") + " " + args; }

// Number of live (not zombie) processes whose command line contains `needle`.
inline int CountProcesses(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::ifstream s(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    bool zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    if (!zombie && cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace tune::e2e
