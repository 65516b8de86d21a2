#include "schedulers/pbt_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tune {
namespace {

std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Status ValidatePbtOptions(const PbtOptions& o) {
  if (o.max_t < 1) return Status::InvalidArgument("scheduler.max_t: expected an integer of at least 1");
  if (o.perturbation_interval < 1) {
    return Status::InvalidArgument("scheduler.perturbation_interval: expected an integer of at least 1");
  }
  if (o.burn_in_period < 0) {
    return Status::InvalidArgument("scheduler.burn_in_period: expected an integer of at least 0");
  }
  if (!(o.quantile_fraction >= 0 && o.quantile_fraction <= 0.5)) {
    return Status::InvalidArgument("scheduler.quantile_fraction: expected a number between 0 and 0.5");
  }
  if (!(o.resample_probability >= 0 && o.resample_probability <= 1)) {
    return Status::InvalidArgument("scheduler.resample_probability: expected a number between 0 and 1");
  }
  if (o.perturbation_factors.empty()) {
    return Status::InvalidArgument("scheduler.perturbation_factors: expected a non-empty list of numbers above 0");
  }
  for (double f : o.perturbation_factors) {
    if (!(std::isfinite(f) && f > 0)) {
      return Status::InvalidArgument("scheduler.perturbation_factors: expected numbers above 0, got " + Num(f));
    }
  }
  if (o.hyperparam_mutations.empty()) {
    return Status::InvalidArgument("scheduler.hyperparam_mutations: expected at least one parameter to mutate");
  }
  if (o.population < 0) return Status::InvalidArgument("scheduler: expected a population of at least 0");
  return Status::Ok();
}

PbtScheduler::PbtScheduler(PbtOptions options)
    : options_(std::move(options)), sign_(options_.maximize ? 1.0 : -1.0) {
  TUNE_CHECK(ValidatePbtOptions(options_).ok());
  // Ray: _next_perturbation_sync = max(perturbation_interval, burn_in_period).
  next_sync_ = std::max(options_.perturbation_interval, options_.burn_in_period);
}

PbtScheduler::TrialState& PbtScheduler::StateFor(const Trial& trial) {
  auto it = trials_.find(trial.id);
  if (it == trials_.end()) {
    TrialState s;
    s.number = trial.number;
    s.params = trial.params;
    it = trials_.emplace(trial.id, std::move(s)).first;
    order_.push_back(trial.id);
  }
  return it->second;
}

void PbtScheduler::OnTrialAdd(const Trial& trial) { StateFor(trial); }

pbt::QuantileSplit PbtScheduler::CurrentQuantiles() const {
  // Ray's _quantiles: trials with a last_score that are not finished, in
  // the order they were added.
  std::vector<pbt::Scored> scored;
  for (TrialId id : order_) {
    const TrialState& s = trials_.at(id);
    if (s.last_score && Live(s)) scored.push_back({id, *s.last_score});
  }
  return pbt::Quantiles(scored, options_.quantile_fraction);
}

std::optional<Exploit> PbtScheduler::ExploitFor(TrialId id, const pbt::QuantileSplit& q, std::string* reason) {
  if (std::find(q.lower.begin(), q.lower.end(), id) == q.lower.end() || q.upper.empty()) return std::nullopt;
  const TrialState& s = trials_.at(id);
  pbt::Draws draws(pbt::DrawKey(options_.seed, s.number, s.last_train_time, s.exploits));
  // Ray: trial_to_clone = random.choice(upper_quantile), then _explore of
  // its config.
  const TrialId donor = q.upper[draws.Index(q.upper.size())];
  const TrialState& d = trials_.at(donor);
  Exploit e;
  e.donor = donor;
  // Ray's _exploit restores the donor's last_checkpoint, saved at its last
  // check (_checkpoint_or_exploit, when it was in the upper quantile).
  e.donor_step = d.last_train_time;
  std::vector<std::string> ops;
  e.params = pbt::Explore(d.params, options_.hyperparam_mutations, options_.resample_probability,
                          options_.perturbation_factors, draws, &ops);
  if (reason) {
    std::string r = "bottom quantile at " + options_.time_attr + " " + std::to_string(s.last_train_time) +
                    " (objective " + Num(sign_ * *s.last_score) + "): exploit trial " +
                    std::to_string(d.number) + " (objective " + Num(sign_ * d.last_score.value_or(NAN)) + ")";
    for (size_t i = 0; i < ops.size(); ++i) r += (i == 0 ? "; " : ", ") + ops[i];
    *reason = r;
  }
  return e;
}

bool PbtScheduler::BarrierHolds(std::optional<TrialId> except) const {
  // Trials of the population not created yet start at 0 (Ray's PENDING
  // trials are live, with last_train_time 0).
  if (options_.population > 0 && static_cast<int>(trials_.size()) < options_.population) return true;
  for (const auto& [id, s] : trials_) {
    if (except && id == *except) continue;
    if (Live(s) && s.last_train_time < next_sync_) return true;
  }
  return false;
}

std::optional<Exploit> PbtScheduler::SyncPopulation(int64_t time, std::optional<TrialId> reporter,
                                                    std::string* reason) {
  const pbt::QuantileSplit q = CurrentQuantiles();
  std::optional<Exploit> own;
  // Ray perturbs upper, then the rest, then lower; the order changes nothing
  // here, as every draw has its own key.
  for (TrialId id : order_) {
    TrialState& s = trials_.at(id);
    s.last_perturbation_time = time;
    std::string why;
    std::optional<Exploit> e = ExploitFor(id, q, &why);
    if (reporter && id == *reporter) {
      own = std::move(e);
      if (own && reason) *reason = why;
    } else if (e) {
      pending_[id] = std::move(*e);
    }
  }
  int64_t furthest = 0;
  for (const auto& [id, s] : trials_) furthest = std::max(furthest, s.last_train_time);
  next_sync_ = std::max(next_sync_ + options_.perturbation_interval, furthest);
  return own;
}

Decision PbtScheduler::OnTrialResult(const Trial& trial, int64_t step, double objective) {
  TrialState& s = StateFor(trial);
  Decision d;
  if (s.completed) {
    d.action = Action::kStop;
    d.reason = "already stopped";
    return d;
  }
  s.params = trial.params;
  s.errored = false;      // a retry counts again
  pending_.erase(trial.id);  // it runs: an exploit decided while it was paused is void
  if (step >= options_.max_t) {
    s.completed = true;
    d.action = Action::kStop;
    d.reason = options_.time_attr + " " + std::to_string(step) + " reached max_t " + std::to_string(options_.max_t);
    MaybeReleaseBarrier();
    return d;
  }
  // Ray: burn-in first, then the interval since the last perturbation.
  if (step < options_.burn_in_period) return d;
  if (step - s.last_perturbation_time < options_.perturbation_interval) return d;
  // Ray's _save_trial_state.
  s.last_score = sign_ * objective;
  s.last_train_time = step;

  if (!options_.synch) {
    s.last_perturbation_time = step;
    const pbt::QuantileSplit q = CurrentQuantiles();
    const Action otherwise = waiting_ > 0 ? Action::kPause : Action::kContinue;
    s.without_exploit = otherwise;
    std::string why;
    if (std::optional<Exploit> e = ExploitFor(trial.id, q, &why)) {
      d.action = Action::kPause;
      d.exploit = std::move(e);
      d.reason = why;
      return d;
    }
    d.action = otherwise;
    if (otherwise == Action::kPause) {
      d.reason = "paused at " + options_.time_attr + " " + std::to_string(step) + ": " +
                 std::to_string(waiting_) + " trial(s) wait for a slot";
    }
    return d;
  }

  // Synchronous mode: every trial at its interval pauses.
  s.without_exploit = Action::kPause;
  d.action = Action::kPause;
  if (BarrierHolds(trial.id)) {
    if (step < next_sync_) {
      // Ray pauses it too, and choose_trial_to_run resumes it at once (it is
      // short of the barrier): here it simply goes on.
      d.action = Action::kContinue;
      return d;
    }
    d.reason = "waiting for the population to reach " + options_.time_attr + " " + std::to_string(next_sync_);
    return d;
  }
  std::string why;
  d.exploit = SyncPopulation(step, trial.id, &why);
  d.reason = d.exploit ? why : "population perturbed at " + options_.time_attr + " " + std::to_string(step);
  return d;
}

void PbtScheduler::MaybeReleaseBarrier() {
  if (!options_.synch || BarrierHolds(std::nullopt)) return;
  int64_t time = 0;
  bool any = false;
  for (const auto& [id, s] : trials_) {
    if (!Live(s)) continue;
    any = true;
    time = std::max(time, s.last_train_time);
  }
  if (any) SyncPopulation(time, std::nullopt, nullptr);
}

void PbtScheduler::OnTrialComplete(const Trial& trial) {
  TrialState& s = StateFor(trial);
  s.completed = true;
  pending_.erase(trial.id);
  MaybeReleaseBarrier();
}

void PbtScheduler::OnTrialError(const Trial& trial) {
  TrialState& s = StateFor(trial);
  if (s.completed) return;
  s.errored = true;
  pending_.erase(trial.id);
  MaybeReleaseBarrier();
}

void PbtScheduler::OnTrialExploited(const Trial& recipient, const Trial& donor, int64_t donor_step) {
  TrialState& r = StateFor(recipient);
  const TrialState& d = StateFor(donor);
  r.params = recipient.params;
  // Ray's _exploit: "Transfer over the last perturbation time as well".
  r.last_perturbation_time = d.last_perturbation_time;
  // The recipient continues from the donor's checkpoint at donor_step.
  r.last_train_time = donor_step;
  ++r.exploits;
  pending_.erase(recipient.id);
}

Action PbtScheduler::OnExploitSkipped(const Trial& trial) {
  pending_.erase(trial.id);
  auto it = trials_.find(trial.id);
  if (options_.synch || it == trials_.end()) return options_.synch ? Action::kPause : Action::kContinue;
  return it->second.without_exploit;
}

bool PbtScheduler::MayResume(const Trial& paused) {
  if (!options_.synch) return true;
  auto it = trials_.find(paused.id);
  // Ray's choose_trial_to_run in synch mode: only trials short of the barrier.
  return it == trials_.end() || it->second.last_train_time < next_sync_;
}

std::vector<std::pair<TrialId, Exploit>> PbtScheduler::TakeExploits() {
  std::vector<std::pair<TrialId, Exploit>> out(pending_.begin(), pending_.end());
  pending_.clear();
  return out;
}

std::optional<std::pair<int64_t, int64_t>> PbtScheduler::CheckTimes(TrialId id) const {
  auto it = trials_.find(id);
  if (it == trials_.end()) return std::nullopt;
  return std::make_pair(it->second.last_train_time, it->second.last_perturbation_time);
}

}  // namespace tune
