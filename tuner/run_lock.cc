#include "tuner/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tune {

Status RunLock::Acquire(const std::string& db_path, const std::string& experiment) {
  if (IsPostgresUrl(db_path)) {
    TUNE_ASSIGN_OR_RETURN(lease_, LockPostgresExperiment(db_path, experiment));
    return Status::Ok();
  }
  path_ = db_path + "." + experiment + ".lock";
  for (;;) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status::InvalidArgument(db_path + ": cannot create the results database here (its lock file " +
                                     path_ + ": " + std::strerror(errno) + ")");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return Status::FailedPrecondition("experiment '" + experiment + "' in " + db_path +
                                        " is being run by another tune process");
    }
    struct stat locked {}, named {};
    if (::fstat(fd, &locked) == 0 && ::stat(path_.c_str(), &named) == 0 && locked.st_dev == named.st_dev &&
        locked.st_ino == named.st_ino) {
      fd_ = fd;
      return Status::Ok();
    }
    ::close(fd);  // removed by the previous holder as we locked it: again
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    ::unlink(path_.c_str());
    ::close(fd_);
  }
}

}  // namespace tune
