// Fuzzes what `tune validate FILE` runs (tuner/cli_commands.h
// ValidateCommand): reading experiment.json, every section's checks, building
// the sampler, scheduler and backend, and the summary it prints. The input
// is the file's content, served from a memfd so no file is left behind.
// Beyond "no crash, no undefined behaviour" it checks the exit-code contract:
// 0 with a summary on stdout, or 2 with exactly one line on stderr that
// starts with "tune: " (one sentence naming the file).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tuner/cli_commands.h"

namespace {

int SpecFd() {
  static const int fd = [] {
    int f = memfd_create("experiment.json", 0);
    if (f < 0) {
      std::perror("experiment_validate_fuzz: memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = SpecFd();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::ostringstream out, err;
  const int rc = tune::ValidateCommand(path, out, err);
  const std::string e = err.str();
  if (rc == 0) {
    if (out.str().empty() || !e.empty()) std::abort();
  } else if (rc == 2) {
    if (e.rfind("tune: ", 0) != 0 || e.find('\n') != e.size() - 1) {
      std::fprintf(stderr, "not one line: %s", e.c_str());
      std::abort();
    }
  } else {
    std::fprintf(stderr, "unexpected exit code %d: %s", rc, e.c_str());
    std::abort();
  }
  return 0;
}
