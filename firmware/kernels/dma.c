/* mcud_dma.h without a DMA engine: the copy is done with memcpy before mcud_dma_copy_start returns,
 * so a wait finds it finished. Weak, so that a firmware linking a DMA engine's driver
 * (firmware/runtime/dma_<driver>.c) replaces both functions. */
#include <string.h>

#include "mcud_dma.h"

#if defined(__GNUC__)
#define MCUD_WEAK __attribute__((weak))
#else
#define MCUD_WEAK
#endif

MCUD_WEAK int32_t mcud_dma_copy_start(void *dst, const void *src, uint32_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}

MCUD_WEAK int32_t mcud_dma_copy_start_modelled(void *dst, const void *src, uint32_t bytes, uint32_t ticks)
{
    (void)ticks;
    return mcud_dma_copy_start(dst, src, bytes);
}

MCUD_WEAK mcud_dma_wait_info mcud_dma_wait(int32_t copy, uint32_t max_ticks)
{
    (void)copy;
    (void)max_ticks;
    const mcud_dma_wait_info done = {1u, 0u, 0u, 0u};
    return done;
}
