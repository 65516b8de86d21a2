#include "schedulers/median_stopping_rule.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "schedulers/numpy_stats.h"

namespace tune {

Status ValidateMedianOptions(const MedianOptions& o) {
  if (!(o.grace_period >= 0)) {
    return Status::InvalidArgument("scheduler.grace_period: expected a number >= 0");
  }
  if (o.min_samples_required < 1) {
    return Status::InvalidArgument("scheduler.min_samples_required: expected at least 1");
  }
  return Status::Ok();
}

MedianStoppingRule::MedianStoppingRule(MedianOptions options) : options_(std::move(options)) {
  TUNE_CHECK(ValidateMedianOptions(options_).ok());
}

double MedianStoppingRule::RunningMean(const TrialRecord& record, int64_t t) const {
  std::vector<double> scoped;
  for (const auto& [time, value] : record.results) {
    const double time_d = static_cast<double>(time);
    if (options_.grace_period <= time_d && time <= t) scoped.push_back(value);
  }
  if (scoped.empty()) return std::numeric_limits<double>::quiet_NaN();
  return internal::Mean(scoped);
}

double MedianStoppingRule::BestResult(const TrialRecord& record) const {
  // Python's min()/max() over the list: keep the first, replace it only by a
  // strictly better value (so a leading NaN sticks).
  double best = record.results.front().second;
  for (size_t i = 1; i < record.results.size(); ++i) {
    const double v = record.results[i].second;
    if (options_.maximize ? v > best : v < best) best = v;
  }
  return best;
}

Decision MedianStoppingRule::OnTrialResult(const Trial& trial, int64_t step, double objective) {
  auto [it, inserted] = trials_.try_emplace(trial.id);
  TrialRecord& record = it->second;
  if (record.stopped) {
    if (options_.hard_stop) {
      // Ray drops results after a STOP: no state change.
      Decision d;
      d.action = Action::kStop;
      d.reason = "already stopped";
      return d;
    }
    record.last_report = std::make_pair(step, objective);
    return Decision::Continue();  // paused trials fall back to FIFO
  }
  if (record.results.empty()) order_.push_back(trial.id);
  record.results.emplace_back(step, objective);
  record.last_report = std::make_pair(step, objective);

  if (static_cast<double>(step) < options_.grace_period) return Decision::Continue();

  std::vector<double> running_means;
  for (TrialId other : order_) {
    if (other == trial.id) continue;
    const TrialRecord& r = trials_.at(other);
    if (r.results.back().first < step) continue;
    const double mean = RunningMean(r, step);
    if (std::isfinite(mean)) running_means.push_back(mean);
  }
  if (static_cast<int>(running_means.size()) < options_.min_samples_required) {
    return Decision::Continue();
  }
  const double median = internal::Median(running_means);
  const double best = BestResult(record);
  // Python's compare_op(median, best): `median` unless `best` is strictly better.
  const double chosen = (options_.maximize ? best > median : best < median) ? best : median;
  if (!(chosen != best)) return Decision::Continue();

  record.stopped = true;
  if (options_.hard_stop) {
    // Ray's controller calls on_trial_complete(trial.last_result) right
    // after a STOP: the stopping report counts twice from now on.
    record.completed = true;
    record.results.emplace_back(step, objective);
  }
  Decision d;
  d.action = options_.hard_stop ? Action::kStop : Action::kPause;
  d.rung = step;
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "best %.6g worse than median %.6g of %zu running averages at %s %lld", best,
                median, running_means.size(), options_.time_attr.c_str(),
                static_cast<long long>(step));
  d.reason = buf;
  return d;
}

void MedianStoppingRule::OnTrialComplete(const Trial& trial) {
  auto [it, inserted] = trials_.try_emplace(trial.id);
  TrialRecord& record = it->second;
  if (record.completed) return;
  record.completed = true;
  std::optional<std::pair<int64_t, double>> last = record.last_report;
  if (!last && !trial.intermediate.empty()) last = *trial.intermediate.rbegin();
  if (!last) return;
  if (record.results.empty()) order_.push_back(trial.id);
  record.results.push_back(*last);
  record.stopped = true;  // Ray gets no result for a finished trial
}

}  // namespace tune
