// WriteFileAtomically (core/atomic_write.h): the one write-to-temp-then-
// rename of the project (tune report, tune import): the target holds the
// new content whole or is left as it was, and no temporary file stays.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/atomic_write.h"
#include "tests/common/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using tune::testing::TempDir;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names in `dir`, sorted: what a write left behind.
std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("atomic write: a new file holds the content, byte for byte", "[core][atomic_write]") {
  TempDir dir;
  const fs::path out = dir.path / "report.html";
  const std::string content("<html>\0binary\xff\n", 15);
  REQUIRE(tune::WriteFileAtomically(out.string(), content).ok());
  CHECK(Read(out) == content);
  CHECK(Names(dir.path) == std::vector<std::string>{"report.html"});
  // Created as a plain open would: 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((fs::status(out).permissions() & fs::perms::all) == static_cast<fs::perms>(0666 & ~mask));
}

TEST_CASE("atomic write: an existing file is replaced whole, and an empty content empties it",
          "[core][atomic_write]") {
  TempDir dir;
  const fs::path out = dir.path / "experiment.json";
  std::ofstream(out) << std::string(10000, 'x');
  REQUIRE(tune::WriteFileAtomically(out.string(), "{}\n").ok());
  CHECK(Read(out) == "{}\n");
  REQUIRE(tune::WriteFileAtomically(out.string(), "").ok());
  CHECK(fs::file_size(out) == 0);
  CHECK(Names(dir.path) == std::vector<std::string>{"experiment.json"});
}

TEST_CASE("atomic write: a missing directory is an error naming the path, and nothing is created",
          "[core][atomic_write]") {
  TempDir dir;
  const fs::path out = dir.path / "no-such-dir" / "out.json";
  tune::Status st = tune::WriteFileAtomically(out.string(), "text");
  REQUIRE_FALSE(st.ok());
  CHECK(st.IsInvalidArgument());
  CHECK(st.message() == out.string() + ": cannot write: No such file or directory");
  CHECK(Names(dir.path).empty());
}

TEST_CASE("atomic write: a failed rename leaves the target as it was and no temporary file",
          "[core][atomic_write]") {
  TempDir dir;
  // A non-empty directory at the path: the rename over it fails.
  const fs::path out = dir.path / "taken";
  fs::create_directories(out / "inside");
  tune::Status st = tune::WriteFileAtomically(out.string(), "text");
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().rfind(out.string() + ": cannot write: ", 0) == 0);
  CHECK(fs::is_directory(out / "inside"));
  CHECK(Names(dir.path) == std::vector<std::string>{"taken"});
}

TEST_CASE("atomic write: a symbolic link at the path is replaced, its target left alone",
          "[core][atomic_write]") {
  TempDir dir;
  const fs::path target = dir.path / "elsewhere.txt";
  std::ofstream(target) << "keep me";
  const fs::path out = dir.path / "out.txt";
  fs::create_symlink(target, out);
  REQUIRE(tune::WriteFileAtomically(out.string(), "new").ok());
  CHECK_FALSE(fs::is_symlink(out));
  CHECK(Read(out) == "new");
  CHECK(Read(target) == "keep me");
}

TEST_CASE("atomic write: writers racing on one path leave one whole content", "[core][atomic_write]") {
  TempDir dir;
  const fs::path out = dir.path / "shared.txt";
  std::vector<std::string> contents;
  for (int i = 0; i < 8; ++i) contents.push_back(std::string(100000 + i, static_cast<char>('a' + i)));
  std::vector<std::thread> writers;
  std::vector<int> ok(contents.size(), 0);
  for (size_t i = 0; i < contents.size(); ++i) {
    writers.emplace_back([&, i] { ok[i] = tune::WriteFileAtomically(out.string(), contents[i]).ok(); });
  }
  for (std::thread& t : writers) t.join();
  CHECK(std::count(ok.begin(), ok.end(), 1) == static_cast<int>(contents.size()));
  const std::string got = Read(out);
  CHECK(std::find(contents.begin(), contents.end(), got) != contents.end());
  CHECK(Names(dir.path) == std::vector<std::string>{"shared.txt"});
}
