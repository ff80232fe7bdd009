/* The RP2350's IMAGE_DEF block (RP2350 Datasheet, 5.9 "Metadata block details" and 5.9.5 "Minimum viable image
 * metadata"): the boot ROM runs a flash image only when a block within its first 4 KB declares it an executable.
 * This one says: an Arm secure-mode executable for the RP2350, the vector table at the start of the image (the
 * default when no VECTOR_TABLE item is given). Written from the data sheet's field layout, word by word:
 *   PICOBIN_BLOCK_MARKER_START;
 *   item IMAGE_TYPE (0x42), size 1 word, flags: EXE (image type 1), security S (2 << 4), CPU Arm (0 << 8),
 *     chip RP2350 (1 << 12): 0x1021 in the upper half-word;
 *   item LAST (0xFF), size of the items before it in words (1), as a 2-byte size item;
 *   the link to the next block: 0, the block loops to itself;
 *   PICOBIN_BLOCK_MARKER_END.
 * The linker script puts it right after the vector table (.isr_vector.boot_block). Not yet run on silicon. */
#include <stdint.h>

__attribute__((section(".isr_vector.boot_block"), used)) const uint32_t mcud_rp2350_image_def[5] = {
    0xFFFFDED3u, /* PICOBIN_BLOCK_MARKER_START */
    0x10210142u, /* IMAGE_TYPE: 0x42, one word, EXE | S | ARM | RP2350 */
    0x000001FFu, /* LAST: 0xFF, two-byte size form, one word of items before it */
    0x00000000u, /* link: this block alone */
    0xAB123579u, /* PICOBIN_BLOCK_MARKER_END */
};
