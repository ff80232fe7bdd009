/* Asynchronous copies of whole tensors between memory regions (mcudeploy/offload: a swap's copy out
 * to a slow memory and back): mcud_copy_start starts the copy (mcud_dma.h: the board's DMA engine,
 * or memcpy), the core computes, and mcud_copy_wait, before the first reader of the copy, waits for
 * it. The wait's own time is the stall: what the computation in between did not hide. */
#ifndef MCUD_COPY_H
#define MCUD_COPY_H
#include "mcud.h"

#define MCUD_COPY_SLOTS 16 /* copies in flight at once (the planner gives each a slot) */

typedef struct {
    int32_t slot;   /* in [0, MCUD_COPY_SLOTS): pairs a start with its wait */
    uint32_t bytes; /* the tensor's bytes (both views are dense) */
    uint32_t ticks; /* the copy's modelled time in ticks of the board's timer, 0: not modelled */
} mcud_copy_params;

/* Starts copying src's bytes to dst; neither may be touched until the wait. */
void mcud_copy_start(const mcud_view *src, const mcud_view *dst, const mcud_copy_params *p);

/* Waits for the copy into dst (from src, which stays untouched until here); y is dst's bytes
 * under their new name (the same address when the plan places it in place, else copied there). */
void mcud_copy_wait(const mcud_view *dst, const mcud_view *src, const mcud_view *y, const mcud_copy_params *p);

#endif /* MCUD_COPY_H */
