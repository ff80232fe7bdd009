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
                        if (acc64) {
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

/* The weight of input channel k in an output channel's packed taps (each four as (k0, k2, k1, k3)). */
static inline int32_t conv_s16_pw_tap(const int8_t *wo, int32_t k)
{
    static const uint8_t place[4] = {0, 2, 1, 3};
    return wo[(k & ~3) + place[k & 3]];
}

/* Input channels a pointwise block sums in 32 bits before an int64 sum takes them: a product of int16 and int8 is at
 * most 2^22 in magnitude, so 508 of them (a multiple of 4) stay within int32 (an int64 sum is then exact, as
 * TFLite Micro's; an int32 one wraps as its does). */
#define CONV_S16_PW_CHUNK 508

/* Two pixels (px2) or one of a row, two output channels at once, input channels ic .. end - 1 in steps of four:
 * rows ic .. ic+3 give a word of the two pixels each (unit: the row is contiguous; else two halves packed),
 * repacked to (ic, ic+1) and (ic+2, ic+3) pairs per pixel, which meet the weights' pairs from SXTB16 in SMLAD. */
static inline __attribute__((always_inline)) uint32_t conv_s16_pw_row(const int16_t *x, int32_t sw, const int unit,
                                                                      const int px2)
{
    return unit ? mcud_load32(x) : mcud_pack16(x[0], px2 ? x[sw] : 0);
}

static inline __attribute__((always_inline)) void conv_s16_pw_sums(const int16_t *xp, const mcud_conv_dims X,
                                                                   int32_t ic, int32_t end, const int8_t *w0,
                                                                   const int8_t *w1, int32_t s[4], const int unit,
                                                                   const int px2)
{
    int32_t s00 = s[0], s01 = s[1], s10 = s[2], s11 = s[3];
    const int16_t *xr = xp + ic * X.sc;
    const int32_t sc = X.sc;
    for (; ic < end; ic += 4, xr += 4 * sc) {
        const uint32_t r0 = conv_s16_pw_row(xr, X.sw, unit, px2), r1 = conv_s16_pw_row(xr + sc, X.sw, unit, px2);
        const uint32_t r2 = conv_s16_pw_row(xr + 2 * sc, X.sw, unit, px2);
        const uint32_t r3 = conv_s16_pw_row(xr + 3 * sc, X.sw, unit, px2);
        const uint32_t u = mcud_load32(w0 + ic), v = mcud_load32(w1 + ic);
        const uint32_t u01 = mcud_sxtb16(u), u23 = mcud_sxtb16_ror8(u);
        const uint32_t v01 = mcud_sxtb16(v), v23 = mcud_sxtb16_ror8(v);
        const uint32_t a01 = mcud_pkhbt(r0, r1), a23 = mcud_pkhbt(r2, r3); /* pixel 0 */
        s00 = mcud_smlad(u23, a23, mcud_smlad(u01, a01, s00));
        s10 = mcud_smlad(v23, a23, mcud_smlad(v01, a01, s10));
        if (px2) {
            const uint32_t b01 = mcud_pkhtb(r0, r1), b23 = mcud_pkhtb(r2, r3); /* pixel 1 */
            s01 = mcud_smlad(u23, b23, mcud_smlad(u01, b01, s01));
            s11 = mcud_smlad(v23, b23, mcud_smlad(v01, b01, s11));
        }
    }
    s[0] = s00, s[1] = s01, s[2] = s10, s[3] = s11;
}

static inline __attribute__((always_inline)) void conv_s16_pw_block(const int16_t *xp, const mcud_conv_dims X,
                                                                    int32_t cin, const int8_t *w0,
                                                                    const int8_t *w1, int64_t sums[4],
                                                                    const int acc64, const int unit, const int px2)
{
    const int32_t whole = cin & ~3;
    int32_t ic = 0;
    if (acc64) {
        for (; ic < whole; ic += CONV_S16_PW_CHUNK) {
            int32_t s[4] = {0, 0, 0, 0};
            const int32_t end = ic + CONV_S16_PW_CHUNK < whole ? ic + CONV_S16_PW_CHUNK : whole;
            conv_s16_pw_sums(xp, X, ic, end, w0, w1, s, unit, px2);
            sums[0] += s[0], sums[1] += s[1], sums[2] += s[2], sums[3] += s[3];
        }
        ic = whole;
    } else { /* an int32 sum wraps: SMLAD's */
        int32_t s[4] = {(int32_t)sums[0], (int32_t)sums[1], (int32_t)sums[2], (int32_t)sums[3]};
        conv_s16_pw_sums(xp, X, 0, whole, w0, w1, s, unit, px2);
        sums[0] = s[0], sums[1] = s[1], sums[2] = s[2], sums[3] = s[3];
        ic = whole;
    }
    for (; ic < cin; ic++) { /* the tail: cin % 4 channels */
        const int32_t x0 = xp[ic * X.sc], x1 = px2 ? xp[ic * X.sc + X.sw] : 0;
        const int32_t k0 = conv_s16_pw_tap(w0, ic), k1 = conv_s16_pw_tap(w1, ic);
        if (acc64) {
            sums[0] += x0 * k0, sums[1] += x1 * k0, sums[2] += x0 * k1, sums[3] += x1 * k1;
        } else {
            sums[0] = (int32_t)((uint32_t)sums[0] + (uint32_t)(x0 * k0));
            sums[1] = (int32_t)((uint32_t)sums[1] + (uint32_t)(x1 * k0));
            sums[2] = (int32_t)((uint32_t)sums[2] + (uint32_t)(x0 * k1));
            sums[3] = (int32_t)((uint32_t)sums[3] + (uint32_t)(x1 * k1));
        }
    }
}

static inline __attribute__((always_inline)) void conv_s16_pw(const mcud_view *x, const mcud_view *b,
                                                              const mcud_view *y, const mcud_conv_s16_pw_params *p,
                                                              const int acc64, const int unit)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t cin = X.c, kpad = p->kpad;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc += 2) {
            const int32_t two = oc + 1 < Y.c;
            const int8_t *w0 = p->w + oc * kpad, *w1 = two ? w0 + kpad : w0;
            const int64_t b0 = conv_s16_bias(b, oc, acc64), b1 = two ? conv_s16_bias(b, oc + 1, acc64) : 0;
            for (int32_t oh = 0; oh < Y.h; oh++) {
                for (int32_t ow = 0; ow < Y.w; ow += 2) {
                    const int32_t px2 = ow + 1 < Y.w;
                    const int16_t *xp = xd + n * X.sn + oh * X.sh + ow * X.sw;
                    int64_t sums[4] = {b0, b0, b1, b1};
                    if (px2) {
                        conv_s16_pw_block(xp, X, cin, w0, w1, sums, acc64, unit, 1);
                    } else {
                        conv_s16_pw_block(xp, X, cin, w0, w1, sums, acc64, 0, 0);
                    }
                    for (int32_t j = 0; j < 1 + two; j++) {
                        for (int32_t i = 0; i < 1 + px2; i++) {
                            const int64_t s = sums[2 * j + i];
                            const int32_t q = acc64 ? mcud_requant_tfl64(s, p->mult[oc + j], p->shift[oc + j])
                                                    : mcud_requant_tfl((int32_t)s, p->mult[oc + j], p->shift[oc + j]);
                            yd[n * Y.sn + (oc + j) * Y.sc + oh * Y.sh + (ow + i) * Y.sw] =
                                (int16_t)mcud_clamp(q, p->act_min, p->act_max);
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

/* Output channel oc reads input channel oc / multiplier. Where a window lies inside the input along W (and
 * W is contiguous, undilated) each row of taps is pairs of int16 meeting the weights' pairs (p->w: per output
 * channel KH rows of kw2 int16, KW rounded up to even with a 0) in dual multiply-accumulates, as do the two
 * taps of each row inside a 3x3 window over the left or right edge; elsewhere the taps inside are summed one by
 * one. */
static inline __attribute__((always_inline)) void conv_s16_dw(const mcud_view *x, const mcud_view *b,
                                                              const mcud_view *y, const mcud_conv_s16_dw_params *p,
                                                              const int acc64)
{
    mcud_conv_dims X = mcud_conv_dims_of(x), Y = mcud_conv_dims_of(y);
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t kh_n = p->kernel[0], kw_n = p->kernel[1], kw2 = p->kw2, pairs = kw_n & ~1;
    const int32_t rows = X.sw == 1 && p->dilation[1] == 1;
    for (int32_t n = 0; n < Y.n; n++) {
        for (int32_t oc = 0; oc < Y.c; oc++) {
            const int16_t *xc = xd + n * X.sn + (oc / p->multiplier) * X.sc;
            const int16_t *wc = p->w + oc * kh_n * kw2;
            const int64_t bias = conv_s16_bias(b, oc, acc64);
            /* a 3x3 window inside the input: its weights as three pairs and three singles, kept in registers */
            const int32_t k3 = kh_n == 3 && kw_n == 3;
            const uint32_t w0 = k3 ? mcud_load32(wc) : 0, w1 = k3 ? mcud_load32(wc + kw2) : 0;
            const uint32_t w2 = k3 ? mcud_load32(wc + 2 * kw2) : 0;
            const int32_t v0 = k3 ? wc[2] : 0, v1 = k3 ? wc[kw2 + 2] : 0, v2 = k3 ? wc[2 * kw2 + 2] : 0;
            for (int32_t oh = 0; oh < Y.h; oh++) {
                int32_t kh0, kh1;
                const int32_t ih0 = oh * p->stride[0] - p->pad[0];
                mcud_conv_taps(ih0, p->dilation[0], kh_n, X.h, &kh0, &kh1);
                const int32_t k33 = rows && k3 && kh0 == 0 && kh1 == 3;
                const int32_t step = p->dilation[0] * X.sh;
                for (int32_t ow = 0; ow < Y.w; ow++) {
                    const int32_t iw0 = ow * p->stride[1] - p->pad[1];
                    int64_t s64 = bias;
                    int32_t s32 = (int32_t)bias;
                    if (k33 && iw0 >= 0 && iw0 + 3 <= X.w) {
                        const int16_t *r0 = xc + ih0 * X.sh + iw0, *r1 = r0 + step, *r2 = r1 + step;
                        if (acc64) {
                            s64 = mcud_smlald(w0, mcud_load32(r0), s64) + (int32_t)r0[2] * v0;
                            s64 = mcud_smlald(w1, mcud_load32(r1), s64) + (int32_t)r1[2] * v1;
                            s64 = mcud_smlald(w2, mcud_load32(r2), s64) + (int32_t)r2[2] * v2;
                        } else {
                            s32 = mcud_smlad(w0, mcud_load32(r0), s32);
                            s32 = mcud_smlad(w1, mcud_load32(r1), s32);
                            s32 = mcud_smlad(w2, mcud_load32(r2), s32);
                            s32 = (int32_t)((uint32_t)s32 + (uint32_t)((int32_t)r0[2] * v0) +
                                            (uint32_t)((int32_t)r1[2] * v1) + (uint32_t)((int32_t)r2[2] * v2));
                        }
                    } else if (k3 && rows && X.w >= 2 && (iw0 == -1 || iw0 + 2 == X.w)) {
                        /* a 3x3 window over the left or the right edge: two taps of each row inside, one pair
                         * (on the left taps 1 and 2 at columns 0 and 1, on the right taps 0 and 1) */
                        const int32_t left = iw0 < 0;
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int16_t *xr = xc + (ih0 + kh * p->dilation[0]) * X.sh + (left ? 0 : iw0);
                            const uint32_t wp = mcud_load32(wc + kh * kw2 + left);
                            if (acc64) {
                                s64 = mcud_smlald(wp, mcud_load32(xr), s64);
                            } else {
                                s32 = mcud_smlad(wp, mcud_load32(xr), s32);
                            }
                        }
                    } else if (rows && iw0 >= 0 && iw0 + kw_n <= X.w) {
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int16_t *xr = xc + (ih0 + kh * p->dilation[0]) * X.sh + iw0;
                            const int16_t *wr = wc + kh * kw2;
                            for (int32_t j = 0; j < pairs; j += 2) {
                                if (acc64) {
                                    s64 = mcud_smlald(mcud_load32(wr + j), mcud_load32(xr + j), s64);
                                } else {
                                    s32 = mcud_smlad(mcud_load32(wr + j), mcud_load32(xr + j), s32);
                                }
                            }
                            if (kw_n & 1) {
                                const int32_t prod = (int32_t)xr[kw_n - 1] * (int32_t)wr[kw_n - 1];
                                s64 += acc64 ? prod : 0;
                                s32 = (int32_t)((uint32_t)s32 + (acc64 ? 0u : (uint32_t)prod));
                            }
                        }
                    } else {
                        int32_t kw0, kw1;
                        mcud_conv_taps(iw0, p->dilation[1], kw_n, X.w, &kw0, &kw1);
                        for (int32_t kh = kh0; kh < kh1; kh++) {
                            const int16_t *xr = xc + (ih0 + kh * p->dilation[0]) * X.sh;
                            const int16_t *wr = wc + kh * kw2;
                            for (int32_t kw = kw0; kw < kw1; kw++) {
                                const int32_t prod = (int32_t)xr[(iw0 + kw * p->dilation[1]) * X.sw] * (int32_t)wr[kw];
                                s64 += acc64 ? prod : 0;
                                s32 = (int32_t)((uint32_t)s32 + (acc64 ? 0u : (uint32_t)prod));
                            }
                        }
                    }
                    const int32_t q = acc64 ? mcud_requant_tfl64(s64, p->mult[oc], p->shift[oc])
                                            : mcud_requant_tfl(s32, p->mult[oc], p->shift[oc]);
                    yd[n * Y.sn + oc * Y.sc + oh * Y.sh + ow * Y.sw] = (int16_t)mcud_clamp(q, p->act_min, p->act_max);
                }
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
