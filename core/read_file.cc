#include "core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tune {

namespace {

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "something that is not a regular file";
}

// Closes the descriptor on every path out of ReadFileCapped.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status TooBig(const std::string& path, size_t max_bytes, const std::string& got) {
  return Status::InvalidArgument(path + ": expected a file of at most " + ByteCount(max_bytes) + ", got " + got);
}

}  // namespace

std::string ByteCount(size_t bytes) {
  const std::string exact = std::to_string(bytes) + " bytes";
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB (" + exact + ")";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB (" + exact + ")";
  return exact;
}

Result<std::string> ReadFileCapped(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer (or a serial device) returns
  // at once instead of waiting; such files are then refused by type.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": expected a regular file, got " + KindOf(st.st_mode));
  }
  if (st.st_size > 0 && static_cast<unsigned long long>(st.st_size) > max_bytes) {
    return TooBig(path, max_bytes, std::to_string(st.st_size) + " bytes");
  }
  // Reads block as usual from here on (a regular file never waits long).
  int flags = ::fcntl(f.fd, F_GETFL);
  if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  // A file may grow while it is read, and some (under /proc) report size 0:
  // read at most one byte past the cap.
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  while (text.size() <= max_bytes) {
    size_t want = std::min(sizeof buf, max_bytes + 1 - text.size());
    ssize_t n = ::read(f.fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
  return TooBig(path, max_bytes, "more");
}

}  // namespace tune
