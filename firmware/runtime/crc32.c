/* CRC-32 as zlib computes it (reflected polynomial 0xEDB88320), bit by bit: no table in
 * flash, and a 2 KB frame costs well under a millisecond. */
#include <stdint.h>

#include "mcud_fw.h"

uint32_t mcud_fw_crc32(uint32_t crc, const uint8_t *data, uint32_t n)
{
    crc = ~crc;
    for (uint32_t i = 0; i < n; i++) {
        crc ^= data[i];
        for (int32_t k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}
