/* Softmax on views. The dimensions split into outer ones (one softmax each) and the reduced
 * range [axis, axis_end); both are walked with an odometer over the views' strides. */
#include <math.h>

#include "mcud_softmax.h"
#include "mcud_walk.h"

static void split_dims(const mcud_view *x, const mcud_view *y, int32_t axis, int32_t axis_end,
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

/* Every kernel is one skeleton. Per softmax (each position of the outer dimensions): max, the
 * row's largest x (of type M); the sum (of type S) of TERM over the row, each term also stored in y
 * when KEEP (f32's exponentials, which OUT reads back); the statements ROW, once; then each
 * y = OUT. TERM and OUT are expressions of the element at r (xd[r.xo], yd[r.yo]), of max, sum and
 * what ROW declares; p is the kernel's parameters. */
#define SOFTMAX(NAME, PARAMS, T, M, S, TERM, KEEP, ROW, OUT)                                   \
    void NAME(const mcud_view *x, const mcud_view *y, const PARAMS *p)                         \
    {                                                                                          \
        const T *xd = (const T *)x->data;                                                      \
        T *yd = (T *)y->data;                                                                  \
        mcud_walk outer, inner;                                                                \
        mcud_walk_pos o, r;                                                                    \
        split_dims(x, y, p->axis, p->axis_end, &outer, &inner);                                \
        mcud_walk_start(&o, 0, 0);                                                             \
        for (int32_t row = 0; row < outer.count; row++, mcud_walk_step(&outer, &o)) {          \
            M max = xd[o.xo];                                                                  \
            mcud_walk_start(&r, o.xo, o.yo);                                                   \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                max = xd[r.xo] > max ? xd[r.xo] : max;                                         \
            }                                                                                  \
            S sum = 0;                                                                         \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                const S e = TERM;                                                              \
                if (KEEP) {                                                                    \
                    yd[r.yo] = (T)e;                                                           \
                }                                                                              \
                sum += e;                                                                      \
            }                                                                                  \
            ROW                                                                                \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                yd[r.yo] = (T)(OUT);                                                           \
            }                                                                                  \
        }                                                                                      \
    }

SOFTMAX(mcud_softmax_f32, mcud_softmax_params, float, float, float, expf(xd[r.xo] - max), 1, ,
        yd[r.yo] / sum)

/* ---- ONNX models: exp from a table of 256, the share rounded half to even ---- */

/* round(e * inv_out_scale / denom) half to even, + the zero point, clamped; denom = the row's sum * 2^16 */
static int32_t q_out(const mcud_softmax_q_params *p, int64_t e, int64_t denom)
{
    int64_t num = e * p->inv_out_scale;
    int64_t q = num / denom, rem2 = 2 * (num - q * denom);
    q += (rem2 > denom || (rem2 == denom && (q & 1))) ? 1 : 0; /* half even */
    return mcud_clamp((int32_t)q + p->out_zero_point, p->out_min, p->out_max);
}

#define SOFTMAX_Q(NAME, T)                                                                     \
    SOFTMAX(NAME, mcud_softmax_q_params, T, int32_t, int64_t, p->exp_table[max - (int32_t)xd[r.xo]], 0, \
            const int64_t denom = sum << 16;, q_out(p, p->exp_table[max - (int32_t)xd[r.xo]], denom))

SOFTMAX_Q(mcud_softmax_s8, int8_t)
SOFTMAX_Q(mcud_softmax_u8, uint8_t)

/* ---- TFLite models: gemmlowp's fixed point ---- */

/* doubling high multiply, round half up (gemmlowp's SaturatingRoundingDoublingHighMul) */
static int32_t fx_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

/* x / 2^e rounded half away from zero (RoundingDivideByPOT) */
static int32_t fx_div_pot(int32_t x, int32_t e)
{
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0 ? 1 : 0) ? 1 : 0);
}

/* x * 2^e saturated (SaturatingRoundingMultiplyByPOT, e > 0) */
static int32_t fx_shl_sat(int32_t x, int32_t e)
{
    int32_t threshold = (int32_t)(((uint32_t)1 << (31 - e)) - 1);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << e);
}

static int32_t fx_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static int32_t fx_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* 1 / sum of a Q12.19 sum, as a Q0.31 scale and the bits above one (TFLite's GetReciprocal:
 * gemmlowp's one_over_one_plus_x_for_x_in_0_1, three Newton-Raphson steps) */
static int32_t fx_reciprocal(int32_t sum, int32_t *over)
{
    int32_t headroom = __builtin_clz((uint32_t)sum);
    *over = 12 - headroom;
    int32_t a = (int32_t)(((uint32_t)sum << headroom) - ((uint32_t)1 << 31));
    int64_t s = (int64_t)a + INT32_MAX;
    int32_t half = (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
    int32_t x = fx_add(1515870810, fx_mul(half, -1010580540));
    for (int32_t i = 0; i < 3; i++) {
        x = fx_add(x, fx_shl_sat(fx_mul(x, fx_sub(1 << 29, fx_mul(half, x))), 2));
    }
    return fx_shl_sat(x, 1);
}

SOFTMAX(mcud_softmax_s8_tfl, mcud_softmax_tfl_params, int8_t, int32_t, int32_t,
        p->exp_q19[max - (int32_t)xd[r.xo]], 0, int32_t over; const int32_t scale = fx_reciprocal(sum, &over);,
        mcud_clamp(fx_div_pot(fx_mul(scale, p->exp_q31[max - (int32_t)xd[r.xo]]), over + 23) - 128, -128, 127))
