#include "k8s/log_follower.h"

#include <signal.h>

#include <algorithm>
#include <system_error>
#include <vector>

#include <boost/process.hpp>

#include "k8s/child_process.h"

namespace tune {
namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

LogFollower::LogFollower(const Kubectl& kubectl, std::string pod, std::string identity, Options opts,
                         Callbacks callbacks)
    : kubectl_(kubectl),
      pod_(std::move(pod)),
      identity_(std::move(identity)),
      opts_(opts),
      callbacks_(std::move(callbacks)) {}

void LogFollower::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
  cv_.notify_all();
}

bool LogFollower::Stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

LogFollower::Read LogFollower::ReadLines(std::istream& in, int64_t* seen,
                                         const std::function<void(const std::string&)>& on_line) {
  Read read;
  std::string line;
  while (std::getline(in, line)) {
    // A line cut by a dropped stream is read again whole next time.
    if (in.eof()) {
      read.cut = true;
      read.tail = line;
      break;
    }
    if (++read.lines <= *seen) continue;
    *seen = read.lines;
    on_line(line);
  }
  return read;
}

LogFollower::Outcome LogFollower::Run() {
  Outcome outcome;
  auto backoff = opts_.initial_backoff;
  std::optional<Clock::time_point> last_since;  // when the first last pass started
  while (!Stopped()) {
    const Pass pass = callbacks_.next_pass();
    if (pass == Pass::kStop) break;
    const bool last = pass == Pass::kLast;
    if (last && !last_since) last_since = Clock::now();
    if (kubectl_.Argv({})[0].empty() || kubectl_.Cancelled()) break;
    bool read_whole = false;
    std::optional<std::string> now_id;
    if (callbacks_.identity_now && !identity_.empty()) now_id = callbacks_.identity_now();
    if (now_id && *now_id != identity_) {
      // Another run under the pod's name: not ours to read.
      if (last && followed_to_end_) {
        read_whole = true;
      } else {
        last_error_ = "pod " + pod_ + (now_id->empty() ? " is gone" : " runs again (another pod or container)");
      }
    } else {
      read_whole = KubectlPass(last);
    }
    if (last) {
      ++outcome.tries;
      if (read_whole) break;
      outcome.waited_s = std::chrono::duration<double>(Clock::now() - *last_since).count();
      if (outcome.waited_s > opts_.deadline_s || kubectl_.Cancelled()) {
        outcome.gave_up = true;
        outcome.error = last_error_;
        break;
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, backoff, [&] { return stopped_; });
    backoff = std::min(backoff * 2, opts_.max_backoff);
  }
  return outcome;
}

bool LogFollower::KubectlPass(bool last) {
  std::vector<std::string> args = {"logs", "pod/" + pod_};
  if (!last) args.push_back("--follow");
  const std::vector<std::string> argv = kubectl_.Argv(args);
  try {
    bp::ipstream out, err_stream;
    bp::child child(bp::exe = argv[0], bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                    bp::std_out > out, bp::std_err > err_stream, bp::std_in < bp::null,
                    internal::OwnGroupDieWithParent{});
    kubectl_.Adopt(child.id());
    // Forgotten however this pass ends (an exception too: the child's
    // destructor then ends it).
    struct Forget {
      const Kubectl& kubectl;
      pid_t pgid;
      ~Forget() { kubectl.Forget(pgid); }
    } forget{kubectl_, child.id()};
    {
      std::lock_guard<std::mutex> lock(mu_);
      pid_ = child.id();
      if (stopped_) ::kill(-pid_, SIGKILL);
    }
    const Read read = ReadLines(out, &seen_, callbacks_.on_line);
    std::string errors;
    for (std::string e; std::getline(err_stream, e);) errors += (errors.empty() ? "" : " ") + e;
    std::error_code ec;
    child.wait(ec);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pid_ = 0;
    }
    return Judge(last, read, ec ? -1 : child.exit_code(), errors);
  } catch (const std::exception& e) {
    last_error_ = std::string("kubectl could not be started: ") + e.what();
    return false;
  }
}

bool LogFollower::Judge(bool last, const Read& read, int code, const std::string& errors) {
  if (code == 0 && !read.cut) {
    if (!last) followed_to_end_ = true;
    return true;
  }
  // Once the workload ended its pods may be gone (the training operator
  // deletes every pod of a PyTorchJob that fails past its backoffLimit or
  // deadline): a pod that no longer exists then has nothing more to say.
  if (last && followed_to_end_ && code != 0 && errors.find("(NotFound)") != std::string::npos) return true;
  if (last && read.cut && code == 0 && ++same_tail_[std::to_string(read.lines) + ":" + read.tail] >= 3) {
    // Three whole reads end with the same unterminated line: the program
    // printed it so.
    if (read.lines + 1 > seen_) {
      seen_ = read.lines + 1;
      callbacks_.on_line(read.tail);
    }
    return true;
  }
  last_error_ = code != 0 ? (errors.empty() ? "kubectl logs exited with code " + std::to_string(code) : errors)
                          : "the log stream ended mid-line";
  return false;
}

}  // namespace tune
