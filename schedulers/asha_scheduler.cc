#include "schedulers/asha_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "schedulers/numpy_stats.h"

namespace tune {
namespace {

// SplitMix64: a well-mixed 64-bit hash, so that brackets drawn for
// consecutive trial numbers are independent.
uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The time_attr value a milestone is reached at (milestones are fractional
// when reduction_factor is).
int64_t MilestoneStep(double milestone) {
  return static_cast<int64_t>(std::ceil(milestone));
}

}  // namespace

Status ValidateAshaOptions(const AshaOptions& o) {
  if (o.max_t <= 0) return Status::InvalidArgument("scheduler.max_t: expected a positive number");
  if (o.grace_period <= 0) {
    return Status::InvalidArgument("scheduler.grace_period: expected a positive number");
  }
  if (o.grace_period > o.max_t) {
    return Status::InvalidArgument("scheduler.grace_period: expected at most max_t (" +
                                   std::to_string(o.max_t) + ")");
  }
  if (!(o.reduction_factor > 1)) {
    return Status::InvalidArgument("scheduler.reduction_factor: expected a number above 1");
  }
  if (o.brackets <= 0) return Status::InvalidArgument("scheduler.brackets: expected at least 1");
  return Status::Ok();
}

AshaScheduler::AshaScheduler(AshaOptions options)
    : options_(std::move(options)), sign_(options_.maximize ? 1.0 : -1.0) {
  TUNE_CHECK(ValidateAshaOptions(options_).ok());
  const double rf = options_.reduction_factor;
  const double min_t = static_cast<double>(options_.grace_period);
  const double ratio = static_cast<double>(options_.max_t) / min_t;
  for (int s = 0; s < options_.brackets; ++s) {
    // Ray: MAX_RUNGS = int(log(max_t / min_t) / log(rf) - s + 1), truncated
    // toward zero; a bracket may have no rung at all.
    const double exact = std::log(ratio) / std::log(rf) - s + 1;
    const int64_t num_rungs = static_cast<int64_t>(exact);
    Bracket bracket;
    for (int64_t k = num_rungs - 1; k >= 0; --k) {
      Rung rung;
      rung.milestone = min_t * std::pow(rf, static_cast<double>(k + s));
      bracket.rungs.push_back(std::move(rung));
    }
    brackets_.push_back(std::move(bracket));
  }
}

std::vector<double> AshaScheduler::BracketProbabilities() const {
  size_t max_size = 0;
  for (const Bracket& b : brackets_) max_size = std::max(max_size, b.rungs.size());
  std::vector<double> probs;
  double total = 0;
  for (const Bracket& b : brackets_) {
    probs.push_back(std::exp(static_cast<double>(b.rungs.size()) -
                             static_cast<double>(max_size)));
    total += probs.back();
  }
  for (double& p : probs) p /= total;
  return probs;
}

int AshaScheduler::DrawBracket(const Trial& trial) const {
  if (options_.choose_bracket) {
    int s = options_.choose_bracket(trial);
    TUNE_CHECK(s >= 0 && s < num_brackets());
    return s;
  }
  if (brackets_.size() == 1) return 0;
  const uint64_t h =
      SplitMix64(SplitMix64(options_.seed) ^ static_cast<uint64_t>(trial.number));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  const std::vector<double> probs = BracketProbabilities();
  double acc = 0;
  for (size_t s = 0; s < probs.size(); ++s) {
    acc += probs[s];
    if (u < acc) return static_cast<int>(s);
  }
  return static_cast<int>(probs.size()) - 1;
}

void AshaScheduler::OnTrialAdd(const Trial& trial) { InfoFor(trial); }

AshaScheduler::TrialInfo& AshaScheduler::InfoFor(const Trial& trial) {
  auto it = trials_.find(trial.id);
  if (it == trials_.end()) {
    TrialInfo info;
    info.bracket = DrawBracket(trial);
    it = trials_.emplace(trial.id, info).first;
  }
  return it->second;
}

double AshaScheduler::CutoffOf(const Rung& rung) const {
  // np.nanpercentile(recorded, (1 - 1/rf) * 100), on the kept sorted copy.
  return internal::SortedPercentile(rung.sorted, (1 - 1 / options_.reduction_factor) * 100);
}

bool AshaScheduler::BracketOnResult(int s, TrialId id, int64_t step, double reward,
                                    Decision* decision) {
  Bracket& bracket = brackets_[s];
  const double t = static_cast<double>(step);
  for (Rung& rung : bracket.rungs) {  // descending milestones
    const bool recorded = rung.recorded.count(id) > 0;
    if (t >= rung.milestone && recorded && !options_.stop_last_trials) break;
    if (t < rung.milestone || recorded) continue;
    bool stop = false;
    if (!rung.recorded.empty()) {
      const double cutoff = CutoffOf(rung);
      // A NaN cutoff (all recorded rewards NaN) or a NaN reward never stops.
      if (reward < cutoff) {
        stop = true;
        if (decision != nullptr) {
          decision->action = Action::kStop;
          decision->rung = MilestoneStep(rung.milestone);
          char buf[200];
          std::snprintf(buf, sizeof(buf),
                        "objective %.6g worse than rung %lld cutoff %.6g (bracket %d, %zu "
                        "recorded)",
                        sign_ * reward, static_cast<long long>(MilestoneStep(rung.milestone)),
                        sign_ * cutoff, s, rung.recorded.size());
          decision->reason = buf;
        }
      }
    }
    rung.recorded[id] = reward;
    if (!std::isnan(reward)) {
      rung.sorted.insert(std::upper_bound(rung.sorted.begin(), rung.sorted.end(), reward),
                         reward);
    }
    return stop;
  }
  return false;
}

Decision AshaScheduler::OnTrialResult(const Trial& trial, int64_t step, double objective) {
  TrialInfo& info = InfoFor(trial);
  if (info.stopped) {
    // Ray drops results that arrive after a STOP: no state change.
    Decision d;
    d.action = Action::kStop;
    d.rung = info.stopped_rung;
    d.reason = "already stopped";
    return d;
  }
  info.last_report = std::make_pair(step, objective);
  Decision decision;
  if (step >= options_.max_t && options_.stop_last_trials) {
    decision.action = Action::kStop;
    decision.reason = options_.time_attr + " " + std::to_string(step) + " reached max_t " +
                      std::to_string(options_.max_t);
  } else {
    BracketOnResult(info.bracket, trial.id, step, sign_ * objective, &decision);
  }
  if (decision.action == Action::kStop) {
    info.stopped = true;
    info.stopped_rung = decision.rung;
    // Ray's controller calls on_trial_complete(trial.last_result) right
    // after a STOP, before any other result: do it now, so the state does
    // not depend on when the tuner later reports the process's exit.
    info.completed = true;
    BracketOnResult(info.bracket, trial.id, step, sign_ * objective, nullptr);
  }
  return decision;
}

void AshaScheduler::OnTrialComplete(const Trial& trial) {
  TrialInfo& info = InfoFor(trial);
  if (info.completed) return;
  info.completed = true;
  std::optional<std::pair<int64_t, double>> last = info.last_report;
  if (!last && !trial.intermediate.empty()) {
    last = *trial.intermediate.rbegin();  // reports we never saw (e.g. after replay)
  }
  // Ray's on_trial_complete records trial.last_result in the bracket (for a
  // trial we stopped, that happened in OnTrialResult already).
  if (last) BracketOnResult(info.bracket, trial.id, last->first,
                            sign_ * last->second, nullptr);
  info.stopped = true;  // Ray forgets the trial; later reports change nothing
}

std::vector<double> AshaScheduler::Milestones(int s) const {
  std::vector<double> out;
  for (auto it = brackets_[s].rungs.rbegin(); it != brackets_[s].rungs.rend(); ++it) {
    out.push_back(it->milestone);
  }
  return out;
}

std::optional<int> AshaScheduler::BracketOf(TrialId id) const {
  auto it = trials_.find(id);
  if (it == trials_.end()) return std::nullopt;
  return it->second.bracket;
}

std::optional<double> AshaScheduler::Cutoff(int s, double milestone) const {
  for (const Rung& rung : brackets_[s].rungs) {
    if (rung.milestone == milestone) {
      if (rung.recorded.empty()) return std::nullopt;
      return CutoffOf(rung);
    }
  }
  return std::nullopt;
}

std::vector<RungBracket> AshaScheduler::Brackets() const {
  const std::vector<double> p = BracketProbabilities();
  std::vector<RungBracket> out;
  for (int b = 0; b < num_brackets(); ++b) out.push_back({Milestones(b), p[b]});
  return out;
}

}  // namespace tune
