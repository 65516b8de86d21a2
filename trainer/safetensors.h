// safetensors reader and writer (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length, a JSON header mapping each tensor name
// to {dtype, shape, data_offsets}, then the raw little-endian data.
//
// Tensors come back on the CPU in the file's dtype (F32, F16, BF16, F64, I64,
// I32, U8, BOOL); other dtypes are an InvalidArgument error naming the tensor.
// Thread-compatible: no shared state.
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

#include "core/status.h"

namespace tune {

using TensorMap = std::map<std::string, torch::Tensor>;

// Reads one .safetensors file. Non-OK: NotFound (unreadable file) or
// InvalidArgument (truncated file, bad header, unsupported dtype; the message
// names the file and the tensor). `metadata`, when given, receives
// __metadata__.
Result<TensorMap> ReadSafetensors(const std::string& path,
                                  std::map<std::string, std::string>* metadata = nullptr);

// Writes `tensors` (made contiguous, CPU) in name order, atomically (a
// temporary file renamed over `path`). Non-OK: Internal on I/O failure,
// InvalidArgument on a dtype safetensors cannot name.
Status WriteSafetensors(const std::string& path, const TensorMap& tensors,
                        const std::map<std::string, std::string>& metadata = {});

// The weights of a Hugging Face model folder: model.safetensors, or every
// shard listed in model.safetensors.index.json ("weight_map").
Result<TensorMap> ReadModelWeights(const std::string& dir);

}  // namespace tune
