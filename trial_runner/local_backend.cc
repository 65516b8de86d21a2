#include "trial_runner/local_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "core/exception_text.h"
#include "trial_runner/last_line.h"
#include "trial_runner/metric_report.h"
#include "trial_runner/port_allocator.h"
#include "trial_runner/process_group.h"

extern char** environ;

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();
// A line longer than this is logged but not parsed.
constexpr size_t kMaxLineBytes = 1 << 20;
// Poll period for exits when pidfd_open is unavailable (Linux < 5.3).
constexpr int kNoPidfdTickMs = 10;

std::string FormatSeconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The last line the current attempt wrote to a rank's log (what a crashed
// program said last: usually its error); "" if it wrote nothing.
std::string LastLogLine(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string tail;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    off_t from = std::max<off_t>(0, st.st_size - 4096);
    tail.resize(static_cast<size_t>(st.st_size - from));
    ssize_t n = ::pread(fd, tail.data(), tail.size(), from);
    tail.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  // Only what follows this attempt's start marker, if it is in the tail.
  size_t marker = tail.rfind("----- tune: trial ");
  if (marker != std::string::npos && (marker == 0 || tail[marker - 1] == '\n')) {
    size_t eol = tail.find('\n', marker);
    tail.erase(0, eol == std::string::npos ? tail.size() : eol + 1);
  }
  return LastLine(tail);
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Status WriteString(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal(std::string("write failed: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

struct LocalBackend::Rank {
  int rank = 0;
  pid_t pid = -1;  // the supervisor's pid, also the process group id
  int pidfd = -1;  // readable once the supervisor has exited
  bool alive = false;
};

struct LocalBackend::Attempt {
  LaunchSpec spec;
  std::vector<Rank> ranks;
  ResourceGrant grant;
  bool grant_released = false;
  PortReservation port;
  int out_fd = -1;      // read end of rank 0's stdout+stderr pipe
  int log0_fd = -1;     // rank_0.log, written by the monitor
  std::string partial;  // rank 0's current unfinished line
  bool partial_too_long = false;
  int64_t report_count = 0;
  std::vector<MetricReport> pending;         // not yet returned by Poll
  Clock::time_point deadline = kNever;       // timeout_s
  Clock::time_point kill_deadline = kNever;  // KillWorkerTree after the grace period
  Clock::time_point group_kill_deadline = kNever;  // SIGKILL to the groups, if still alive
  bool terminating = false;
  bool timed_out = false;
  std::string failure;  // first reason the attempt failed; "" = none so far
  bool done = false;    // every rank reaped, pipe closed, resources freed
  RunStatus status;
};

struct LocalBackend::SpawnRequest {
  std::unique_ptr<Attempt> attempt;
  std::vector<WorkerCommand> commands;  // one per rank
  bool done = false;
  Status status;
};

namespace {

double DefaultCpuSlots(double configured) {
  if (configured > 0) return configured;
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

}  // namespace

LocalBackend::LocalBackend() : LocalBackend(Options{}) {}

LocalBackend::LocalBackend(Options options)
    : options_(std::move(options)),
      gpu_ids_(options_.gpu_ids ? *options_.gpu_ids : DetectGpus()),
      pool_(DefaultCpuSlots(options_.cpu_slots), gpu_ids_) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  TUNE_CHECK(wake_fd_ >= 0);
  monitor_ = std::thread([this] { MonitorLoop(); });
}

LocalBackend::~LocalBackend() {
  Shutdown();
  // Only attempts stuck past the shutdown deadline still hold descriptors.
  for (auto& [id, a] : attempts_) {
    CloseFd(a->out_fd);
    CloseFd(a->log0_fd);
    for (Rank& r : a->ranks) CloseFd(r.pidfd);
  }
  CloseFd(wake_fd_);
}

double LocalBackend::total_cpu_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.total_cpu();
}

std::vector<int> LocalBackend::gpu_ids() const { return gpu_ids_; }

int LocalBackend::MaxConcurrent(const LaunchSpec& spec) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.MaxConcurrent({spec.workers, spec.cpu_per_worker, spec.gpu_per_worker});
}

std::optional<BackendCapacity> LocalBackend::Capacity(const LaunchSpec& shape) const {
  return BackendCapacity{gpu_ids(), total_cpu_slots(), MaxConcurrent(shape)};
}

Status LocalBackend::CheckFeasible(const LaunchSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.CheckFeasible({spec.workers, spec.cpu_per_worker, spec.gpu_per_worker});
}

Status LocalBackend::CheckSecretEnv(const std::map<std::string, SecretKeyRef>& secret_env) {
  for (const auto& [name, ref] : secret_env) {
    if (std::getenv(name.c_str()) != nullptr) continue;
    return Status::FailedPrecondition("trial.env." + name + ": the local backend takes the value of Secret \"" +
                                      ref.secret + "\" (key \"" + ref.key +
                                      "\") from the tuner's own environment variable " + name +
                                      ", which is not set (export it before tune run)");
  }
  return Status::Ok();
}

bool LocalBackend::CanLaunch(const LaunchSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.CanAcquire({spec.workers, spec.cpu_per_worker, spec.gpu_per_worker});
}

Status LocalBackend::Launch(const LaunchSpec& spec) {
  const std::string who = "trial " + std::to_string(spec.trial_number);
  if (spec.argv.empty()) return Status::InvalidArgument(who + ": the command is empty");
  if (spec.workers < 1) {
    return Status::InvalidArgument(who + ": workers must be at least 1, got " +
                                   std::to_string(spec.workers));
  }
  if (spec.trial_dir.empty()) return Status::InvalidArgument(who + ": no trial directory");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!monitor_error_.empty()) return Status::Internal(who + ": " + monitor_error_);
  }
  std::error_code ec;
  if (!spec.working_dir.empty() && !std::filesystem::is_directory(spec.working_dir, ec)) {
    return Status::NotFound(who + ": working directory " + spec.working_dir + " does not exist" +
                            (ec ? " (" + ec.message() + ")" : ""));
  }
  std::filesystem::create_directories(spec.trial_dir, ec);
  if (ec) {
    return Status::Internal(who + ": cannot create " + spec.trial_dir + ": " + ec.message());
  }

  // The environment: the tuner's, then the trial's, then per rank.
  std::map<std::string, std::string> base_env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) base_env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) base_env[k] = v;
  // A Secret reference's value is the tuner's own variable, inherited above.
  TUNE_RETURN_IF_ERROR(CheckSecretEnv(spec.secret_env));
  TUNE_ASSIGN_OR_RETURN(std::string exe,
                        ResolveExecutable(spec.argv[0], spec.working_dir, TrialPath(spec.env)));

  auto attempt = std::make_unique<Attempt>();
  attempt->spec = spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return Status::FailedPrecondition(who + ": the backend is shut down");
    auto it = attempts_.find(spec.trial_id);
    if (it != attempts_.end() && !it->second->done) {
      return Status::FailedPrecondition(who + ": its previous attempt is still running");
    }
    TUNE_ASSIGN_OR_RETURN(attempt->grant,
                          pool_.Acquire({spec.workers, spec.cpu_per_worker, spec.gpu_per_worker}));
  }

  SpawnRequest request;
  std::vector<int> child_fds;  // our copies of the children's output ends
  auto cleanup = [&](Status st) {
    for (int& fd : child_fds) CloseFd(fd);
    Attempt& a = request.attempt ? *request.attempt : *attempt;
    CloseFd(a.out_fd);
    CloseFd(a.log0_fd);
    std::lock_guard<std::mutex> lock(mu_);
    pool_.Release(a.grant);
    return st;
  };

  Result<PortReservation> port = ReservePort();
  if (!port.ok()) return cleanup(port.status());
  attempt->port = std::move(port).value();

  for (int r = 0; r < spec.workers; ++r) {
    std::string log_path = spec.trial_dir + "/rank_" + std::to_string(r) + ".log";
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return cleanup(
          Status::Internal(who + ": cannot open " + log_path + ": " + std::strerror(errno)));
    }
    struct stat st {};
    if (spec.attempt > 0 || (::fstat(log_fd, &st) == 0 && st.st_size > 0)) {
      // Earlier attempts' output stays; mark where this one starts.
      Status w = WriteString(log_fd, "----- tune: trial " + std::to_string(spec.trial_number) +
                                         " attempt " + std::to_string(spec.attempt) + " rank " +
                                         std::to_string(r) + " started " + UtcNow() + " -----\n");
      (void)w;
    }
    WorkerCommand cmd;
    cmd.path = exe;
    cmd.argv = spec.argv;
    cmd.working_dir = spec.working_dir;
    if (r == 0) {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) {
        ::close(log_fd);
        return cleanup(Status::Internal(who + ": pipe failed: " + std::strerror(errno)));
      }
      ::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_NONBLOCK);
      attempt->out_fd = p[0];
      attempt->log0_fd = log_fd;
      child_fds.push_back(p[1]);
      cmd.output_fd = p[1];
    } else {
      // Other ranks write straight to their log: nothing to parse.
      child_fds.push_back(log_fd);
      cmd.output_fd = log_fd;
    }
    std::map<std::string, std::string> env = base_env;
    env["RANK"] = std::to_string(r);
    env["LOCAL_RANK"] = std::to_string(r);
    env["WORLD_SIZE"] = std::to_string(spec.workers);
    env["LOCAL_WORLD_SIZE"] = std::to_string(spec.workers);
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = std::to_string(attempt->port.port());
    if (!gpu_ids_.empty()) {
      std::string devices;
      for (int id : attempt->grant.gpus[r]) {
        if (!devices.empty()) devices += ",";
        devices += std::to_string(id);
      }
      env["CUDA_VISIBLE_DEVICES"] = devices;  // "" hides every GPU
    }
    for (const auto& [k, v] : env) cmd.env.push_back(k + "=" + v);
    request.commands.push_back(std::move(cmd));
  }

  // Fork on the monitor thread (see PR_SET_PDEATHSIG in process_group.h).
  request.attempt = std::move(attempt);
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!monitor_error_.empty()) {
      const std::string error = monitor_error_;
      lock.unlock();
      return cleanup(Status::Internal(who + ": " + error));
    }
    if (shutting_down_) {
      lock.unlock();
      return cleanup(Status::FailedPrecondition(who + ": the backend is shut down"));
    }
    spawn_queue_.push_back(&request);
    Wake();
    cv_.wait(lock, [&] { return request.done; });
  }
  for (int& fd : child_fds) CloseFd(fd);
  if (!request.status.ok()) return cleanup(request.status);
  return Status::Ok();
}

void LocalBackend::SpawnAttempt(SpawnRequest& request) {
  Attempt& a = *request.attempt;
  for (size_t r = 0; r < request.commands.size(); ++r) {
    Result<pid_t> pid = SpawnInProcessGroup(request.commands[r]);
    if (!pid.ok()) {
      // Undo the ranks already started.
      for (Rank& started : a.ranks) {
        ::kill(-started.pid, SIGKILL);
        int status;
        ::waitpid(started.pid, &status, 0);
        CloseFd(started.pidfd);
      }
      a.ranks.clear();
      request.status = pid.status();
      return;
    }
    Rank rank;
    rank.rank = static_cast<int>(r);
    rank.pid = *pid;
    rank.pidfd = OpenPidfd(*pid);
    rank.alive = true;
    a.ranks.push_back(rank);
  }
  a.status.state = RunState::kRunning;
  a.status.location = "local:pgid ";
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    a.status.location += (r ? "," : "") + std::to_string(a.ranks[r].pid);
  }
  if (a.spec.timeout_s > 0) {
    a.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(a.spec.timeout_s));
  }
  attempts_[a.spec.trial_id] = std::move(request.attempt);
}

Result<std::vector<MetricReport>> LocalBackend::Poll(TrialId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!monitor_error_.empty()) return Status::Internal(monitor_error_);
  auto it = attempts_.find(id);
  if (it == attempts_.end())
    return Status::NotFound("no local trial with id " + std::to_string(id));
  std::vector<MetricReport> out;
  out.swap(it->second->pending);
  return out;
}

Result<RunStatus> LocalBackend::State(TrialId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!monitor_error_.empty()) return Status::Internal(monitor_error_);
  auto it = attempts_.find(id);
  if (it == attempts_.end())
    return Status::NotFound("no local trial with id " + std::to_string(id));
  const Attempt& a = *it->second;
  RunStatus s = a.status;
  if (!a.done || !a.pending.empty()) {
    s.state = RunState::kRunning;
    s.message.clear();
  }
  return s;
}

Status LocalBackend::Kill(TrialId id, std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(id);
  if (it == attempts_.end())
    return Status::NotFound("no local trial with id " + std::to_string(id));
  Attempt& a = *it->second;
  if (a.done) return Status::Ok();
  if (a.failure.empty()) a.failure = "killed";
  // Its slots and GPUs stay taken until the last rank has exited
  // (FinishIfDone): a worker that ignores SIGTERM for its grace period must
  // not share the machine with the next trial (nor a GPU's memory).
  BeginTermination(a, grace);
  return Status::Ok();
}

void LocalBackend::ReleaseGrant(Attempt& a) {
  if (a.grant_released) return;
  pool_.Release(a.grant);
  a.grant = ResourceGrant{};
  a.grant_released = true;
}

void LocalBackend::BeginTermination(Attempt& a, std::chrono::milliseconds grace) {
  if (!a.terminating) {
    a.terminating = true;
    for (const Rank& r : a.ranks) {
      if (r.alive) ::kill(-r.pid, SIGTERM);
    }
  }
  a.kill_deadline = std::min(a.kill_deadline, Clock::now() + grace);
  Wake();
}

void LocalBackend::WaitForEvent(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return event_seq_ != seen_event_seq_ || stop_monitor_; });
  seen_event_seq_ = event_seq_;
}

void LocalBackend::Shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  for (auto& [id, a] : attempts_) {
    if (a->done) continue;
    if (a->failure.empty()) a->failure = "killed (tuner shutdown)";
    BeginTermination(*a, options_.shutdown_grace);
    ReleaseGrant(*a);
  }
  // Bounded: a process stuck in the kernel must not hang the tuner; the
  // supervisors' parent-death signal still takes the groups down when the
  // monitor thread exits.
  cv_.wait_for(lock, options_.shutdown_grace + std::chrono::seconds(5), [&] {
    if (!monitor_error_.empty()) return true;  // nothing reaps them any more
    for (auto& [id, a] : attempts_) {
      if (!a->done) return false;
    }
    return true;
  });
  if (monitor_joined_) return;  // another Shutdown() stopped the thread
  monitor_joined_ = true;
  stop_monitor_ = true;
  Wake();
  lock.unlock();
  monitor_.join();
  cv_.notify_all();
}

void LocalBackend::Wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void LocalBackend::NotifyEvent() {
  ++event_seq_;
  cv_.notify_all();
}

void LocalBackend::HandleLine(Attempt& a, std::string_view line) {
  std::optional<MetricReport> report = MetricReportFromLine(line, a.spec.time_attr, a.report_count + 1, UnixNow());
  if (!report) return;
  ++a.report_count;
  a.pending.push_back(std::move(*report));
}

void LocalBackend::ReadOutput(Attempt& a, bool final_drain) {
  if (a.out_fd < 0) return;
  const size_t before = a.pending.size();
  char buf[65536];
  // Bounded per call so one chatty trial cannot starve the others; the
  // final drain stops too if an escaped process keeps the pipe busy.
  const int max_reads = final_drain ? 4096 : 16;
  for (int reads = 0;; ++reads) {
    if (reads == max_reads) {
      if (final_drain) CloseFd(a.out_fd);
      break;
    }
    ssize_t n = ::read(a.out_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && !final_drain) break;
    if (n <= 0) {  // EOF, or drained after the rank ended
      CloseFd(a.out_fd);
      if (!a.partial.empty() && !a.partial_too_long) HandleLine(a, a.partial);
      a.partial.clear();
      break;
    }
    if (a.log0_fd >= 0) {
      Status w = WriteString(a.log0_fd, std::string(buf, static_cast<size_t>(n)));
      (void)w;  // a full disk must not stop the trial
    }
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c == '\n' || c == '\r') {
        if (!a.partial_too_long) HandleLine(a, a.partial);
        a.partial.clear();
        a.partial_too_long = false;
      } else if (a.partial.size() < kMaxLineBytes) {
        a.partial.push_back(c);
      } else {
        a.partial_too_long = true;
      }
    }
  }
  if (a.pending.size() != before) NotifyEvent();
}

void LocalBackend::ReapRank(Attempt& a, Rank& r) {
  // The supervisor is a zombie, so its pid still names the group: take down
  // whatever the worker left behind before reaping (no pid reuse race).
  ::kill(-r.pid, SIGKILL);
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(r.pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) status = 255 << 8;  // someone else reaped it: unknown status
  r.alive = false;
  CloseFd(r.pidfd);
  if (r.rank == 0) ReadOutput(a, /*final_drain=*/true);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && a.failure.empty()) {
    a.failure = "rank " + std::to_string(r.rank) + " " + DescribeWaitStatus(status);
    std::string log_path = a.spec.trial_dir + "/rank_" + std::to_string(r.rank) + ".log";
    if (std::string last = LastLogLine(log_path); !last.empty()) {
      a.failure += ": \"" + last + "\" (last line of " + log_path + ")";
    }
    BeginTermination(a, options_.failure_grace);
  }
  FinishIfDone(a);
}

void LocalBackend::FinishIfDone(Attempt& a) {
  if (a.done || a.out_fd >= 0) return;
  for (const Rank& r : a.ranks) {
    if (r.alive) return;
  }
  a.done = true;
  a.status.state = a.failure.empty() ? RunState::kSucceeded : RunState::kFailed;
  a.status.message = a.failure;
  ReleaseGrant(a);
  a.port.Release();
  CloseFd(a.log0_fd);
  NotifyEvent();
}

void LocalBackend::CheckDeadlines(Clock::time_point now) {
  for (auto& [id, ap] : attempts_) {
    Attempt& a = *ap;
    if (a.done) continue;
    if (!a.timed_out && a.deadline <= now) {
      a.timed_out = true;
      if (a.failure.empty())
        a.failure = "timed out after " + FormatSeconds(a.spec.timeout_s) + " s";
      BeginTermination(a, options_.failure_grace);
    }
    if (a.kill_deadline <= now) {
      // The supervisors SIGKILL their workers and everything those started
      // (also what left the group with setsid), then exit.
      for (const Rank& r : a.ranks) {
        if (r.alive) KillWorkerTree(r.pid);
      }
      a.kill_deadline = kNever;
      a.group_kill_deadline = now + std::chrono::seconds(2);
    }
    if (a.group_kill_deadline <= now) {
      // A supervisor that could not (stopped, or stuck in the kernel).
      for (const Rank& r : a.ranks) {
        if (r.alive) ::kill(-r.pid, SIGKILL);
      }
      a.group_kill_deadline = kNever;
    }
  }
}

void LocalBackend::MonitorLoop() {
  // Signals are for the tuner's other threads; children forked here start
  // with everything blocked (process_group.h relies on it).
  sigset_t all;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigdelset(&all, sig);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  try {
    MonitorPasses();
  } catch (...) {
    // MonitorPasses' lock is released by now (unwound).
    const std::string what = CurrentExceptionText();
    std::lock_guard<std::mutex> lock(mu_);
    MonitorFailed(what);
  }
}

void LocalBackend::MonitorFailed(const std::string& what) {
  monitor_error_ = "the local backend stopped watching its trials (" + what + ")";
  // Nothing reads their output or reaps them from now on: end them all
  // (the supervisors' parent-death signal would too, once this thread
  // exits), and wait a little for the supervisors to go.
  for (auto& [id, a] : attempts_) {
    for (const Rank& r : a->ranks) {
      if (r.alive) KillWorkerTree(r.pid);
    }
  }
  const auto until = Clock::now() + std::chrono::seconds(2);
  for (auto& [id, a] : attempts_) {
    for (Rank& r : a->ranks) {
      while (r.alive) {
        int status = 0;
        pid_t got = ::waitpid(r.pid, &status, WNOHANG);
        if (got == r.pid || (got < 0 && errno != EINTR)) {
          r.alive = false;
          CloseFd(r.pidfd);
        } else if (Clock::now() >= until) {
          break;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    }
  }
  // Launch calls waiting for a fork.
  for (SpawnRequest* request : spawn_queue_) {
    request->status = Status::Internal(monitor_error_);
    request->done = true;
  }
  spawn_queue_.clear();
  stop_monitor_ = true;
  ++event_seq_;
  cv_.notify_all();
}

void LocalBackend::MonitorPasses() {
  struct Watch {
    Attempt* attempt;
    int rank;  // -1: rank 0's output pipe
  };
  std::vector<pollfd> fds;
  std::vector<Watch> watches;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (options_.monitor_pass_hook) options_.monitor_pass_hook();
    while (!spawn_queue_.empty()) {
      SpawnRequest* request = spawn_queue_.front();
      SpawnAttempt(*request);
      // Taken off only now: if SpawnAttempt threw, MonitorFailed answers it.
      spawn_queue_.pop_front();
      request->done = true;
      cv_.notify_all();
    }
    Clock::time_point now = Clock::now();
    CheckDeadlines(now);
    if (stop_monitor_) break;

    fds.clear();
    watches.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    watches.push_back({nullptr, -1});
    Clock::time_point next = kNever;
    bool need_tick = false;
    for (auto& [id, ap] : attempts_) {
      Attempt& a = *ap;
      if (a.done) continue;
      next = std::min({next, a.deadline, a.kill_deadline, a.group_kill_deadline});
      if (a.out_fd >= 0) {
        fds.push_back({a.out_fd, POLLIN, 0});
        watches.push_back({&a, -1});
      }
      for (size_t r = 0; r < a.ranks.size(); ++r) {
        if (!a.ranks[r].alive) continue;
        if (a.ranks[r].pidfd >= 0) {
          fds.push_back({a.ranks[r].pidfd, POLLIN, 0});
          watches.push_back({&a, static_cast<int>(r)});
        } else {
          need_tick = true;
        }
      }
    }
    int timeout_ms = -1;
    if (next != kNever) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
    }
    if (need_tick && (timeout_ms < 0 || timeout_ms > kNoPidfdTickMs)) timeout_ms = kNoPidfdTickMs;

    lock.unlock();
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    lock.lock();
    if (ready < 0 && errno != EINTR) {
      std::fprintf(stderr, "tune: local backend poll failed: %s\n", std::strerror(errno));
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      ssize_t n = ::read(wake_fd_, &count, sizeof(count));
      (void)n;
    }
    // Attempts are only added or removed on this thread, so the pointers
    // taken before poll() are still valid.
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Attempt& a = *watches[i].attempt;
      if (watches[i].rank < 0) {
        if (a.out_fd == fds[i].fd) {
          ReadOutput(a, /*final_drain=*/false);
          FinishIfDone(a);
        }
      } else {
        Rank& r = a.ranks[watches[i].rank];
        if (r.alive) ReapRank(a, r);
      }
    }
    if (need_tick) {
      for (auto& [id, ap] : attempts_) {
        for (Rank& r : ap->ranks) {
          if (!r.alive || r.pidfd >= 0) continue;
          siginfo_t info{};
          if (::waitid(P_PID, static_cast<id_t>(r.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
              info.si_pid == r.pid) {
            ReapRank(*ap, r);
          }
        }
      }
    }
  }
}

}  // namespace tune
