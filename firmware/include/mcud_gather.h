/* Gathers whose positions are an int32 tensor (mcudeploy/ops/gather.py): positions outside x are
 * clamped to the nearest one inside, so no kernel reads outside its input. */
#ifndef MCUD_GATHER_H
#define MCUD_GATHER_H
#include "mcud.h"

#define MCUD_GATHER_ND_MAX 5

/* y[b, o, c, i] = x[b, o, p[b, c], i]: b the batch_dims leading dimensions of x, p and y; o x's dimensions
 * before axis; c p's others; i x's after axis. */
typedef struct {
    int32_t axis;
    int32_t batch_dims;
} mcud_gather_indexed_params;

/* y[c, i] = x's slice at row-major offset sum_j p[c, j] * (product of x's dimensions j+1 .. nd-1) over its
 * first nd dimensions; i x's dimensions from nd. */
typedef struct {
    int32_t nd;
} mcud_gather_nd_params;

#define MCUD_DECLARE_GATHER(SUFFIX)                                                                \
    void mcud_gather_indexed_##SUFFIX(const mcud_view *x, const mcud_view *p, const mcud_view *y,  \
                                      const mcud_gather_indexed_params *params);                   \
    void mcud_gather_nd_##SUFFIX(const mcud_view *x, const mcud_view *p, const mcud_view *y,       \
                                 const mcud_gather_nd_params *params);

MCUD_DECLARE_GATHER(s8)
MCUD_DECLARE_GATHER(u8)
MCUD_DECLARE_GATHER(s16)
MCUD_DECLARE_GATHER(s32)
MCUD_DECLARE_GATHER(s64)
MCUD_DECLARE_GATHER(f32)

#endif
