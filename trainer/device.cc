#include "trainer/device.h"

#include <algorithm>
#include <cstdlib>

#ifdef TUNE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tune {
namespace {

std::string DtypeName(torch::ScalarType t) {
  switch (t) {
    case torch::kBFloat16: return "bf16";
    case torch::kHalf: return "fp16";
    default: return "fp32";
  }
}

// Why no GPU is usable: a clause that ends a sentence, without parentheses
// (the refusals put it after a colon or an "and").
std::string NoGpuReason() {
  if (!BuiltWithCuda()) {
    return "this lora_train is built against a libtorch without CUDA, so it trains on the CPU only; build it "
           "with scripts/build-cuda.sh";
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible != nullptr) {
    return std::string("no CUDA GPU is visible with CUDA_VISIBLE_DEVICES set to '") + visible + "'";
  }
  return "no CUDA GPU is visible, as this machine has no NVIDIA driver or no GPU";
}

// Compute capability 8.0 (Ampere) and later have bf16 arithmetic.
bool GpuHasBf16(int index) {
#ifdef TUNE_WITH_CUDA
  return at::cuda::getDeviceProperties(index)->major >= 8;
#else
  (void)index;
  return false;
#endif
}

}  // namespace

namespace {
int EnvCount(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && r >= 0 && r < (1 << 20) ? static_cast<int>(r) : fallback;
}
}  // namespace

int LocalRank() { return EnvCount("LOCAL_RANK", 0); }

int LocalWorldSize() {
  const int n = EnvCount("LOCAL_WORLD_SIZE", 0);
  return n > 0 ? n : std::max(1, EnvCount("WORLD_SIZE", 1));
}

bool BuiltWithCuda() {
#ifdef TUNE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int VisibleGpuCount() { return BuiltWithCuda() ? static_cast<int>(torch::cuda::device_count()) : 0; }

std::string Placement::Describe() const {
  return device.str() + ", " + DtypeName(dtype) + ", " + (backend == "nccl" ? "NCCL" : "Gloo");
}

Result<Placement> ResolvePlacement(const std::string& device, const std::string& dtype, const std::string& backend,
                                   int local_rank, int local_world_size) {
  Placement p;
  const int gpus = VisibleGpuCount();
  if (device == "auto") {
    if (gpus > 0) p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % gpus));
  } else if (device == "cpu") {
    p.device = torch::Device(torch::kCPU);
  } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    int index = local_rank;
    if (device != "cuda") {
      const std::string digits = device.substr(5);
      if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) {
        return Status::InvalidArgument("--device: expected auto, cpu, cuda or cuda:N with N a GPU index, got '" +
                                       device + "'");
      }
      index = std::stoi(digits);
    }
    if (gpus == 0) return Status::InvalidArgument("--device " + device + ": " + NoGpuReason());
    if (device != "cuda" && index >= gpus) {
      return Status::InvalidArgument("--device " + device + ": only " + std::to_string(gpus) +
                                     " GPU(s) are visible, numbered from 0");
    }
    p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index % gpus));
  } else {
    return Status::InvalidArgument("--device: expected auto, cpu, cuda or cuda:N, got '" + device + "'");
  }

  if (dtype == "fp32") {
    p.dtype = torch::kFloat32;
  } else if (dtype == "bf16") {
    p.dtype = torch::kBFloat16;
    if (p.device.is_cuda() && !GpuHasBf16(p.device.index())) {
      return Status::InvalidArgument("--dtype bf16: GPU " + p.device.str() +
                                     " has no bf16 arithmetic (needs compute capability 8.0 or later); use fp32");
    }
  } else if (dtype == "fp16") {
    return Status::InvalidArgument(
        "--dtype fp16: fp16 training needs loss scaling, which lora_train does not do; use bf16 or fp32");
  } else {
    return Status::InvalidArgument("--dtype: expected fp32, bf16 or fp16, got '" + dtype + "'");
  }

  const bool gpu_per_rank = gpus >= local_world_size;
  if (backend == "auto") {
    p.backend = p.device.is_cuda() && gpu_per_rank ? "nccl" : "gloo";
  } else if (backend == "gloo") {
    p.backend = "gloo";
  } else if (backend == "nccl") {
    if (!BuiltWithCuda()) {
      return Status::InvalidArgument("--backend nccl: this lora_train is built against a libtorch without CUDA or "
                                     "NCCL (build it with scripts/build-cuda.sh)");
    }
    if (!p.device.is_cuda()) {
      return Status::InvalidArgument(
          gpus == 0 ? "--backend nccl: NCCL all-reduces GPU memory, and " + NoGpuReason()
                    : "--backend nccl: NCCL all-reduces GPU memory, but --device " + device +
                          " puts this rank on the CPU; use --backend gloo there");
    }
    if (!gpu_per_rank) {
      return Status::InvalidArgument("--backend nccl: " + std::to_string(local_world_size) +
                                     " ranks on this host share " + std::to_string(gpus) +
                                     " GPU(s), but NCCL needs a GPU of its own for each rank (use --backend gloo)");
    }
    p.backend = "nccl";
  } else {
    return Status::InvalidArgument("--backend: expected auto, gloo or nccl, got '" + backend + "'");
  }
  return p;
}

void PlaceModel(CausalLm& model, const Placement& placement) {
  torch::NoGradGuard no_grad;
  model->to(placement.device);
  if (placement.dtype == torch::kFloat32) return;
  for (auto& item : model->named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) continue;
    item.value().set_data(item.value().data().to(placement.dtype));
  }
}

torch::Device ModelDevice(CausalLm& model) {
  auto params = model->parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

}  // namespace tune
