/* Conv, float32 and int8, on strided views; grouped and depthwise convolutions share the loop.
 * The tap range of each output row/column is clipped to the input once, so the inner loops
 * carry no bounds checks; padded taps are skipped, which in int8 equals reading the input
 * zero point (it contributes 0 after the zero point is subtracted). */
#include "mcud_conv.h"
#include "mcud_dsp.h"

typedef struct {
    int32_t n, c, h, w;     /* extents */
    int32_t sn, sc, sh, sw; /* strides in elements */
} mcud_conv_dims;

static mcud_conv_dims mcud_conv_dims_of(const mcud_view *v)
{
    mcud_conv_dims d;
    d.n = v->shape[0];
    d.sn = v->stride[0];
    d.c = v->shape[1];
    d.sc = v->stride[1];
    if (v->ndim >= 4) {
        d.h = v->shape[2];
        d.sh = v->stride[2];
        d.w = v->shape[3];
        d.sw = v->stride[3];
    } else {
        d.h = 1;
        d.sh = 0;
        d.w = v->shape[2];
        d.sw = v->stride[2];
    }
    return d;
}

/* Taps k in [*lo, *hi) whose input index start + k * dilation lies in [0, size). */
static void mcud_conv_taps(int32_t start, int32_t dilation, int32_t kernel, int32_t size, int32_t *lo, int32_t *hi)
{
    int32_t k0 = 0;
    int32_t k1 = kernel;
    if (start < 0) {
        k0 = (-start + dilation - 1) / dilation;
    }
    if (start + (kernel - 1) * dilation >= size) {
        k1 = start >= size ? 0 : (size - 1 - start) / dilation + 1;
    }
    *lo = k0;
    *hi = k1 > k0 ? k1 : k0;
}

void mcud_conv_f32(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                   const mcud_conv_f32_params *p)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), W = mcud_conv_dims_of(w), Y = mcud_conv_dims_of(y);
    const float *xd = (const float *)x->data;
    const float *wd = (const float *)w->data;
    const float *bd = b != NULL ? (const float *)b->data : NULL;
    float *yd = (float *)y->data;
    int32_t ocpg = Y.c / p->group;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc++) {
            const float *xg = xd + n * X.sn + (oc / ocpg) * W.c * X.sc;
            const float *wo = wd + oc * W.sn;
            float bias = bd != NULL ? bd[oc * b->stride[0]] : 0.0f;
            for (int32_t oh = 0; oh < Y.h; oh++) {
                int32_t kh0, kh1;
                int32_t ih0 = oh * p->stride[0] - p->pad[0];
                mcud_conv_taps(ih0, p->dilation[0], W.h, X.h, &kh0, &kh1);
                for (int32_t ow = 0; ow < Y.w; ow++) {
                    int32_t kw0, kw1;
                    int32_t iw0 = ow * p->stride[1] - p->pad[1];
                    mcud_conv_taps(iw0, p->dilation[1], W.w, X.w, &kw0, &kw1);
                    float acc = bias;
                    for (int32_t ic = 0; ic < W.c; ic++) {
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const float *xr = xg + ic * X.sc + (ih0 + kh * p->dilation[0]) * X.sh;
                            const float *wr = wo + ic * W.sc + kh * W.sh;
                            for (int32_t kw = kw0; kw < kw1; kw++) {
                                acc += xr[(iw0 + kw * p->dilation[1]) * X.sw] * wr[kw * W.sw];
                            }
                        }
                    }
                    yd[n * Y.sn + oc * Y.sc + oh * Y.sh + ow * Y.sw] = mcud_clampf(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* tfl: TFLite's requantization (a TFLite model), a constant in each of the two kernels below */
static inline __attribute__((always_inline)) void conv_s8(const mcud_view *x, const mcud_view *w,
                                                          const mcud_view *b, const mcud_view *y,
                                                          const mcud_conv_s8_params *p, const int tfl)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), W = mcud_conv_dims_of(w), Y = mcud_conv_dims_of(y);
    const int8_t *xd = (const int8_t *)x->data;
    const int8_t *wd = (const int8_t *)w->data;
    const int32_t *bd = b != NULL ? (const int32_t *)b->data : NULL;
    int8_t *yd = (int8_t *)y->data;
    int32_t ocpg = Y.c / p->group;
    int32_t zx = p->in_zero_point;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc++) {
            const int8_t *xg = xd + n * X.sn + (oc / ocpg) * W.c * X.sc;
            const int8_t *wo = wd + oc * W.sn;
            int32_t bias = bd != NULL ? bd[oc * b->stride[0]] : 0;
            for (int32_t oh = 0; oh < Y.h; oh++) {
                int32_t kh0, kh1;
                int32_t ih0 = oh * p->stride[0] - p->pad[0];
                mcud_conv_taps(ih0, p->dilation[0], W.h, X.h, &kh0, &kh1);
                for (int32_t ow = 0; ow < Y.w; ow++) {
                    int32_t kw0, kw1;
                    int32_t iw0 = ow * p->stride[1] - p->pad[1];
                    mcud_conv_taps(iw0, p->dilation[1], W.w, X.w, &kw0, &kw1);
                    int32_t acc = bias;
                    for (int32_t ic = 0; ic < W.c; ic++) {
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int8_t *xr = xg + ic * X.sc + (ih0 + kh * p->dilation[0]) * X.sh;
                            const int8_t *wr = wo + ic * W.sc + kh * W.sh;
                            for (int32_t kw = kw0; kw < kw1; kw++) {
                                acc += ((int32_t)xr[(iw0 + kw * p->dilation[1]) * X.sw] - zx) * (int32_t)wr[kw * W.sw];
                            }
                        }
                    }
                    int32_t q = (tfl ? mcud_requant_tfl(acc, p->mult[oc], p->shift[oc])
                                     : mcud_requant(acc, p->mult[oc], p->shift[oc])) + p->out_zero_point;
                    yd[n * Y.sn + oc * Y.sc + oh * Y.sh + ow * Y.sw] = (int8_t)mcud_clamp(q, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcud_conv_s8(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                  const mcud_conv_s8_params *p)
{
    conv_s8(x, w, b, y, p, 0);
}

void mcud_conv_s8_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s8_params *p)
{
    conv_s8(x, w, b, y, p, 1);
}

/* ---- 16x8 (TFLite) ---- */

/* Output channel oc's bias (0 without one): int64 for an int64 sum, int32 for a wrapping int32 one. */
static inline int64_t conv_s16_bias(const mcud_view *b, int32_t oc, const int acc64)
{
    if (b == NULL) {
        return 0;
    }
    return acc64 ? ((const int64_t *)b->data)[oc * b->stride[0]] : ((const int32_t *)b->data)[oc * b->stride[0]];
}

/* acc64: a constant in each instantiation below; the int64 sum is exact, the int32 one wraps (unsigned) */
static inline __attribute__((always_inline)) void conv_s16(const mcud_view *x, const mcud_view *w,
                                                           const mcud_view *b, const mcud_view *y,
                                                           const mcud_conv_s16_params *p, const int acc64)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), W = mcud_conv_dims_of(w), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    const int8_t *wd = (const int8_t *)w->data;
    int16_t *yd = (int16_t *)y->data;
    int32_t ocpg = Y.c / p->group;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc++) {
            const int16_t *xg = xd + n * X.sn + (oc / ocpg) * W.c * X.sc;
            const int8_t *wo = wd + oc * W.sn;
            const int64_t bias = conv_s16_bias(b, oc, acc64);
            for (int32_t oh = 0; oh < Y.h; oh++) {
                int32_t kh0, kh1;
                int32_t ih0 = oh * p->stride[0] - p->pad[0];
                mcud_conv_taps(ih0, p->dilation[0], W.h, X.h, &kh0, &kh1);
                for (int32_t ow = 0; ow < Y.w; ow++) {
                    int32_t kw0, kw1;
                    int32_t iw0 = ow * p->stride[1] - p->pad[1];
                    mcud_conv_taps(iw0, p->dilation[1], W.w, X.w, &kw0, &kw1);
                    int64_t acc = 0;
                    uint32_t acc32 = 0;
                    for (int32_t ic = 0; ic < W.c; ic++) {
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int16_t *xr = xg + ic * X.sc + (ih0 + kh * p->dilation[0]) * X.sh;
                            const int8_t *wr = wo + ic * W.sc + kh * W.sh;
                            for (int32_t kw = kw0; kw < kw1; kw++) {
                                int32_t prod = (int32_t)xr[(iw0 + kw * p->dilation[1]) * X.sw] * (int32_t)wr[kw * W.sw];
                                if (acc64) {
                                    acc += prod;
                                } else {
                                    acc32 += (uint32_t)prod;
                                }
                            }
                        }
                    }
                    int32_t q = acc64 ? mcud_requant_tfl64(acc + bias, p->mult[oc], p->shift[oc])
                                      : mcud_requant_tfl((int32_t)(acc32 + (uint32_t)bias), p->mult[oc], p->shift[oc]);
                    yd[n * Y.sn + oc * Y.sc + oh * Y.sh + ow * Y.sw] = (int16_t)mcud_clamp(q, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcud_conv_s16(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                   const mcud_conv_s16_params *p)
{
    if (p->acc64) {
        conv_s16(x, w, b, y, p, 1);
    } else {
        conv_s16(x, w, b, y, p, 0);
    }
}

/* The receptive field of output pixel (oh, ow) in group g as one column of int16 (cin_per_group x KH x KW
 * taps, as the weights order them, then zeros up to kpad): a tap outside the input is 0, the input's zero
 * point at 16x8. The taps inside are found once per pixel (mcud_conv_taps), so the copy has no test. */
static void conv_s16_column(const int16_t *xg, const mcud_conv_dims *X, int32_t cipg, int32_t kh_n, int32_t kw_n,
                            int32_t ih0, int32_t iw0, const mcud_conv_s16_fast_params *p, int16_t *col)
{
    int32_t kh0, kh1, kw0, kw1;
    mcud_conv_taps(ih0, p->dilation[0], kh_n, X->h, &kh0, &kh1);
    mcud_conv_taps(iw0, p->dilation[1], kw_n, X->w, &kw0, &kw1);
    const int32_t step = p->dilation[1] * X->sw;
    int16_t *c = col;
    for (int32_t ic = 0; ic < cipg; ic++) {
        const int16_t *xc = xg + ic * X->sc + (iw0 + kw0 * p->dilation[1]) * X->sw;
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t kw = 0;
            if (kh >= kh0 && kh < kh1) {
                for (; kw < kw0; kw++) {
                    *c++ = 0;
                }
                const int16_t *xp = xc + (ih0 + kh * p->dilation[0]) * X->sh;
                for (; kw < kw1; kw++) {
                    *c++ = *xp;
                    xp += step;
                }
            }
            for (; kw < kw_n; kw++) {
                *c++ = 0;
            }
        }
    }
    while (c < col + p->kpad) {
        *c++ = 0;
    }
}

/* One column against the packed weights of two output channels (w0, w1: kpad bytes each, every four as
 * (k0, k2, k1, k3), so SXTB16 gives the pairs (k0, k1) and (k2, k3) that meet the column's int16 pairs):
 * dual 16 x 16 multiply-accumulates into 64 bits (SMLALD), or into 32 wrapping bits (SMLAD). */
#define CONV_S16_DOT2(MAC)                                                                        \
    do {                                                                                                 \
        for (int32_t k = 0; k < kpad; k += 4) {                                                          \
            const uint32_t c01 = mcud_load32(col + k), c23 = mcud_load32(col + k + 2);                   \
            const uint32_t a = mcud_load32(w0 + k), b = mcud_load32(w1 + k);                             \
            s0 = MAC(mcud_sxtb16(a), c01, s0);                                                           \
            s0 = MAC(mcud_sxtb16_ror8(a), c23, s0);                                                      \
            s1 = MAC(mcud_sxtb16(b), c01, s1);                                                           \
            s1 = MAC(mcud_sxtb16_ror8(b), c23, s1);                                                      \
        }                                                                                                \
    } while (0)

static inline __attribute__((always_inline)) void conv_s16_fast(const mcud_view *x, const mcud_view *b,
                                                                const mcud_view *y,
                                                                const mcud_conv_s16_fast_params *p, int16_t *col,
                                                                const int acc64)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t cipg = X.c / p->group, ocpg = Y.c / p->group, kpad = p->kpad;
    const int32_t kh_n = p->kernel[0], kw_n = p->kernel[1];
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t g = 0; g < p->group; g++) {
            const int16_t *xg = xd + n * X.sn + g * cipg * X.sc;
            for (int32_t oh = 0; oh < Y.h; oh++) {
                for (int32_t ow = 0; ow < Y.w; ow++) {
                    conv_s16_column(xg, &X, cipg, kh_n, kw_n, oh * p->stride[0] - p->pad[0],
                                    ow * p->stride[1] - p->pad[1], p, col);
                    int16_t *yp = yd + n * Y.sn + oh * Y.sh + ow * Y.sw;
                    for (int32_t j = 0; j < ocpg; j += 2) {
                        const int32_t oc = g * ocpg + j, two = j + 1 < ocpg;
                        const int8_t *w0 = p->w + oc * kpad, *w1 = two ? w0 + kpad : w0;
                        const int64_t b0 = conv_s16_bias(b, oc, acc64), b1 = two ? conv_s16_bias(b, oc + 1, acc64) : 0;
                        int32_t q0, q1;
                        const int32_t m0 = acc64 && p->m32 ? p->m32[oc] : 0;
                        const int32_t m1 = two && m0 ? p->m32[oc + 1] : m0;
                        if (m0 && m1) { /* int32 sums from the bias, exact, and one SMMLAR each */
                            int32_t s0 = (int32_t)b0, s1 = (int32_t)b1;
                            CONV_S16_DOT2(mcud_smlad);
                            q0 = mcud_smmlar(s0, m0, 0);
                            q1 = mcud_smmlar(s1, m1, 0);
                        } else if (acc64) {
                            int64_t s0 = b0, s1 = b1;
                            CONV_S16_DOT2(mcud_smlald);
                            q0 = mcud_requant_tfl64(s0, p->mult[oc], p->shift[oc]);
                            q1 = two ? mcud_requant_tfl64(s1, p->mult[oc + 1], p->shift[oc + 1]) : 0;
                        } else {
                            int32_t s0 = (int32_t)b0, s1 = (int32_t)b1;
                            CONV_S16_DOT2(mcud_smlad);
                            q0 = mcud_requant_tfl(s0, p->mult[oc], p->shift[oc]);
                            q1 = two ? mcud_requant_tfl(s1, p->mult[oc + 1], p->shift[oc + 1]) : 0;
                        }
                        yp[oc * Y.sc] = (int16_t)mcud_clamp(q0, p->act_min, p->act_max);
                        if (two) {
                            yp[(oc + 1) * Y.sc] = (int16_t)mcud_clamp(q1, p->act_min, p->act_max);
                        }
                    }
                }
            }
        }
    }
}

void mcud_conv_s16_fast(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                        const mcud_conv_s16_fast_params *p, void *scratch)
{
    (void)w; /* the weights come packed in p->w */
    int16_t *col = (int16_t *)scratch;
    if (p->acc64) {
        conv_s16_fast(x, b, y, p, col, 1);
    } else {
        conv_s16_fast(x, b, y, p, col, 0);
    }
}

/* ---- 16x8 pointwise: no working memory ---- */

/* One output channel's requantization, set once per channel. The fast paths sum ``taps`` products in int32 from
 * ``start``: the bias where that is exact (acc64, and the bias small enough that the products, at most 2^22 each in
 * magnitude, keep the sum within int32: then one 32 x 32 + 64-bit multiply-accumulate, SMLAL, gives
 * mcud_requant_tfl64's value) or wraps as TFLite Micro's int32 sum does (acc64 0); else ``small`` is 0. With a shift
 * of 16 to 32 (``high``) one SMMLAR gives it: (t m + 2^(s-1)) >> s is (t m 2^(32-s) + 2^31) >> 32, the rounded high
 * word of t times m32 = m 2^(32-s), where that fits int32 (always for TFLite's reduced multipliers, below 2^15). */
typedef struct {
    int64_t bias, round;
    int32_t start, mult, shift, small, high, m32;
} conv_s16_q;

static inline conv_s16_q conv_s16_q_of(const mcud_view *b, const int32_t *mult, const int32_t *shift, int32_t oc,
                                       int32_t taps, const int acc64)
{
    conv_s16_q q;
    q.bias = conv_s16_bias(b, oc, acc64);
    q.mult = mult[oc];
    q.shift = shift[oc];
    q.round = acc64 ? (int64_t)1 << (q.shift - 1) : 0;
    const int64_t room = (int64_t)INT32_MAX - (int64_t)taps * ((int64_t)1 << 22);
    q.small = acc64 && q.bias >= -room && q.bias <= room;
    q.start = !acc64 || q.small ? (int32_t)q.bias : 0;
    const int64_t m32 = q.shift >= 16 && q.shift <= 32 ? (int64_t)q.mult * ((int64_t)1 << (32 - q.shift)) : 0;
    q.high = q.small && q.shift >= 16 && q.shift <= 32 && m32 >= INT32_MIN && m32 <= INT32_MAX;
    q.m32 = q.high ? (int32_t)m32 : 0;
    return q;
}

/* The output of an int32 sum t of a fast path, which began at q->start (acc64 and not small: the sum of the products
 * alone, exact, the bias added in int64) */
static inline __attribute__((always_inline)) int16_t conv_s16_out32(int32_t t, const conv_s16_q *q, int32_t act_min,
                                                                    int32_t act_max, const int acc64)
{
    int32_t v;
    if (!acc64) {
        v = mcud_requant_tfl(t, q->mult, q->shift);
    } else if (q->high) {
        v = mcud_smmlar(t, q->m32, 0);
    } else if (q->small) {
        v = (int32_t)(uint32_t)(uint64_t)((q->round + (int64_t)t * q->mult) >> q->shift);
    } else {
        v = mcud_requant_tfl64((int64_t)t + q->bias, q->mult, q->shift);
    }
    return (int16_t)mcud_clamp(v, act_min, act_max);
}

/* The weight of input channel k for output channel j (0 or 1) of a pair's packed weights: per input channel the pair's
 * two weights, so four bytes at channel k (even) are (w0[k], w1[k], w0[k+1], w1[k+1]) and SXTB16 gives output channel
 * 0's pair (w0[k], w0[k+1]), SXTB16 ROR 8 channel 1's. */
static inline int32_t conv_s16_pw_tap(const int8_t *wp, int32_t k, int32_t j)
{
    return wp[2 * k + j];
}

/* Input channels a pointwise block sums in 32 bits before an int64 sum takes them: a product of int16 and int8 is at
 * most 2^22 in magnitude, so 508 of them (even) stay within int32. */
#define CONV_S16_PW_CHUNK 508

/* A row of input channel c at two pixels (px2: of a row; unit: contiguous, one word) or one */
static inline __attribute__((always_inline)) uint32_t conv_s16_pw_row(const int16_t *x, int32_t sw, const int unit,
                                                                      const int px2)
{
    return unit ? mcud_load32(x) : mcud_pack16(x[0], px2 ? x[sw] : 0);
}

/* Input channels ic .. end - 1 (an even count) of two pixels (px2) or one, two output channels at once: each pair of
 * channels gives a word of the two pixels each, repacked to the channels' pair per pixel (PKHBT, PKHTB), which meets
 * each output channel's pair from one word of weights (SXTB16, SXTB16 ROR 8) in SMLAD. Few values are live: four
 * sums, two pointers, the stride, and two words each of input and weights. */
static inline __attribute__((always_inline)) void conv_s16_pw_sums(const int16_t *xp, const mcud_conv_dims X,
                                                                   int32_t ic, int32_t end, const int8_t *wp,
                                                                   int32_t s[4], const int unit, const int px2)
{
    int32_t s00 = s[0], s01 = s[1], s10 = s[2], s11 = s[3];
    const int32_t sc = X.sc, sw = X.sw;
    const int16_t *xr = xp + ic * sc;
    for (const int8_t *w = wp + 2 * ic, *wend = wp + 2 * end; w < wend; w += 4, xr += 2 * sc) {
        const uint32_t r0 = conv_s16_pw_row(xr, sw, unit, px2), r1 = conv_s16_pw_row(xr + sc, sw, unit, px2);
        const uint32_t u = mcud_load32(w), k0 = mcud_sxtb16(u), k1 = mcud_sxtb16_ror8(u);
        const uint32_t a = mcud_pkhbt(r0, r1); /* pixel 0: channels ic, ic + 1 */
        s00 = mcud_smlad(k0, a, s00);
        s10 = mcud_smlad(k1, a, s10);
        if (px2) {
            const uint32_t b = mcud_pkhtb(r0, r1); /* pixel 1 */
            s01 = mcud_smlad(k0, b, s01);
            s11 = mcud_smlad(k1, b, s11);
        }
    }
    s[0] = s00, s[1] = s01, s[2] = s10, s[3] = s11;
}

/* Two output channels' int64 sums over two pixels (px2) or one: each CONV_S16_PW_CHUNK channels in int32, then an odd
 * last channel alone. */
static inline __attribute__((always_inline)) void conv_s16_pw_block(const int16_t *xp, const mcud_conv_dims X,
                                                                    int32_t cin, const int8_t *wp, int64_t sums[4],
                                                                    const int unit, const int px2)
{
    const int32_t whole = cin & ~1;
    for (int32_t ic = 0; ic < whole; ic += CONV_S16_PW_CHUNK) {
        int32_t s[4] = {0, 0, 0, 0};
        const int32_t end = ic + CONV_S16_PW_CHUNK < whole ? ic + CONV_S16_PW_CHUNK : whole;
        conv_s16_pw_sums(xp, X, ic, end, wp, s, unit, px2);
        sums[0] += s[0], sums[1] += s[1], sums[2] += s[2], sums[3] += s[3];
    }
    if (cin & 1) {
        const int32_t ic = whole, x0 = xp[ic * X.sc], x1 = px2 ? xp[ic * X.sc + X.sw] : 0;
        const int32_t k0 = conv_s16_pw_tap(wp, ic, 0), k1 = conv_s16_pw_tap(wp, ic, 1);
        sums[0] += x0 * k0, sums[1] += x1 * k0, sums[2] += x0 * k1, sums[3] += x1 * k1;
    }
}

/* Two output channels' sums over two pixels (px2) or one, in int32 from the channels' starts (conv_s16_q): the
 * channels in pairs, then an odd last one alone (wrapping, as an int32 sum does; exact for a small sum). */
static inline __attribute__((always_inline)) void conv_s16_pw_sums32(const int16_t *xp, const mcud_conv_dims X,
                                                                     int32_t cin, const int8_t *wp, int32_t s[4],
                                                                     const int unit, const int px2)
{
    const int32_t whole = cin & ~1;
    conv_s16_pw_sums(xp, X, 0, whole, wp, s, unit, px2);
    if (cin & 1) {
        const int32_t ic = whole, x0 = xp[ic * X.sc], x1 = px2 ? xp[ic * X.sc + X.sw] : 0;
        const int32_t k0 = conv_s16_pw_tap(wp, ic, 0), k1 = conv_s16_pw_tap(wp, ic, 1);
        s[0] = (int32_t)((uint32_t)s[0] + (uint32_t)(x0 * k0)), s[1] = (int32_t)((uint32_t)s[1] + (uint32_t)(x1 * k0));
        s[2] = (int32_t)((uint32_t)s[2] + (uint32_t)(x0 * k1)), s[3] = (int32_t)((uint32_t)s[3] + (uint32_t)(x1 * k1));
    }
}

/* Two output channels at a time over the pixels as rows: a plane whose rows follow one another (input and output) is
 * one row of H x W pixels, so pairs of pixels do not stop at a row's end. Where both channels' sums fit int32 (or wrap
 * in it, acc64 0) they are summed in int32 from the bias (conv_s16_pw_sums32), else in int64 (conv_s16_pw_block). */
static inline __attribute__((always_inline)) void conv_s16_pw(const mcud_view *x, const mcud_view *b,
                                                              const mcud_view *y, const mcud_conv_s16_pw_params *p,
                                                              const int acc64, const int unit)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t cin = X.c, kpad = p->kpad;
    const int32_t flat = X.sh == X.w * X.sw && Y.sh == Y.w * Y.sw;
    const int32_t rows = flat ? 1 : Y.h, len = flat ? Y.h * Y.w : Y.w;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc += 2) {
            const int32_t two = oc + 1 < Y.c;
            const int8_t *wp = p->w + oc * kpad; /* the pair's weights: 2 kpad bytes */
            const conv_s16_q q0 = conv_s16_q_of(b, p->mult, p->shift, oc, cin, acc64);
            const conv_s16_q q1 = conv_s16_q_of(b, p->mult, p->shift, two ? oc + 1 : oc, cin, acc64);
            const int32_t fast = !acc64 || (q0.small && q1.small);
            for (int32_t r = 0; r < rows; r++) {
                const int16_t *xr = xd + n * X.sn + r * X.sh;
                int16_t *y0 = yd + n * Y.sn + oc * Y.sc + r * Y.sh, *y1 = y0 + Y.sc;
                for (int32_t i = 0; i < len; i += 2) {
                    const int32_t px2 = i + 1 < len;
                    const int16_t *xp = xr + i * X.sw;
                    if (fast) {
                        int32_t s[4] = {q0.start, q0.start, q1.start, q1.start};
                        if (px2) {
                            conv_s16_pw_sums32(xp, X, cin, wp, s, unit, 1);
                        } else {
                            conv_s16_pw_sums32(xp, X, cin, wp, s, 0, 0);
                        }
                        y0[i * Y.sw] = conv_s16_out32(s[0], &q0, p->act_min, p->act_max, acc64);
                        if (px2) {
                            y0[(i + 1) * Y.sw] = conv_s16_out32(s[1], &q0, p->act_min, p->act_max, acc64);
                        }
                        if (two) {
                            y1[i * Y.sw] = conv_s16_out32(s[2], &q1, p->act_min, p->act_max, acc64);
                            if (px2) {
                                y1[(i + 1) * Y.sw] = conv_s16_out32(s[3], &q1, p->act_min, p->act_max, acc64);
                            }
                        }
                        continue;
                    }
                    int64_t sums[4] = {q0.bias, q0.bias, q1.bias, q1.bias};
                    if (px2) {
                        conv_s16_pw_block(xp, X, cin, wp, sums, unit, 1);
                    } else {
                        conv_s16_pw_block(xp, X, cin, wp, sums, 0, 0);
                    }
                    for (int32_t j = 0; j < 1 + two; j++) {
                        for (int32_t k = 0; k < 1 + px2; k++) {
                            const int32_t v = mcud_requant_tfl64(sums[2 * j + k], p->mult[oc + j], p->shift[oc + j]);
                            (j ? y1 : y0)[(i + k) * Y.sw] = (int16_t)mcud_clamp(v, p->act_min, p->act_max);
                        }
                    }
                }
            }
        }
    }
}

void mcud_conv_s16_pw(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s16_pw_params *p)
{
    (void)w; /* the weights come packed in p->w */
    const int unit = mcud_conv_dims_of(x).sw == 1;
    if (p->acc64) {
        if (unit) {
            conv_s16_pw(x, b, y, p, 1, 1);
        } else {
            conv_s16_pw(x, b, y, p, 1, 0);
        }
    } else if (unit) {
        conv_s16_pw(x, b, y, p, 0, 1);
    } else {
        conv_s16_pw(x, b, y, p, 0, 0);
    }
}

/* ---- 16x8, one input channel per group (depthwise, any multiplier; or a first layer on one channel) ---- */

/* The output of an exact sum s, the bias in it (an int32 sum: its low 32 bits, wrapping as TFLite Micro's) */
static inline int16_t conv_s16_out64(int64_t s, const conv_s16_q *q, int32_t act_min, int32_t act_max, const int acc64)
{
    const int32_t v = acc64 ? mcud_requant_tfl64(s, q->mult, q->shift)
                            : mcud_requant_tfl((int32_t)(uint32_t)(uint64_t)s, q->mult, q->shift);
    return (int16_t)mcud_clamp(v, act_min, act_max);
}

/* Output pixel (oh, ow) of channel plane xc with weights wc, any kernel: the taps inside summed one by one in int64
 * (an int32 sum wraps, as TFLite Micro's), the bias added, requantized. */
static int16_t conv_s16_dw_taps(const int16_t *xc, const int16_t *wc, const mcud_conv_dims *X,
                                const mcud_conv_s16_dw_params *p, const conv_s16_q *q, int32_t oh, int32_t ow,
                                const int acc64)
{
    int32_t kh0, kh1, kw0, kw1;
    const int32_t ih0 = oh * p->stride[0] - p->pad[0], iw0 = ow * p->stride[1] - p->pad[1];
    mcud_conv_taps(ih0, p->dilation[0], p->kernel[0], X->h, &kh0, &kh1);
    mcud_conv_taps(iw0, p->dilation[1], p->kernel[1], X->w, &kw0, &kw1);
    int64_t s = q->bias;
    for (int32_t kh = kh0; kh < kh1; kh++) {
        const int16_t *xr = xc + (ih0 + kh * p->dilation[0]) * X->sh;
        const int16_t *wr = wc + kh * p->kw2;
        for (int32_t kw = kw0; kw < kw1; kw++) {
            s += (int32_t)xr[(iw0 + kw * p->dilation[1]) * X->sw] * (int32_t)wr[kw];
        }
    }
    return conv_s16_out64(s, q, p->act_min, p->act_max, acc64);
}

/* One channel's 3x3 weights: each row's taps (k0, k1) as a pair (w) and (k1, k2) as a pair (left, for a window over
 * the left edge), the third taps of rows 0 and 1 as a pair (k01) and of row 2 alone (k2); where a row of the window
 * lies outside the input, that row weighs 0 (conv_s16_dw3_taps_of's ``inside``). */
typedef struct {
    uint32_t w0, w1, w2, left0, left1, left2, k01;
    int32_t k2;
} conv_s16_dw3_taps;

static inline conv_s16_dw3_taps conv_s16_dw3_taps_of(const int16_t *wc, int32_t kw2, const int32_t inside[3])
{
    conv_s16_dw3_taps t;
    const int16_t *w0 = wc, *w1 = wc + kw2, *w2 = wc + 2 * kw2;
    t.w0 = inside[0] ? mcud_load32(w0) : 0, t.w1 = inside[1] ? mcud_load32(w1) : 0;
    t.w2 = inside[2] ? mcud_load32(w2) : 0;
    t.left0 = inside[0] ? mcud_load32(w0 + 1) : 0, t.left1 = inside[1] ? mcud_load32(w1 + 1) : 0;
    t.left2 = inside[2] ? mcud_load32(w2 + 1) : 0;
    t.k01 = mcud_pack16(inside[0] ? w0[2] : 0, inside[1] ? w1[2] : 0);
    t.k2 = inside[2] ? w2[2] : 0;
    return t;
}

/* One output row of a 3x3 window over input rows r0, r1, r2 (a row outside the input repeats one inside, and
 * weighs 0 in t), contiguous and undilated along W. Outputs lo .. hi - 1 have their window inside the input, which
 * takes a dual and a single multiply-accumulate a row; a window over the left edge (its first tap at -1) or the
 * right edge (its last at W) takes the one pair of each row inside; any other its taps one by one
 * (conv_s16_dw_taps). */
static inline __attribute__((always_inline)) void conv_s16_dw3_row(const conv_s16_dw3_taps *t, const int16_t *r0,
                                                                   const int16_t *r1, const int16_t *r2,
                                                                   const int16_t *xc, const int16_t *wc,
                                                                   const mcud_conv_dims *X, int16_t *yr,
                                                                   int32_t ysw, int32_t oh, int32_t ow_n,
                                                                   int32_t lo, int32_t hi, const conv_s16_q *q,
                                                                   const mcud_conv_s16_dw_params *p, const int acc64)
{
    const int32_t sw = p->stride[1], pad = p->pad[1], width = X->w;
    int32_t ow = 0;
    for (; ow < lo; ow++) {
        if (ow * sw - pad == -1 && width >= 2) {
            const int32_t s = mcud_smlad(t->left0, mcud_load32(r0),
                                         mcud_smlad(t->left1, mcud_load32(r1),
                                                    mcud_smlad(t->left2, mcud_load32(r2), q->start)));
            yr[ow * ysw] = conv_s16_out32(s, q, p->act_min, p->act_max, acc64);
        } else {
            yr[ow * ysw] = conv_s16_dw_taps(xc, wc, X, p, q, oh, ow, acc64);
        }
    }
    if (ow < hi) {
        const int16_t *a0 = r0 + ow * sw - pad, *a1 = r1 + ow * sw - pad, *a2 = r2 + ow * sw - pad;
        const uint32_t w0 = t->w0, w1 = t->w1, w2 = t->w2, k01 = t->k01;
        const int32_t k2 = t->k2, start = q->start;
        int16_t *yo = yr + ow * ysw;
        for (; ow < hi; ow++, a0 += sw, a1 += sw, a2 += sw, yo += ysw) {
            int32_t s = mcud_smlabb(k01, (uint32_t)(int32_t)a0[2], mcud_smlad(w0, mcud_load32(a0), start));
            s = mcud_smlatb(k01, (uint32_t)(int32_t)a1[2], mcud_smlad(w1, mcud_load32(a1), s));
            s = mcud_smlad(w2, mcud_load32(a2), s + k2 * a2[2]);
            *yo = conv_s16_out32(s, q, p->act_min, p->act_max, acc64);
        }
    }
    for (; ow < ow_n; ow++) {
        const int32_t iw0 = ow * sw - pad;
        if (iw0 == width - 2 && iw0 >= 0) {
            const int32_t s = mcud_smlad(t->w0, mcud_load32(r0 + iw0),
                                         mcud_smlad(t->w1, mcud_load32(r1 + iw0),
                                                    mcud_smlad(t->w2, mcud_load32(r2 + iw0), q->start)));
            yr[ow * ysw] = conv_s16_out32(s, q, p->act_min, p->act_max, acc64);
        } else {
            yr[ow * ysw] = conv_s16_dw_taps(xc, wc, X, p, q, oh, ow, acc64);
        }
    }
}

/* Output channel oc reads input channel oc / multiplier; p->w holds per output channel KH rows of kw2 int16 (KW
 * rounded up to even with a 0). A 3x3 window over rows contiguous along W, undilated along W, goes row by row
 * (conv_s16_dw3_row); any other window inside along W such rows in pairs of taps, else one by one. */
static inline __attribute__((always_inline)) void conv_s16_dw(const mcud_view *x, const mcud_view *b,
                                                              const mcud_view *y, const mcud_conv_s16_dw_params *p,
                                                              const int acc64)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t kh_n = p->kernel[0], kw_n = p->kernel[1], kw2 = p->kw2;
    const int32_t rows = X.sw == 1 && p->dilation[1] == 1, k3 = rows && kh_n == 3 && kw_n == 3;
    /* for a 3x3 window: outputs lo .. hi - 1 of a row have their window inside, iw0 >= 0 and iw0 + 3 <= X.w */
    const int32_t sw = p->stride[1], step = p->dilation[0] * X.sh;
    int32_t hi = X.w >= 3 ? (X.w - 3 + p->pad[1]) / sw + 1 : 0, lo = (p->pad[1] + sw - 1) / sw;
    hi = hi < Y.w ? hi : Y.w;
    lo = lo < hi ? lo : hi;
    static const int32_t all[3] = {1, 1, 1};
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc++) {
            const int16_t *xc = xd + n * X.sn + (oc / p->multiplier) * X.sc;
            const int16_t *wc = p->w + oc * kh_n * kw2;
            const conv_s16_q q = conv_s16_q_of(b, p->mult, p->shift, oc, 9, acc64);
            int16_t *yc = yd + n * Y.sn + oc * Y.sc;
            const conv_s16_dw3_taps full = conv_s16_dw3_taps_of(wc, kw2, all);
            for (int32_t oh = 0; oh < Y.h; oh++) {
                const int32_t ih0 = oh * p->stride[0] - p->pad[0];
                if (!k3) { /* a window inside along W, rows contiguous and undilated: its rows' taps in pairs */
                    int32_t kh0, kh1;
                    mcud_conv_taps(ih0, p->dilation[0], kh_n, X.h, &kh0, &kh1);
                    for (int32_t ow = 0; ow < Y.w; ow++) {
                        const int32_t iw0 = ow * sw - p->pad[1];
                        if (!rows || iw0 < 0 || iw0 + kw_n > X.w) {
                            yc[oh * Y.sh + ow * Y.sw] = conv_s16_dw_taps(xc, wc, &X, p, &q, oh, ow, acc64);
                            continue;
                        }
                        int64_t s = q.bias;
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int16_t *xr = xc + (ih0 + kh * p->dilation[0]) * X.sh + iw0, *wr = wc + kh * kw2;
                            for (int32_t j = 0; j + 1 < kw_n; j += 2) {
                                s = mcud_smlald(mcud_load32(wr + j), mcud_load32(xr + j), s);
                            }
                            s += kw_n & 1 ? (int32_t)xr[kw_n - 1] * (int32_t)wr[kw_n - 1] : 0;
                        }
                        yc[oh * Y.sh + ow * Y.sw] = conv_s16_out64(s, &q, p->act_min, p->act_max, acc64);
                    }
                    continue;
                }
                int16_t *yr = yc + oh * Y.sh;
                if (ih0 >= 0 && ih0 + 2 * p->dilation[0] < X.h) {
                    const int16_t *r0 = xc + ih0 * X.sh;
                    conv_s16_dw3_row(&full, r0, r0 + step, r0 + 2 * step, xc, wc, &X, yr, Y.sw, oh, Y.w, lo, hi, &q,
                                     p, acc64);
                    continue;
                }
                const int16_t *r[3]; /* a row outside: no weight, and a row inside to read */
                int32_t inside[3];
                for (int32_t kh = 0; kh < 3; kh++) {
                    const int32_t ih = ih0 + kh * p->dilation[0];
                    inside[kh] = ih >= 0 && ih < X.h;
                    r[kh] = xc + (inside[kh] ? ih : (ih < 0 ? 0 : X.h - 1)) * X.sh;
                }
                const conv_s16_dw3_taps t = conv_s16_dw3_taps_of(wc, kw2, inside);
                conv_s16_dw3_row(&t, r[0], r[1], r[2], xc, wc, &X, yr, Y.sw, oh, Y.w, lo, hi, &q, p, acc64);
            }
        }
    }
}

void mcud_conv_s16_dw(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s16_dw_params *p)
{
    (void)w; /* the weights come widened in p->w */
    if (p->acc64) {
        conv_s16_dw(x, b, y, p, 1);
    } else {
        conv_s16_dw(x, b, y, p, 0);
    }
}
