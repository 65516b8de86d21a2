// InDir: the process's working directory set to `dir` for one test, put
// back when the object goes out of scope. Processes forked meanwhile
// inherit `dir` (with a database URL, `tune run` puts the trial directories
// in ./tune_runs and `tune dashboard` reads the logs there).
#pragma once

#include <filesystem>

namespace tune::testing {

class InDir {
 public:
  explicit InDir(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDir() { std::filesystem::current_path(old_); }
  InDir(const InDir&) = delete;
  InDir& operator=(const InDir&) = delete;

 private:
  std::filesystem::path old_;
};

}  // namespace tune::testing
