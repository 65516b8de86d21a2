// CRC32C (Castagnoli), as TFRecord files checksum their records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tune::tracking {

// The CRC32C of `data` (polynomial 0x1EDC6F41, reflected; "123456789" gives
// 0xE3069283).
uint32_t Crc32c(std::string_view data);

// TFRecord's masked form of a CRC: rotated right by 15 bits plus a constant,
// so that a CRC stored inside checksummed data does not checksum to itself.
uint32_t MaskCrc32c(uint32_t crc);

}  // namespace tune::tracking
