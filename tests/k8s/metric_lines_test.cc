// One table of metric lines through both backends: a trial prints them on
// rank 0, once as a local process group and once as a Kubernetes Job (the
// real kubectl against fake_apiserver.py), and both give the same reports
// (trial_runner/metric_report.h: one rule for the step of every backend).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <catch2/catch.hpp>

#include "k8s/kubernetes_backend.h"
#include "tests/k8s/fake_cluster.h"
#include "trial_runner/local_backend.h"
#include "trial_runner/metric_report.h"

namespace tune {
namespace {

namespace fs = boost::filesystem;
using testing::FakeCluster;
using testing::MakeTempDir;

// Lines a trial may print, the awkward steps first. Each is a report except
// the last, which is log output.
const std::vector<std::string> kLines = {
    "step=10 loss=1.5",
    "step=1e30 loss=2",                  // too large for a step: its position
    "step=-0 loss=3",                    // 0
    "step=nan loss=4",                   // its position
    "step=inf loss=5",                   // its position
    "loss=6",                            // no step: its position
    "step=2.5 loss=7",                   // rounded: 3
    "step=-7 loss=8",
    "{\"step\": 1e308, \"loss\": 9}",    // JSON form, too large: its position
    "step=8.9e18 loss=10",               // still fits
    "step=9.5e18 loss=11",               // does not: its position
    "step=12 loss=1e400 acc=1e-400",     // huge and tiny exponents
    "2024-01-02T03:04:05Z step=13 loss=0.5",
    "epoch 3 done, nothing to report here",
};

// A report as comparable text: step and every value, NaN and infinities
// spelled out.
std::string Text(const MetricReport& r) {
  std::string out = "step " + std::to_string(r.step);
  for (const auto& [name, v] : r.values) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s=%.17g", name.c_str(), v);
    out += buf;
  }
  return out;
}

std::vector<std::string> Texts(const std::vector<MetricReport>& reports) {
  std::vector<std::string> out;
  for (const auto& r : reports) out.push_back(Text(r));
  return out;
}

// The shell command that prints kLines, one per line.
std::string PrintLines() {
  std::string cmd = "printf '%s\\n'";
  for (const std::string& l : kLines) {
    std::string quoted = "'";
    for (char c : l) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + quoted + "'";
  }
  return cmd;
}

LaunchSpec Printer(const std::string& experiment, const std::string& dir) {
  LaunchSpec s;
  s.trial_id = 1;
  s.trial_number = 1;
  s.experiment = experiment;
  s.argv = {"/bin/sh", "-c", PrintLines()};
  s.env = {{"TUNE_TRIAL_ID", "1"}, {"TUNE_EXPERIMENT", experiment}};
  s.trial_dir = dir;
  s.workers = 1;
  s.cpu_per_worker = 0.1;
  return s;
}

// Every report of attempt 1, polled as the tuner does until it ends.
std::vector<MetricReport> RunToEnd(TrialBackend& b) {
  std::vector<MetricReport> out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto reports = b.Poll(1);
    REQUIRE(reports.ok());
    out.insert(out.end(), reports->begin(), reports->end());
    auto st = b.State(1);
    REQUIRE(st.ok());
    if (st->state == RunState::kSucceeded || st->state == RunState::kFailed) {
      INFO(st->message);
      REQUIRE(st->state == RunState::kSucceeded);
      auto rest = b.Poll(1);
      REQUIRE(rest.ok());
      out.insert(out.end(), rest->begin(), rest->end());
      return out;
    }
    b.WaitForEvent(std::chrono::milliseconds(200));
  }
  FAIL("the trial did not end within 60 s");
  return out;
}

TEST_CASE("metric lines: the same table gives the same reports on the local and the Kubernetes backend",
          "[k8s][backend][metric]") {
  const std::string root = MakeTempDir("tune_metric_lines_");
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      boost::system::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{root};
  fs::create_directories(root + "/local");
  fs::create_directories(root + "/k8s");

  // What the one rule says, line by line, with positions counted from 1.
  std::vector<std::string> expected;
  int64_t position = 0;
  for (const std::string& l : kLines) {
    auto r = MetricReportFromLine(l, "step", position + 1, 0);
    if (!r) continue;
    ++position;
    expected.push_back(Text(*r));
  }
  REQUIRE(expected.size() == kLines.size() - 1);
  CHECK(expected[0].rfind("step 10 ", 0) == 0);
  CHECK(expected[1].rfind("step 2 ", 0) == 0);   // 1e30: position 2
  CHECK(expected[2].rfind("step 0 ", 0) == 0);   // -0
  CHECK(expected[3].rfind("step 4 ", 0) == 0);   // nan: position 4
  CHECK(expected[4].rfind("step 5 ", 0) == 0);   // inf: position 5
  CHECK(expected[5].rfind("step 6 ", 0) == 0);   // no step
  CHECK(expected[6].rfind("step 3 ", 0) == 0);   // 2.5 rounds away from zero
  CHECK(expected[7].rfind("step -7 ", 0) == 0);
  CHECK(expected[8].rfind("step 9 ", 0) == 0);   // JSON 1e308: position 9
  CHECK(expected[9].rfind("step 8900000000000000000 ", 0) == 0);
  CHECK(expected[10].rfind("step 11 ", 0) == 0);  // 9.5e18: position 11

  std::vector<std::string> local_reports;
  {
    LocalBackend local;
    REQUIRE(local.Launch(Printer("metric-lines", root + "/local")).ok());
    local_reports = Texts(RunToEnd(local));
    local.Shutdown();
  }
  CHECK(local_reports == expected);

  std::vector<std::string> k8s_reports;
  {
    FakeCluster cluster;
    KubernetesBackend k8s(cluster.Options(), "metric-lines");
    REQUIRE(k8s.Preflight().ok());
    REQUIRE(k8s.Launch(Printer("metric-lines", root + "/k8s")).ok());
    k8s_reports = Texts(RunToEnd(k8s));
    k8s.Shutdown();
  }
  CHECK(k8s_reports == expected);
}

}  // namespace
}  // namespace tune
