#include "tuner/components.h"

#include "schedulers/fifo_scheduler.h"
#include "search/random_sampler.h"

namespace tune {

Result<std::unique_ptr<Sampler>> MakeSampler(const ExperimentSpec& spec) {
  const std::string& algo = spec.search.algorithm;
  // Grid points are enumerated by the tuner; what is left is drawn at random.
  if (algo == "random" || algo == "grid") return std::unique_ptr<Sampler>(new RandomSampler(spec.search.seed));
  return Status::InvalidArgument(spec.source_path + ": search.algorithm: '" + algo + "' is not available in this build");
}

Result<std::unique_ptr<Scheduler>> MakeScheduler(const ExperimentSpec& spec, uint64_t seed) {
  (void)seed;
  const std::string& type = spec.scheduler.type;
  if (type == "fifo") return std::unique_ptr<Scheduler>(new FifoScheduler());
  return Status::InvalidArgument(spec.source_path + ": scheduler.type: '" + type + "' is not available in this build");
}

Result<std::unique_ptr<TrialBackend>> MakeBackend(const ExperimentSpec& spec, const std::string& backend_type) {
  std::string type = backend_type.empty() ? spec.backend.type : backend_type;
  return Status::InvalidArgument(spec.source_path + ": backend.type: '" + type + "' is not available in this build");
}

}  // namespace tune
