// LogFollower (k8s/log_follower.h): each complete line of a pod's log goes
// to the callback once and in order, whatever the stream does: a line cut
// by a dropped stream is handed over whole by the next pass, a line that
// arrives in pieces is one line, bytes that are not UTF-8 pass unchanged,
// an unterminated last line counts once three last passes end with it, and
// a log that cannot be read gives up with kubectl's words. `kubectl` here
// is a shell script that plays one answer per call.
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem.hpp>
#include <catch2/catch.hpp>

#include "k8s/kubectl.h"
#include "k8s/log_follower.h"

namespace tune {
namespace {

namespace fs = boost::filesystem;
using Pass = LogFollower::Pass;

// A temporary directory with a fake kubectl whose n-th call (from 1) runs
// `answers[n-1]` (the last one again after that); removed at the end.
struct FakeKubectl {
  std::string dir;
  KubernetesOptions opts;

  explicit FakeKubectl(const std::vector<std::string>& answers) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/tune_log_follower_XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    std::ofstream script(dir + "/kubectl");
    script << "#!/bin/sh\n"
           << "n=$(cat '" << dir << "/calls' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '" << dir
           << "/calls'\n"
           << "echo \"$@\" >> '" << dir << "/args'\n"
           << "case $n in\n";
    for (size_t i = 0; i < answers.size(); ++i) {
      script << (i + 1 == answers.size() ? "*" : std::to_string(i + 1)) << ") " << answers[i] << " ;;\n";
    }
    script << "esac\n";
    script.close();
    ::chmod((dir + "/kubectl").c_str(), 0755);
    opts.kubectl = dir + "/kubectl";
    opts.namespace_ = "ns";
  }
  ~FakeKubectl() {
    boost::system::error_code ec;
    fs::remove_all(dir, ec);
  }
  int Calls() const {
    std::ifstream in(dir + "/calls");
    int n = 0;
    in >> n;
    return n;
  }
  std::string Args() const {
    std::ifstream in(dir + "/args");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

LogFollower::Options Fast(double deadline_s = 5) {
  LogFollower::Options o;
  o.initial_backoff = std::chrono::milliseconds(5);
  o.max_backoff = std::chrono::milliseconds(20);
  o.deadline_s = deadline_s;
  return o;
}

// Callbacks that collect the lines; the passes are `follow_passes` --follow
// passes, then last passes.
LogFollower::Callbacks Collect(std::vector<std::string>* lines, int follow_passes) {
  auto passes = std::make_shared<int>(0);
  LogFollower::Callbacks cb;
  cb.next_pass = [passes, follow_passes] { return (*passes)++ < follow_passes ? Pass::kFollow : Pass::kLast; };
  cb.on_line = [lines](const std::string& line) { lines->push_back(line); };
  return cb;
}

TEST_CASE("ReadLines hands over each complete line once and keeps a cut one back", "[k8s][log_follower]") {
  std::vector<std::string> got;
  auto on_line = [&](const std::string& l) { got.push_back(l); };
  int64_t seen = 0;
  std::istringstream first("loss=1\n\nloss=2\nlos");
  LogFollower::Read r = LogFollower::ReadLines(first, &seen, on_line);
  CHECK(got == std::vector<std::string>{"loss=1", "", "loss=2"});
  CHECK(r.lines == 3);
  CHECK(r.cut);
  CHECK(r.tail == "los");
  CHECK(seen == 3);
  // The next pass reads the log from its start: only what is new counts.
  std::istringstream second("loss=1\n\nloss=2\nloss=3\nbytes \xff\xfe\x80 end\n");
  r = LogFollower::ReadLines(second, &seen, on_line);
  CHECK(got == std::vector<std::string>{"loss=1", "", "loss=2", "loss=3", "bytes \xff\xfe\x80 end"});
  CHECK_FALSE(r.cut);
  CHECK(r.lines == 5);
  CHECK(seen == 5);
  // A shorter read (a stream dropped early) hands over nothing again.
  std::istringstream shorter("loss=1\n");
  r = LogFollower::ReadLines(shorter, &seen, on_line);
  CHECK(got.size() == 5);
  CHECK(seen == 5);
}

TEST_CASE("LogFollower resumes a dropped stream without losing or repeating a line", "[k8s][log_follower]") {
  // 1: the stream drops mid-line. 2: the whole log, its last line in two
  // pieces, and a line that is not UTF-8. 3 (last pass): the same log.
  FakeKubectl k({"printf 'step=1\\nstep=2\\nste'",
                 "printf 'step=1\\nstep=2\\nstep=3\\nab'; sleep 0.2; printf 'c\\n\\377x\\n'",
                 "printf 'step=1\\nstep=2\\nstep=3\\nabc\\n\\377x\\n'"});
  Kubectl kubectl(k.opts);
  std::vector<std::string> lines;
  LogFollower f(kubectl, "p-0", "", Fast(), Collect(&lines, 2));
  LogFollower::Outcome o = f.Run();
  CHECK_FALSE(o.gave_up);
  CHECK(o.tries == 1);
  CHECK(lines == std::vector<std::string>{"step=1", "step=2", "step=3", "abc", "\xffx"});
  CHECK(k.Calls() == 3);
  const std::string args = k.Args();
  CHECK(args.find("--namespace=ns logs pod/p-0 --follow\n") == 0);
  CHECK(args.substr(args.rfind("--namespace")) == "--namespace=ns logs pod/p-0\n");
}

TEST_CASE("LogFollower takes an unterminated last line after three last passes end with it",
          "[k8s][log_follower]") {
  FakeKubectl k({"printf 'loss=0.5\\nDONE'"});
  Kubectl kubectl(k.opts);
  std::vector<std::string> lines;
  LogFollower f(kubectl, "p-0", "", Fast(), Collect(&lines, 0));
  LogFollower::Outcome o = f.Run();
  CHECK_FALSE(o.gave_up);
  CHECK(o.tries == 3);
  CHECK(lines == std::vector<std::string>{"loss=0.5", "DONE"});
}

TEST_CASE("LogFollower gives up on a log that cannot be read, with kubectl's words", "[k8s][log_follower]") {
  FakeKubectl k({"printf 'a=1\\n'; echo 'Error from server (InternalError): boom' >&2; exit 1"});
  Kubectl kubectl(k.opts);
  std::vector<std::string> lines;
  LogFollower f(kubectl, "p-0", "", Fast(/*deadline_s=*/0.2), Collect(&lines, 0));
  LogFollower::Outcome o = f.Run();
  CHECK(o.gave_up);
  CHECK(o.tries >= 2);
  CHECK(o.waited_s > 0.2);
  CHECK(o.error == "Error from server (InternalError): boom");
  CHECK(lines == std::vector<std::string>{"a=1"});  // once, however many passes read it
}

TEST_CASE("LogFollower reads nothing of another run under the pod's name", "[k8s][log_follower]") {
  FakeKubectl k({"printf 'a=1\\n'"});
  Kubectl kubectl(k.opts);
  std::vector<std::string> lines;
  LogFollower::Callbacks cb = Collect(&lines, 0);
  cb.identity_now = [] { return std::optional<std::string>("uid-2/0"); };
  LogFollower f(kubectl, "p-0", "uid-1/0", Fast(/*deadline_s=*/0.1), cb);
  LogFollower::Outcome o = f.Run();
  CHECK(o.gave_up);
  CHECK(o.error == "pod p-0 runs again (another pod or container)");
  CHECK(lines.empty());
  CHECK(k.Calls() == 0);
}

TEST_CASE("LogFollower::Stop ends a --follow pass in flight", "[k8s][log_follower]") {
  FakeKubectl k({"printf 'a=1\\n'; sleep 30; printf 'late=1\\n'"});
  Kubectl kubectl(k.opts);
  std::vector<std::string> lines;
  LogFollower f(kubectl, "p-0", "", Fast(), Collect(&lines, 1000));
  const auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    f.Stop();
  });
  LogFollower::Outcome o = f.Run();
  stopper.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK_FALSE(o.gave_up);
  CHECK(lines == std::vector<std::string>{"a=1"});
}

}  // namespace
}  // namespace tune
