// ResourcePool: the CPU slots and GPUs of this machine, shared by local
// trial attempts (docs/experiment.md, `trial.resources_per_worker`).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tune {

struct ResourceRequest {
  int workers = 1;
  double cpu_per_worker = 1;  // fractional slots allowed
  int gpu_per_worker = 0;
};

// What one attempt holds; give it back with ResourcePool::Release.
struct ResourceGrant {
  double cpu = 0;
  std::vector<std::vector<int>> gpus;  // per worker (rank), device ids
};

// Not thread-safe: the owner (LocalBackend) serializes calls.
class ResourcePool {
 public:
  // `cpu_slots` > 0; `gpu_ids` are the devices handed out (may be empty).
  ResourcePool(double cpu_slots, std::vector<int> gpu_ids);

  // OK if the request fits on the whole machine at all; else
  // kInvalidArgument naming the numbers ("needs 4 CPU slots (2 workers x 2)
  // but the machine has 2"). Also rejects negative or zero-worker requests.
  Status CheckFeasible(const ResourceRequest& request) const;
  // True if a feasible request fits in what is free now.
  bool CanAcquire(const ResourceRequest& request) const;
  // Reserves the request. kInvalidArgument as CheckFeasible;
  // kUnavailable if it is feasible but does not fit now.
  Result<ResourceGrant> Acquire(const ResourceRequest& request);
  // How many copies of `request` the whole pool holds at once: 0 when it is
  // not feasible, -1 when it asks for nothing (no resource limits it).
  int MaxConcurrent(const ResourceRequest& request) const;
  // Returns a grant obtained from Acquire (once).
  void Release(const ResourceGrant& grant);

  double total_cpu() const { return total_cpu_; }
  double free_cpu() const { return free_cpu_; }
  size_t total_gpus() const { return total_gpus_; }
  size_t free_gpus() const { return free_gpu_ids_.size(); }

 private:
  double total_cpu_;
  double free_cpu_;
  size_t total_gpus_;
  std::vector<int> free_gpu_ids_;  // ascending
};

// GPU ids listed by `nvidia-smi -L` ("GPU 0: ..."), or none when the tool is
// absent or fails. Runs a short subprocess; call once at startup.
std::vector<int> DetectGpus();

}  // namespace tune
