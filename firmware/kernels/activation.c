/* Unary activations. Each kernel walks x and y through their strides (an odometer over the
 * dimensions); dense views take a flat loop instead. x and y have the same shape. */
#include <math.h>

#include "mcud_activation.h"

#define UNARY_BODY(XT, YT, EXPR)                                                           \
    const XT *xd = (const XT *)x->data;                                                    \
    YT *yd = (YT *)y->data;                                                                \
    int32_t n = mcud_numel(y);                                                             \
    if (mcud_is_contiguous(x) && mcud_is_contiguous(y)) {                                  \
        for (int32_t i = 0; i < n; i++) {                                                  \
            XT v = xd[i];                                                                  \
            yd[i] = (EXPR);                                                                \
        }                                                                                  \
        return;                                                                            \
    }                                                                                      \
    int32_t idx[MCUD_MAX_DIMS] = {0};                                                      \
    int32_t xo = 0, yo = 0;                                                                \
    for (int32_t i = 0; i < n; i++) {                                                      \
        XT v = xd[xo];                                                                     \
        yd[yo] = (EXPR);                                                                   \
        for (int32_t d = y->ndim - 1; d >= 0; d--) {                                       \
            xo += x->stride[d];                                                            \
            yo += y->stride[d];                                                            \
            if (++idx[d] < y->shape[d]) {                                                  \
                break;                                                                     \
            }                                                                              \
            xo -= x->stride[d] * y->shape[d];                                              \
            yo -= y->stride[d] * y->shape[d];                                              \
            idx[d] = 0;                                                                    \
        }                                                                                  \
    }

static float clampf(float v, float lo, float hi)
{
    /* max then min, as ONNX Clip: with lo > hi every output is hi */
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

void mcud_relu_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, v > 0.0f ? v : 0.0f)
}

void mcud_clip_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p)
{
    UNARY_BODY(float, float, clampf(v, p->alpha, p->beta))
}

void mcud_leaky_relu_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p)
{
    UNARY_BODY(float, float, v >= 0.0f ? v : v * p->alpha)
}

void mcud_sigmoid_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, 1.0f / (1.0f + expf(-v)))
}

void mcud_tanh_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, tanhf(v))
}

void mcud_hard_sigmoid_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p)
{
    UNARY_BODY(float, float, clampf(v * p->alpha + p->beta, 0.0f, 1.0f))
}

void mcud_hard_swish_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, v * clampf(v * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f))
}

void mcud_erf_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, erff(v))
}

void mcud_gelu_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)))
}

void mcud_gelu_tanh_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v))))
}

void mcud_sqrt_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, sqrtf(v))
}

/* x * Sigmoid(alpha x): Sigmoid's expression, then the product (SiLU as exported, Mul(x, Sigmoid(x)),
 * fused: the same float operations in one pass) */
void mcud_swish_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p)
{
    UNARY_BODY(float, float, v * (1.0f / (1.0f + expf(-(v * p->alpha)))))
}

void mcud_lut_s8(const mcud_view *x, const mcud_view *y, const mcud_lut_s8_params *p)
{
    const int8_t *table = p->table + 128;
    if (mcud_is_contiguous(x) && mcud_is_contiguous(y)) {
        /* four codes a turn (all read before any is written: y may be x), a quarter of the loop's cost */
        const int8_t *xd = (const int8_t *)x->data;
        int8_t *yd = (int8_t *)y->data;
        int32_t n = mcud_numel(y), i = 0;
        for (; i + 4 <= n; i += 4) {
            int8_t a = table[xd[i]], b = table[xd[i + 1]], c = table[xd[i + 2]], d = table[xd[i + 3]];
            yd[i] = a;
            yd[i + 1] = b;
            yd[i + 2] = c;
            yd[i + 3] = d;
        }
        for (; i < n; i++) {
            yd[i] = table[xd[i]];
        }
        return;
    }
    UNARY_BODY(int8_t, int8_t, table[v])
}

void mcud_lut_u8(const mcud_view *x, const mcud_view *y, const mcud_lut_u8_params *p)
{
    const uint8_t *table = p->table;
    UNARY_BODY(uint8_t, uint8_t, table[v])
}
