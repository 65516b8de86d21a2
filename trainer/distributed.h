// Data-parallel process group for lora_train, with torchrun's rendezvous:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (LOCAL_RANK is informative on
// CPU). Rank 0 hosts a c10d TCPStore; the ranks form a ProcessGroupGloo.
// With WORLD_SIZE unset or 1 no group is made and the collectives are no-ops.
//
// Every collective waits at most `timeout_s`: a rank that died or hangs makes
// the others fail with a message naming the operation, instead of hanging.
// Not thread-safe: the training loop owns it.
#pragma once

#include <memory>
#include <string>

#include <torch/torch.h>

#include "tuner/core/status.h"

namespace tune {

class Distributed {
 public:
  // backend: "auto" (Gloo on CPU), "gloo", or "nccl" (rejected: this build
  // has no CUDA). InvalidArgument on bad environment values; Unavailable
  // when the rendezvous does not complete within timeout_s.
  static Result<std::unique_ptr<Distributed>> FromEnv(const std::string& backend, int timeout_s);
  ~Distributed();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  bool is_main() const { return rank_ == 0; }

  // In-place sum of a CPU float tensor over all ranks.
  Status AllReduceSum(torch::Tensor& tensor);
  Status Barrier();

  // Wall seconds spent in collectives since construction.
  double comm_seconds() const { return comm_seconds_; }

 private:
  struct Group;
  Distributed(int rank, int world_size, std::unique_ptr<Group> group);

  int rank_ = 0;
  int world_size_ = 1;
  std::unique_ptr<Group> group_;
  double comm_seconds_ = 0.0;
};

}  // namespace tune
