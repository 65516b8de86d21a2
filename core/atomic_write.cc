#include "core/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tune {
namespace {

// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status CannotWrite(const std::string& path, int err) {
  return Status::InvalidArgument(path + ": cannot write: " + std::strerror(err));
}

// Writes all of `content` to `fd`, then fsync: the OS's errno, or 0.
int WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    content.remove_prefix(static_cast<size_t>(n));
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

// The directory that holds `path`, for the fsync after the rename.
std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  Fd file{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666)};
  if (file.fd < 0) return CannotWrite(path, errno);
  if (int err = WriteAll(file.fd, content); err != 0) {
    ::unlink(tmp.c_str());
    return CannotWrite(path, err);
  }
  const int closed = ::close(file.fd);
  const int close_err = errno;
  file.fd = -1;
  if (closed != 0 && close_err != EINTR) {
    ::unlink(tmp.c_str());
    return CannotWrite(path, close_err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return CannotWrite(path, err);
  }
  // The rename itself survives a crash only once the directory is on disk;
  // the file is in place either way, so a failure here is not reported.
  Fd dir{::open(DirOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd >= 0) ::fsync(dir.fd);
  return Status::Ok();
}

}  // namespace tune
