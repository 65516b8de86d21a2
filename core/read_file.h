// Reading a file the user names (experiment.json, a Katib YAML) into
// memory, with a size cap: no file, device or pipe can make tune block or
// take all the memory there is (`tune import katib /dev/zero` once read
// until bad_alloc, and a FIFO blocked forever).
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace tune {

// The whole content of the regular file at `path` (a symlink to one is
// followed), if it holds at most `max_bytes` bytes. What is not a regular
// file (a FIFO, socket, device such as /dev/zero, a directory) is refused
// from its type alone, without blocking and without reading from it.
// Errors are InvalidArgument with one sentence naming `path`:
//   "exp.yaml: cannot read: No such file or directory"  (the OS's reason;
//                                                       also "Is a directory")
//   "/dev/zero: expected a regular file, got a character device"
//   "exp.yaml: expected a file of at most 1 MiB (1048576 bytes), got 1048577 bytes"
// Thread-safe.
Result<std::string> ReadFileCapped(const std::string& path, size_t max_bytes);

// A byte count in words, for messages and docs: "1 MiB (1048576 bytes)",
// "4 KiB (4096 bytes)", "300 bytes".
std::string ByteCount(size_t bytes);

}  // namespace tune
