#include "k8s/kubectl.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include <boost/asio/io_context.hpp>
#include <boost/filesystem/path.hpp>
#include <boost/process.hpp>

#include "k8s/child_process.h"

namespace tune {
namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

struct Kubectl::Shared {
  std::mutex mu;
  std::set<pid_t> groups;                   // guarded by mu: in flight or adopted
  std::multiset<Clock::time_point> starts;  // guarded by mu: calls in flight
  Clock::time_point last_answer = Clock::now();    // guarded by mu
  std::optional<Clock::time_point> failing_since;  // guarded by mu
  bool cancelled = false;                          // guarded by mu
  bool context_pinned = false;                     // guarded by mu
  std::string pinned_context;                      // guarded by mu
};

namespace {

std::string Resolve(const std::string& kubectl) {
  if (kubectl.find('/') != std::string::npos) {
    return ::access(kubectl.c_str(), X_OK) == 0 ? kubectl : std::string();
  }
  boost::filesystem::path p = bp::search_path(kubectl);
  return p.empty() ? std::string() : p.string();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

constexpr auto kSlice = std::chrono::milliseconds(50);

}  // namespace

Kubectl::Kubectl(KubernetesOptions opts)
    : opts_(std::move(opts)), path_(Resolve(opts_.kubectl)), shared_(std::make_shared<Shared>()) {}

std::vector<std::string> Kubectl::Argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {path_};
  if (!opts_.kubeconfig.empty()) argv.push_back("--kubeconfig=" + opts_.kubeconfig);
  if (std::string context = Context(); !context.empty()) argv.push_back("--context=" + context);
  if (!opts_.namespace_.empty()) argv.push_back("--namespace=" + opts_.namespace_);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string Kubectl::Context() const {
  if (!opts_.context.empty()) return opts_.context;
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->pinned_context;
}

void Kubectl::PinContext() const {
  if (!opts_.context.empty()) return;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->context_pinned) return;
  }
  // A local read of the kubeconfig: no API call. It fails when no context
  // is current (in a pod, kubectl uses the pod's service account).
  std::string context;
  auto r = Run({"config", "current-context"}, "", std::chrono::seconds(20));
  if (r.ok() && r->exit_code == 0) context = Trim(r->out);
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (shared_->context_pinned) return;
  shared_->context_pinned = true;
  shared_->pinned_context = context;
}

void Kubectl::Adopt(pid_t pgid) const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->groups.insert(pgid);
  if (shared_->cancelled) ::kill(-pgid, SIGKILL);
}

void Kubectl::Forget(pid_t pgid) const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->groups.erase(pgid);
}

void Kubectl::Cancel() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->cancelled = true;
  for (pid_t g : shared_->groups) ::kill(-g, SIGKILL);
}

bool Kubectl::Cancelled() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->cancelled;
}

void Kubectl::NoteAnswer(bool answered) const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (answered) {
    shared_->last_answer = Clock::now();
    shared_->failing_since.reset();
  } else if (!shared_->failing_since) {
    shared_->failing_since = Clock::now();
  }
}

double Kubectl::SecondsWithoutAnswer() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto now = Clock::now();
  std::optional<Clock::time_point> since = shared_->failing_since;
  if (!shared_->starts.empty() && *shared_->starts.begin() > shared_->last_answer) {
    // A call waits for an answer that has not come since it started.
    if (!since || *shared_->starts.begin() < *since) since = *shared_->starts.begin();
  }
  if (!since) return 0;
  return std::chrono::duration<double>(now - *since).count();
}

Result<KubectlOutput> Kubectl::Run(const std::vector<std::string>& args, const std::string& input,
                                   std::chrono::milliseconds timeout) const {
  const std::string what = "kubectl " + (args.empty() ? std::string() : args[0]);
  if (path_.empty()) {
    return Status::FailedPrecondition("kubectl not found on PATH (backend.kubectl = '" + opts_.kubectl +
                                      "'); install it (Debian: kubernetes-client)");
  }
  if (Cancelled()) return Status::Unavailable(what + ": not run, tune is stopping");
  std::vector<std::string> argv = Argv(args);
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  KubectlOutput result;
  Clock::time_point started = Clock::now();
  try {
    boost::asio::io_context ios;
    std::future<std::string> out, err;
    bp::child child(bp::exe = path_, bp::args = rest, bp::std_in < bp::buffer(input), bp::std_out > out,
                    bp::std_err > err, ios, internal::OwnGroupDieWithParent{});
    const pid_t group = child.id();
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->groups.insert(group);
      shared_->starts.insert(started);
      if (shared_->cancelled) ::kill(-group, SIGKILL);
    }
    auto deadline = started + timeout;
    while (!ios.stopped() && Clock::now() < deadline && !Cancelled()) ios.run_for(kSlice);
    const bool finished = ios.stopped();
    if (!finished) ::kill(-group, SIGKILL);
    std::error_code ec;
    child.wait(ec);
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->groups.erase(group);
      shared_->starts.erase(shared_->starts.find(started));
    }
    if (!finished) {
      if (Cancelled()) return Status::Unavailable(what + ": ended, tune is stopping");
      NoteAnswer(false);
      return Status::Unavailable(what + " timed out after " + std::to_string(timeout.count() / 1000) + " s");
    }
    result.exit_code = child.exit_code();
    result.out = out.get();
    result.err = err.get();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("running kubectl: ") + e.what());
  }
  if (result.exit_code == 0) NoteAnswer(true);
  return result;
}

Result<std::string> Kubectl::Check(const std::vector<std::string>& args, const std::string& input,
                                   std::chrono::milliseconds timeout) const {
  TUNE_ASSIGN_OR_RETURN(KubectlOutput r, Run(args, input, timeout));
  if (r.exit_code != 0) {
    std::string what = args.empty() ? "" : args[0];
    if (args.size() > 1 && args[1][0] != '-') what += " " + args[1];
    return Status::Unavailable("kubectl " + what + ": " + Trim(r.err.empty() ? r.out : r.err));
  }
  return std::move(r.out);
}

}  // namespace tune
