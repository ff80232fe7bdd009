/* Copies that may run while the core computes: a DMA engine where the board has one, memcpy elsewhere.
 *
 *   int32_t c = mcud_dma_copy_start(dst, src, bytes);  ...compute...  mcud_dma_wait(c, max_ticks);
 *
 * The kernel library's fallback (kernels/dma.c) copies with memcpy inside mcud_dma_copy_start, so its
 * waits never stall; a firmware for a board whose data names a DMA engine ("dma_engine" in
 * boards/NAME.json) links that engine's driver (firmware/runtime/dma_<driver>.c), whose definitions
 * replace the fallback's (the fallback's are weak). dst and src must not overlap, and neither may be
 * touched by the core until the wait says the copy is done. */
#ifndef MCUD_DMA_H
#define MCUD_DMA_H

#include <stdint.h>

typedef struct {
    uint32_t done;    /* 1: the copy has finished; 0: the bound ran out first (the copy is still in flight) */
    uint32_t stalled; /* 1: the copy had not finished when the wait began, so the core waited for it */
    uint32_t error;   /* 1: the engine reported a bus error (the bytes are not to be trusted) */
    uint32_t ticks;   /* ticks of the board's timer the core waited (0 when it did not stall) */
} mcud_dma_wait_info;

/* Starts copying `bytes` bytes from src to dst and returns the copy's number, for mcud_dma_wait.
 * Where no engine is free, it first waits for the oldest copy in flight. */
int32_t mcud_dma_copy_start(void *dst, const void *src, uint32_t bytes);

/* mcud_dma_copy_start for a slow memory whose speed is a model (boards/NAME.json, "modelled"): the
 * copy is not done, for its wait, before `ticks` ticks of the board's timer after its start, however
 * fast the engine was (QEMU's runs in no time). 0: as fast as the engine. Where the core copies
 * (no engine), the copy's time is the core's and `ticks` is not used. */
int32_t mcud_dma_copy_start_modelled(void *dst, const void *src, uint32_t bytes, uint32_t ticks);

/* Waits until copy `copy` has finished, for at most `max_ticks` ticks of the board's timer (0: no bound). */
mcud_dma_wait_info mcud_dma_wait(int32_t copy, uint32_t max_ticks);

#endif /* MCUD_DMA_H */
