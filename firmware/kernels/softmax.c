/* Softmax on views. The dimensions split into outer ones (one softmax each) and the reduced
 * range [axis, axis_end); both are walked with an odometer over the views' strides. */
#include <math.h>

#include "mcud_softmax.h"

typedef struct {
    int32_t ndim;
    int32_t shape[MCUD_MAX_DIMS];
    int32_t xs[MCUD_MAX_DIMS];
    int32_t ys[MCUD_MAX_DIMS];
    int32_t count;
} mcud_softmax_walk;

typedef struct {
    int32_t idx[MCUD_MAX_DIMS];
    int32_t xo;
    int32_t yo;
} mcud_softmax_pos;

static void split_dims(const mcud_view *x, const mcud_view *y, int32_t axis, int32_t axis_end,
                       mcud_softmax_walk *outer, mcud_softmax_walk *inner)
{
    outer->ndim = inner->ndim = 0;
    outer->count = inner->count = 1;
    for (int32_t d = 0; d < y->ndim; d++) {
        mcud_softmax_walk *w = (d >= axis && d < axis_end) ? inner : outer;
        w->shape[w->ndim] = y->shape[d];
        w->xs[w->ndim] = x->stride[d];
        w->ys[w->ndim] = y->stride[d];
        w->count *= y->shape[d];
        w->ndim++;
    }
}

static void start(mcud_softmax_pos *pos, int32_t xo, int32_t yo)
{
    for (int32_t d = 0; d < MCUD_MAX_DIMS; d++) {
        pos->idx[d] = 0;
    }
    pos->xo = xo;
    pos->yo = yo;
}

/* Advance to the next element; after the last one the position is back at the start. */
static void step(const mcud_softmax_walk *w, mcud_softmax_pos *pos)
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

void mcud_softmax_f32(const mcud_view *x, const mcud_view *y, const mcud_softmax_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    mcud_softmax_walk outer, inner;
    mcud_softmax_pos o, r;
    split_dims(x, y, p->axis, p->axis_end, &outer, &inner);
    start(&o, 0, 0);
    for (int32_t row = 0; row < outer.count; row++, step(&outer, &o)) {
        float max = xd[o.xo];
        start(&r, o.xo, o.yo);
        for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {
            max = xd[r.xo] > max ? xd[r.xo] : max;
        }
        float sum = 0.0f;
        for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {
            float e = expf(xd[r.xo] - max);
            yd[r.yo] = e;
            sum += e;
        }
        for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {
            yd[r.yo] = yd[r.yo] / sum;
        }
    }
}

#define SOFTMAX_Q(NAME, T)                                                                 \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_softmax_q_params *p)      \
    {                                                                                      \
        const T *xd = (const T *)x->data;                                                  \
        T *yd = (T *)y->data;                                                              \
        mcud_softmax_walk outer, inner;                                                    \
        mcud_softmax_pos o, r;                                                             \
        split_dims(x, y, p->axis, p->axis_end, &outer, &inner);                            \
        start(&o, 0, 0);                                                                   \
        for (int32_t row = 0; row < outer.count; row++, step(&outer, &o)) {                \
            int32_t max = xd[o.xo];                                                        \
            start(&r, o.xo, o.yo);                                                         \
            for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {                  \
                max = xd[r.xo] > max ? xd[r.xo] : max;                                     \
            }                                                                              \
            int64_t sum = 0;                                                               \
            for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {                  \
                sum += p->exp_table[max - (int32_t)xd[r.xo]];                              \
            }                                                                              \
            int64_t denom = sum << 16;                                                     \
            for (int32_t i = 0; i < inner.count; i++, step(&inner, &r)) {                  \
                int64_t e = p->exp_table[max - (int32_t)xd[r.xo]];                         \
                int64_t num = e * p->inv_out_scale;                                        \
                int64_t q = num / denom, rem2 = 2 * (num - q * denom);                     \
                q += (rem2 > denom || (rem2 == denom && (q & 1))) ? 1 : 0; /* half even */ \
                yd[r.yo] = (T)mcud_clamp((int32_t)q + p->out_zero_point, p->out_min,       \
                                         p->out_max);                                      \
            }                                                                              \
        }                                                                                  \
    }

SOFTMAX_Q(mcud_softmax_s8, int8_t)
SOFTMAX_Q(mcud_softmax_u8, uint8_t)
