/* A streamed graph input (mcudeploy --stream-input): ReadInput asks the application for a box of the
 * input, one contiguous run of the input's own row-major order at a time, and writes it into its
 * view in the arena. The input itself never sits in the arena. */
#ifndef MCUD_STREAM_H
#define MCUD_STREAM_H
#include "mcud.h"

/* The application's callback (model.h: <model>_read_input): write elements
 * [offset, offset + count) of input `index`, in its row-major order, to dst. */
typedef void (*mcud_read_input_fn)(int32_t index, int32_t offset, int32_t count, void *dst);

typedef struct {
    mcud_read_input_fn read;
    int32_t input;                   /* which graph input */
    int32_t starts[MCUD_MAX_DIMS];   /* the box's first index per dimension, padded on the left */
    int32_t shape[MCUD_MAX_DIMS];    /* the whole input's shape, padded on the left with 1 */
    int32_t itemsize;                /* bytes per element */
} mcud_read_input_params;

/* y = the box of the input that starts at p->starts and has y's shape. */
void mcud_read_input(const mcud_view *y, const mcud_read_input_params *p);

#endif /* MCUD_STREAM_H */
