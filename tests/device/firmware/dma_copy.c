/* Test firmware of tests/device/test_dma_qemu.py: copies from the board's slow region (SLOW_SECTION)
 * to its first region through mcud_dma.h, and writes what it saw as "key value" lines to the host file
 * dma-report.txt (Arm semihosting, in QEMU's working folder). Built with firmware/runtime/dma_<driver>.c
 * where the board has a DMA engine (DMA_BASE != 0), and always with the kernel library's memcpy fallback
 * (kernels/dma.c, weak): on a DMA board the driver must replace it. Exit status 0, or 2: no report file. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcud_dma.h"
#include "mcud_fw.h"

#define BIG 16384u  /* 4096 words: more than one transfer of 4095 elements, so two linked items */
#define ODD 5001u   /* bytes, from and to odd addresses: byte elements */
#define LONG 12385u /* 3 * 4095 + 100 byte elements: with 2 items per batch, the wait starts a second batch */
#define HELD_BOUND 200u
#define PL080_CONFIGURATION 0x030u
#define PL080_CH0_SRC 0x100u

#define SYS_OPEN 0x01u
#define SYS_CLOSE 0x02u
#define SYS_WRITE 0x05u
#define MODE_WB 5u

static uint8_t slow[BIG + 16u] __attribute__((section(SLOW_SECTION), aligned(8)));
static uint8_t fast[BIG + 16u] __attribute__((aligned(8)));

static const mcud_fw_config config = {.board = "dma-test", .emulated = 1u, .dma_base = DMA_BASE,
                                      .dma_channels = DMA_CHANNELS};
static int32_t report = -1;

static int32_t semihosting(uint32_t op, const uint32_t *block)
{
    register uint32_t r0 __asm__("r0") = op;
    register uint32_t r1 __asm__("r1") = (uint32_t)(uintptr_t)block;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int32_t)r0;
}

static void put(const char *key, uint32_t value)
{
    char line[64];
    size_t n = strlen(key);
    memcpy(line, key, n);
    line[n++] = ' ';
    char digits[10];
    int k = 0;
    do {
        digits[k++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value > 0);
    while (k > 0) {
        line[n++] = digits[--k];
    }
    line[n++] = '\n';
    const uint32_t block[3] = {(uint32_t)report, (uint32_t)(uintptr_t)line, (uint32_t)n};
    (void)semihosting(SYS_WRITE, block);
}

static uint8_t pattern(uint32_t i, uint32_t seed)
{
    return (uint8_t)(i * 131u + (i >> 8) + seed);
}

static void fill(uint32_t seed)
{
    for (uint32_t i = 0; i < sizeof slow; i++) {
        slow[i] = pattern(i, seed);
    }
    memset(fast, 0, sizeof fast);
}

/* 1 when fast[at, at + n) holds slow[from, from + n) and every other byte of fast is still 0 */
static uint32_t copied(uint32_t at, uint32_t from, uint32_t n)
{
    for (uint32_t i = 0; i < sizeof fast; i++) {
        const int inside = i >= at && i < at + n;
        if (fast[i] != (inside ? slow[from + i - at] : 0u)) {
            return 0;
        }
    }
    return 1;
}

static void put_wait(const char *what, mcud_dma_wait_info w)
{
    char key[32];
    const char *fields[4] = {"_done", "_stalled", "_error", "_ticks"};
    const uint32_t values[4] = {w.done, w.stalled, w.error, w.ticks};
    for (int f = 0; f < 4; f++) {
        size_t n = strlen(what);
        memcpy(key, what, n);
        memcpy(key + n, fields[f], strlen(fields[f]) + 1u);
        put(key, values[f]);
    }
}

int main(void)
{
    mcud_sys_init(&config);
    mcud_timer_init();
#if DMA_BASE
    mcud_dma_init(&config);
#endif
    const uint32_t open_block[3] = {(uint32_t)(uintptr_t)"dma-report.txt", MODE_WB, 14u};
    report = semihosting(SYS_OPEN, open_block);
    if (report < 0) {
        mcud_sys_exit(2);
    }
    put("slow_address", (uint32_t)(uintptr_t)slow);
    put("fast_address", (uint32_t)(uintptr_t)fast);

    /* a word copy of BIG bytes, timed against memcpy of the same bytes */
    fill(7u);
    uint64_t t0 = mcud_timer_now();
    int32_t c = mcud_dma_copy_start(fast, slow, BIG);
    uint64_t t1 = mcud_timer_now();
    mcud_dma_wait_info w = mcud_dma_wait(c, 0);
    uint64_t t2 = mcud_timer_now();
    put("big_same", copied(0, 0, BIG));
    put("big_start_ticks", (uint32_t)(t1 - t0));
    put("big_wait_ticks", (uint32_t)(t2 - t1));
    put_wait("big", w);
#if DMA_BASE
    /* where the engine's channel left its source pointer: past the end when the engine read every byte */
    put("big_engine_read", *(volatile uint32_t *)(DMA_BASE + PL080_CH0_SRC + 0x20u * (uint32_t)c) -
                               (uint32_t)(uintptr_t)slow);
#endif
    fill(9u);
    t0 = mcud_timer_now();
    memcpy(fast, slow, BIG);
    t1 = mcud_timer_now();
    put("memcpy_same", copied(0, 0, BIG));
    put("memcpy_ticks", (uint32_t)(t1 - t0));

    /* bytes between odd addresses */
    fill(11u);
    w = mcud_dma_wait(mcud_dma_copy_start(fast + 3, slow + 1, ODD), 0);
    put("odd_same", copied(3, 1, ODD));
    put_wait("odd", w);

    /* two copies in flight at once, one per channel */
    fill(13u);
    int32_t a = mcud_dma_copy_start(fast, slow, BIG / 2u);
    int32_t b = mcud_dma_copy_start(fast + BIG / 2u, slow + BIG / 2u, BIG / 2u);
    mcud_dma_wait_info wa = mcud_dma_wait(a, 0), wb = mcud_dma_wait(b, 0);
    put("pair_same", copied(0, 0, BIG) && wa.done && wb.done);
    put("pair_channels_differ", a != b);

    /* a copy longer than one batch of linked items: the wait starts the rest */
    fill(15u);
    w = mcud_dma_wait(mcud_dma_copy_start(fast + 1, slow + 1, LONG), 0);
    put("long_same", copied(1, 1, LONG));
    put_wait("long", w);
#if DMA_BASE
    /* a copy held back by disabling the controller: the bounded wait gives up and says so */
    fill(17u);
    volatile uint32_t *controller = (volatile uint32_t *)(DMA_BASE + PL080_CONFIGURATION);
    *controller = 0u;
    c = mcud_dma_copy_start(fast, slow, 4096u);
    w = mcud_dma_wait(c, HELD_BOUND);
    put("held_untouched", copied(0, 0, 0));
    put_wait("held", w);
    *controller = 1u;
    w = mcud_dma_wait(c, HELD_BOUND);
    put("released_same", copied(0, 0, 4096u));
    put_wait("released", w);
#endif
#ifdef NS_ALIAS_OFFSET
    /* the same bytes of fast memory through their non-secure alias: the engine's writes are dropped */
    fill(19u);
    w = mcud_dma_wait(mcud_dma_copy_start((void *)((uintptr_t)fast - NS_ALIAS_OFFSET), slow, 256u), 0);
    put("ns_alias_untouched", copied(0, 0, 0));
    put_wait("ns_alias", w);
#endif
    const uint32_t close_block[1] = {(uint32_t)report};
    (void)semihosting(SYS_CLOSE, close_block);
    return 0;
}
