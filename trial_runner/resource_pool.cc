#include "trial_runner/resource_pool.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tune {
namespace {

// Sums of fractional slots (0.1 * 10) must compare equal to whole ones.
constexpr double kEpsilon = 1e-9;

std::string FormatNumber(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

ResourcePool::ResourcePool(double cpu_slots, std::vector<int> gpu_ids)
    : total_cpu_(cpu_slots),
      free_cpu_(cpu_slots),
      total_gpus_(gpu_ids.size()),
      free_gpu_ids_(std::move(gpu_ids)) {
  std::sort(free_gpu_ids_.begin(), free_gpu_ids_.end());
}

Status ResourcePool::CheckFeasible(const ResourceRequest& r) const {
  if (r.workers < 1) {
    return Status::InvalidArgument("a trial needs at least 1 worker, got " +
                                   std::to_string(r.workers));
  }
  if (r.cpu_per_worker < 0 || r.gpu_per_worker < 0) {
    return Status::InvalidArgument("resources per worker must not be negative (cpu " +
                                   FormatNumber(r.cpu_per_worker) + ", gpu " +
                                   std::to_string(r.gpu_per_worker) + ")");
  }
  double cpu = r.cpu_per_worker * r.workers;
  if (cpu > total_cpu_ + kEpsilon) {
    return Status::InvalidArgument("a trial needs " + FormatNumber(cpu) + " CPU slots (" +
                                   std::to_string(r.workers) + " workers x " +
                                   FormatNumber(r.cpu_per_worker) + ") but the machine has " +
                                   FormatNumber(total_cpu_));
  }
  size_t gpus = static_cast<size_t>(r.gpu_per_worker) * static_cast<size_t>(r.workers);
  if (gpus > total_gpus_) {
    return Status::InvalidArgument("a trial needs " + std::to_string(gpus) + " GPUs (" +
                                   std::to_string(r.workers) + " workers x " +
                                   std::to_string(r.gpu_per_worker) + ") but the machine has " +
                                   std::to_string(total_gpus_));
  }
  return Status::Ok();
}

bool ResourcePool::CanAcquire(const ResourceRequest& r) const {
  if (!CheckFeasible(r).ok()) return false;
  size_t gpus = static_cast<size_t>(r.gpu_per_worker) * static_cast<size_t>(r.workers);
  return r.cpu_per_worker * r.workers <= free_cpu_ + kEpsilon && gpus <= free_gpu_ids_.size();
}

int ResourcePool::MaxConcurrent(const ResourceRequest& r) const {
  if (!CheckFeasible(r).ok()) return 0;
  int64_t n = -1;
  const double cpu = r.cpu_per_worker * r.workers;
  if (cpu > kEpsilon) n = static_cast<int64_t>((total_cpu_ + kEpsilon) / cpu);
  const size_t gpus = static_cast<size_t>(r.gpu_per_worker) * static_cast<size_t>(r.workers);
  if (gpus > 0) {
    const int64_t by_gpu = static_cast<int64_t>(total_gpus_ / gpus);
    n = n < 0 ? by_gpu : std::min(n, by_gpu);
  }
  return static_cast<int>(std::min<int64_t>(n, 1 << 30));
}

Result<ResourceGrant> ResourcePool::Acquire(const ResourceRequest& r) {
  TUNE_RETURN_IF_ERROR(CheckFeasible(r));
  if (!CanAcquire(r)) {
    return Status::Unavailable(
        "not enough free resources: need " + FormatNumber(r.cpu_per_worker * r.workers) +
        " CPU slots and " + std::to_string(r.gpu_per_worker * r.workers) + " GPUs, free " +
        FormatNumber(free_cpu_) + " and " + std::to_string(free_gpu_ids_.size()));
  }
  ResourceGrant grant;
  grant.cpu = r.cpu_per_worker * r.workers;
  free_cpu_ -= grant.cpu;
  if (free_cpu_ < kEpsilon) free_cpu_ = 0;
  grant.gpus.resize(r.workers);
  for (int w = 0; w < r.workers; ++w) {
    for (int g = 0; g < r.gpu_per_worker; ++g) {
      grant.gpus[w].push_back(free_gpu_ids_.front());
      free_gpu_ids_.erase(free_gpu_ids_.begin());
    }
  }
  return grant;
}

void ResourcePool::Release(const ResourceGrant& grant) {
  free_cpu_ = std::min(total_cpu_, free_cpu_ + grant.cpu);
  if (total_cpu_ - free_cpu_ < kEpsilon) free_cpu_ = total_cpu_;
  for (const auto& ids : grant.gpus) {
    free_gpu_ids_.insert(free_gpu_ids_.end(), ids.begin(), ids.end());
  }
  std::sort(free_gpu_ids_.begin(), free_gpu_ids_.end());
}

std::vector<int> DetectGpus() {
  std::vector<int> ids;
  // popen runs /bin/sh; "command -v" keeps a missing tool silent.
  FILE* p = ::popen("command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null", "r");
  if (p == nullptr) return ids;
  char line[512];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    int id = -1;
    if (std::sscanf(line, "GPU %d:", &id) == 1 && id >= 0) ids.push_back(id);
  }
  ::pclose(p);
  return ids;
}

}  // namespace tune
