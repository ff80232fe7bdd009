#ifndef MCUD_WALK_H
#define MCUD_WALK_H
#include "mcud.h"

/* An odometer over some dimensions of an input x and an output y, each with its own strides (in
 * elements): the reductions and softmax walk their kept and their reduced dimensions with one each.
 * A position holds the index per dimension and the offsets into x and y. */
typedef struct {
    int32_t ndim;
    int32_t shape[MCUD_MAX_DIMS];
    int32_t xs[MCUD_MAX_DIMS];
    int32_t ys[MCUD_MAX_DIMS];
    int32_t count; /* the product of the shape */
} mcud_walk;

typedef struct {
    int32_t idx[MCUD_MAX_DIMS];
    int32_t xo;
    int32_t yo;
} mcud_walk_pos;

static inline void mcud_walk_start(mcud_walk_pos *pos, int32_t xo, int32_t yo)
{
    for (int32_t d = 0; d < MCUD_MAX_DIMS; d++) {
        pos->idx[d] = 0;
    }
    pos->xo = xo;
    pos->yo = yo;
}

/* Advance to the next element, the last dimension fastest; after the last one the position is
 * back at the start. Not inline: the kernels call it from every loop of their walks, out of line
 * as it was measured (MCUD_WALK_STEP keeps a file that includes this header for the types alone
 * free of an unused-function warning). */
#if defined(__GNUC__)
#define MCUD_WALK_STEP static __attribute__((unused)) void
#else
#define MCUD_WALK_STEP static void
/* Split the dimensions of views x and y (of one shape) into the outer ones and the range [axis, axis_end)
 * (softmax's, L2 normalization's rows): one walk each. */
static inline void mcud_walk_split(const mcud_view *x, const mcud_view *y, int32_t axis, int32_t axis_end,
                                   mcud_walk *outer, mcud_walk *inner)
{
    outer->ndim = inner->ndim = 0;
    outer->count = inner->count = 1;
    for (int32_t d = 0; d < y->ndim; d++) {
        mcud_walk *w = (d >= axis && d < axis_end) ? inner : outer;
        w->shape[w->ndim] = y->shape[d];
        w->xs[w->ndim] = x->stride[d];
        w->ys[w->ndim] = y->stride[d];
        w->count *= y->shape[d];
        w->ndim++;
    }
}

#endif

MCUD_WALK_STEP mcud_walk_step(const mcud_walk *w, mcud_walk_pos *pos)
{
    for (int32_t d = w->ndim - 1; d >= 0; d--) {
        pos->xo += w->xs[d];
        pos->yo += w->ys[d];
        if (++pos->idx[d] < w->shape[d]) {
            return;
        }
        pos->xo -= w->xs[d] * w->shape[d];
        pos->yo -= w->ys[d] * w->shape[d];
        pos->idx[d] = 0;
    }
}

/* Split the dimensions of views x and y (of one shape) into the outer ones and the range [axis, axis_end)
 * (softmax's, L2 normalization's rows): one walk each. */
static inline void mcud_walk_split(const mcud_view *x, const mcud_view *y, int32_t axis, int32_t axis_end,
                                   mcud_walk *outer, mcud_walk *inner)
{
    outer->ndim = inner->ndim = 0;
    outer->count = inner->count = 1;
    for (int32_t d = 0; d < y->ndim; d++) {
        mcud_walk *w = (d >= axis && d < axis_end) ? inner : outer;
        w->shape[w->ndim] = y->shape[d];
        w->xs[w->ndim] = x->stride[d];
        w->ys[w->ndim] = y->stride[d];
        w->count *= y->shape[d];
        w->ndim++;
    }
}

#endif
