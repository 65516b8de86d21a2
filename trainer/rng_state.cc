#include "trainer/rng_state.h"

#include <mutex>
#include <vector>

namespace tune {
namespace {

// The entries a rank may have, in a fixed order (the gather's layout).
constexpr const char* kEntries[] = {"cpu", "cuda"};

std::string RankPrefix(int rank) { return rank == 0 ? "" : "rank" + std::to_string(rank) + "."; }

}  // namespace

torch::Tensor GeneratorState(const torch::Device& device) {
  at::Generator gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetGeneratorState(const torch::Device& device, const torch::Tensor& state) {
  at::Generator gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

TensorMap CaptureRngState(const torch::Device& device) {
  TensorMap out{{"cpu", GeneratorState(torch::Device(torch::kCPU))}};
  if (device.is_cuda()) out["cuda"] = GeneratorState(device);
  return out;
}

Status RestoreRngState(const TensorMap& state, const torch::Device& device) {
  auto cpu = state.find("cpu");
  if (cpu == state.end()) return Status::InvalidArgument("the RNG state has no 'cpu' entry");
  try {
    SetGeneratorState(torch::Device(torch::kCPU), cpu->second.to(torch::kUInt8).contiguous());
    auto cuda = state.find("cuda");
    if (device.is_cuda() && cuda != state.end()) {
      SetGeneratorState(device, cuda->second.to(torch::kUInt8).contiguous());
    }
  } catch (const c10::Error& e) {
    return Status::InvalidArgument("the RNG state does not fit this libtorch's generator: " +
                                   std::string(e.what_without_backtrace()));
  }
  return Status::Ok();
}

Result<TensorMap> GatherRngStates(Distributed& dist, const TensorMap& mine) {
  const int world = dist.world_size(), rank = dist.rank();
  if (world == 1) return mine;
  constexpr int64_t kN = sizeof(kEntries) / sizeof(kEntries[0]);
  // 1. every rank's entry lengths (0: absent); each rank fills its own row
  //    and a sum all-reduce makes it an all-gather. Bytes and lengths are
  //    small integers, exact in float32.
  torch::Tensor lengths = torch::zeros({world, kN}, torch::kFloat32);
  std::vector<torch::Tensor> parts;
  for (int64_t k = 0; k < kN; ++k) {
    auto it = mine.find(kEntries[k]);
    if (it == mine.end()) continue;
    torch::Tensor bytes = it->second.to(torch::kUInt8).reshape({-1});
    lengths[rank][k].fill_(static_cast<double>(bytes.numel()));
    parts.push_back(bytes.to(torch::kFloat32));
  }
  TUNE_RETURN_IF_ERROR(dist.AllReduceSum(lengths));
  const torch::Tensor totals = lengths.sum(1).to(torch::kInt64);
  const int64_t width = totals.max().item<int64_t>();
  // 2. the bytes, row `rank` of a [world, width] matrix.
  torch::Tensor bytes = torch::zeros({world, width}, torch::kFloat32);
  if (!parts.empty()) {
    torch::Tensor flat = torch::cat(parts);
    bytes[rank].slice(0, 0, flat.numel()).copy_(flat);
  }
  TUNE_RETURN_IF_ERROR(dist.AllReduceSum(bytes));
  if (!dist.is_main()) return TensorMap{};
  TensorMap all;
  const torch::Tensor as_bytes = bytes.to(torch::kUInt8);
  for (int r = 0; r < world; ++r) {
    int64_t off = 0;
    for (int64_t k = 0; k < kN; ++k) {
      const int64_t n = lengths[r][k].item<int64_t>();
      if (n == 0) continue;
      all[RankPrefix(r) + kEntries[k]] = as_bytes[r].slice(0, off, off + n).clone();
      off += n;
    }
  }
  return all;
}

TensorMap RankRngState(const TensorMap& all, int rank) {
  TensorMap out;
  for (const char* name : kEntries) {
    auto it = all.find(RankPrefix(rank) + name);
    if (it != all.end()) out[name] = it->second;
  }
  return out;
}

}  // namespace tune
