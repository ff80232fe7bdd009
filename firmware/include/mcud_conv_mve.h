/* mcud_conv_s8_fast on a core with Helium (MVE, Cortex-M55/M85): included by mcud_conv_fast.h,
 * same params, same scratch, same bits.
 *
 * The scratch holds four columns of int8 (not int16: MVE's VMLADAVA multiplies int8 lanes
 * directly, 16 multiply-accumulates per instruction), each kpad bytes, one after the other: half
 * the bytes the DSP path's int16 columns take, so the planner's scratch size (PIXELS * 2 * kpad)
 * holds them. Tap kk of a column sits at mcud_mve_pos(kk): the weights are repacked at compile
 * time with each group of four as [w0 w2 w1 w3] (for SXTB16), so the columns take the same order
 * and tap kk meets its own weight; the sum is the same (modulo 2^32, as SMLAD's). Taps from the
 * real K up to kpad hold 0 in the columns and in the weights. The zero point is folded into the
 * bias as on the DSP path and a padded tap holds it, so it adds nothing.
 *
 * The dot products run over kpad in vectors of 16, four output pixels against one weight vector; in
 * the last part only the weights' load is predicated (VCTP: lanes past kpad are loaded as zero), the
 * columns' loads read on into the next column, or after the last into the scratch's other half (it
 * holds 8 * kpad bytes, kpad >= 4), bytes the zero weights cancel. Tail predication of the whole
 * loop (DLSTP/LETP) is not used: GCC 12 does not emit it. */
#ifndef MCUD_CONV_MVE_H
#define MCUD_CONV_MVE_H
#include "mcud_dsp.h"
#include "mcud_mve.h" /* mcud_mve_requant, mcud_mve_rq */
#if MCUD_HAVE_MVE /* else empty (model.c includes every header); mcud_conv_fast.h includes it where it needs it */

/* Where tap kk sits in a column: bits 0 and 1 swapped ([w0 w2 w1 w3] within a group of four). */
MCUD_INLINE int32_t mcud_mve_pos(int32_t kk)
{
    return (kk & ~3) | ((kk & 1) << 1) | ((kk >> 1) & 1);
}

/* n channels of one input position into d, in [c0 c2 c1 c3] order when perm (n a multiple of 4),
 * else in order: eight at a time through a 16-bit gather (offsets up to 65535 bytes) where the
 * channel stride allows. */
MCUD_INLINE void mcud_mve_channels(const int8_t *xr, int32_t n, int32_t sc, int8_t *d, int32_t perm)
{
    if (!perm && sc == 1) {
        memcpy(d, xr, (size_t)n);
        return;
    }
    if (sc == 1) {
        for (int32_t c = 0; c < n; c += 4) {
            d[c] = xr[c];
            d[c + 1] = xr[c + 2];
            d[c + 2] = xr[c + 1];
            d[c + 3] = xr[c + 3];
        }
        return;
    }
    if (7 * sc <= 65535) {
        static const uint16_t order[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 2, 1, 3, 4, 6, 5, 7}};
        uint16x8_t off = vmulq_n_u16(vldrhq_u16(order[perm != 0]), (uint16_t)sc);
        int32_t c = 0;
        for (; c + 8 <= n; c += 8) { /* whole groups unpredicated: GCC 12 moves a VCTP's predicate through a
                                        general register and sets it before each predicated access */
            vstrbq_s16(d + c, vldrbq_gather_offset_s16(xr, off));
            xr += 8 * sc;
        }
        if (c < n) {
            mve_pred16_t pr = vctp16q((uint32_t)(n - c));
            vstrbq_p_s16(d + c, vldrbq_gather_offset_z_s16(xr, off, pr), pr);
        }
        return;
    }
    for (int32_t c = 0; c < n; c++) {
        d[c] = xr[(perm ? mcud_mve_pos(c) : c) * sc];
    }
}

/* The receptive field of output pixel (oh, ow) into column d, taps in the order of the weights
 * ((kh, kw, c) when hwc, else (c, kh, kw)), each at mcud_mve_pos when perm (p->w's order), else in
 * order (the model's weights, mcud_conv_s8_direct). */
MCUD_INLINE void mcud_conv_mve_col(const int8_t *xn, const mcud_fast_dims *X, int32_t kh_n, int32_t kw_n,
                                   const mcud_conv_s8_fast_params *p, int32_t oh, int32_t ow, int8_t *d,
                                   int32_t hwc, int32_t perm)
{
    int32_t ih0 = oh * p->stride[0] - p->pad[0];
    int32_t iw0 = ow * p->stride[1] - p->pad[1];
    int8_t zx = (int8_t)p->in_zero_point;
    if (hwc || (kh_n == 1 && kw_n == 1 && (!perm || X->c % 4 == 0))) { /* a position's channels together */
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t ih = ih0 + kh * p->dilation[0];
            for (int32_t kw = 0; kw < kw_n; kw++, d += X->c) {
                int32_t iw = iw0 + kw * p->dilation[1];
                if (p->inside || ((uint32_t)ih < (uint32_t)X->h && (uint32_t)iw < (uint32_t)X->w)) {
                    mcud_mve_channels(xn + ih * X->sh + iw * X->sw, X->c, X->sc, d, perm);
                } else {
                    memset(d, zx, (size_t)X->c);
                }
            }
        }
        return;
    }
    int32_t kk = 0;
    if (p->inside || (ih0 >= 0 && iw0 >= 0 && ih0 + (kh_n - 1) * p->dilation[0] < X->h &&
                      iw0 + (kw_n - 1) * p->dilation[1] < X->w)) { /* the window is inside: no checks */
        const int8_t *xp = xn + ih0 * X->sh + iw0 * X->sw;
        const int32_t dh = p->dilation[0] * X->sh, dw = p->dilation[1] * X->sw;
        for (int32_t c = 0; c < X->c; c++) {
            for (int32_t kh = 0; kh < kh_n; kh++, kk += kw_n) {
                const int8_t *xr = xp + c * X->sc + kh * dh;
                MCUD_UNROLL
                for (int32_t kw = 0; kw < kw_n; kw++) {
                    d[perm ? mcud_mve_pos(kk + kw) : kk + kw] = xr[kw * dw];
                }
            }
        }
        return;
    }
    for (int32_t c = 0; c < X->c; c++) {
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t ih = ih0 + kh * p->dilation[0];
            int32_t in_h = p->inside || (uint32_t)ih < (uint32_t)X->h;
            const int8_t *xr = xn + c * X->sc + ih * X->sh;
            for (int32_t kw = 0; kw < kw_n; kw++, kk++) {
                int32_t iw = iw0 + kw * p->dilation[1];
                d[perm ? mcud_mve_pos(kk) : kk] = in_h && (p->inside || (uint32_t)iw < (uint32_t)X->w) ? xr[iw * X->sw] : zx;
            }
        }
    }
}

/* Four accumulators of channel oc requantized as mcud_conv_fast_out does: TFLite's route 3 (every shift in
 * [33, 62]: no left shift, a right one of shift - 31 whose negative values take one less first) with its
 * constants as scalars, no branch; the other routes through mcud_mve_requant. */
MCUD_INLINE int32x4_t mcud_conv_mve_out(int32x4_t acc, int32_t oc, const mcud_conv_s8_fast_params *p)
{
    if (p->hi_shift == 3) {
        int32x4_t q = vqrdmulhq_n_s32(acc, p->mult[oc]);
        q = vrshlq_n_s32(vaddq_s32(q, vshrq_n_s32(q, 31)), 31 - p->shift[oc]);
        return mcud_mve_out8(q, p->out_zero_point, p->act_min, p->act_max);
    }
    return mcud_mve_requant(acc, p->mult[oc], p->shift[oc], p->hi_shift, p->out_zero_point, p->act_min,
                            p->act_max);
}

/* Every output channel of four column pointers (kp taps each) against the weights wa (channel oc at
 * wa + oc * wsn), stored by one scatter at y0 + oc * ysc + off. Unpredicated: a lane past the block's pixels
 * reads column 0 again and has offset 0, so it stores lane 0's value where lane 0 does. */
MCUD_INLINE void mcud_conv_mve_channels(const int8_t *c0, const int8_t *c1, const int8_t *c2, const int8_t *c3,
                                        int32_t kp, int8_t *y0, uint32x4_t off, int32_t oc_n, int32_t ysc,
                                        const int8_t *wa, int32_t wsn, const mcud_conv_s8_fast_params *p)
{
    /* TFLite's route 3 with p->rq: (bias, mult, k, r1) of a channel in one place, r1 = shift - 32, so the right
       shift 31 - shift is ~r1: one pointer for the channel's constants */
    const int32_t *rq = p->hi_shift == 3 && p->rq ? p->rq : NULL;
    for (int32_t oc = 0; oc < oc_n; oc++, wa += wsn) {
        int32_t a0 = rq ? rq[MCUD_FAST_RQ * oc] : p->bias[oc], a1 = a0, a2 = a0, a3 = a0;
        const int8_t *q0 = c0, *q1 = c1, *q2 = c2, *q3 = c3, *qw = wa;
        int32_t k = 0;
        for (; k + 16 <= kp; k += 16) { /* whole vectors: no predicate (GCC 12 sets one per load) */
            int8x16_t wv = vldrbq_s8(qw);
            a0 = vmladavaq_s8(a0, vldrbq_s8(q0), wv);
            a1 = vmladavaq_s8(a1, vldrbq_s8(q1), wv);
            a2 = vmladavaq_s8(a2, vldrbq_s8(q2), wv);
            a3 = vmladavaq_s8(a3, vldrbq_s8(q3), wv);
            q0 += 16, q1 += 16, q2 += 16, q3 += 16, qw += 16;
            /* five pointers, each loaded with post-increment: else GCC derives two columns from a third
               by an ADD each (their distance, kp, is past VLDRB's 7-bit immediate) */
            __asm__("" : "+r"(q0), "+r"(q1), "+r"(q2), "+r"(q3), "+r"(qw));
        }
        if (k < kp) { /* the tail: weight lanes past kp load as 0, so the columns' bytes there (the next column's,
                         or the buffer's 16 bytes of slack after the last) add nothing: one predicated load */
            int8x16_t wv = vldrbq_z_s8(qw, vctp8q((uint32_t)(kp - k)));
            a0 = vmladavaq_s8(a0, vldrbq_s8(q0), wv);
            a1 = vmladavaq_s8(a1, vldrbq_s8(q1), wv);
            a2 = vmladavaq_s8(a2, vldrbq_s8(q2), wv);
            a3 = vmladavaq_s8(a3, vldrbq_s8(q3), wv);
        }
        int32x4_t q;
        if (rq) {
            const int32_t *c = rq + MCUD_FAST_RQ * oc;
            q = vqrdmulhq_n_s32(mcud_mve_lanes4(a0, a1, a2, a3), c[1]);
            q = mcud_mve_out8(vrshlq_n_s32(vaddq_s32(q, vshrq_n_s32(q, 31)), ~c[3]), p->out_zero_point, p->act_min,
                              p->act_max);
        } else {
            q = mcud_conv_mve_out(mcud_mve_lanes4(a0, a1, a2, a3), oc, p);
        }
        vstrbq_scatter_offset_s32(y0 + oc * ysc, off, q);
    }
}

/* Every output channel of the m (1 to 4) pixels whose columns (kp taps each) are in cols; the
 * weights of channel oc are the kp bytes at wa + oc * wsn. */
MCUD_INLINE void mcud_conv_mve_gemm(const int8_t *cols, int32_t kp, int32_t m, int8_t *const *yp, int32_t oc_n,
                                    int32_t ysc, const int8_t *wa, int32_t wsn, const mcud_conv_s8_fast_params *p)
{
    /* columns past m are column 0 again: only m columns need exist (the direct path's stack buffer) */
    const int8_t *c0 = cols, *c1 = m > 1 ? cols + kp : cols, *c2 = m > 2 ? cols + 2 * kp : cols;
    const int8_t *c3 = m > 3 ? cols + 3 * kp : cols;
    /* the pixels' outputs are in raster order: byte offsets from the first, one scatter store */
    uint32_t at[MCUD_CONV_FAST_PIXELS] = {0, 0, 0, 0};
    for (int32_t i = 1; i < m; i++) {
        at[i] = (uint32_t)(yp[i] - yp[0]);
    }
    mcud_conv_mve_channels(c0, c1, c2, c3, kp, yp[0], vldrwq_u32(at), oc_n, ysc, wa, wsn, p);
}

/* Every output pixel of y, per pixels at a time (1 to 4): their columns of kp taps into cols (taps
 * ordered as mcud_conv_mve_col's hwc and perm say), then every channel against the weights wa (kp
 * bytes a channel). */
MCUD_INLINE void mcud_conv_mve_blocks(const mcud_view *x, const mcud_view *y, int32_t kh_n, int32_t kw_n,
                                      const mcud_conv_s8_fast_params *p, int8_t *cols, int32_t kp, int32_t per,
                                      int32_t hwc, int32_t perm, const int8_t *wa)
{
    mcud_fast_dims X = mcud_fast_dims_of(x), Y = mcud_fast_dims_of(y);
    for (int32_t n = 0; n < Y.n; n++) {
        const int8_t *xn = (const int8_t *)x->data + n * X.sn;
        int8_t *yn = (int8_t *)y->data + n * Y.sn;
        int8_t *yp[MCUD_CONV_FAST_PIXELS];
        int32_t oh = 0, ow = 0;
        for (int32_t left = Y.h * Y.w; left > 0; left -= per) {
            int32_t m = left < per ? left : per;
            for (int32_t i = 0; i < m; i++) {
                yp[i] = yn + oh * Y.sh + ow * Y.sw;
                mcud_conv_mve_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + i * kp, hwc, perm);
                if (++ow == Y.w) {
                    ow = 0;
                    oh++;
                }
            }
            mcud_conv_mve_gemm(cols, kp, m, yp, Y.c, Y.sc, wa, kp, p);
        }
    }
}

MCUD_INLINE void mcud_conv_s8_fast_mve(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                                       const mcud_conv_s8_fast_params *p, void *scratch)
{
    int32_t kh_n = w->ndim >= 4 ? w->shape[2] : 1;
    int32_t kw_n = w->shape[w->ndim - 1];
    int8_t *cols = (int8_t *)scratch;
    memset(cols, 0, (size_t)(MCUD_CONV_FAST_PIXELS * p->kpad)); /* taps past K stay 0 */
    mcud_conv_mve_blocks(x, y, kh_n, kw_n, p, cols, p->kpad, MCUD_CONV_FAST_PIXELS, p->hwc, 1, p->w);
}

/* mcud_conv_s8_direct (no scratch in the arena) on an MVE core: the columns in a stack buffer of MCUD_MVE_COLS
 * bytes, as many pixels at a time as it holds (up to four), the zero point folded (p->bias) for every pixel: a
 * padded tap holds the zero point and adds nothing, so edge pixels give the bits of the scalar path's unfolded
 * sum of the taps inside. Where p->hwc, mcud_conv_s8_fast's columns (p->w's (kh, kw, c) order, each group of
 * four permuted, taps from K to kpad zero): a position's channels come with one gather for eight; else the
 * model's weights in their (c, kh, kw) order, tap by tap (the permuted order costs more stores there). Returns
 * 0 (nothing done) when one column does not fit or the weights are not dense: the scalar path runs. */
#ifndef MCUD_MVE_COLS
#define MCUD_MVE_COLS 592 /* four columns of a 3x3 kernel on 16 channels, and the product's 16 bytes of slack */
#endif

MCUD_INLINE int32_t mcud_conv_s8_direct_mve(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                                            const mcud_conv_s8_fast_params *p)
{
    mcud_fast_dims W = mcud_fast_dims_of(w);
    int32_t k = p->hwc ? p->kpad : W.c * W.h * W.w;
    int32_t per = k > 0 ? (MCUD_MVE_COLS - 16) / k : 0; /* 16 bytes of slack after the last column */
    if (per < 1 || (!p->hwc && (W.sw != 1 || W.sh != W.w || W.sc != W.h * W.w || W.sn != k))) {
        return 0;
    }
    if (per > MCUD_CONV_FAST_PIXELS) {
        per = MCUD_CONV_FAST_PIXELS;
    }
    int8_t cols[MCUD_MVE_COLS];
    if (p->hwc) {
        memset(cols, 0, (size_t)(per * k)); /* taps past K stay 0 */
        mcud_conv_mve_blocks(x, y, W.h, W.w, p, cols, k, per, 1, 1, p->w);
    } else {
        mcud_conv_mve_blocks(x, y, W.h, W.w, p, cols, k, per, 0, 0, (const int8_t *)w->data);
    }
    return 1;
}

#endif /* MCUD_HAVE_MVE */
#endif /* MCUD_CONV_MVE_H */
