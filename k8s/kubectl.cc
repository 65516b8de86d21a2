#include "k8s/kubectl.h"

#include <unistd.h>

#include <future>
#include <system_error>

#include <boost/asio/io_context.hpp>
#include <boost/filesystem/path.hpp>
#include <boost/process.hpp>

namespace tune {
namespace bp = boost::process;

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

}  // namespace

Kubectl::Kubectl(KubernetesOptions opts) : opts_(std::move(opts)), path_(Resolve(opts_.kubectl)) {}

std::vector<std::string> Kubectl::Argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {path_};
  if (!opts_.kubeconfig.empty()) argv.push_back("--kubeconfig=" + opts_.kubeconfig);
  if (!opts_.context.empty()) argv.push_back("--context=" + opts_.context);
  if (!opts_.namespace_.empty()) argv.push_back("--namespace=" + opts_.namespace_);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Result<KubectlOutput> Kubectl::Run(const std::vector<std::string>& args, const std::string& input,
                                   std::chrono::milliseconds timeout) const {
  if (path_.empty()) {
    return Status::FailedPrecondition("kubectl not found on PATH (backend.kubectl = '" + opts_.kubectl +
                                      "'); install it (Debian: kubernetes-client)");
  }
  std::vector<std::string> argv = Argv(args);
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  KubectlOutput result;
  try {
    boost::asio::io_context ios;
    std::future<std::string> out, err;
    bp::child child(bp::exe = path_, bp::args = rest, bp::std_in < bp::buffer(input),
                    bp::std_out > out, bp::std_err > err, ios);
    ios.run_for(timeout);
    if (!ios.stopped()) {
      std::error_code ec;
      child.terminate(ec);
      return Status::Unavailable("kubectl " + (args.empty() ? std::string() : args[0]) +
                                 " timed out after " + std::to_string(timeout.count() / 1000) + " s");
    }
    child.wait();
    result.exit_code = child.exit_code();
    result.out = out.get();
    result.err = err.get();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("running kubectl: ") + e.what());
  }
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
