#include "trainer/distributed.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "trainer/torch_compat.h"

#ifdef TUNE_WITH_CUDA
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace tune {

struct Distributed::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::CollectiveGroup> pg;
  torch::Device device{torch::kCPU};  // where the collectives reduce
  std::chrono::milliseconds timeout{0};
};

namespace {

Result<int> EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) {
    return Status::InvalidArgument(std::string("environment variable ") + name + " is not a non-negative integer: '" + v + "'");
  }
  return static_cast<int>(x);
}

// The first line of a c10 exception (what() carries a backtrace).
std::string Brief(const std::exception& e) {
  std::string s = e.what();
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

Distributed::Distributed(int rank, int world_size, std::string backend, std::unique_ptr<Group> group)
    : rank_(rank), world_size_(world_size), backend_(std::move(backend)), group_(std::move(group)) {}

Distributed::~Distributed() = default;

Result<std::unique_ptr<Distributed>> Distributed::FromEnv(const std::string& requested, int timeout_s,
                                                          torch::Device device) {
  if (requested != "auto" && requested != "gloo" && requested != "nccl") {
    return Status::InvalidArgument("--backend must be auto, gloo or nccl, got '" + requested + "'");
  }
  const std::string backend = requested == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : requested;
  if (backend == "nccl") {
#ifndef TUNE_WITH_CUDA
    return Status::InvalidArgument("--backend nccl: this libtorch build has no CUDA or NCCL");
#endif
    if (!device.is_cuda()) {
      return Status::InvalidArgument("--backend nccl: NCCL reduces GPU memory, but this rank trains on the CPU");
    }
  }
  TUNE_ASSIGN_OR_RETURN(int world, EnvInt("WORLD_SIZE", 1));
  TUNE_ASSIGN_OR_RETURN(int rank, EnvInt("RANK", 0));
  if (world <= 1) return std::unique_ptr<Distributed>(new Distributed(0, 1, "none", nullptr));
  if (rank >= world) {
    return Status::InvalidArgument("RANK " + std::to_string(rank) + " is not below WORLD_SIZE " + std::to_string(world));
  }
  const char* addr = std::getenv("MASTER_ADDR");
  TUNE_ASSIGN_OR_RETURN(int port, EnvInt("MASTER_PORT", 29500));
  if (addr == nullptr || *addr == '\0') addr = "127.0.0.1";
  auto group = std::make_unique<Group>();
  group->timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s) * 1000);
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(port);
    opts.isServer = rank == 0;
    opts.numWorkers = world;
    opts.waitWorkers = true;
    opts.timeout = group->timeout;
    group->store = c10::make_intrusive<c10d::TCPStore>(addr, opts);
    if (backend == "nccl") {
#ifdef TUNE_WITH_CUDA
      group->device = device;
      c10::cuda::set_device(device.index());
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = group->timeout;
      group->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(group->store, rank, world, options);
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create();
      options->timeout = group->timeout;
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
      group->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(group->store, rank, world, options);
    }
  } catch (const std::exception& e) {
    return Status::Unavailable("rank " + std::to_string(rank) + ": rendezvous with " + addr + ":" +
                               std::to_string(port) + " failed: " + Brief(e));
  }
  return std::unique_ptr<Distributed>(new Distributed(rank, world, backend, std::move(group)));
}

Status Distributed::AllReduceSum(torch::Tensor& tensor) {
  if (world_size_ == 1) return Status::Ok();
  auto t0 = std::chrono::steady_clock::now();
  try {
    const bool moved = tensor.device() != group_->device;
    std::vector<torch::Tensor> tensors{moved ? tensor.to(group_->device) : tensor};
    auto work = group_->pg->allreduce(tensors);
    work->wait(group_->timeout);
    if (moved) tensor.copy_(tensors[0]);
  } catch (const std::exception& e) {
    return Status::Unavailable("rank " + std::to_string(rank_) + ": all-reduce failed (a peer rank died or hung?): " +
                               Brief(e));
  }
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

Status Distributed::Barrier() {
  torch::Tensor one = torch::ones({1});
  return AllReduceSum(one);
}

}  // namespace tune
