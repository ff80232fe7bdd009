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
 * loop (DLSTP/LETP) is not used: GCC 12 does not emit it.
 *
 * Where a block is four columns of more than 16 taps (in the scratch; k <= 144 on the direct path's stack; a
 * column taken tap by tap up to MCUD_MVE_STAGE taps, through a column in order), the columns are tiled (mcud_mve_at): piece j (taps 16 j to 16 j + 15) of column i at 64 j + 16 i, so
 * one pointer reads the four, and two output channels share each column load (mcud_conv_mve_channels_tiled, its
 * whole pieces in assembly: GCC 12 cannot keep eight VMLADAVA accumulators in the eight even registers). */
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

/* Where tap t of a column sits: in order (tiled 0: the column is kp bytes in a row), or tiled (1): the four
 * columns of a block interleaved in 16-byte pieces, piece j of column i at 64 * j + 16 * i, so one pointer with
 * the offsets 0, 16, 32 and 48 reads the four columns' taps 16 j to 16 j + 15 (mcud_conv_mve_channels_tiled):
 * d is then the block's buffer plus 16 * i. */
MCUD_INLINE int32_t mcud_mve_at(int32_t t, int32_t tiled)
{
    return tiled ? ((t >> 4) << 6) | (t & 15) : t;
}

/* mcud_mve_channels into a column from its tap t on (d: the column, addressed by mcud_mve_at): a tiled column
 * takes whole groups of eight by one gather each where t and n are multiples of eight (each group then lies in
 * one piece), else byte by byte. */
MCUD_INLINE void mcud_mve_channels_at(const int8_t *xr, int32_t n, int32_t sc, int8_t *d, int32_t t, int32_t perm,
                                      int32_t tiled)
{
    if (!tiled) {
        mcud_mve_channels(xr, n, sc, d + t, perm);
        return;
    }
    if ((t & 7) == 0 && (n & 7) == 0 && 7 * sc <= 65535) {
        static const uint16_t order[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 2, 1, 3, 4, 6, 5, 7}};
        uint16x8_t off = vmulq_n_u16(vldrhq_u16(order[perm != 0]), (uint16_t)sc);
        for (int32_t c = 0; c < n; c += 8) {
            vstrbq_s16(d + mcud_mve_at(t + c, 1), vldrbq_gather_offset_s16(xr, off));
            xr += 8 * sc;
        }
        return;
    }
    for (int32_t c = 0; c < n; c++) {
        d[mcud_mve_at(t + c, 1)] = xr[(perm ? mcud_mve_pos(c) : c) * sc];
    }
}

/* The receptive field of output pixel (oh, ow) into column d, taps in the order of the weights
 * ((kh, kw, c) when hwc, else (c, kh, kw)), each at mcud_mve_pos when perm (p->w's order), else in
 * order (the model's weights, mcud_conv_s8_direct). */
MCUD_INLINE void mcud_conv_mve_col(const int8_t *xn, const mcud_fast_dims *X, int32_t kh_n, int32_t kw_n,
                                   const mcud_conv_s8_fast_params *p, int32_t oh, int32_t ow, int8_t *d,
                                   int32_t hwc, int32_t perm, int32_t tiled)
{
    int32_t ih0 = oh * p->stride[0] - p->pad[0];
    int32_t iw0 = ow * p->stride[1] - p->pad[1];
    int8_t zx = (int8_t)p->in_zero_point;
    if (hwc || (kh_n == 1 && kw_n == 1 && (!perm || X->c % 4 == 0))) { /* a position's channels together */
        int32_t t = 0;
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t ih = ih0 + kh * p->dilation[0];
            for (int32_t kw = 0; kw < kw_n; kw++, t += X->c) {
                int32_t iw = iw0 + kw * p->dilation[1];
                if (p->inside || ((uint32_t)ih < (uint32_t)X->h && (uint32_t)iw < (uint32_t)X->w)) {
                    mcud_mve_channels_at(xn + ih * X->sh + iw * X->sw, X->c, X->sc, d, t, perm, tiled);
                } else if (!tiled) {
                    memset(d + t, zx, (size_t)X->c);
                } else if ((t & 7) == 0 && (X->c & 7) == 0) { /* eight at a time, each eight within a piece */
                    for (int32_t c = 0; c < X->c; c += 8) {
                        vstrbq_s16(d + mcud_mve_at(t + c, 1), vdupq_n_s16(zx));
                    }
                } else {
                    for (int32_t c = 0; c < X->c; c++) {
                        d[mcud_mve_at(t + c, 1)] = zx;
                    }
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
                    d[mcud_mve_at(perm ? mcud_mve_pos(kk + kw) : kk + kw, tiled)] = xr[kw * dw];
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
                d[mcud_mve_at(perm ? mcud_mve_pos(kk) : kk, tiled)] =
                    in_h && (p->inside || (uint32_t)iw < (uint32_t)X->w) ? xr[iw * X->sw] : zx;
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
        vstrbq_scatter_offset_s32(y0 + MCUD_FAST_YC(oc, ysc, p), off, q);
    }
}

/* The requantized int8 of channel oc's four accumulators (mcud_conv_mve_channels' epilogue). */
MCUD_INLINE int32x4_t mcud_conv_mve_quad(int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t oc, const int32_t *rq,
                                         const mcud_conv_s8_fast_params *p)
{
    if (rq) {
        const int32_t *c = rq + MCUD_FAST_RQ * oc;
        int32x4_t q = vqrdmulhq_n_s32(mcud_mve_lanes4(a0, a1, a2, a3), c[1]);
        return mcud_mve_out8(vrshlq_n_s32(vaddq_s32(q, vshrq_n_s32(q, 31)), ~c[3]), p->out_zero_point, p->act_min,
                             p->act_max);
    }
    return mcud_conv_mve_out(mcud_mve_lanes4(a0, a1, a2, a3), oc, p);
}

/* mcud_conv_mve_channels on four tiled columns (mcud_mve_at: piece j of column i at cols + 64 * j + 16 * i, kp
 * taps each, the buffer 64 * ceil(kp / 16) bytes), two output channels at a time: each piece of the four columns is
 * loaded once for both channels' weights (8 VMLADAVAs for 6 loads, where one channel takes 4 for 5), through one
 * pointer. The last piece: the weights' lanes past kp load as 0 (VCTP), so the columns' bytes there add nothing. */
#ifndef MCUD_MVE_PAIRS
#define MCUD_MVE_PAIRS 1
#endif
MCUD_INLINE void mcud_conv_mve_channels_tiled(const int8_t *cols, int32_t kp, int8_t *y0, uint32x4_t off,
                                              int32_t oc_n, int32_t ysc, const int8_t *wa, int32_t wsn,
                                              const mcud_conv_s8_fast_params *p)
{
    const int32_t *rq = p->hi_shift == 3 && p->rq ? p->rq : NULL;
    const int32_t whole = kp >> 4, tail = kp & 15;
    int32_t oc = 0;
    for (; MCUD_MVE_PAIRS && oc + 2 <= oc_n; oc += 2, wa += 2 * wsn) {
        int32_t a0 = rq ? rq[MCUD_FAST_RQ * oc] : p->bias[oc], a1 = a0, a2 = a0, a3 = a0;
        int32_t b0 = rq ? rq[MCUD_FAST_RQ * (oc + 1)] : p->bias[oc + 1], b1 = b0, b2 = b0, b3 = b0;
        const int8_t *q = cols, *w0 = wa, *w1 = wa + wsn;
        if (whole > 0) {
            /* The whole pieces in assembly: VMLADAVA's accumulator must be an even register, and the eight
               accumulators take all eight (LR too), which GCC 12's allocator does not manage by itself (it spills and
               copies, or fails with "impossible constraints" beside a frame pointer); so every operand is a fixed
               register, none of them r7 (Thumb's frame pointer) or r9 (the platform register of some ABIs), the
               loop counts down a register of its own and the pointers post-increment. 16 instructions a piece: six
               loads and eight VMLADAVAs, 128 multiply-accumulates. */
            register int32_t ra0 __asm__("r0") = a0, ra1 __asm__("r2") = a1, ra2 __asm__("r4") = a2;
            register int32_t ra3 __asm__("r6") = a3, rb0 __asm__("r8") = b0, rb1 __asm__("r10") = b1;
            register int32_t rb2 __asm__("r12") = b2, rb3 __asm__("lr") = b3, rn __asm__("r11") = whole;
            register const int8_t *rq_ __asm__("r1") = q, *rw0 __asm__("r3") = w0, *rw1 __asm__("r5") = w1;
            __asm__("1:\n\t"
                    "vldrb.8 q0, [%[w0]], #16\n\t"
                    "vldrb.8 q1, [%[w1]], #16\n\t"
                    "vldrb.8 q2, [%[q], #16]\n\t"
                    "vmladava.s8 %[a1], q2, q0\n\t"
                    "vmladava.s8 %[b1], q2, q1\n\t"
                    "vldrb.8 q3, [%[q], #32]\n\t"
                    "vmladava.s8 %[a2], q3, q0\n\t"
                    "vmladava.s8 %[b2], q3, q1\n\t"
                    "vldrb.8 q2, [%[q], #48]\n\t"
                    "vmladava.s8 %[a3], q2, q0\n\t"
                    "vmladava.s8 %[b3], q2, q1\n\t"
                    "vldrb.8 q3, [%[q]], #64\n\t"
                    "vmladava.s8 %[a0], q3, q0\n\t"
                    "vmladava.s8 %[b0], q3, q1\n\t"
                    "subs %[n], #1\n\t"
                    "bne 1b"
                    : [a0] "+r"(ra0), [a1] "+r"(ra1), [a2] "+r"(ra2), [a3] "+r"(ra3), [b0] "+r"(rb0),
                      [b1] "+r"(rb1), [b2] "+r"(rb2), [b3] "+r"(rb3), [q] "+r"(rq_), [w0] "+r"(rw0), [w1] "+r"(rw1),
                      [n] "+r"(rn)
                    :
                    : "q0", "q1", "q2", "q3", "cc", "memory");
            a0 = ra0, a1 = ra1, a2 = ra2, a3 = ra3, b0 = rb0, b1 = rb1, b2 = rb2, b3 = rb3;
            q = rq_, w0 = rw0, w1 = rw1;
        }
        if (tail) { /* the last piece: the weights' lanes past kp load as 0 */
            const mve_pred16_t pr = vctp8q((uint32_t)tail);
            int8x16_t u = vldrbq_z_s8(w0, pr), v = vldrbq_z_s8(w1, pr), x = vldrbq_s8(q);
            a0 = vmladavaq_s8(a0, x, u);
            b0 = vmladavaq_s8(b0, x, v);
            x = vldrbq_s8(q + 16);
            a1 = vmladavaq_s8(a1, x, u);
            b1 = vmladavaq_s8(b1, x, v);
            x = vldrbq_s8(q + 32);
            a2 = vmladavaq_s8(a2, x, u);
            b2 = vmladavaq_s8(b2, x, v);
            x = vldrbq_s8(q + 48);
            a3 = vmladavaq_s8(a3, x, u);
            b3 = vmladavaq_s8(b3, x, v);
        }
        vstrbq_scatter_offset_s32(y0 + MCUD_FAST_YC(oc, ysc, p), off, mcud_conv_mve_quad(a0, a1, a2, a3, oc, rq, p));
        vstrbq_scatter_offset_s32(y0 + MCUD_FAST_YC(oc + 1, ysc, p), off, mcud_conv_mve_quad(b0, b1, b2, b3, oc + 1, rq, p));
    }
    for (; oc < oc_n; oc++, wa += wsn) { /* one channel at a time (an odd channel count's last) */
        int32_t a0 = rq ? rq[MCUD_FAST_RQ * oc] : p->bias[oc], a1 = a0, a2 = a0, a3 = a0;
        const int8_t *q = cols, *w0 = wa;
        for (int32_t j = 0; j < whole; j++) {
            int8x16_t u = vldrbq_s8(w0);
            a1 = vmladavaq_s8(a1, vldrbq_s8(q + 16), u);
            a2 = vmladavaq_s8(a2, vldrbq_s8(q + 32), u);
            a3 = vmladavaq_s8(a3, vldrbq_s8(q + 48), u);
            a0 = vmladavaq_s8(a0, vldrbq_s8(q), u);
            q += 64, w0 += 16;
            __asm__("" : "+r"(q), "+r"(w0)); /* one pointer each, post-incremented */
        }
        if (tail) {
            int8x16_t u = vldrbq_z_s8(w0, vctp8q((uint32_t)tail));
            a0 = vmladavaq_s8(a0, vldrbq_s8(q), u);
            a1 = vmladavaq_s8(a1, vldrbq_s8(q + 16), u);
            a2 = vmladavaq_s8(a2, vldrbq_s8(q + 32), u);
            a3 = vmladavaq_s8(a3, vldrbq_s8(q + 48), u);
        }
        vstrbq_scatter_offset_s32(y0 + MCUD_FAST_YC(oc, ysc, p), off, mcud_conv_mve_quad(a0, a1, a2, a3, oc, rq, p));
    }
}

/* Every output channel of the m (1 to 4) pixels whose columns (kp taps each) are in cols; the
 * weights of channel oc are the kp bytes at wa + oc * wsn. */
MCUD_INLINE void mcud_conv_mve_gemm(int8_t *cols, int32_t kp, int32_t m, int8_t *const *yp, int32_t oc_n,
                                    int32_t ysc, const int8_t *wa, int32_t wsn, const mcud_conv_s8_fast_params *p,
                                    int32_t tiled)
{
    if (tiled) { /* columns past m: column 0's pieces copied there (their lanes store lane 0's value) */
        uint32_t at[MCUD_CONV_FAST_PIXELS] = {0, 0, 0, 0};
        for (int32_t i = 1; i < m; i++) {
            at[i] = (uint32_t)(yp[i] - yp[0]);
        }
        for (int32_t i = m; i < MCUD_CONV_FAST_PIXELS; i++) {
            for (int32_t j = 0; j < kp; j += 16) {
                vstrbq_s8(cols + 4 * j + 16 * i, vldrbq_s8(cols + 4 * j));
            }
        }
        mcud_conv_mve_channels_tiled(cols, kp, yp[0], vldrwq_u32(at), oc_n, ysc, wa, wsn, p);
        return;
    }
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
#ifndef MCUD_MVE_STAGE
#define MCUD_MVE_STAGE 160 /* mcud_conv_mve_blocks' column taken tap by tap before it is tiled: up to 160 taps */
#endif

MCUD_INLINE void mcud_conv_mve_blocks(const mcud_view *x, const mcud_view *y, int32_t kh_n, int32_t kw_n,
                                      const mcud_conv_s8_fast_params *p, int8_t *cols, int32_t kp, int32_t per,
                                      int32_t hwc, int32_t perm, const int8_t *wa)
{
    /* tiled columns (mcud_mve_at) where a block is four pixels of more than one piece (at 16 taps or fewer the
       set-up of eight accumulators costs more than the shared loads save, measured): the callers' buffers hold
       64 * ceil(kp / 16) bytes then (the scratch's 8 * kpad for kpad >= 16, the stack's 592 for kp <= 144) */
    mcud_fast_dims X = mcud_fast_dims_of(x), Y = mcud_fast_dims_of(y);
    /* a column taken tap by tap (mcud_conv_mve_col's other paths than a position's channels together) is built in
       order in stage, then copied to its place piece by piece: tiled addresses tap by tap cost more */
    const int32_t by_tap = !(hwc || (kh_n == 1 && kw_n == 1 && (!perm || X.c % 4 == 0)));
    const int32_t tiled = per == MCUD_CONV_FAST_PIXELS && kp > 16 && (!by_tap || kp <= MCUD_MVE_STAGE);
    int8_t stage[MCUD_MVE_STAGE];
    if (tiled && by_tap) {
        memset(stage, 0, sizeof stage); /* taps past K stay 0 */
    }
    for (int32_t n = 0; n < Y.n; n++) {
        const int8_t *xn = (const int8_t *)x->data + n * X.sn;
        int8_t *yn = (int8_t *)y->data + n * Y.sn;
        int8_t *yp[MCUD_CONV_FAST_PIXELS];
        int32_t oh = 0, ow = 0;
        for (int32_t left = Y.h * Y.w; left > 0; left -= per) {
            int32_t m = left < per ? left : per;
            for (int32_t i = 0; i < m; i++) {
                yp[i] = yn + oh * Y.sh + ow * Y.sw;
                if (tiled && by_tap) {
                    mcud_conv_mve_col(xn, &X, kh_n, kw_n, p, oh, ow, stage, hwc, perm, 0);
                    for (int32_t j = 0; j < kp; j += 16) {
                        vstrbq_s8(cols + 4 * j + 16 * i, vldrbq_s8(stage + j));
                    }
                } else {
                    mcud_conv_mve_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + i * (tiled ? 16 : kp), hwc, perm, tiled);
                }
                if (++ow == Y.w) {
                    ow = 0;
                    oh++;
                }
            }
            mcud_conv_mve_gemm(cols, kp, m, yp, MCUD_FAST_OC_N(Y.c, p), Y.sc, wa, kp, p, tiled);
        }
    }
}

MCUD_INLINE void mcud_conv_s8_fast_mve(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                                       const mcud_conv_s8_fast_params *p, void *scratch)
{
    int32_t kh_n = w->ndim >= 4 ? w->shape[2] : 1;
    int32_t kw_n = w->shape[w->ndim - 1];
    int8_t *cols = (int8_t *)scratch;
    /* taps past K stay 0; tiled columns (kpad >= 16) take 64 bytes a piece, within the scratch's 8 * kpad */
    memset(cols, 0, (size_t)(p->kpad >= 16 ? ((p->kpad + 15) >> 4) * 64 : MCUD_CONV_FAST_PIXELS * p->kpad));
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
    if (per < 1 || (!p->hwc && (p->live != NULL || W.sw != 1 || W.sh != W.w || W.sc != W.h * W.w || W.sn != k))) {
        return 0; /* (without hwc the model's weights are read, every channel's: with p->live the scalar path runs) */
    }
    if (per > MCUD_CONV_FAST_PIXELS) {
        per = MCUD_CONV_FAST_PIXELS;
    }
    int8_t cols[MCUD_MVE_COLS];
    if (p->hwc) {
        /* taps past K stay 0 (tiled columns, four of 16 taps or more: 64 bytes a piece, k <= 144 here) */
        memset(cols, 0, (size_t)(per == MCUD_CONV_FAST_PIXELS && k >= 16 ? ((k + 15) >> 4) * 64 : per * k));
        mcud_conv_mve_blocks(x, y, W.h, W.w, p, cols, k, per, 1, 1, p->w);
    } else {
        mcud_conv_mve_blocks(x, y, W.h, W.w, p, cols, k, per, 0, 0, (const int8_t *)w->data);
    }
    return 1;
}

#endif /* MCUD_HAVE_MVE */
#endif /* MCUD_CONV_MVE_H */
