// The Hugging Face example end to end: `tune run` on experiments/hf-trainer-
// asha.json and hf-trainer-pbt.json, whose trials are
// experiments/hf_trainer/train.py (Trainer + PEFT LoRA with
// tune_trial.hf.TuneCallback) on the real transformers, PEFT and torch of
// the cached environment scripts/hf-venv.sh makes, over the demo data and a
// tiny base that the demo scripts build. The experiments run as the
// repository has them, with their paths pointed at a temporary tree, the
// venv's python, and python/ of the source tree on PYTHONPATH.
//
// One ctest test for the binary (tests/e2e/CMakeLists.txt): the cases share
// the tree with the base model, which takes a while to make.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace {

using namespace tune::e2e;
using nlohmann::json;

const fs::path kSrc = TUNE_SOURCE_DIR;

// What every case needs, made once: the venv's python and a tree with
// data/ and models/tiny (scripts/make-demo-model.sh with 40 pretraining
// steps: a base that is only a starting point, as in lora_e2e_test).
struct Setup {
  TempDir dir{"hf_e2e"};
  std::string python;
};

const Setup& Shared() {
  static std::unique_ptr<Setup> s;
  if (s) return *s;
  auto made = std::make_unique<Setup>();
  Output venv = Sh(Quote((kSrc / "scripts/hf-venv.sh").string()));
  INFO(venv.out);
  REQUIRE(venv.code == 0);
  std::string py = venv.out;
  while (!py.empty() && (py.back() == '\n' || py.back() == '\r')) py.pop_back();
  py = py.substr(py.rfind('\n') == std::string::npos ? 0 : py.rfind('\n') + 1);
  REQUIRE(fs::exists(py));
  made->python = py;
  Output model = Sh("LORA_TRAIN=" + Quote(kBin + "/lora_train") + " " +
                    Quote((kSrc / "scripts/make-demo-model.sh").string()) + " --out " +
                    Quote((made->dir.path / "models/tiny").string()) + " --data " +
                    Quote((made->dir.path / "data").string()) + " --steps 40 --threads 1");
  INFO(model.out);
  REQUIRE(model.code == 0);
  s = std::move(made);
  return *s;
}

// The repository's experiment `file`, named `name`, run in `tree`: its
// command's python is the venv's, the script the source tree's, and its
// relative paths (models/, data/) point into `tree`.
json Experiment(const std::string& file, const std::string& name, const fs::path& tree) {
  const Setup& s = Shared();
  json spec = json::parse(std::ifstream(kSrc / "experiments" / file));
  spec["name"] = name;
  spec.erase("storage");
  json& cmd = spec["trial"]["command"];
  REQUIRE(cmd[0] == "python3");
  REQUIRE(cmd[1] == "experiments/hf_trainer/train.py");
  cmd[0] = s.python;
  cmd[1] = (kSrc / "experiments/hf_trainer/train.py").string();
  for (auto& arg : cmd) {
    const std::string a = arg;
    if (a.rfind("models/", 0) == 0 || a.rfind("data/", 0) == 0) arg = (s.dir.path / a).string();
  }
  spec["trial"]["working_dir"] = tree.string();
  REQUIRE(spec["trial"]["env"]["PYTHONPATH"] == "python");
  spec["trial"]["env"]["PYTHONPATH"] = (kSrc / "python").string();
  // torch leaves a temporary folder behind when a process is SIGKILLed (it
  // makes one at import, removed at exit): the trials' own, in the tree.
  fs::create_directories(tree / "tmp");
  spec["trial"]["env"]["TMPDIR"] = (tree / "tmp").string();
  return spec;
}

// Trial processes are found by the tree's model path on their command line.
std::string Needle() { return (Shared().dir.path / "models/tiny").string(); }

std::string Sql(const std::string& db, const std::string& sql) {
  Output o = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
  INFO(sql << "\n" << o.out);
  REQUIRE(o.code == 0);
  return o.out;
}

json TrialsJson(const std::string& db) {
  Output o = Sh(Tune("trials --db " + Quote(db) + " --format json"));
  INFO(o.out);
  REQUIRE(o.code == 0);
  return json::parse(o.out);
}

fs::path TrialDir(const fs::path& db_dir, const std::string& experiment, int number) {
  char name[32];
  std::snprintf(name, sizeof name, "trial_%04d", number);
  return db_dir / "tune_runs" / experiment / name;
}

// The steps of the metric lines (`step=N ...`) in a log, in order.
std::vector<long> PrintedSteps(const std::string& log) {
  static const std::regex kStep(R"((^|\n)step=(-?[0-9]+) )");
  std::vector<long> steps;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kStep); it != std::sregex_iterator(); ++it) {
    steps.push_back(std::stol((*it)[2]));
  }
  return steps;
}

// Waits until `sql` (one number) on `db` is at least `n`, at most `limit_s`.
bool WaitSql(const std::string& db, const std::string& sql, int n, int limit_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (std::chrono::steady_clock::now() < end) {
    Output c = Sh("sqlite3 " + Quote(db) + " " + Quote(sql));
    if (c.code == 0 && !c.out.empty() && std::isdigit(static_cast<unsigned char>(c.out[0])) && std::stoi(c.out) >= n)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// HF's linear schedule with warmup (transformers' get_linear_schedule_with_warmup).
double LinearWarmup(long step, long warmup, long total) {
  if (step < warmup) return double(step) / double(std::max(1L, warmup));
  return std::max(0.0, double(total - step) / double(std::max(1L, total - warmup)));
}

// `tune run` of `spec` into <dir>/t.db to the end: exit 0 and no trial
// process left; its wall time as a warning. The database's path.
std::string RunToEnd(const fs::path& dir, const json& spec, const std::string& what) {
  const fs::path spec_path = Write(dir, spec);
  const std::string db = (dir / "t.db").string();
  const auto t0 = std::chrono::steady_clock::now();
  Output out = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --quiet"));
  INFO(out.out);
  REQUIRE(out.code == 0);
  WARN(what << " run: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  CHECK(NoProcessLeft(Needle()));
  return db;
}

TEST_CASE("HF Trainer + PEFT with ASHA: pruned trials stop within an eval interval, nothing left running",
          "[e2e][hf]") {
  const Setup& s = Shared();
  TempDir run("hf_asha");
  json spec = Experiment("hf-trainer-asha.json", "hf-asha", run.path);
  const std::string db = RunToEnd(run.path, spec, "ASHA");

  const int eval_every = 10;
  const long max_t = spec["scheduler"]["max_t"];
  json rows = TrialsJson(db);
  REQUIRE(rows.size() == spec["limits"]["max_trials"].get<size_t>());
  int pruned = 0, completed = 0;
  for (const auto& r : rows) {
    const int number = r["number"];
    const std::string state = r["state"];
    const std::string log = Slurp(TrialDir(run.path, "hf-asha", number) / "rank_0.log");
    INFO("trial " << number << " " << state << "\n" << log);
    const std::vector<long> steps = PrintedSteps(log);
    REQUIRE(!steps.empty());
    if (state == "completed") {
      ++completed;
      CHECK(r["last_step"] == max_t);
      CHECK(std::isfinite(r["value"].get<double>()));
    } else {
      REQUIRE(state == "pruned");
      ++pruned;
      const long rung = r["pruned_rung"];
      const long last = *std::max_element(steps.begin(), steps.end());
      // The decision came on the eval report at the rung; the trial got
      // SIGTERM then and Trainer left its loop after the step in progress.
      CHECK(last >= rung);
      CHECK(last <= rung + eval_every);
      // It ended by itself, through Trainer's own end (the summary line is
      // printed after the loop), not by the SIGKILL after the grace.
      CHECK(log.find("train_runtime=") != std::string::npos);
      // No checkpoint after the decision (the callback skips the save).
      for (const auto& e : fs::directory_iterator(TrialDir(run.path, "hf-asha", number))) {
        const std::string n = e.path().filename().string();
        if (n.rfind("checkpoint-", 0) == 0) CHECK(std::stol(n.substr(11)) <= rung);
      }
    }
  }
  CHECK(pruned >= 1);
  CHECK(completed >= 1);
  (void)s;
}

TEST_CASE("HF Trainer + PEFT with PBT: an exploited trial continues from the donor's checkpoint at its new "
          "learning rate",
          "[e2e][hf]") {
  TempDir run("hf_pbt");
  json spec = Experiment("hf-trainer-pbt.json", "hf-pbt", run.path);
  const std::string db = RunToEnd(run.path, spec, "PBT");

  // max_steps of the command: the schedule's length.
  long total = 0;
  const json& cmd = spec["trial"]["command"];
  for (size_t i = 0; i + 1 < cmd.size(); ++i) {
    if (cmd[i] == "--max-steps") total = std::stol(cmd[i + 1].get<std::string>());
  }
  REQUIRE(total > 0);

  // Every exploit: the recipient's first optimizer step after it (step
  // donor_step + 1, the first report it printed at that step after the
  // exploit) used the new learning rate under the schedule at donor_step.
  const std::string rows = Sql(db,
                               "SELECT e.trial_id, e.donor_step, e.after_report_id, e.params_after FROM exploits e "
                               "ORDER BY e.id");
  std::istringstream lines(rows);
  std::string line;
  int checked = 0;
  while (std::getline(lines, line)) {
    // sqlite3's default separator is '|'; params_after is JSON without '|'.
    std::vector<std::string> f;
    size_t pos = 0;
    for (int i = 0; i < 3; ++i) {
      size_t bar = line.find('|', pos);
      f.push_back(line.substr(pos, bar - pos));
      pos = bar + 1;
    }
    f.push_back(line.substr(pos));
    const std::string trial_id = f[0];
    const long donor_step = std::stol(f[1]);
    const json after = json::parse(f[3]);
    INFO("exploit into trial row " << trial_id << " from donor step " << donor_step << ": " << f[3]);
    const std::string used =
        Sql(db, "SELECT m.value FROM reports r JOIN metrics m ON m.report_id = r.id WHERE r.trial_id = " + trial_id +
                    " AND r.id > " + f[2] + " AND r.carried_from IS NULL AND r.excluded IS NULL AND m.name = 'optimizer_lr' AND r.step = " +
                    std::to_string(donor_step + 1) + " ORDER BY r.id LIMIT 1");
    if (used.empty()) {
      // The run ended (max_t reached by others) before it trained a step.
      continue;
    }
    const double lr = after["learning_rate"].get<double>();
    const long warmup = after["warmup_steps"].get<long>();
    const double expected = lr * LinearWarmup(donor_step, warmup, total);
    CHECK(std::stod(used) == Approx(expected).epsilon(1e-9).margin(1e-15));
    // And its first report after the exploit is past the donor's step: it
    // continued from the checkpoint, not from step 0.
    const std::string first = Sql(db, "SELECT step FROM reports WHERE trial_id = " + trial_id + " AND id > " + f[2] +
                                          " AND carried_from IS NULL AND excluded IS NULL ORDER BY id LIMIT 1");
    CHECK(std::stol(first) == donor_step + 1);
    ++checked;
  }
  INFO(rows);
  CHECK(checked >= 1);
}

TEST_CASE("HF Trainer + PEFT: tune run killed with SIGKILL and resumed, trials continue from their checkpoints",
          "[e2e][hf]") {
  TempDir run("hf_kill");
  json spec = Experiment("hf-trainer-asha.json", "hf-kill", run.path);
  // Two trials side by side, nothing pruned: both are interrupted.
  spec.erase("scheduler");
  spec["limits"]["max_trials"] = 2;
  spec["limits"]["max_concurrent_trials"] = 2;
  const fs::path spec_path = Write(run.path, spec);
  const std::string db = (run.path / "t.db").string();
  const fs::path log = run.path / "run.log";
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = StartTune(spec_path, db, log);
  REQUIRE(pid > 0);
  if (!WaitSql(db, "SELECT count(*) FROM trials WHERE state = 'running' AND last_step >= 20", 1, 180)) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    FAIL(Slurp(log));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // The trials' supervisors end them when the tuner is gone.
  REQUIRE(NoProcessLeft(Needle()));
  const std::string interrupted =
      Sql(db, "SELECT group_concat(id || ':' || attempt || ':' || last_step) FROM trials WHERE state = 'running' "
              "AND last_step >= 10");
  REQUIRE(interrupted.size() > 1);

  Output resumed = Sh(Tune("run " + Quote(spec_path.string()) + " --db " + Quote(db) + " --resume --quiet"));
  INFO(Slurp(log) << resumed.out << interrupted);
  REQUIRE(resumed.code == 0);
  WARN("kill and resume: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                           << " s");
  CHECK(NoProcessLeft(Needle()));
  CHECK(Sql(db, "SELECT group_concat(state) FROM trials") == "completed,completed\n");

  std::string rest = interrupted.substr(0, interrupted.size() - 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? rest.size() : comma + 1;
    const std::string id = item.substr(0, item.find(':'));
    const std::string attempt = item.substr(item.find(':') + 1, item.rfind(':') - item.find(':') - 1);
    INFO("trial row " << id << " interrupted at attempt " << attempt << " (id:attempt:last_step " << item << ")");
    // The next attempt: carried reports up to its checkpoint (a multiple of
    // save_steps, 10), then its own from the step after it. A start from
    // scratch would print step 5 (the first logging step) first.
    const std::string next = "(SELECT min(attempt) FROM reports WHERE trial_id = " + id + " AND attempt > " +
                             attempt + ")";
    const long carried_to = std::stol(
        Sql(db, "SELECT coalesce(max(step), 0) FROM reports WHERE trial_id = " + id + " AND attempt = " + next +
                    " AND carried_from IS NOT NULL"));
    const long first_own = std::stol(Sql(db, "SELECT min(step) FROM reports WHERE trial_id = " + id +
                                                 " AND attempt = " + next + " AND carried_from IS NULL"));
    CHECK(carried_to >= 10);
    CHECK(carried_to % 10 == 0);
    CHECK(first_own > carried_to);
    CHECK(first_own <= carried_to + 5);
  }
}

}  // namespace
