#include "search/auto_sampler.h"

#include <utility>

#include "search/gp_sampler.h"
#include "search/nsga2_sampler.h"
#include "search/tpe_sampler.h"

namespace tune {

const char* AutoDelegateName(AutoDelegate d) {
  switch (d) {
    case AutoDelegate::kGp: return "gp";
    case AutoDelegate::kTpe: return "tpe";
    case AutoDelegate::kNsga2: return "nsga2";
  }
  return "?";
}

AutoSampler::AutoSampler(AutoSamplerOptions options) : options_(std::move(options)) {
  options_.gp.seed = options_.tpe.seed = options_.nsga2.seed = options_.seed;
  const bool multi = !options_.tpe.objectives_maximize.empty();
  if (multi) {
    if (options_.nsga2.maximize.empty()) options_.nsga2.maximize = options_.tpe.objectives_maximize;
    nsga2_ = std::make_unique<Nsga2Sampler>(options_.nsga2);
  } else {
    gp_ = std::make_unique<GpSampler>(options_.gp);
  }
  tpe_ = std::make_unique<TpeSampler>(options_.tpe);
}

AutoSampler::~AutoSampler() = default;

AutoDelegate AutoSampler::Choose(const History& history) const {
  // Optuna's AutoSampler counts completed trials only
  // (_determine_single_objective_sampler, _determine_multi_objective_sampler).
  int completed = 0;
  for (const Trial& t : history)
    if (t.state == TrialState::kCompleted) ++completed;
  const bool below = completed < options_.max_completed_for_gp;
  if (!options_.tpe.objectives_maximize.empty()) return below ? AutoDelegate::kTpe : AutoDelegate::kNsga2;
  if (options_.constrained) return AutoDelegate::kTpe;
  return below ? AutoDelegate::kGp : AutoDelegate::kTpe;
}

Sampler& AutoSampler::Delegate(const History& history) {
  switch (Choose(history)) {
    case AutoDelegate::kGp: return *gp_;
    case AutoDelegate::kNsga2: return *nsga2_;
    case AutoDelegate::kTpe: break;
  }
  return *tpe_;
}

SearchSpace AutoSampler::RelativeSpace(const SearchSpace& space, const History& history) {
  return Delegate(history).RelativeSpace(space, history);
}

ParamMap AutoSampler::SampleRelative(const SearchSpace& relative, const History& history) {
  return Delegate(history).SampleRelative(relative, history);
}

ParamValue AutoSampler::SampleIndependent(const std::string& name, const Distribution& dist,
                                          const History& history) {
  return Delegate(history).SampleIndependent(name, dist, history);
}

void AutoSampler::AfterTrial(const Trial& trial) {
  if (gp_) gp_->AfterTrial(trial);
  tpe_->AfterTrial(trial);
  if (nsga2_) nsga2_->AfterTrial(trial);
}

void AutoSampler::Reseed(uint64_t seed) {
  if (gp_) gp_->Reseed(seed);
  tpe_->Reseed(seed);
  if (nsga2_) nsga2_->Reseed(seed);
}

}  // namespace tune
