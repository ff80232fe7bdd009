/* ArgMax and ArgMin on views: an odometer over the kept dimensions (x's strides and y's), and for each
 * position a walk along the axis that keeps the first extreme (ops/argmax.py). */
#include "mcud_argmax.h"
#include "mcud_walk.h"

static void plan(const mcud_view *x, const mcud_view *y, int32_t axis, mcud_walk *outer)
{
    outer->ndim = 0;
    outer->count = 1;
    int32_t yd = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d == axis) {
            continue;
        }
        outer->shape[outer->ndim] = x->shape[d];
        outer->xs[outer->ndim] = x->stride[d];
        outer->ys[outer->ndim] = y->stride[yd++];
        outer->count *= x->shape[d];
        outer->ndim++;
    }
}

static void store(const mcud_view *y, int32_t at, int32_t index, int32_t wide)
{
    if (wide) {
        ((int64_t *)y->data)[at] = index;
    } else {
        ((int32_t *)y->data)[at] = index;
    }
}

#define ARG(NAME, T, BETTER)                                                                                \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_arg_params *p)                             \
    {                                                                                                       \
        const T *xd = (const T *)x->data;                                                                   \
        const int32_t n = x->shape[p->axis], s = x->stride[p->axis];                                        \
        mcud_walk outer;                                                                                    \
        mcud_walk_pos o;                                                                                    \
        plan(x, y, p->axis, &outer);                                                                        \
        mcud_walk_start(&o, 0, 0);                                                                          \
        for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {                             \
            const T *row = xd + o.xo;                                                                       \
            T best = row[0];                                                                                \
            int32_t index = 0;                                                                              \
            for (int32_t i = 1; i < n; i++) {                                                               \
                T v = row[i * s];                                                                           \
                if (v BETTER best) {                                                                        \
                    best = v;                                                                               \
                    index = i;                                                                              \
                }                                                                                           \
            }                                                                                               \
            store(y, o.yo, index, p->wide);                                                                 \
        }                                                                                                   \
    }

ARG(mcud_argmax_f32, float, >)
ARG(mcud_argmin_f32, float, <)
ARG(mcud_argmax_s8, int8_t, >)
ARG(mcud_argmin_s8, int8_t, <)
