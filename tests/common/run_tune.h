// Running the `tune` binary of this build (TUNE_BIN_DIR, set by tune_test)
// the way a user does, through /bin/sh: RunTune captures stdout, stderr and
// the exit status apart; Sh runs any command line with both streams
// interleaved, and Tune() builds the command line that runs tune. The one
// "run tune" helper of the tests.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/temp_dir.h"

namespace tune::testing {

// The folder of this build's programs (tune, synthetic_trial, ...).
inline const std::string kBin = TUNE_BIN_DIR;

// `s` as one shell word (single quotes; a ' inside becomes '\'').
inline std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The `tune` binary of this build with `args` (shell words, quoted by the
// caller), as a shell command line.
inline std::string Tune(const std::string& args) { return Quote(kBin + "/tune") + " " + args; }

// An exit status from system()/pclose(): the exit code, or 128 + the signal.
inline int ExitCode(int status) {
  if (status == -1) throw std::runtime_error("could not run /bin/sh");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Output {
  int code = -1;
  std::string out;  // stdout and stderr, interleaved
};

// Runs a shell command line, capturing stdout and stderr together.
inline Output Sh(const std::string& cmd) {
  Output o;
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed for " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.out.append(buf, n);
  o.code = ExitCode(pclose(p));
  return o;
}

struct TuneRun {
  int exit_code = -1;
  std::string out, err;
};

// How RunTune runs tune; every field is optional.
struct TuneOptions {
  std::filesystem::path cwd{};                                // runs in this folder when set
  std::vector<std::pair<std::string, std::string>> env{};     // NAME=value set for the run
  std::vector<std::string> unset_env{};                       // NAMEs removed for the run
  bool bin_on_path = false;                                   // this build's programs first on PATH
  int timeout_s = 0;                                          // killed past this (exit 124) when > 0
  std::optional<std::string> stdin_text{};                    // its stdin (else the test's own)
};

inline std::string ReadFileText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `tune ARGS` (shell words, quoted by the caller). Its stdout and stderr go
// to files in a directory of their own, so that nothing lands in `cwd`.
inline TuneRun RunTune(const std::string& args, const TuneOptions& o = {}) {
  const TempDir io("run_tune");
  std::string cmd;
  if (!o.cwd.empty()) cmd += "cd " + Quote(o.cwd.string()) + " && ";
  cmd += "env";
  for (const std::string& name : o.unset_env) cmd += " -u " + Quote(name);
  if (o.bin_on_path) cmd += " PATH=" + Quote(kBin) + ":\"$PATH\"";
  for (const auto& [name, value] : o.env) cmd += " " + Quote(name + "=" + value);
  if (o.timeout_s > 0) cmd += " timeout " + std::to_string(o.timeout_s);
  cmd += " " + Tune(args);
  if (o.stdin_text) {
    std::ofstream(io.path / "stdin", std::ios::binary) << *o.stdin_text;
    cmd += " <" + Quote(io.File("stdin"));
  }
  cmd += " >" + Quote(io.File("stdout")) + " 2>" + Quote(io.File("stderr"));
  TuneRun r;
  r.exit_code = ExitCode(std::system(cmd.c_str()));
  r.out = ReadFileText(io.path / "stdout");
  r.err = ReadFileText(io.path / "stderr");
  return r;
}

}  // namespace tune::testing
