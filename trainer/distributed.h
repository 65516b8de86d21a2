// Data-parallel process group for lora_train, with torchrun's rendezvous:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (LOCAL_RANK picks the GPU, see
// trainer/device.h). Rank 0 hosts a c10d TCPStore; the ranks form a
// ProcessGroupGloo (CPU memory) or, on GPUs, a ProcessGroupNCCL (GPU memory).
// With WORLD_SIZE unset or 1 no group is made and the collectives are no-ops.
//
// Every collective waits at most `timeout_s`: a rank that died or hangs makes
// the others fail with a message naming the operation, instead of hanging.
// Not thread-safe: the training loop owns it.
#pragma once

#include <memory>
#include <string>

#include <torch/torch.h>

#include "core/status.h"

namespace tune {

class Distributed {
 public:
  // backend: "auto" (NCCL when `device` is a GPU, else Gloo), "gloo" or
  // "nccl" (needs a CUDA build and a GPU `device`). InvalidArgument on bad
  // values; Unavailable when the rendezvous does not complete within
  // timeout_s.
  static Result<std::unique_ptr<Distributed>> FromEnv(const std::string& backend, int timeout_s,
                                                      torch::Device device = torch::Device(torch::kCPU));
  ~Distributed();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  bool is_main() const { return rank_ == 0; }
  // "gloo" or "nccl" ("none" for a single process).
  const std::string& backend() const { return backend_; }

  // In-place sum of a float tensor over all ranks. NCCL reduces it on the
  // group's GPU, Gloo in CPU memory; a tensor elsewhere is copied there
  // and back.
  Status AllReduceSum(torch::Tensor& tensor);
  Status Barrier();

  // Wall seconds spent in collectives since construction.
  double comm_seconds() const { return comm_seconds_; }

 private:
  struct Group;
  Distributed(int rank, int world_size, std::string backend, std::unique_ptr<Group> group);

  int rank_ = 0;
  int world_size_ = 1;
  std::string backend_ = "none";
  std::unique_ptr<Group> group_;
  double comm_seconds_ = 0.0;
};

}  // namespace tune
