// TempDir: a fresh empty directory under the temp dir ($TMPDIR, which
// tune_test points at the run's scratch directory, else /tmp), unique per
// object, removed with everything in it when the object goes (also when a
// REQUIRE fails). The one scratch-directory helper of the tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tune::testing {

class TempDir {
 public:
  // `tag` goes into the directory's name, for whoever finds one left over.
  explicit TempDir(const std::string& tag = "test") : path(Make(tag)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string File(const std::string& name) const { return (path / name).string(); }
  // The directory `name` inside it, created (with its parents) if missing.
  std::string Sub(const std::string& name) const {
    std::filesystem::create_directories(path / name);
    return File(name);
  }

  const std::filesystem::path path;

 private:
  static std::filesystem::path Make(const std::string& tag) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("tune_" + tag + "_XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    return tmpl;
  }
};

}  // namespace tune::testing
