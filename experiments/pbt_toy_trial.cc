// pbt_toy_trial: a deterministic, checkpointing toy whose best learning rate
// moves during training; the workload of the Population Based Training
// experiments (experiments/pbt-toy*.json), tests and benchmark
// (bench/pbt_bench.sh, bench/pbt_ray.py).
//
//   pbt_toy_trial [--lr F] [--some-other-factor N] [--max-steps N]
//                 [--checkpoint-every K] [--sleep-ms N] [--seed N]
//                 [--resume-from DIR] [--checkpoint-dir DIR]
//                 [--fail-at-step S] [--done-at F]
//
// The problem is Ray Tune's `pbt_function` example
// (python/ray/tune/examples/pbt_function.py, function pbt_function), written
// anew here with the same constants: an accuracy starts at 0 and grows
// fastest when lr is near optimal_lr, a triangle wave of the accuracy itself
// (0.001 at accuracy 0, 0.01 at the midpoint 100, 0.001 again at 200, clamped
// to [0.001, 0.01]). Each step s = 1, 2, ...:
//
//   q = max(lr, optimal_lr) / min(lr, optimal_lr)
//   if q < 3:            acc += u / q
//   else if lr > optimal_lr: acc -= (q - 3) * u
//   acc = max(0, acc + 2 * n)
//
// with u uniform in [0, 1) and n standard normal. A fixed lr cannot follow
// the wave, so the accuracy stalls; a schedule (PBT's) can. As in Ray's
// example the trial ends once acc > --done-at (default 200, twice the
// midpoint; 0 turns it off), else after --max-steps (default 300).
// --some-other-factor is accepted and, as in Ray's example, has no effect.
//
// Noise: unlike Ray's example (Python's global RNGs), u and n are pure
// functions of (seed, lr, step): a counter-based generator (SplitMix64's
// mixer) keyed by the checkpointed seed and the bits of lr. So a run
// continued from a checkpoint equals the uninterrupted run, and a trial that
// continues a donor's checkpoint with another lr (PBT's exploit) draws its
// own noise. bench/pbt_ray.py implements the same formulas bit for bit.
//
// Checkpoints (docs/architecture.md, "Checkpoints"): after step s, when
// s % --checkpoint-every == 0 (default 1), the state {step, acc, seed, lr} is
// written to `<dir>/checkpoint-<s>/state.json`, where <dir> is
// --checkpoint-dir, else $TUNE_TRIAL_DIR, else the current directory: the
// folder is written under a temporary name and renamed, so a
// `checkpoint-<s>` folder is always complete. Then all but the newest two
// checkpoint-* folders are deleted. The checkpoint of step s is written
// before step s is printed, so a trial stopped after a report has a
// checkpoint of that report's step whenever one was due.
//
// Resuming: --resume-from DIR (an empty value means none), else
// $TUNE_RESUME_FROM when set and not empty, names a checkpoint folder; the
// run restores its state and continues with step s + 1, where s is the
// checkpoint's step. --lr may differ from the checkpoint's (PBT). A
// checkpoint that cannot be read is an error (exit 2).
//
// Output, flushed per line on stdout: `step=<s> score=<acc> lr=<lr>`, the
// score being the accuracy (maximise it). Diagnostics go to stderr.
//
// --fail-at-step S: at step S, after its checkpoint (always written at S)
// and its report, exit 1 -- unless the run resumed from a checkpoint of
// step S or later, so that a retry that continues from the newest
// checkpoint succeeds. --sleep-ms N sleeps N ms per step (default 0).
// Exit codes: 0 done, 1 the asked failure, 2 bad usage or checkpoint.
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "pbt_toy_trial: %s\n", msg.c_str());
  std::exit(2);
}

double ParseDouble(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end) Die("bad value for " + flag + ": '" + v + "'");
  return d;
}

long ParseLong(const std::string& flag, const std::string& v) {
  double d = ParseDouble(flag, v);
  if (d != std::floor(d)) Die("expected an integer for " + flag + ", got '" + v + "'");
  return static_cast<long>(d);
}

// SplitMix64's output function (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", 2014).
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// The j-th uniform in [0, 1) of step `step` under `key`.
double Uniform(uint64_t key, uint64_t step, uint64_t j) {
  return static_cast<double>(Mix64(key ^ Mix64(step * 4 + j)) >> 11) * 0x1.0p-53;
}

struct State {
  long step = 0;
  double acc = 0.0;
  uint64_t seed = 0;
  double lr = 0.0;
};

// The value of `"key": <number>` in a flat JSON object written by
// WriteCheckpoint.
bool JsonNumber(const std::string& text, const std::string& key, std::string* out) {
  size_t p = text.find("\"" + key + "\"");
  if (p == std::string::npos) return false;
  p = text.find(':', p);
  if (p == std::string::npos) return false;
  ++p;
  while (p < text.size() && text[p] == ' ') ++p;
  size_t e = text.find_first_of(",}\n", p);
  if (e == std::string::npos) return false;
  *out = text.substr(p, e - p);
  while (!out->empty() && out->back() == ' ') out->pop_back();
  return !out->empty();
}

State ReadCheckpoint(const std::string& dir) {
  std::string path = dir + "/state.json";
  std::ifstream in(path);
  if (!in) Die("cannot read the checkpoint " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str(), v;
  State s;
  if (!JsonNumber(text, "step", &v)) Die(path + ": expected a \"step\"");
  s.step = ParseLong(path + " step", v);
  if (!JsonNumber(text, "acc", &v)) Die(path + ": expected an \"acc\"");
  s.acc = ParseDouble(path + " acc", v);
  if (!JsonNumber(text, "seed", &v)) Die(path + ": expected a \"seed\"");
  s.seed = std::strtoull(v.c_str(), nullptr, 10);
  if (JsonNumber(text, "lr", &v)) s.lr = ParseDouble(path + " lr", v);
  if (s.step < 0) Die(path + ": expected step >= 0");
  return s;
}

// checkpoint-<n> folders in `dir`, as (n, path).
std::vector<std::pair<long, fs::path>> Checkpoints(const fs::path& dir) {
  std::vector<std::pair<long, fs::path>> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("checkpoint-", 0) != 0) continue;
    std::string num = name.substr(11);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) continue;
    out.emplace_back(std::stol(num), it->path());
  }
  return out;
}

void WriteCheckpoint(const fs::path& dir, const State& s) {
  fs::path final_dir = dir / ("checkpoint-" + std::to_string(s.step));
  fs::path tmp = dir / (".tmp-checkpoint-" + std::to_string(s.step) + "-" + std::to_string(getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) Die("cannot create " + tmp.string() + ": " + ec.message());
  {
    std::ofstream out(tmp / "state.json");
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"step\": %ld, \"acc\": %.17g, \"seed\": %llu, \"lr\": %.17g}\n", s.step,
                  s.acc, static_cast<unsigned long long>(s.seed), s.lr);
    out << buf;
    out.flush();
    if (!out) Die("cannot write " + (tmp / "state.json").string());
  }
  fs::remove_all(final_dir, ec);  // a rerun of the same step replaces it
  fs::rename(tmp, final_dir, ec);
  if (ec) Die("cannot rename " + tmp.string() + " to " + final_dir.string() + ": " + ec.message());
  // Keep the newest two, deleting older ones only now that the new one exists.
  auto all = Checkpoints(dir);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 2; i < all.size(); ++i) fs::remove_all(all[i].second, ec);
}

}  // namespace

int main(int argc, char** argv) {
  double lr = 1e-4, done_at = 200.0;
  long max_steps = 300, checkpoint_every = 1, sleep_ms = 0, fail_at = -1;
  uint64_t seed = 0;
  std::string resume_from, checkpoint_dir;
  bool resume_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], value;
    bool inline_value = false;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= argc) Die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--lr") lr = ParseDouble(a, next());
    else if (a == "--some-other-factor") (void)ParseDouble(a, next());
    else if (a == "--max-steps") max_steps = ParseLong(a, next());
    else if (a == "--checkpoint-every") checkpoint_every = ParseLong(a, next());
    else if (a == "--sleep-ms") sleep_ms = ParseLong(a, next());
    else if (a == "--seed") seed = static_cast<uint64_t>(ParseLong(a, next()));
    else if (a == "--resume-from") resume_from = next(), resume_given = true;
    else if (a == "--checkpoint-dir") checkpoint_dir = next();
    else if (a == "--fail-at-step") fail_at = ParseLong(a, next());
    else if (a == "--done-at") done_at = ParseDouble(a, next());
    else Die("unknown argument " + a);
  }
  if (!(lr > 0) || max_steps <= 0 || checkpoint_every <= 0 || sleep_ms < 0)
    Die("expected --lr > 0, --max-steps > 0, --checkpoint-every > 0 and --sleep-ms >= 0");
  if (!resume_given) {
    const char* env = std::getenv("TUNE_RESUME_FROM");
    if (env) resume_from = env;
  }
  if (checkpoint_dir.empty()) {
    const char* env = std::getenv("TUNE_TRIAL_DIR");
    checkpoint_dir = env && *env ? env : ".";
  }

  State st;
  st.seed = seed;
  if (!resume_from.empty()) {
    st = ReadCheckpoint(resume_from);
    std::fprintf(stderr, "pbt_toy_trial: resuming from %s (step %ld, acc %g, lr %g -> %g)\n",
                 resume_from.c_str(), st.step, st.acc, st.lr, lr);
  }
  const long resumed_step = resume_from.empty() ? -1 : st.step;
  st.lr = lr;
  const uint64_t key = Mix64(st.seed ^ Mix64(DoubleBits(lr)));

  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Ray's constants (pbt_function): the triangle wave's midpoint, the
  // tolerated ratio to the optimal lr, the noise's standard deviation.
  const double midpoint = 100.0, q_tolerance = 3.0, noise_level = 2.0;
  for (long step = st.step + 1; step <= max_steps; ++step) {
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    double optimal_lr = st.acc < midpoint ? 0.01 * st.acc / midpoint : 0.01 - 0.01 * (st.acc - midpoint) / midpoint;
    optimal_lr = std::min(0.01, std::max(0.001, optimal_lr));
    double q_err = std::max(lr, optimal_lr) / std::min(lr, optimal_lr);
    double u = Uniform(key, static_cast<uint64_t>(step), 0);
    if (q_err < q_tolerance) st.acc += (1.0 / q_err) * u;
    else if (lr > optimal_lr) st.acc -= (q_err - q_tolerance) * u;
    // Box-Muller from two more uniforms (1 - u1 is in (0, 1]).
    double u1 = Uniform(key, static_cast<uint64_t>(step), 1), u2 = Uniform(key, static_cast<uint64_t>(step), 2);
    double n = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
    st.acc = std::max(0.0, st.acc + noise_level * n);
    st.step = step;

    bool fail_now = step == fail_at && resumed_step < fail_at;
    bool done = done_at > 0 && st.acc > done_at;
    if (step % checkpoint_every == 0 || fail_now) WriteCheckpoint(checkpoint_dir, st);
    std::printf("step=%ld score=%.12g lr=%.10g\n", step, st.acc, lr);
    if (fail_now) {
      std::fprintf(stderr, "pbt_toy_trial: failing at step %ld as asked\n", step);
      return 1;
    }
    if (done) break;
  }
  return 0;
}
