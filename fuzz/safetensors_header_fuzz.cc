// Fuzzes the safetensors header reader (trainer/safetensors_header.h) with a
// whole file. Beyond "no crash, no undefined behaviour", an accepted header
// must keep its promises: each tensor's byte range lies inside the data
// section and has exactly the size its dtype and shape give.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainer/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  auto header = tune::ParseSafetensorsFile(file, "fuzz.safetensors");
  if (!header.ok()) return 0;
  const uint64_t data_size = size - header->data_start;
  if (header->data_start > size) std::abort();
  for (const tune::SafetensorsEntry& e : header->tensors) {
    if (e.end < e.begin || e.end > data_size) std::abort();
    unsigned __int128 bytes = e.element_size;
    for (int64_t d : e.shape) {
      if (d < 0) std::abort();
      bytes *= static_cast<uint64_t>(d);
      if (bytes > data_size) bytes = data_size + 1;  // stays small; only "too big" matters
    }
    if (bytes != e.end - e.begin) std::abort();
  }
  return 0;
}
