/* Sum, Mean, Max and Min of n inputs on views. The output is walked in rows, a row being the
 * trailing dimensions that every operand (each input and y) steps through with one stride, and
 * each row in chunks of MCUD_VARIADIC_CHUNK elements: a chunk's accumulator takes input 0, then
 * each further input in turn, then goes to y. An input's place in a chunk is found once per chunk
 * (mcud_bcast_offset), so the cost per element is one load and one fold per input. */
#include "mcud_variadic.h"

/* Element stride of v along y's dimension d (0 where v broadcasts or lacks it). */
static int32_t stride_along(const mcud_view *v, const mcud_view *y, int32_t d)
{
    int32_t vd = d - (y->ndim - v->ndim);
    return (vd >= 0 && v->shape[vd] != 1) ? v->stride[vd] : 0;
}

static const mcud_view *operand(const mcud_view *const *xs, int32_t n, const mcud_view *y, int32_t i)
{
    return i < n ? xs[i] : y;
}

/* The length of a row: y's trailing extents, merged while every operand keeps one stride. */
static int32_t row_length(const mcud_view *const *xs, int32_t n, const mcud_view *y)
{
    if (y->ndim == 0) {
        return 1;
    }
    int32_t last = y->ndim - 1, len = y->shape[last];
    for (int32_t d = last - 1; d >= 0; d--) {
        if (y->shape[d] == 1) {
            continue;
        }
        for (int32_t i = 0; i <= n; i++) {
            const mcud_view *v = operand(xs, n, y, i);
            if (stride_along(v, y, d) != stride_along(v, y, last) * len) {
                return len;
            }
        }
        len *= y->shape[d];
    }
    return len;
}

/* Calls BODY(i, px, s, m) for each input i, with px its first element in this chunk (typed T), s
 * its step and m the chunk's length; the chunk starts at flat output index `at`. */
#define VARIADIC_WALK(T, INIT, FOLD, STORE)                                                      \
    int32_t len = row_length(xs, n, y), total = mcud_numel(y), last = y->ndim - 1;               \
    for (int32_t at = 0; at < total;) {                                                          \
        int32_t in_row = at % len, m = len - in_row;                                             \
        m = m < MCUD_VARIADIC_CHUNK ? m : MCUD_VARIADIC_CHUNK;                                   \
        for (int32_t i = 0; i < n; i++) {                                                        \
            const T *px = (const T *)xs[i]->data + mcud_bcast_offset(xs[i], y->shape, y->ndim, at); \
            int32_t s = last >= 0 ? stride_along(xs[i], y, last) : 0;                            \
            if (i == 0) {                                                                        \
                for (int32_t j = 0; j < m; j++) {                                                \
                    INIT;                                                                        \
                }                                                                                \
            } else {                                                                             \
                for (int32_t j = 0; j < m; j++) {                                                \
                    FOLD;                                                                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        int32_t sy = last >= 0 ? stride_along(y, y, last) : 0;                                   \
        int32_t yo = mcud_bcast_offset(y, y->shape, y->ndim, at);                                \
        for (int32_t j = 0; j < m; j++) {                                                        \
            STORE;                                                                               \
        }                                                                                        \
        at += m;                                                                                 \
    }

void mcud_variadic_f32(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_f32_params *p)
{
    float acc[MCUD_VARIADIC_CHUNK];
    float *yd = (float *)y->data;
    const int32_t op = p->op;
    const float count = (float)n;
    VARIADIC_WALK(float,
                  acc[j] = px[j * s],
                  {
                      float v = px[j * s];
                      acc[j] = op == MCUD_VARIADIC_MAX ? (v > acc[j] ? v : acc[j])
                             : op == MCUD_VARIADIC_MIN ? (v < acc[j] ? v : acc[j]) : acc[j] + v;
                  },
                  yd[yo + j * sy] = mcud_clampf(p->mean ? acc[j] / count : acc[j], p->act_min, p->act_max))
}

/* acc / 2^shift rounded half to even (as QuantizeLinear rounds), + y_zero, clamped. */
static int8_t variadic_s8_out(int64_t acc, const mcud_variadic_s8_params *p)
{
    int64_t odd = (acc >> p->shift) & 1;
    int32_t v = (int32_t)((acc + ((int64_t)1 << (p->shift - 1)) - 1 + odd) >> p->shift) + p->y_zero;
    return (int8_t)mcud_clamp(v, p->act_min, p->act_max);
}

void mcud_variadic_s8(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_s8_params *p)
{
    int64_t acc[MCUD_VARIADIC_CHUNK];
    int8_t *yd = (int8_t *)y->data;
    const int32_t op = p->op;
    VARIADIC_WALK(int8_t,
                  acc[j] = (int64_t)((int32_t)px[j * s] - p->zero[0]) * p->mult[0],
                  {
                      int64_t v = (int64_t)((int32_t)px[j * s] - p->zero[i]) * p->mult[i];
                      acc[j] = op == MCUD_VARIADIC_MAX ? (v > acc[j] ? v : acc[j])
                             : op == MCUD_VARIADIC_MIN ? (v < acc[j] ? v : acc[j]) : acc[j] + v;
                  },
                  yd[yo + j * sy] = variadic_s8_out(acc[j], p))
}

#define ADD_N_SCALED(X) mcud_requant_tfl(((int32_t)(X) - p->zero) * (1 << 20), p->mult, p->shift)

void mcud_add_n_s8_tfl(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_add_n_s8_tfl_params *p)
{
    int32_t acc[MCUD_VARIADIC_CHUNK];
    int8_t *yd = (int8_t *)y->data;
    VARIADIC_WALK(int8_t,
                  acc[j] = (int32_t)((uint32_t)p->base + (uint32_t)ADD_N_SCALED(px[j * s])),
                  acc[j] = (int32_t)((uint32_t)acc[j] + (uint32_t)ADD_N_SCALED(px[j * s])),
                  yd[yo + j * sy] = (int8_t)mcud_clamp(mcud_requant_tfl(acc[j], p->y_mult, p->y_shift) + p->y_zero,
                                                       -128, 127))
}

#define VARIADIC_INT(NAME, T)                                                                   \
    void NAME(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p) \
    {                                                                                           \
        T acc[MCUD_VARIADIC_CHUNK];                                                             \
        T *yd = (T *)y->data;                                                                   \
        const int32_t is_max = p->op == MCUD_VARIADIC_MAX;                                      \
        VARIADIC_WALK(T,                                                                        \
                      acc[j] = px[j * s],                                                       \
                      {                                                                         \
                          T v = px[j * s];                                                      \
                          acc[j] = is_max ? (v > acc[j] ? v : acc[j]) : (v < acc[j] ? v : acc[j]); \
                      },                                                                        \
                      yd[yo + j * sy] = acc[j])                                                 \
    }

VARIADIC_INT(mcud_variadic_int8, int8_t)
VARIADIC_INT(mcud_variadic_uint8, uint8_t)
VARIADIC_INT(mcud_variadic_int16, int16_t)
VARIADIC_INT(mcud_variadic_int32, int32_t)
VARIADIC_INT(mcud_variadic_int64, int64_t)
