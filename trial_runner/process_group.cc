#include "trial_runner/process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tune {
namespace {

// Signal the supervisor receives when the thread that forked it exits.
constexpr int kParentDeathSignal = SIGUSR1;
// Signal the tuner sends a supervisor to have its worker's tree killed now.
constexpr int kKillTreeSignal = SIGUSR2;

// Everything below runs in a forked child of a multi-threaded process, so it
// uses only async-signal-safe calls: no allocation, no locks, no stdio.

void WriteAll(int fd, const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void WriteErrno(int fd, const char* what, const char* arg, int err) {
  char num[16];
  int i = sizeof(num) - 1;
  num[i] = '\0';
  unsigned v = static_cast<unsigned>(err);
  do {
    num[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && i > 0);
  WriteAll(fd, "tune: ");
  WriteAll(fd, what);
  WriteAll(fd, " ");
  WriteAll(fd, arg);
  WriteAll(fd, " failed: ");
  WriteAll(fd, strerrorname_np(err) ? strerrorname_np(err) : "errno");
  WriteAll(fd, " (");
  WriteAll(fd, num + i);
  WriteAll(fd, ")\n");
}

void CloseFrom(int first) {
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0U) == 0) return;
  rlimit rl{};
  int max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536) {
    max_fd = static_cast<int>(rl.rlim_cur);
  }
  for (int fd = first; fd < max_fd; ++fd) ::close(fd);
}

void SetDefaultDisposition(int sig) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  ::sigaction(sig, &sa, nullptr);
}

[[noreturn]] void ExecWorker(const WorkerCommand& cmd, char* const* argv, char* const* envp,
                             pid_t supervisor) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != supervisor) ::_exit(127);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) SetDefaultDisposition(sig);
  }
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  if (!cmd.working_dir.empty() && ::chdir(cmd.working_dir.c_str()) != 0) {
    WriteErrno(2, "chdir", cmd.working_dir.c_str(), errno);
    ::_exit(127);
  }
  ::execve(cmd.path.c_str(), argv, envp);
  WriteErrno(2, "execve", cmd.path.c_str(), errno);
  ::_exit(127);
}

// Appends the decimal digits of `v` to `p`; returns the new end.
char* AppendNumber(char* p, long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 24);
  while (n > 0) *p++ = digits[--n];
  return p;
}

// Up to `max` pids of this (single-threaded) process's children, from
// /proc/<pid>/task/<pid>/children; -1 if that file cannot be read.
int ReadChildren(pid_t self, pid_t* out, int max) {
  char path[64] = "/proc/";
  char* p = AppendNumber(path + 6, self);
  const char kTask[] = "/task/";
  for (const char* c = kTask; *c; ++c) *p++ = *c;
  p = AppendNumber(p, self);
  const char kChildren[] = "/children";
  for (const char* c = kChildren; *c; ++c) *p++ = *c;
  *p = '\0';
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  int n = 0;
  long cur = -1;
  for (;;) {
    ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        cur = (cur < 0 ? 0 : cur * 10) + (buf[i] - '0');
      } else if (cur >= 0) {
        if (n < max) out[n++] = static_cast<pid_t>(cur);
        cur = -1;
      }
    }
  }
  if (cur >= 0 && n < max) out[n++] = static_cast<pid_t>(cur);
  ::close(fd);
  return n;
}

// The supervisor is a child subreaper: whatever its worker leaves behind,
// also processes that left the worker's process group (setsid, setpgid),
// is reparented to it when its parent dies. This SIGKILLs every child and
// its process group, reaps them, and repeats with the orphans they leave,
// until no child is left. Stores the worker's wait status in
// `*worker_status` if it reaps the worker.
void KillDescendants(pid_t self, pid_t worker, int* worker_status) {
  for (int round = 0; round < 100000; ++round) {
    pid_t kids[256];
    int n = ReadChildren(self, kids, 256);
    if (n < 0) {
      // No children list (a kernel without CONFIG_PROC_CHILDREN): the
      // worker's group, at least.
      if (worker > 0) {
        ::kill(-self, SIGKILL);
      }
      return;
    }
    for (int i = 0; i < n; ++i) {
      ::kill(kids[i], SIGKILL);
      if (kids[i] != self) ::kill(-kids[i], SIGKILL);  // its group, if it leads one
    }
    int status = 0;
    pid_t r = ::waitpid(-1, &status, __WALL | (n > 0 ? 0 : WNOHANG));
    if (worker > 0 && r == worker) *worker_status = status;
    if (r < 0 && errno == ECHILD) return;
    if (r < 0 && errno != EINTR) return;
    if (r == 0) {
      // A child exists that the list does not show yet (being reparented):
      // wait a moment.
      timespec ms{0, 1000000};
      ::nanosleep(&ms, nullptr);
    }
  }
}

// Exits the way the worker did.
[[noreturn]] void ExitLike(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    SetDefaultDisposition(sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(255);
}

[[noreturn]] void RunSupervisor(const WorkerCommand& cmd, char* const* argv, char* const* envp,
                                pid_t tuner) {
  // Every signal is blocked here (inherited from the monitor thread, and
  // again below): SIGTERM to the group must reach the worker, not end the
  // supervisor before the worker has exited.
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::setpgid(0, 0);
  SetDefaultDisposition(SIGCHLD);  // never SIG_IGN: we reap the worker
  ::prctl(PR_SET_PDEATHSIG, kParentDeathSignal);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // the worker's orphans come to us
  if (::getppid() != tuner) {  // the tuner died before prctl
    ::kill(0, SIGKILL);
    ::_exit(127);
  }
  // stdin /dev/null, stdout+stderr the log; nothing else stays open (other
  // trials' pipes, the tuner's database and sockets).
  int out = ::fcntl(cmd.output_fd, F_DUPFD, 3);
  int null_fd = ::open("/dev/null", O_RDONLY);
  int in = null_fd >= 0 ? ::fcntl(null_fd, F_DUPFD, 3) : -1;
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  if (in >= 0) ::dup2(in, 0);
  CloseFrom(3);

  pid_t self = ::getpid();
  pid_t worker = ::fork();
  if (worker == 0) ExecWorker(cmd, argv, envp, self);
  if (worker < 0) {
    WriteErrno(2, "fork", "worker", errno);
    ::_exit(127);
  }
  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, kParentDeathSignal);
  sigaddset(&wanted, kKillTreeSignal);
  for (;;) {
    siginfo_t info;
    int sig = ::sigwaitinfo(&wanted, &info);
    if (sig == SIGCHLD) {
      int status = 0;
      pid_t r = ::waitpid(worker, &status, WNOHANG);
      if (r == worker) {
        // The attempt is over: nothing it started may outlive it.
        KillDescendants(self, -1, &status);
        ExitLike(status);
      }
      if (r < 0 && errno == ECHILD) ::_exit(255);
    } else if (sig == kParentDeathSignal || sig == kKillTreeSignal) {
      // The tuner's monitor thread (or the whole tuner) is gone, or the
      // tuner's grace period ran out: take the worker and everything it
      // started down. A worker sending us these signals is ignored.
      if (info.si_pid == tuner || ::getppid() != tuner) {
        int status = SIGKILL;  // as if killed by SIGKILL, unless reaped first
        KillDescendants(self, worker, &status);
        ExitLike(status);
      }
    }
  }
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Result<pid_t> SpawnInProcessGroup(const WorkerCommand& cmd) {
  // Build the exec arrays before fork: the child must not allocate.
  std::vector<char*> argv, envp;
  for (const std::string& a : cmd.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : cmd.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t tuner = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) RunSupervisor(cmd, argv.data(), envp.data(), tuner);
  if (pid < 0) return Status::Internal(std::string("fork failed: ") + std::strerror(errno));
  // Also in the parent, so the group exists when we return (no race with a
  // Kill right after Launch).
  ::setpgid(pid, pid);
  return pid;
}

void KillWorkerTree(pid_t supervisor) { ::kill(supervisor, kKillTreeSignal); }

Result<std::string> ResolveExecutable(const std::string& argv0, const std::string& working_dir,
                                      const std::string& path_env) {
  if (argv0.empty()) return Status::InvalidArgument("the trial command is empty");
  if (argv0.find('/') != std::string::npos) {
    std::string path = argv0;
    if (argv0[0] != '/' && !working_dir.empty()) path = working_dir + "/" + argv0;
    if (!IsExecutableFile(path)) {
      return Status::NotFound("trial command '" + argv0 +
                              "' is not an executable file (looked at " + path + ")");
    }
    return Absolute(path);
  }
  size_t begin = 0;
  while (begin <= path_env.size()) {
    size_t end = path_env.find(':', begin);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(begin, end - begin);
    if (dir.empty()) dir = working_dir.empty() ? "." : working_dir;  // POSIX: empty = cwd
    std::string path = dir + "/" + argv0;
    if (IsExecutableFile(path)) return Absolute(path);
    begin = end + 1;
  }
  return Status::NotFound("trial command '" + argv0 + "' not found in PATH (" + path_env + ")");
}

std::string TrialPath(const std::map<std::string, std::string>& trial_env) {
  if (auto it = trial_env.find("PATH"); it != trial_env.end()) return it->second;
  const char* own = std::getenv("PATH");
  return own ? own : "/usr/local/bin:/usr/bin:/bin";
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace tune
