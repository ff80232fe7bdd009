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

void mcud_elu_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, v < 0.0f ? expm1f(v) : v)
}

/* ---- math functions of one input (mcudeploy/ops/unary.py) ---- */

void mcud_abs_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, fabsf(v))
}

void mcud_neg_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, -v)
}

void mcud_exp_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, expf(v))
}

void mcud_log_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, logf(v))
}

void mcud_sin_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, sinf(v))
}

void mcud_cos_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, cosf(v))
}

void mcud_floor_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, floorf(v))
}

void mcud_ceil_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, ceilf(v))
}

/* half to even (the default rounding mode), as TFLite's RoundToNearest */
void mcud_round_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, rintf(v))
}

void mcud_square_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, v * v)
}

void mcud_rsqrt_f32(const mcud_view *x, const mcud_view *y)
{
    UNARY_BODY(float, float, 1.0f / sqrtf(v))
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

/* ---- TFLite models' int16 activations (mcudeploy/ops/tflite_tables.py) ---- */

/* out_zero_point + x - in_zero_point requantized (TFLite's double rounding) by one multiplier at and above
 * the input's zero point and another below, clamped: RELU, RELU6, LEAKY_RELU, ABS */
static int32_t piecewise(int32_t v, const mcud_piecewise_s16_params *p)
{
    const int32_t d = v - p->in_zero_point;
    const int32_t r = d >= 0 ? mcud_requant_tfl(d, p->pos_mult, p->pos_shift)
                             : mcud_requant_tfl(d, p->neg_mult, p->neg_shift);
    return mcud_clamp(p->out_zero_point + r, p->out_min, p->out_max);
}

void mcud_piecewise_s16(const mcud_view *x, const mcud_view *y, const mcud_piecewise_s16_params *p)
{
    UNARY_BODY(int16_t, int16_t, (int16_t)piecewise(v, p))
}

/* TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h): sigmoid(i / 24) in Q0.16 as its
 * authors tuned it (mcudeploy/ops/tflite_tables.py SIGMOID_Q16 holds the same numbers; a test keeps them
 * equal) */
static const uint16_t sigmoid_q16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535
};

/* the input on the table's scale: (x * mult + half) >> shift */
static int32_t to_table(int32_t v, const mcud_sigmoid_s16_params *p)
{
    return (v * p->mult + (p->shift > 0 ? 1 << (p->shift - 1) : 0)) >> p->shift;
}

/* TFLite's int16 LOGISTIC: the table interpolated over 9 fraction bits, symmetric about 0.5 */
static int16_t sigmoid_s16(int32_t v, const mcud_sigmoid_s16_params *p)
{
    const int32_t t = to_table(v, p);
    const uint32_t a = (uint32_t)(t < 0 ? -t : t);
    uint32_t r = 0x7FFFu << 10;
    if ((a >> 9) < 255u) {
        const uint32_t ua = sigmoid_q16[a >> 9], ub = sigmoid_q16[(a >> 9) + 1];
        r = (ua << 9) + (a & 0x1FFu) * (ub - ua);
    }
    r = t >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

/* TFLite's int16 TANH: 2 sigmoid(2x) - 1 from the same table, 8 fraction bits */
static int16_t tanh_s16(int32_t v, const mcud_sigmoid_s16_params *p)
{
    const int32_t t = to_table(v, p);
    const uint32_t a = (uint32_t)(t < 0 ? -t : t);
    int32_t r = 0xFFFF << 8;
    if ((a >> 8) < 255u) {
        const uint32_t ua = sigmoid_q16[a >> 8], ub = sigmoid_q16[(a >> 8) + 1];
        r = (int32_t)((ua << 8) + (a & 0xFFu) * (ub - ua));
    }
    r = t >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(r >> 8);
}

void mcud_sigmoid_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_sigmoid_s16_params *p)
{
    UNARY_BODY(int16_t, int16_t, sigmoid_s16(v, p))
}

void mcud_tanh_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_sigmoid_s16_params *p)
{
    UNARY_BODY(int16_t, int16_t, tanh_s16(v, p))
}
