// Scratch space for the trainer_text tests: one directory per test process
// under $TMPDIR, removed when the process exits. CTest runs each test case
// as a process of its own, several at once, so a fixed folder would be
// written by two cases at the same time.
#pragma once

#include <string>

#include "tests/common/temp_dir.h"

namespace tune::text {

inline const std::string& Scratch() {
  static const tune::testing::TempDir dir("trainer_text");
  static const std::string path = dir.path.string();
  return path;
}

}  // namespace tune::text
