/* Element-wise arithmetic with broadcasting, on views.
 *
 * A walker visits the output row by row (a row is the innermost dimension after merging
 * dimensions every operand can step through with one stride), keeping each operand's offset;
 * a broadcast dimension has stride 0. Same-shape contiguous operands make one row. */
#include <math.h>

#include "mcud_bcast.h"
#include "mcud_binary.h"
#include "mcud_mve.h"

#define BINARY_F32(NAME, EXPR)                                                                     \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p) \
    {                                                                                              \
        const mcud_view *views[3] = {a, b, y};                                                     \
        mcud_bcast w;                                                                               \
        mcud_bcast_init(&w, views, 3);                                                                   \
        int32_t len = w.shape[w.ndim - 1];                                                         \
        int32_t sa = w.stride[0][w.ndim - 1], sb = w.stride[1][w.ndim - 1];                        \
        int32_t sy = w.stride[2][w.ndim - 1];                                                      \
        do {                                                                                       \
            const float *pa = (const float *)a->data + w.off[0];                                   \
            const float *pb = (const float *)b->data + w.off[1];                                   \
            float *py = (float *)y->data + w.off[2];                                               \
            for (int32_t i = 0; i < len; i++) {                                                    \
                float va = pa[i * sa], vb = pb[i * sb];                                            \
                py[i * sy] = mcud_clampf(EXPR, p->act_min, p->act_max);                            \
            }                                                                                      \
        } while (mcud_bcast_next(&w));                                                                   \
    }

BINARY_F32(mcud_add_f32, va + vb)
BINARY_F32(mcud_sub_f32, va - vb)
BINARY_F32(mcud_mul_f32, va * vb)
BINARY_F32(mcud_div_f32, va / vb)
BINARY_F32(mcud_pow_f32, powf(va, vb))

/* TFLite's float operators that take no activation (no clamp). FLOOR_DIV divides in double. */
#define BINARY_F32_RAW(NAME, EXPR)                                                                 \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y)                         \
    {                                                                                              \
        const mcud_view *views[3] = {a, b, y};                                                     \
        mcud_bcast w;                                                                              \
        mcud_bcast_init(&w, views, 3);                                                             \
        int32_t len = mcud_bcast_len(&w);                                                          \
        int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2); \
        do {                                                                                       \
            const float *pa = (const float *)a->data + w.off[0];                                   \
            const float *pb = (const float *)b->data + w.off[1];                                   \
            float *py = (float *)y->data + w.off[2];                                               \
            for (int32_t i = 0; i < len; i++) {                                                    \
                float va = pa[i * sa], vb = pb[i * sb];                                            \
                py[i * sy] = EXPR;                                                                 \
            }                                                                                      \
        } while (mcud_bcast_next(&w));                                                             \
    }

static float squared_difference(float a, float b)
{
    float d = a - b;
    return d * d;
}

/* fmodf, moved onto the divisor's side as TFLite's FloorMod does */
static float floor_mod(float a, float b)
{
    float r = fmodf(a, b);
    return (r != 0.0f && ((b < 0.0f) != (r < 0.0f))) ? r + b : r;
}

BINARY_F32_RAW(mcud_squared_difference_f32, squared_difference(va, vb))
BINARY_F32_RAW(mcud_floor_div_f32, (float)floor((double)va / (double)vb))
BINARY_F32_RAW(mcud_floor_mod_f32, floor_mod(va, vb))

/* acc / 2^shift rounded half to even (as QuantizeLinear rounds), + y_zero, clamped. */
static int8_t sum_s8_out(int64_t acc, const mcud_sum_s8_params *p)
{
    int64_t odd = (acc >> p->shift) & 1;
    int32_t v = (int32_t)((acc + ((int64_t)1 << (p->shift - 1)) - 1 + odd) >> p->shift) + p->y_zero;
    return (int8_t)mcud_clamp(v, p->act_min, p->act_max);
}

#if MCUD_HAVE_MVE
static int32_t same_dense(const mcud_view *a, const mcud_view *b, const mcud_view *y);
static int32_t dense_count(const mcud_view *v);

/* Two dense int8 operands of one shape on a core with Helium (an ONNX Add or Sub): four elements a step in
 * 32-bit lanes, the last step predicated, the bits of sum_s8_out without 64-bit lanes. Each multiplier is
 * split as m = mh 2^16 + ml (ml in [0, 2^16)), so with d = x - zero (9 bits) the sum is H 2^16 + L, H and L
 * exact in 32 bits; carrying L's high half gives acc = H' 2^16 + L' with L' in [0, 2^16). Rounding acc / 2^shift
 * half to even needs only floor(acc / 2^16) = H' and whether L' is nonzero (a sticky bit): T = 2 H' + sticky
 * rounds by 2^(shift - 15) to the same value (the half lies above the sticky bit for shift >= 17), and T stays
 * below 2^26 (shift <= 46 keeps T plus the half in 32 bits). */
MCUD_INLINE int32x4_t sum_s8_pair_lanes(int32x4_t xa, int32x4_t xb, const int32_t *c, int32_t s,
                                         int32x4_t vlo, int32x4_t vhi)
{
    const int32x4_t da = vsubq_n_s32(xa, c[0]), db = vsubq_n_s32(xb, c[1]);
    const int32x4_t l = vmlaq_n_s32(vmulq_n_s32(da, c[4]), db, c[5]);
    const int32x4_t h = vaddq_s32(vmlaq_n_s32(vmulq_n_s32(da, c[2]), db, c[3]), vshrq_n_s32(l, 16));
    const int32x4_t sticky = vshrq_n_s32(vaddq_n_s32(vandq_s32(l, vdupq_n_s32(0xFFFF)), 0xFFFF), 16);
    const int32x4_t t = vaddq_s32(vaddq_s32(h, h), sticky);
    const int32x4_t odd = vandq_s32(vshlq_r_s32(t, -s), vdupq_n_s32(1));
    const int32x4_t q = vshlq_r_s32(vaddq_s32(vaddq_n_s32(t, c[6]), odd), -s);
    return vminq_s32(vmaxq_s32(vaddq_n_s32(q, c[7]), vlo), vhi);
}

static __attribute__((noinline)) void sum_s8_pair_mve(const int8_t *pa, const int8_t *pb, int8_t *py, int32_t len,
                                                      const int32_t *zero, const int32_t *mult,
                                                      const mcud_sum_s8_params *p)
{
    const int32_t s = p->shift - 15;
    /* za, zb, mha, mhb, mla, mlb, the half less one, the output zero point */
    const int32_t c[8] = {zero[0], zero[1], mult[0] >> 16, mult[1] >> 16, mult[0] & 0xFFFF, mult[1] & 0xFFFF,
                          ((int32_t)1 << (s - 1)) - 1, p->y_zero};
    const int32x4_t vlo = vdupq_n_s32(p->act_min), vhi = vdupq_n_s32(p->act_max);
    int32_t i = 0;
    for (; i + 4 <= len; i += 4) { /* whole vectors unpredicated */
        vstrbq_s32(py + i, sum_s8_pair_lanes(vldrbq_s32(pa + i), vldrbq_s32(pb + i), c, s, vlo, vhi));
    }
    if (i < len) {
        const mve_pred16_t pr = vctp32q((uint32_t)(len - i));
        vstrbq_p_s32(py + i, sum_s8_pair_lanes(vldrbq_z_s32(pa + i, pr), vldrbq_z_s32(pb + i, pr), c, s, vlo, vhi),
                     pr);
    }
}
#endif

void mcud_sum_s8(const mcud_view *x0, const mcud_view *x1, const mcud_view *x2, const mcud_view *x3,
                 const mcud_view *x4, const mcud_view *x5, const mcud_view *x6, const mcud_view *x7,
                 const mcud_view *y, const mcud_sum_s8_params *p)
{
    const mcud_view *xs[MCUD_SUM_MAX_INPUTS] = {x0, x1, x2, x3, x4, x5, x6, x7};
    const mcud_view *views[MCUD_BCAST_MAX];
    int32_t zero[MCUD_SUM_MAX_INPUTS], mult[MCUD_SUM_MAX_INPUTS];
    int32_t n = 0;
    for (int32_t i = 0; i < MCUD_SUM_MAX_INPUTS; i++) {
        if (xs[i] != NULL) { /* parameters follow the inputs' slots */
            views[n] = xs[i];
            zero[n] = p->zero[i];
            mult[n] = p->mult[i];
            n++;
        }
    }
    views[n] = y;
#if MCUD_HAVE_MVE
    if (n == 2 && p->shift >= 17 && p->shift <= 46 && same_dense(views[0], views[1], y)) {
        sum_s8_pair_mve((const int8_t *)views[0]->data, (const int8_t *)views[1]->data, (int8_t *)y->data,
                        dense_count(y), zero, mult, p);
        return;
    }
#endif
    mcud_bcast w;
    mcud_bcast_init(&w, views, n + 1);
    int32_t last = w.ndim - 1, len = w.shape[last];
    do {
        int8_t *py = (int8_t *)y->data + w.off[n];
        int32_t sy = w.stride[n][last];
        if (n == 2) {
            const int8_t *pa = (const int8_t *)views[0]->data + w.off[0];
            const int8_t *pb = (const int8_t *)views[1]->data + w.off[1];
            int32_t sa = w.stride[0][last], sb = w.stride[1][last];
            for (int32_t i = 0; i < len; i++) {
                int64_t acc = (int64_t)((int32_t)pa[i * sa] - zero[0]) * mult[0]
                            + (int64_t)((int32_t)pb[i * sb] - zero[1]) * mult[1];
                py[i * sy] = sum_s8_out(acc, p);
            }
        } else {
            for (int32_t i = 0; i < len; i++) {
                int64_t acc = 0;
                for (int32_t v = 0; v < n; v++) {
                    int32_t x = ((const int8_t *)views[v]->data)[w.off[v] + i * w.stride[v][last]];
                    acc += (int64_t)(x - zero[v]) * mult[v];
                }
                py[i * sy] = sum_s8_out(acc, p);
            }
        }
    } while (mcud_bcast_next(&w));
}

/* One row of a * b where b is one value (a squeeze-excite scale broadcast over H x W), the shift in
 * [33, 62] (the usual case): one 32x32->64 multiply and the high word per element. Not inlined: a
 * function of its own keeps every parameter in a register. */
static __attribute__((noinline)) void mul_s8_row_scalar(const int8_t *pa, int32_t a_zero, int32_t vb,
                                                                     int8_t *py, int32_t len,
                                                                     const mcud_mul_s8_params *p, int32_t r,
                                                                     int32_t half)
{
    /* the parameters in registers: a store through py may alias *p as far as C knows */
    const int32_t mult = p->mult, y_zero = p->y_zero, lo = p->act_min, hi = p->act_max;
    if (lo == -128 && hi == 127) { /* no fused activation: the clamp is one saturation (SSAT) */
        for (int32_t i = 0; i < len; i++) {
            int32_t v = mcud_requant_hi_r(((int32_t)pa[i] - a_zero) * vb, mult, r, half) + y_zero;
            py[i] = (int8_t)mcud_sat8(v);
        }
        return;
    }
    for (int32_t i = 0; i < len; i++) {
        int32_t v = mcud_requant_hi_r(((int32_t)pa[i] - a_zero) * vb, mult, r, half) + y_zero;
        py[i] = (int8_t)mcud_clamp(v, lo, hi);
    }
}

#if MCUD_HAVE_MVE
/* One row of int8 Mul on a core with Helium: four elements a step in 32-bit lanes, every step predicated (VCTP:
 * no scalar tail). b is a row (bcast 0) or one value vb = b - b_zero (bcast 1, b not read); the product
 * (a - a_zero)(b - b_zero) fits 17 bits. Its requantization by kind (a constant at every call):
 * 3, ONNX's with the shift in [33, 62] (mcud_requant_hi_r: the product's high and low words by VMULH and VMUL,
 * the tie to even where the low word is 0, a truncating shift by r = shift - 32); 4, ONNX's with the shift s in
 * [17, 32] (mcud_requant: the 48-bit product P as its high and low words, floor(P / 2^s) = hi << (32 - s) | lo >> s,
 * below 2^31 in magnitude for s >= 17, plus 1 where the half bit of lo is set and either a lower bit or the
 * floor's lowest is: half to even); 0, 1, 2, TFLite's
 * MultiplyByQuantizedMultiplier with the shift above, at or below 31 (mcud_mve_tfl_kind: VQRDMULH, exact as the
 * multiplier is never -2^31, then VRSHL rounding half away from zero after one less on a negative value; the
 * left shift below 31 wraps as the scalar one, and the kernel takes it only for shifts of 17 or more, where
 * 2^17 * 2^14 does not overflow). Then the zero point and the clamp to [lo, hi] (the fused activation). */
MCUD_INLINE void mul_s8_row_mve_k(const int8_t *pa, const int8_t *pb, int8_t *py, int32_t len, int32_t za,
                                  int32_t zb, int32_t vb, int32_t mult, int32_t shift, int32_t zy, int32_t lo,
                                  int32_t hi, const int bcast, const int kind)
{
    const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi), vmult = vdupq_n_s32(mult);
    const int32_t r = shift - 32, half = kind == 3 ? (int32_t)1 << (r - 1) : 0, sh = 31 - shift;
    const int32_t up = 32 - shift, down = 1 - shift; /* kind 4: hi's left shift, lo's right shift by s - 1 */
    /* kind 4: lo's bits below the half */
    const uint32x4_t below = vdupq_n_u32(kind == 4 ? ((uint32_t)1 << (shift - 1)) - 1u : 0u);
    for (int32_t i = 0; i < len; i += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)(len - i));
        const int32x4_t da = vsubq_n_s32(vldrbq_z_s32(pa + i, pr), za);
        const int32x4_t acc = bcast ? vmulq_n_s32(da, vb) : vmulq_s32(da, vsubq_n_s32(vldrbq_z_s32(pb + i, pr), zb));
        int32x4_t q;
        if (kind == 3) {
            int32x4_t h = vmulhq_s32(acc, vmult);
            const int32x4_t odd = vandq_s32(vmvnq_s32(vshlq_r_s32(h, -r)), vdupq_n_s32(1));
            /* less odd where the low word is 0: CLZ is 32 (>> 5: 1) there only. Not VSUB predicated on VCMP, whose
               RTL GCC 12's combine pass fails on at -Os and -Og (an internal compiler error). */
            h = vsubq_s32(h, vandq_s32(odd, vshrq_n_s32(vclzq_s32(vmulq_n_s32(acc, mult)), 5)));
            q = vshlq_r_s32(vaddq_n_s32(h, half), -r);
        } else if (kind == 4) {
            const uint32x4_t lo = vreinterpretq_u32_s32(vmulq_n_s32(acc, mult));
            const uint32x4_t t = vshlq_r_u32(lo, down); /* lo >> (s - 1): the half in bit 0 */
            const int32x4_t fl = vorrq_s32(vshlq_r_s32(vmulhq_s32(acc, vmult), up),
                                           vreinterpretq_s32_u32(vshrq_n_u32(t, 1))); /* floor(P / 2^s) */
            /* bit s - 1 of (lo & below) + below: 1 where a bit below the half is set */
            const uint32x4_t sticky = vshlq_r_u32(vaddq_u32(vandq_u32(lo, below), below), down);
            const uint32x4_t round = vandq_u32(vandq_u32(t, vorrq_u32(vreinterpretq_u32_s32(fl), sticky)),
                                               vdupq_n_u32(1));
            q = vaddq_s32(fl, vreinterpretq_s32_u32(round));
        } else {
            q = mcud_mve_tfl_kind(acc, mult, sh, kind);
        }
        vstrbq_p_s32(py + i, vminq_s32(vmaxq_s32(vaddq_n_s32(q, zy), vlo), vhi), pr);
    }
}

/* mul_s8_row_mve_k with its two constants taken from the parameters: a function of its own (not inlined), its
 * loops' constants in registers; kind as in mul_s8_row_mve_k, bcast whether b is the one value vb. */
static __attribute__((noinline)) void mul_s8_row_mve(const int8_t *pa, const int8_t *pb, int8_t *py, int32_t len,
                                                     int32_t za, int32_t zb, int32_t vb, const mcud_mul_s8_params *p,
                                                     int32_t bcast, int32_t kind)
{
    const int32_t mult = p->mult, shift = p->shift, zy = p->y_zero, lo = p->act_min, hi = p->act_max;
#define MUL_S8_ROW_MVE(BC, K) mul_s8_row_mve_k(pa, pb, py, len, za, zb, vb, mult, shift, zy, lo, hi, (BC), (K))
    if (bcast) {
        switch (kind) {
        case 4: MUL_S8_ROW_MVE(1, 4); break;
        case 3: MUL_S8_ROW_MVE(1, 3); break;
        case 2: MUL_S8_ROW_MVE(1, 2); break;
        case 1: MUL_S8_ROW_MVE(1, 1); break;
        default: MUL_S8_ROW_MVE(1, 0); break;
        }
    } else {
        switch (kind) {
        case 4: MUL_S8_ROW_MVE(0, 4); break;
        case 3: MUL_S8_ROW_MVE(0, 3); break;
        case 2: MUL_S8_ROW_MVE(0, 2); break;
        case 1: MUL_S8_ROW_MVE(0, 1); break;
        default: MUL_S8_ROW_MVE(0, 0); break;
        }
    }
#undef MUL_S8_ROW_MVE
}

/* The kind of mul_s8_row_mve's requantization, or -1 where the vector path is not taken: shifts outside [17, 62]
 * stay scalar. Below 17 (a real multiplier of 2^14 or more) ONNX's result may pass 2^31, where the scalar code's
 * 64-bit value is truncated, and TFLite's left shift may overflow int32, where the scalar code wraps: not
 * reproduced in lanes. Above 62 the scalar shifts are 64 bits or more. */
static int32_t mul_s8_mve_kind(int32_t shift, int tfl)
{
    if (shift < 17 || shift > 62) {
        return -1;
    }
    if (!tfl) {
        return shift >= 33 ? 3 : 4;
    }
    return shift > 31 ? 0 : shift == 31 ? 1 : 2;
}
#endif

static inline __attribute__((always_inline)) void mul_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                                                          const mcud_mul_s8_params *p, const int tfl)
{
#if MCUD_HAVE_MVE
    /* Helium: same-shape dense operands as one row, else rows of unit steps with b (or a) a row or one value */
    const int32_t kind = mul_s8_mve_kind(p->shift, tfl);
    if (kind >= 0 && same_dense(a, b, y)) {
        mul_s8_row_mve((const int8_t *)a->data, (const int8_t *)b->data, (int8_t *)y->data, dense_count(y),
                       p->a_zero, p->b_zero, 0, p, 0, kind);
        return;
    }
#endif
    const mcud_view *views[3] = {a, b, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 3);
    int32_t last = w.ndim - 1, len = w.shape[last];
    int32_t sa = w.stride[0][last], sb = w.stride[1][last], sy = w.stride[2][last];
    /* ONNX's requantization with the shift in [33, 62]: mcud_requant in 32-bit steps */
    const int fast = !tfl && p->shift >= 33 && p->shift <= 62;
    const int32_t r = p->shift - 32, half = fast ? (int32_t)1 << (r - 1) : 0;
    do {
        const int8_t *pa = (const int8_t *)a->data + w.off[0];
        const int8_t *pb = (const int8_t *)b->data + w.off[1];
        int8_t *py = (int8_t *)y->data + w.off[2];
#if MCUD_HAVE_MVE
        if (kind >= 0 && sy == 1 && (sa == 1 || sb == 1) && (sa | sb) == 1) { /* (1, 1), (1, 0) or (0, 1) */
            if (sb == 0 || sa == 0) {
                const int32_t one = sb == 0 ? (int32_t)pb[0] - p->b_zero : (int32_t)pa[0] - p->a_zero;
                mul_s8_row_mve(sb == 0 ? pa : pb, NULL, py, len, sb == 0 ? p->a_zero : p->b_zero, 0, one, p, 1, kind);
            } else {
                mul_s8_row_mve(pa, pb, py, len, p->a_zero, p->b_zero, 0, p, 0, kind);
            }
            continue;
        }
#endif
        if (fast && sy == 1 && ((sa == 1 && sb == 0) || (sa == 0 && sb == 1))) {
            if (sb == 0) {
                mul_s8_row_scalar(pa, p->a_zero, (int32_t)pb[0] - p->b_zero, py, len, p, r, half);
            } else {
                mul_s8_row_scalar(pb, p->b_zero, (int32_t)pa[0] - p->a_zero, py, len, p, r, half);
            }
            continue;
        }
        if (fast) {
            for (int32_t i = 0; i < len; i++) {
                int32_t acc = ((int32_t)pa[i * sa] - p->a_zero) * ((int32_t)pb[i * sb] - p->b_zero);
                int32_t v = mcud_requant_hi_r(acc, p->mult, r, half) + p->y_zero;
                py[i * sy] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
            }
            continue;
        }
        for (int32_t i = 0; i < len; i++) {
            int32_t acc = ((int32_t)pa[i * sa] - p->a_zero) * ((int32_t)pb[i * sb] - p->b_zero);
            int32_t v = (tfl ? mcud_requant_tfl(acc, p->mult, p->shift) : mcud_requant(acc, p->mult, p->shift)) + p->y_zero;
            py[i * sy] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
        }
    } while (mcud_bcast_next(&w));
}

/* tfl: TFLite's requantization (a TFLite model), a constant in each kernel */
void mcud_mul_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p)
{
    mul_s8(a, b, y, p, 0);
}

void mcud_mul_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p)
{
    mul_s8(a, b, y, p, 1);
}

/* One operand's TFLite requantization (mcud_requant_tfl) by route, a constant per call: 2 a shift in [33, 62],
 * one multiply-accumulate (mcud_requant_tfl_k); 1 a shift of 31 or less, where no right shift follows the
 * doubling high multiply, so its rounding is the only one (the largest input scale of an ADD has multiplier
 * 2^30, shift 31); 0 any other (mcud_requant_tfl). */
static int32_t add_route(int32_t shift)
{
    return shift >= 33 && shift <= 62 ? 2 : shift <= 31 ? 1 : 0;
}

static inline __attribute__((always_inline)) int32_t add_requant(int32_t v, int32_t mult, int32_t shift,
                                                                 int32_t route, int32_t k, int32_t r)
{
    if (route == 2) {
        return mcud_requant_tfl_k(v, mult, k, r);
    }
    if (route == 1) {
        int32_t t = (int32_t)((uint32_t)v << (31 - shift)); /* wraps as TFLite's x * (1 << left_shift) */
        return (int32_t)(((int64_t)t * (int64_t)mult + ((int64_t)1 << 30)) >> 31);
    }
    return mcud_requant_tfl(v, mult, shift);
}

/* One row of ADD_TFL, each operand by its route (add_requant: a constant in the common combinations). */
#define ADD_TFL_ROW(T, RA, RB, RY)                                                                              \
    for (int32_t i = 0; i < len; i++) {                                                                         \
        int32_t va = add_requant(((int32_t)pa[i * sa] - p->a_zero) * up, p->a_mult, p->a_shift, (RA), ka, ra);   \
        int32_t vb = add_requant(((int32_t)pb[i * sb] - p->b_zero) * up, p->b_mult, p->b_shift, (RB), kb, rb);   \
        int32_t sum = (int32_t)((uint32_t)va + (uint32_t)(p->sign * vb));                                       \
        int32_t v = add_requant(sum, p->y_mult, p->y_shift, (RY), ky, ry) + p->y_zero;                          \
        py[i * sy] = (T)mcud_clamp(v, p->act_min, p->act_max);                                                  \
    }

/* One row of TFLite's int8 ADD or SUB from the tables of p (each input's scaled value per code, b's times the
 * sign): their sum, wrapped as the kernel's, requantized by the output's route RY. */
#define ADD_TFL_TABLE_ROW(RY)                                                                                   \
    for (int32_t i = 0; i < len; i++) {                                                                         \
        int32_t sum = (int32_t)((uint32_t)ta[pa[i * sa]] + (uint32_t)tb[pb[i * sb]]);                           \
        int32_t v = add_requant(sum, my, shy, (RY), ky, ry) + zy;                                               \
        py[i * sy] = (int8_t)mcud_clamp(v, lo, hi);                                                             \
    }

typedef struct {
    const int32_t *ta, *tb; /* p->ta + 128, p->tb + 128 */
    int32_t my, ky, ry, lo, hi;
} add_tfl_unit;

/* n elements of unit steps through the tables, the output's requantization by mcud_requant_tfl_k with its zero
 * point in ky. A function of its own, the constants in registers for the whole loop. */
static __attribute__((noinline)) void add_s8_tfl_unit(const int8_t *pa, const int8_t *pb, int8_t *py, int32_t n,
                                                      const add_tfl_unit *k)
{
    const int32_t *ta = k->ta, *tb = k->tb;
    const int32_t my = k->my, ky = k->ky, ry = k->ry, lo = k->lo, hi = k->hi;
    for (const int8_t *end = pa + n; pa < end;) {
        int32_t sum = (int32_t)((uint32_t)ta[*pa++] + (uint32_t)tb[*pb++]);
        *py++ = (int8_t)mcud_clamp(mcud_requant_tfl_k(sum, my, ky, ry), lo, hi);
    }
}

/* TFLite's int8 ADD or SUB through p->ta and p->tb (w: the walker, at its first row). The parameters are read
 * into locals first: a store through py (a character type) may alias *p. The output's zero point goes into
 * the requantization's constant where the high word stays in int32 (as mcud_conv_s8_fast_params.rq). */
static __attribute__((noinline)) void add_s8_tfl_tables(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                                                        const mcud_add_tfl_params *p, mcud_bcast *w, int32_t len,
                                                        int32_t sa, int32_t sb, int32_t sy, int32_t fy, int32_t ky,
                                                        int32_t ry)
{
    const int32_t *ta = p->ta + 128, *tb = p->tb + 128;
    const int32_t my = p->y_mult, shy = p->y_shift, lo = p->act_min, hi = p->act_max;
    int32_t zy = p->y_zero;
    if (fy == 2) {
        const int64_t k = (int64_t)ky + (int64_t)zy * ((int64_t)1 << ry);
        if (((int64_t)1 << 30) + (k < 0 ? -k : k) + 1 < ((int64_t)1 << 31)) {
            ky = (int32_t)k;
            zy = 0;
        }
    }
    if (fy == 2 && zy == 0 && sa == 1 && sb == 1 && sy == 1) { /* the usual case: rows of unit steps */
        const add_tfl_unit k = {ta, tb, my, ky, ry, lo, hi};
        do {
            add_s8_tfl_unit((const int8_t *)a->data + w->off[0], (const int8_t *)b->data + w->off[1],
                            (int8_t *)y->data + w->off[2], len, &k);
        } while (mcud_bcast_next(w));
        return;
    }
    do {
        const int8_t *pa = (const int8_t *)a->data + w->off[0];
        const int8_t *pb = (const int8_t *)b->data + w->off[1];
        int8_t *py = (int8_t *)y->data + w->off[2];
        if (fy == 2) {
            ADD_TFL_TABLE_ROW(2);
        } else {
            ADD_TFL_TABLE_ROW(fy);
        }
    } while (mcud_bcast_next(w));
}

#if MCUD_HAVE_MVE
/* One dense row of TFLite's int8 ADD or SUB on a core with Helium: four elements a step in 32-bit lanes, the
 * last step predicated (VCTP). Each of add_requant's routes is mcud_requant_tfl (route 1: no right shift
 * follows the doubling high multiply), which mcud_mve_rq_scale computes (route 2) with the shifts taken
 * once; the sum (va + sign * vb, one VMLA) wraps as the scalar one does. Not inlined: a function of its own
 * keeps the constants in registers. */
static __attribute__((noinline)) void add_s8_tfl_row_mve(const int8_t *pa, const int8_t *pb, int8_t *py, int32_t len,
                               const mcud_add_tfl_params *p)
{
    const mcud_mve_rq qa = mcud_mve_rq_of(p->a_mult, p->a_shift, 2), qb = mcud_mve_rq_of(p->b_mult, p->b_shift, 2);
    const mcud_mve_rq qy = mcud_mve_rq_of(p->y_mult, p->y_shift, 2);
    const int32x4_t up = vdupq_n_s32(p->left_shift);
    const int32_t za = p->a_zero, zb = p->b_zero, zy = p->y_zero, lo = p->act_min, hi = p->act_max, sign = p->sign;
    if (p->a_shift >= 31 && p->b_shift >= 31 && p->y_shift >= 31) { /* the usual case: constants in registers */
        const int32_t ma = p->a_mult, sa = p->a_shift, mb = p->b_mult, sb = p->b_shift, my = p->y_mult;
        const int32_t sy = p->y_shift, ls = p->left_shift;
        const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi); /* no test of the range in the loop */
        for (int32_t i = 0; i < len; i += 4) {
            const mve_pred16_t pr = vctp32q((uint32_t)(len - i));
            int32x4_t va = mcud_mve_tfl_right(vshlq_r_s32(vsubq_n_s32(vldrbq_z_s32(pa + i, pr), za), ls), ma, sa);
            int32x4_t vb = mcud_mve_tfl_right(vshlq_r_s32(vsubq_n_s32(vldrbq_z_s32(pb + i, pr), zb), ls), mb, sb);
            int32x4_t q = vaddq_n_s32(mcud_mve_tfl_right(vmlaq_n_s32(va, vb, sign), my, sy), zy);
            vstrbq_p_s32(py + i, vminq_s32(vmaxq_s32(q, vlo), vhi), pr);
        }
        return;
    }
    for (int32_t i = 0; i < len; i += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)(len - i));
        int32x4_t va = mcud_mve_rq_scale(vshlq_s32(vsubq_n_s32(vldrbq_z_s32(pa + i, pr), za), up), &qa, 2);
        int32x4_t vb = mcud_mve_rq_scale(vshlq_s32(vsubq_n_s32(vldrbq_z_s32(pb + i, pr), zb), up), &qb, 2);
        int32x4_t q = mcud_mve_rq_scale(vmlaq_n_s32(va, vb, sign), &qy, 2);
        vstrbq_p_s32(py + i, mcud_mve_out8(q, zy, lo, hi), pr);
    }
}
#endif

#if MCUD_HAVE_MVE
/* The elements of v when they are one dense run in row-major order, else -1. */
static int32_t dense_count(const mcud_view *v)
{
    int32_t n = 1;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != n) {
            return -1;
        }
        n *= v->shape[d];
    }
    return n;
}

/* a, b and y of one shape, each one dense run: the whole operation is one row */
static int32_t same_dense(const mcud_view *a, const mcud_view *b, const mcud_view *y)
{
    if (a->ndim != y->ndim || b->ndim != y->ndim) {
        return 0;
    }
    for (int32_t d = 0; d < y->ndim; d++) {
        if (a->shape[d] != y->shape[d] || b->shape[d] != y->shape[d]) {
            return 0;
        }
    }
    return dense_count(a) > 0 && dense_count(b) > 0 && dense_count(y) > 0;
}
#endif

/* TFLite's ADD and SUB of int8 (left shift 20) and int16 (left shift 15); int8 rows of unit steps take
 * add_s8_tfl_row_mve on a core with Helium (ADD_TFL_MVE), dense operands of one shape as one row. */
#if MCUD_HAVE_MVE
#define ADD_TFL_MVE_WHOLE(T)                                                                                    \
    if (sizeof(T) == 1 && same_dense(a, b, y)) {                                                                \
        add_s8_tfl_row_mve((const int8_t *)a->data, (const int8_t *)b->data, (int8_t *)y->data,               \
                           dense_count(y), p);                                                                  \
        return;                                                                                                 \
    }
#define ADD_TFL_MVE(T)                                                                                          \
    if (sizeof(T) == 1 && sa == 1 && sb == 1 && sy == 1) {                                                      \
        add_s8_tfl_row_mve((const int8_t *)pa, (const int8_t *)pb, (int8_t *)py, len, p);                      \
        continue;                                                                                               \
    }
#else
#define ADD_TFL_MVE_WHOLE(T)
#define ADD_TFL_MVE(T)
#endif
#define ADD_TFL(NAME, T)                                                                                        \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_add_tfl_params *p)        \
    {                                                                                                           \
        ADD_TFL_MVE_WHOLE(T)                                                                                    \
        const mcud_view *views[3] = {a, b, y};                                                                  \
        mcud_bcast w;                                                                                           \
        mcud_bcast_init(&w, views, 3);                                                                          \
        int32_t len = mcud_bcast_len(&w);                                                                       \
        int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);          \
        const int32_t up = (int32_t)1 << p->left_shift;                                                         \
        /* every shift in [33, 62] (the usual case): each requantization one multiply-accumulate */            \
        const int fast = p->a_shift >= 33 && p->a_shift <= 62 && p->b_shift >= 33 && p->b_shift <= 62 &&        \
                         p->y_shift >= 33 && p->y_shift <= 62;                                                  \
        const int32_t fa = add_route(p->a_shift), fb = add_route(p->b_shift), fy = add_route(p->y_shift);       \
        const int32_t ka = fa == 2 ? (int32_t)1 << (p->a_shift - 33) : 0, ra = p->a_shift - 32;                 \
        const int32_t kb = fb == 2 ? (int32_t)1 << (p->b_shift - 33) : 0, rb = p->b_shift - 32;                 \
        const int32_t ky = fy == 2 ? (int32_t)1 << (p->y_shift - 33) : 0, ry = p->y_shift - 32;                 \
        if (sizeof(T) == 1 && p->ta != NULL) {                                                                  \
            add_s8_tfl_tables(a, b, y, p, &w, len, sa, sb, sy, fy, ky, ry);                                    \
            return;                                                                                             \
        }                                                                                                       \
        do {                                                                                                    \
            const T *pa = (const T *)a->data + w.off[0];                                                        \
            const T *pb = (const T *)b->data + w.off[1];                                                        \
            T *py = (T *)y->data + w.off[2];                                                                    \
            ADD_TFL_MVE(T)                                                                                      \
            if (fast) {                                                                                         \
                ADD_TFL_ROW(T, 2, 2, 2);                                                                         \
            } else if (fa == 2 && fb == 1 && fy == 2) { /* one input of the larger scale (multiplier 2^30) */   \
                ADD_TFL_ROW(T, 2, 1, 2);                                                                         \
            } else if (fa == 1 && fb == 2 && fy == 2) {                                                         \
                ADD_TFL_ROW(T, 1, 2, 2);                                                                         \
            } else {                                                                                            \
                ADD_TFL_ROW(T, fa, fb, fy);                                                                      \
            }                                                                                                   \
        } while (mcud_bcast_next(&w));                                                                          \
    }

ADD_TFL(mcud_add_s8_tfl, int8_t)
ADD_TFL(mcud_add_s16_tfl, int16_t)

/* TFLite's int16 MUL (every zero point 0): the product requantized, clamped. */
void mcud_mul_s16_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p)
{
    const mcud_view *views[3] = {a, b, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 3);
    int32_t len = mcud_bcast_len(&w);
    int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);
    do {
        const int16_t *pa = (const int16_t *)a->data + w.off[0];
        const int16_t *pb = (const int16_t *)b->data + w.off[1];
        int16_t *py = (int16_t *)y->data + w.off[2];
        for (int32_t i = 0; i < len; i++) {
            int32_t acc = ((int32_t)pa[i * sa] - p->a_zero) * ((int32_t)pb[i * sb] - p->b_zero);
            int32_t v = mcud_requant_tfl(acc, p->mult, p->shift) + p->y_zero;
            py[i * sy] = (int16_t)mcud_clamp(v, p->act_min, p->act_max);
        }
    } while (mcud_bcast_next(&w));
}

/* TFLite's SQUARED_DIFFERENCE of int8 (left shift 7) and int16 (left shift 0): each input's scaled
 * value as ADD's, their difference squared (32-bit, wrapping), requantized by the output's multiplier. */
#define SQUARED_DIFFERENCE_TFL(NAME, T)                                                                        \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_add_tfl_params *p)        \
    {                                                                                                           \
        ADD_TFL_MVE_WHOLE(T)                                                                                    \
        const mcud_view *views[3] = {a, b, y};                                                                  \
        mcud_bcast w;                                                                                           \
        mcud_bcast_init(&w, views, 3);                                                                          \
        int32_t len = mcud_bcast_len(&w);                                                                       \
        int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);          \
        const int32_t up = (int32_t)1 << p->left_shift;                                                         \
        do {                                                                                                    \
            const T *pa = (const T *)a->data + w.off[0];                                                        \
            const T *pb = (const T *)b->data + w.off[1];                                                        \
            T *py = (T *)y->data + w.off[2];                                                                    \
            for (int32_t i = 0; i < len; i++) {                                                                 \
                int32_t va = mcud_requant_tfl(((int32_t)pa[i * sa] - p->a_zero) * up, p->a_mult, p->a_shift);  \
                int32_t vb = mcud_requant_tfl(((int32_t)pb[i * sb] - p->b_zero) * up, p->b_mult, p->b_shift);  \
                uint32_t d = (uint32_t)va - (uint32_t)vb;                                                       \
                int32_t v = mcud_requant_tfl((int32_t)(d * d), p->y_mult, p->y_shift) + p->y_zero;              \
                py[i * sy] = (T)mcud_clamp(v, p->act_min, p->act_max);                                          \
            }                                                                                                   \
        } while (mcud_bcast_next(&w));                                                                          \
    }

SQUARED_DIFFERENCE_TFL(mcud_squared_difference_s8_tfl, int8_t)
SQUARED_DIFFERENCE_TFL(mcud_squared_difference_s16_tfl, int16_t)

/* gemmlowp's SaturatingRoundingDoublingHighMul. */
static int32_t srdhm(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

static int32_t clz32(uint32_t x)
{
    return x == 0u ? 32 : (int32_t)__builtin_clz(x);
}

/* gemmlowp's RoundingDivideByPOT for an exponent of 32 or more too, which C leaves undefined: as x86
 * computes it, where TFLite Micro's reference runs (the 64-bit mask's shift count taken modulo 64,
 * the 32-bit shift's modulo 32). */
static int32_t rdbpot_x86(int32_t x, int32_t e)
{
    int32_t mask = (int32_t)(uint32_t)(((uint64_t)1 << (e & 63)) - 1u);
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> (e & 31)) + ((x & mask) > threshold ? 1 : 0);
}

/* TFLite's int8 DIV (reference_ops::DivElementwise): the divisor's reciprocal in Q0.31 (gemmlowp's
 * Newton-Raphson, from p->recip), the dividend shifted up by its headroom, both multiplied, then the
 * output multiplier with the right shift that the three exponents leave. */
void mcud_div_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_div_s8_tfl_params *p)
{
    const mcud_view *views[3] = {a, b, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 3);
    int32_t len = mcud_bcast_len(&w);
    int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);
    do {
        const int8_t *pa = (const int8_t *)a->data + w.off[0];
        const int8_t *pb = (const int8_t *)b->data + w.off[1];
        int8_t *py = (int8_t *)y->data + w.off[2];
        for (int32_t i = 0; i < len; i++) {
            int32_t x = (int32_t)pa[i * sa] - p->a_zero, d = (int32_t)pb[i * sb] - p->b_zero;
            if (d < 0) {
                x = -x;
                d = -d;
            }
            int32_t recip_shift = 31 - clz32((uint32_t)d);
            int32_t headroom = clz32((uint32_t)(x < 0 ? ~x : x)) - 1;
            int32_t q = srdhm((int32_t)((uint32_t)x << headroom), p->recip[d]);
            int32_t v = rdbpot_x86(srdhm(q, p->mult), headroom + recip_shift - p->exponent) + p->y_zero;
            py[i * sy] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
        }
    } while (mcud_bcast_next(&w));
}

/* Plain integers. The arithmetic runs in an unsigned type as wide as the result (no signed
 * overflow, which C leaves undefined) and wraps like numpy when converted back. */
#define BINARY_INT(NAME, T, U, EXPR)                                                          \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y)                   \
    {                                                                                       \
        const mcud_view *views[3] = {a, b, y};                                              \
        mcud_bcast w;                                                                        \
        mcud_bcast_init(&w, views, 3);                                                            \
        int32_t last = w.ndim - 1, len = w.shape[last];                                     \
        int32_t sa = w.stride[0][last], sb = w.stride[1][last], sy = w.stride[2][last];     \
        do {                                                                                \
            const T *pa = (const T *)a->data + w.off[0];                                    \
            const T *pb = (const T *)b->data + w.off[1];                                    \
            T *py = (T *)y->data + w.off[2];                                                \
            for (int32_t i = 0; i < len; i++) {                                             \
                T va = pa[i * sa], vb = pb[i * sb];                                         \
                py[i * sy] = (T)(EXPR);                                                     \
            }                                                                               \
        } while (mcud_bcast_next(&w));                                                            \
    }

/* Truncating division without traps: x / 0 = 0, and (signed) MIN / -1 wraps to MIN. */
#define DIV_EXPR(T, U, SIGNED) \
    (vb == 0 ? (T)0 : ((SIGNED) && vb == (T)-1) ? (T)(U)(0u - (U)va) : (T)(va / vb))

#define BINARY_INT_ALL(SUFFIX, T, U, SIGNED)                                \
    BINARY_INT(mcud_add_##SUFFIX, T, U, (U)va + (U)vb)                     \
    BINARY_INT(mcud_sub_##SUFFIX, T, U, (U)va - (U)vb)                     \
    BINARY_INT(mcud_mul_##SUFFIX, T, U, (U)va * (U)vb)                     \
    BINARY_INT(mcud_div_##SUFFIX, T, U, DIV_EXPR(T, U, SIGNED))

BINARY_INT_ALL(int8, int8_t, uint32_t, 1)
BINARY_INT_ALL(uint8, uint8_t, uint32_t, 0)
BINARY_INT_ALL(int16, int16_t, uint32_t, 1)
BINARY_INT_ALL(int32, int32_t, uint32_t, 1)
BINARY_INT_ALL(int64, int64_t, uint64_t, 1)

/* TFLite's int32 SQUARED_DIFFERENCE: (a - b)^2, wrapping. */
BINARY_INT(mcud_squared_difference_int32, int32_t, uint32_t,
           ((uint32_t)va - (uint32_t)vb) * ((uint32_t)va - (uint32_t)vb))
