#include "trainer/distributed.h"

#include <chrono>
#include <cstdlib>
#include <string>

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace tune {

struct Distributed::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
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

Distributed::Distributed(int rank, int world_size, std::unique_ptr<Group> group)
    : rank_(rank), world_size_(world_size), group_(std::move(group)) {}

Distributed::~Distributed() = default;

Result<std::unique_ptr<Distributed>> Distributed::FromEnv(const std::string& backend, int timeout_s) {
  if (backend != "auto" && backend != "gloo" && backend != "nccl") {
    return Status::InvalidArgument("--backend must be auto, gloo or nccl, got '" + backend + "'");
  }
  TUNE_ASSIGN_OR_RETURN(int world, EnvInt("WORLD_SIZE", 1));
  TUNE_ASSIGN_OR_RETURN(int rank, EnvInt("RANK", 0));
  if (world <= 1) return std::unique_ptr<Distributed>(new Distributed(0, 1, nullptr));
  if (rank >= world) {
    return Status::InvalidArgument("RANK " + std::to_string(rank) + " is not below WORLD_SIZE " + std::to_string(world));
  }
  if (backend == "nccl") return Status::InvalidArgument("--backend nccl: this libtorch build has no CUDA");
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
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->timeout = group->timeout;
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
    group->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(group->store, rank, world, options);
  } catch (const std::exception& e) {
    return Status::Unavailable("rank " + std::to_string(rank) + ": rendezvous with " + addr + ":" +
                               std::to_string(port) + " failed: " + Brief(e));
  }
  return std::unique_ptr<Distributed>(new Distributed(rank, world, std::move(group)));
}

Status Distributed::AllReduceSum(torch::Tensor& tensor) {
  if (world_size_ == 1) return Status::Ok();
  auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<torch::Tensor> tensors{tensor};
    auto work = group_->pg->allreduce(tensors);
    work->wait(group_->timeout);
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
