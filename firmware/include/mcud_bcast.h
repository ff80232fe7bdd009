#ifndef MCUD_BCAST_H
#define MCUD_BCAST_H
#include "mcud.h"

/* The walk of the element-wise kernels of several operands with numpy broadcasting (binary.c,
 * compare.c, logical.c, prelu.c): the output is visited row by row, a row being the innermost
 * dimension after merging the dimensions every operand steps through with one stride; each
 * operand keeps its offset, a broadcast dimension having stride 0. Same-shape contiguous operands
 * make one row. */
#define MCUD_BCAST_MAX 9 /* operands, the output included */

typedef struct {
    int32_t count;                                  /* operands; the last is the output */
    int32_t ndim;                                   /* merged dimensions, >= 1 */
    int32_t shape[MCUD_MAX_DIMS];
    int32_t stride[MCUD_BCAST_MAX][MCUD_MAX_DIMS];
    int32_t index[MCUD_MAX_DIMS];
    int32_t off[MCUD_BCAST_MAX];
} mcud_bcast;

/* views[count - 1] is the output; every other view broadcasts to it. */
static inline void mcud_bcast_init(mcud_bcast *w, const mcud_view *const *views, int32_t count)
{
    const mcud_view *y = views[count - 1];
    int32_t nd = 0;
    w->count = count;
    for (int32_t d = 0; d < y->ndim; d++) {
        if (y->shape[d] == 1) {
            continue; /* extent 1 never moves an offset */
        }
        int32_t st[MCUD_BCAST_MAX];
        for (int32_t v = 0; v < count; v++) {
            int32_t vd = d - (y->ndim - views[v]->ndim);
            st[v] = (vd >= 0 && views[v]->shape[vd] != 1) ? views[v]->stride[vd] : 0;
        }
        int merge = nd > 0;
        for (int32_t v = 0; v < count && merge; v++) {
            merge = w->stride[v][nd - 1] == st[v] * y->shape[d];
        }
        if (merge) {
            w->shape[nd - 1] *= y->shape[d];
            for (int32_t v = 0; v < count; v++) {
                w->stride[v][nd - 1] = st[v];
            }
        } else {
            w->shape[nd] = y->shape[d];
            for (int32_t v = 0; v < count; v++) {
                w->stride[v][nd] = st[v];
            }
            nd++;
        }
    }
    if (nd == 0) { /* a scalar or all extents 1: one row of one element */
        w->shape[0] = 1;
        for (int32_t v = 0; v < count; v++) {
            w->stride[v][0] = 0;
        }
        nd = 1;
    }
    w->ndim = nd;
    for (int32_t d = 0; d < nd; d++) {
        w->index[d] = 0;
    }
    for (int32_t v = 0; v < count; v++) {
        w->off[v] = 0;
    }
}

/* Step to the next row; 0 when all rows are done. */
static inline int mcud_bcast_next(mcud_bcast *w)
{
    for (int32_t d = w->ndim - 2; d >= 0; d--) {
        if (++w->index[d] < w->shape[d]) {
            for (int32_t v = 0; v < w->count; v++) {
                w->off[v] += w->stride[v][d];
            }
            return 1;
        }
        w->index[d] = 0;
        for (int32_t v = 0; v < w->count; v++) {
            w->off[v] -= w->stride[v][d] * (w->shape[d] - 1);
        }
    }
    return 0;
}

/* The row's length and operand v's step along it. */
static inline int32_t mcud_bcast_len(const mcud_bcast *w)
{
    return w->shape[w->ndim - 1];
}

static inline int32_t mcud_bcast_step(const mcud_bcast *w, int32_t v)
{
    return w->stride[v][w->ndim - 1];
}

#endif
