// WriteFileAtomically: a file that holds the new content whole or is left
// as it was, never a partial one (a full disk, a kill mid-write).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace tune {

// Writes `content` to a new temporary file in the directory of `path`
// (named "<path>.tmp.<pid>.<n>", created with mode 0666 less the umask, as
// a plain open would), flushes it to disk (fsync), renames it over `path`
// and flushes the directory. On any failure the temporary file is removed
// and `path` is untouched. A symbolic link at `path` is replaced, not
// followed. Errors are InvalidArgument with one sentence naming `path` and
// the OS's reason: "out/report.html: cannot write: No such file or
// directory". Thread-safe (each call has a temporary file of its own).
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace tune
