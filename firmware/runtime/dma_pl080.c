/* mcud_dma.h on an Arm PrimeCell PL080 (8 channels) or PL081 (2 channels): memory-to-memory copies
 * with the controller as flow controller, one copy per channel, a copy longer than one transfer
 * (4095 elements) chained through a linked list of items in RAM the engine reads itself.
 *
 * Elements are words when dst, src and the length allow it, else halfwords or bytes. A copy needing
 * more than MCUD_DMA_PL080_ITEMS items runs in batches of that many: the wait starts the next one.
 * The channel's configuration write starts it; the channel's enable bit drops when it is done.
 * QEMU's model (hw/dma/pl080.c) runs the whole transfer inside that write and takes no guest time, so
 * there a wait never stalls unless the controller is disabled (then the transfer waits for it), or the
 * copy was started with a modelled time (mcud_dma_copy_start_modelled): the wait ends no sooner. */
#include <stdint.h>
#include <string.h>

#include "mcud_dma.h"
#include "mcud_fw.h"

#ifndef MCUD_DMA_PL080_ITEMS
#define MCUD_DMA_PL080_ITEMS 4u /* linked-list items per channel and batch: 64 KB of words; 512 B of RAM for 8 channels */
#endif
#define MAX_CHANNELS 8u
#define MAX_ELEMENTS 4095u /* the control register's 12-bit transfer size */

#define REG(off) (*(volatile uint32_t *)(base + (off)))
#define CH(c, off) REG(0x100u + 0x20u * (uint32_t)(c) + (off))
#define INT_TC_CLEAR 0x008u
#define INT_ERR_CLEAR 0x010u
#define RAW_INT_ERR 0x018u
#define ENABLED_CHANNELS 0x01Cu
#define CONFIGURATION 0x030u
#define CONFIG_ENABLE 1u /* the controller on, both AHB masters little-endian */
#define CH_SRC 0x00u
#define CH_DEST 0x04u
#define CH_LLI 0x08u
#define CH_CONTROL 0x0Cu
#define CH_CONFIG 0x10u
#define CCONF_ENABLE 1u /* flow control 0: memory to memory, the DMA controller counts */
#define CTRL_SI (1u << 26)
#define CTRL_DI (1u << 27)
#define CTRL_PRIVILEGED (1u << 28)
#define CTRL_WIDTH(log2) (((uint32_t)(log2) << 18) | ((uint32_t)(log2) << 21)) /* source and destination */

typedef struct { /* one item of a channel's linked list, as the engine reads it */
    uint32_t src;
    uint32_t dest;
    uint32_t next;
    uint32_t control;
} item;

typedef struct {
    uint32_t dest, src, left; /* what the batches after the current one still have to copy */
    uint32_t log2;            /* element size */
    uint32_t busy;
    uint64_t due;             /* the modelled end of the copy (mcud_dma_copy_start_modelled), 0: none */
} channel;

static uint32_t base;
static uint32_t channels;
static uint32_t turn; /* the channel the next copy takes */
static item items[MAX_CHANNELS][MCUD_DMA_PL080_ITEMS] __attribute__((aligned(16)));
static channel state[MAX_CHANNELS];

void mcud_dma_init(const mcud_fw_config *config)
{
    base = config->dma_base;
    channels = config->dma_channels < 1u ? 1u : config->dma_channels > MAX_CHANNELS ? MAX_CHANNELS
                                                                                    : config->dma_channels;
    for (uint32_t c = 0; c < channels; c++) {
        CH(c, CH_CONFIG) = 0;
        state[c].busy = 0;
    }
    REG(INT_TC_CLEAR) = 0xFFu;
    REG(INT_ERR_CLEAR) = 0xFFu;
    REG(CONFIGURATION) = CONFIG_ENABLE;
}

/* Programs channel c with the next batch of its copy (at most MCUD_DMA_PL080_ITEMS items) and starts it. */
static void start_batch(uint32_t c)
{
    channel *ch = &state[c];
    const uint32_t size = 1u << ch->log2;
    uint32_t n = 0;
    while (ch->left > 0 && n < MCUD_DMA_PL080_ITEMS) {
        uint32_t elements = ch->left >> ch->log2;
        elements = elements > MAX_ELEMENTS ? MAX_ELEMENTS : elements;
        items[c][n].src = ch->src;
        items[c][n].dest = ch->dest;
        items[c][n].next = 0;
        items[c][n].control = elements | CTRL_WIDTH(ch->log2) | CTRL_SI | CTRL_DI | CTRL_PRIVILEGED;
        if (n > 0) {
            items[c][n - 1].next = (uint32_t)(uintptr_t)&items[c][n];
        }
        ch->src += elements * size;
        ch->dest += elements * size;
        ch->left -= elements * size;
        n++;
    }
    REG(INT_TC_CLEAR) = 1u << c;
    REG(INT_ERR_CLEAR) = 1u << c;
    CH(c, CH_SRC) = items[c][0].src;
    CH(c, CH_DEST) = items[c][0].dest;
    CH(c, CH_LLI) = items[c][0].next;
    CH(c, CH_CONTROL) = items[c][0].control;
    __asm__ volatile("dsb" : : : "memory"); /* the items and the source bytes are in memory before the engine reads them */
    CH(c, CH_CONFIG) = CCONF_ENABLE;
}

static int channel_running(uint32_t c)
{
    return (REG(ENABLED_CHANNELS) >> c) & 1u;
}

int32_t mcud_dma_copy_start(void *dst, const void *src, uint32_t bytes)
{
    return mcud_dma_copy_start_modelled(dst, src, bytes, 0u);
}

int32_t mcud_dma_copy_start_modelled(void *dst, const void *src, uint32_t bytes, uint32_t ticks)
{
    if (channels == 0) { /* before mcud_dma_init: the core copies */
        memcpy(dst, src, bytes);
        return -1;
    }
    const uint32_t c = turn;
    turn = (turn + 1u) % channels;
    if (state[c].busy) {
        (void)mcud_dma_wait((int32_t)c, 0);
    }
    const uint32_t d = (uint32_t)(uintptr_t)dst, s = (uint32_t)(uintptr_t)src, all = d | s | bytes;
    state[c].log2 = (all & 3u) == 0 ? 2u : (all & 1u) == 0 ? 1u : 0u;
    state[c].dest = d;
    state[c].src = s;
    state[c].left = bytes;
    state[c].busy = bytes > 0;
    state[c].due = ticks > 0u ? mcud_timer_now() + ticks : 0u;
    if (bytes > 0) {
        start_batch(c);
    }
    return (int32_t)c;
}

mcud_dma_wait_info mcud_dma_wait(int32_t copy, uint32_t max_ticks)
{
    mcud_dma_wait_info info = {1u, 0u, 0u, 0u};
    if (copy < 0 || (uint32_t)copy >= channels || !state[copy].busy) {
        return info;
    }
    const uint32_t c = (uint32_t)copy;
    const uint64_t start = mcud_timer_now();
    for (;;) {
        if (REG(RAW_INT_ERR) & (1u << c)) {
            info.error = 1u;
            CH(c, CH_CONFIG) = 0;
            break;
        }
        if (!channel_running(c)) {
            if (state[c].left > 0) {
                start_batch(c); /* the next batch of a long copy: the core had to wait for this one */
                info.stalled = 1u;
                continue;
            }
            if (mcud_timer_now() >= state[c].due) {
                break;
            }
            /* the engine is done, the modelled memory not yet: the core waits as it would for the engine */
        }
        info.stalled = 1u;
        const uint64_t waited = mcud_timer_now() - start;
        if (max_ticks > 0 && waited >= max_ticks) {
            info.done = 0;
            info.ticks = waited > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)waited;
            return info;
        }
    }
    __asm__ volatile("dsb" : : : "memory");
    state[c].busy = 0;
    if (info.stalled) {
        const uint64_t waited = mcud_timer_now() - start;
        info.ticks = waited > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)waited;
    }
    return info;
}
