#include "tuner/capacity.h"

#include <algorithm>
#include <sstream>

namespace tune {
namespace {

std::string Number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

LaunchSpec AttemptShape(const ExperimentSpec& spec) {
  LaunchSpec shape;
  shape.workers = spec.trial.workers;
  shape.cpu_per_worker = spec.trial.resources_per_worker.cpu;
  shape.gpu_per_worker = spec.trial.resources_per_worker.gpu;
  return shape;
}

std::string DescribeCapacity(const ExperimentSpec& spec, const BackendCapacity& capacity) {
  const std::vector<int>& gpus = capacity.gpu_ids;
  std::ostringstream out;
  out << "  GPUs        ";
  if (gpus.empty()) {
    out << (spec.backend.gpus.empty() ? "none detected (nvidia-smi is missing or lists none)" : "none");
  } else {
    out << gpus.size() << " (";
    for (size_t i = 0; i < gpus.size(); ++i) out << (i ? ", " : "") << gpus[i];
    out << "), " << (spec.backend.gpus.empty() ? "detected with nvidia-smi" : "from backend.gpus");
  }
  out << "\n";

  const LaunchSpec shape = AttemptShape(spec);
  const int fit = capacity.fit;
  const int limit = spec.limits.max_concurrent_trials;
  out << "  capacity    ";
  if (fit < 0) {
    out << "no resource limit (a trial asks for no CPU slot or GPU)";
  } else {
    out << fit << " trial" << (fit == 1 ? "" : "s") << " at once: each takes " << shape.workers << " worker(s) x "
        << Number(shape.cpu_per_worker) << " CPU slot(s)";
    if (shape.gpu_per_worker > 0) out << " and " << shape.gpu_per_worker << " GPU(s)";
    out << " of " << Number(capacity.cpu_slots) << " CPU slots and " << gpus.size() << " GPUs";
  }
  out << "; max_concurrent_trials " << limit;
  const int runs = fit < 0 ? limit : std::min(fit, limit);
  if (runs < limit) out << " (" << runs << " run, the rest wait)";
  out << "\n";
  return out.str();
}

}  // namespace tune
