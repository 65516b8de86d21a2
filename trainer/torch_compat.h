// The differences between the two libtorch versions lora_train builds
// against: Debian's libtorch 1.13 (CPU) and the 2.x inside PyPI's CUDA
// `torch` wheel (scripts/build-cuda.sh). Everything else in the trainer is
// written once for both; a new difference belongs here, not in #if blocks
// elsewhere.
#pragma once

#include <torch/version.h>

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace tune::compat {

#if TORCH_VERSION_MAJOR >= 2
// 2.x: the process-group implementations (Gloo, NCCL) are c10d::Backends
// behind a c10d::ProcessGroup front.
using CollectiveGroup = c10d::Backend;
#else
// 1.13: ProcessGroupGloo is itself the c10d::ProcessGroup.
using CollectiveGroup = c10d::ProcessGroup;
#endif

}  // namespace tune::compat
