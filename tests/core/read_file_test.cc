// ReadFileCapped (core/read_file.h), the reader of every file the
// user names: regular files up to the cap, and an error without blocking
// or reading for FIFOs, devices and directories.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/read_file.h"
#include "tests/common/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using tune::testing::TempDir;

void Write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string Error(const std::string& path, size_t max_bytes) {
  auto r = tune::ReadFileCapped(path, max_bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().IsInvalidArgument());
  return r.status().message();
}

}  // namespace

TEST_CASE("read file: a regular file up to the cap is read whole", "[core][read_file]") {
  TempDir dir;
  const fs::path file = dir.path / "a.yaml";
  Write(file, std::string(1000, 'a') + "\n");
  auto r = tune::ReadFileCapped(file.string(), 1001);
  REQUIRE(r.ok());
  CHECK(*r == std::string(1000, 'a') + "\n");
  CHECK(Error(file.string(), 1000) == file.string() + ": expected a file of at most 1000 bytes, got 1001 bytes");
  CHECK(Error(file.string(), 512) == file.string() + ": expected a file of at most 512 bytes, got 1001 bytes");
  Write(dir.path / "empty", "");
  REQUIRE(tune::ReadFileCapped((dir.path / "empty").string(), 0).ok());
  // A symlink to a regular file is followed.
  fs::create_symlink(file, dir.path / "link.yaml");
  CHECK(tune::ReadFileCapped((dir.path / "link.yaml").string(), 4096).ok());
}

TEST_CASE("read file: a file whose size is not known ahead is still capped", "[core][read_file]") {
  // /proc files are regular with size 0; their text comes only by reading.
  auto status = tune::ReadFileCapped("/proc/self/status", 1 << 20);
  REQUIRE(status.ok());
  CHECK(status->find("Pid:") != std::string::npos);
  CHECK(Error("/proc/self/status", 16) == "/proc/self/status: expected a file of at most 16 bytes, got more");
}

TEST_CASE("read file: devices, FIFOs and directories are refused without reading", "[core][read_file]") {
  TempDir dir;
  // /dev/zero never ends; it used to be read until bad_alloc.
  CHECK(Error("/dev/zero", 1 << 20) == "/dev/zero: expected a regular file, got a character device");
  CHECK(Error("/dev/null", 1 << 20) == "/dev/null: expected a regular file, got a character device");
  // A FIFO with no writer: opening it for reading used to block forever.
  const fs::path fifo = dir.path / "exp.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(Error(fifo.string(), 1 << 20) == fifo.string() + ": expected a regular file, got a FIFO");
  CHECK(Error(dir.path.string(), 1 << 20) == dir.path.string() + ": cannot read: Is a directory");
  CHECK(Error((dir.path / "none.yaml").string(), 1 << 20) ==
        (dir.path / "none.yaml").string() + ": cannot read: No such file or directory");
}

TEST_CASE("read file: byte counts in words", "[core][read_file]") {
  CHECK(tune::ByteCount(1 << 20) == "1 MiB (1048576 bytes)");
  CHECK(tune::ByteCount(size_t{4} << 20) == "4 MiB (4194304 bytes)");
  CHECK(tune::ByteCount(4096) == "4 KiB (4096 bytes)");
  CHECK(tune::ByteCount(1000) == "1000 bytes");
  CHECK(tune::ByteCount(0) == "0 bytes");
}
