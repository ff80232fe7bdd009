/* Fast int8 convolution (group 1, any kernel, stride, dilation and padding) as an im2col into a
 * small int16 scratch followed by a dual-MAC (SMLAD) matrix product.
 *
 * Why a header of static inline functions: model.c calls them with pointers to its static const
 * views and params, so GCC inlines them and folds every extent, stride and parameter into
 * constants (loop bounds included). The same code runs on host and on Cortex-M0/M3 through the
 * portable operations of mcud_dsp.h, so the host tests check the exact algorithm the M4 runs.
 *
 * Per block of four output pixels the scratch holds their receptive fields as int16: the input
 * value for a tap inside the input and the input zero point for a padded tap, in the weights'
 * (ic, kh, kw) order, or (kh, kw, ic) when C is a multiple of 4 (p->hwc: each tap's channels
 * then fill whole groups, copied four at a time, one bounds check per tap), then zeros up to
 * kpad. The four columns are interleaved by groups of four taps, [kpad / 4][pixel][4], so that
 * one pointer walks them and each pixel's four taps are one 64-bit load (LDRD) at a fixed offset.
 * The zero point is folded into the bias at compile time (bias' = b - zx * sum w):
 * sum (x - zx) w = sum x w - zx sum w, exact, and a padded tap holding zx adds zx * w - zx * w = 0.
 * The weights are repacked at compile time, (OC, kpad) bytes with each group of four as
 * [w0 w2 w1 w3], so that sxtb16 and its ror8 form give the pairs (w0, w1) and (w2, w3) that
 * line up with the scratch pairs.
 *
 * Where a layer's scratch would raise the arena's peak, mcud_conv_s8_direct (below) does the
 * same without working memory, slower (mcudeploy.memory.lifetimes.fit_scratch chooses). */
#ifndef MCUD_CONV_FAST_H
#define MCUD_CONV_FAST_H
#include "mcud.h"
#include "mcud_dsp.h"

#define MCUD_CONV_FAST_PIXELS 4 /* output pixels per block: the scratch holds this many columns */
#define MCUD_TILE_BLOCKS 16     /* blocks of a tile at the most (p->blocks): its outputs' addresses sit on the stack */

/* Bytes of stack mcud_conv_s8_direct may take for the columns of mcud_conv_s8_fast (4 * kpad int16: kpad up
 * to 144, a 3x3 kernel on 16 channels or a pointwise one on 144). The firmware's stack is the board's stack_bytes
 * (4096 on every board file); the shared models' runs under QEMU use at most 1.85 KB of it (qemu-m3, qemu-m55; on
 * qemu-m4 1.2 KB before this buffer grew from 512 bytes, 1.7 KB after), and tests/device/test_board_matrix.py
 * checks every run leaves a quarter unused (READ_STACK). */
#ifndef MCUD_DIRECT_COLS
#define MCUD_DIRECT_COLS 1152
#endif

typedef struct {
    int32_t stride[2];      /* along H, W */
    int32_t dilation[2];
    int32_t pad[2];         /* begin padding along H, W */
    int32_t inside;         /* 1: no window leaves the input (no bounds checks) */
    int32_t hwc;            /* 1: taps (and p->w) in (kh, kw, c) order, C % 4 == 0; else (c, kh, kw) */
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    int32_t kpad;           /* C * KH * KW rounded up to a multiple of 4 */
    int32_t hi_shift;       /* requantization: 0 mcud_requant, 1 mcud_requant_hi (every shift in [33, 62]);
                               TFLite models: 2 mcud_requant_tfl, 3 mcud_requant_tfl_r (every shift in [33, 62]) */
    const int8_t *w;        /* (OC, kpad), repacked as above */
    const int32_t *bias;    /* per output channel, zero point folded in */
    const int32_t *bias_raw; /* the bias as given (mcud_conv_s8_direct's edge pixels; else NULL) */
    const int8_t *w3;       /* mcud_conv_s8_direct, 3-wide kernel, stride and dilation 1 along W: each
                               kernel row as [w0 w1 w2 0] (mcud_conv_direct_row3); else NULL */
    const int32_t *mult;
    const int32_t *shift;
    const int32_t *rq;      /* TFLite models whose every shift is in [33, 62] (hi_shift 3), or NULL: per output
                               channel MCUD_FAST_RQ values {bias, mult, k, r1} read in one go by the block kernels,
                               k being mcud_requant_tfl_k's k_hi with the output zero point folded in
                               (k_hi + (zy << r1), r1 = shift - 32), so the result needs no addition */
    const int32_t *rq2;     /* or NULL: TFLite models with w16: per output channel MCUD_FAST_RQ values {2 bias, mult, c,
                               rs} for mcud_requant_tfl_2 (c = 2^(rs-1) + zy 2^rs, rs = shift - 31), w16 holding twice
                               the channel's weights, where its accumulators stay below 2^30 in magnitude; or, for a
                               channel off that route, {bias, 0, mult, shift} and its weights as they are (mcudeploy/
                               ops/conv.py, _fast_rq2); the block kernels of w16 take these in place of rq
                               (mcud_fast_rq) */
    int32_t rq2_off;        /* 1 where some channel of rq2 is off the doubled route, else 0 (no check per pair) */
    const int16_t *w16;     /* or NULL: the weights widened to int16 for the block kernels of the DSP and
                               portable paths (mcud_conv_fast_pairs), output channels in pairs: per pair and
                               group of four taps the first channel's four then the second's, the last channel of
                               an odd count alone, four per group; zeros up to kpad */
    int32_t blocks;         /* 2 or more (with w16, an even count of output channels): the scratch holds that
                               many blocks of MCUD_CONV_FAST_PIXELS columns, a tile, whose every pixel meets a pair of
                               output channels before the next pair (mcud_conv_fast_tile); else one block */
    const int32_t *live;    /* or NULL: the output channel each channel of the block kernels (w16; an MVE core's, w)
                               writes (live_n of them,
                               in order; their weights, bias and requantization constants above hold only these),
                               the others having no weight but 0: each writes the one value dead_y[j] at every
                               pixel, at channel dead[j] (dead_n of them; mcudeploy/ops/conv.py, _live) */
    int32_t live_n;
    const int32_t *dead;
    const int8_t *dead_y;
    int32_t dead_n;
    const int32_t *in_live; /* or NULL: a pointwise convolution's input channels the columns hold (in_live_n of them,
                               in order, kpad: the last repeated up to a multiple of four, its weight 0 there; w, w16
                               and the bias count only these), the others being one value at every pixel, their
                               products folded into the bias (mcudeploy/ops/conv.py, _channels_read); no MVE core,
                               no tiles */
    int32_t in_live_n;
} mcud_conv_s8_fast_params;

/* Where the block kernels' output channel oc (an index into the params' per-channel arrays) lies: ysc apart, or at
 * p->live[oc]'s place where some channels have no weight but 0. */
#define MCUD_FAST_YC(oc, ysc, p) (((p)->live != NULL ? (p)->live[oc] : (oc)) * (ysc))
/* The output channels the block kernels compute: p->live_n of the c channels where some are left out. */
#define MCUD_FAST_OC_N(c, p) ((p)->live != NULL ? (p)->live_n : (c))

#define MCUD_FAST_RQ 4 /* int32 per output channel in mcud_conv_s8_fast_params.rq */

typedef struct {
    int32_t n, c, h, w;
    int32_t sn, sc, sh, sw;
} mcud_fast_dims;

MCUD_INLINE mcud_fast_dims mcud_fast_dims_of(const mcud_view *v)
{
    mcud_fast_dims d;
    d.n = v->shape[0];
    d.sn = v->stride[0];
    d.c = v->shape[1];
    d.sc = v->stride[1];
    d.h = v->ndim >= 4 ? v->shape[2] : 1;
    d.sh = v->ndim >= 4 ? v->stride[2] : 0;
    d.w = v->shape[v->ndim - 1];
    d.sw = v->stride[v->ndim - 1];
    return d;
}

#if defined(__GNUC__)
#define MCUD_BARRIER() __asm__("" ::: "memory")
/* v is read here, after the stores before: its requantization is not hoisted above them (GCC 12 computed the first
 * steps of eight outputs' requantizations at once, and spilled them) */
#define MCUD_AFTER_STORES(v) __asm__ volatile("" : "+r"(v) : : "memory")
/* p is a register from here on: loads at constant offsets from it are one instruction each (GCC 12 folded a
 * pointer into the arena's constant address with every tap's offset and added each back at run time) */
#define MCUD_IN_REGISTER(p) __asm__("" : "+r"(p))
#else
#define MCUD_BARRIER() ((void)0)
#define MCUD_AFTER_STORES(v) ((void)0)
#define MCUD_IN_REGISTER(p) ((void)0)
#endif

#ifndef MCUD_UNROLL /* a build may define it first (empty: the sanitized host build's model.c, at -O0) */
#if defined(__GNUC__) && !defined(__clang__)
#define MCUD_UNROLL _Pragma("GCC unroll 16")
#else
#define MCUD_UNROLL
#endif
#endif

/* Where tap kk of pixel i sits in the interleaved scratch. */
#define MCUD_COL_AT(kk, i) ((((kk) >> 2) << 4) + ((i) << 2) + ((kk) & 3))

/* The receptive field of output pixel (oh, ow) into column d (already offset to its pixel). */
MCUD_INLINE void mcud_conv_fast_col(const int8_t *xn, const mcud_fast_dims *X, int32_t kh_n, int32_t kw_n,
                                    const mcud_conv_s8_fast_params *p, int32_t oh, int32_t ow, int16_t *d)
{
    int32_t ih0 = oh * p->stride[0] - p->pad[0];
    int32_t iw0 = ow * p->stride[1] - p->pad[1];
    int32_t dh = p->dilation[0] * X->sh, dw = p->dilation[1] * X->sw;
    int32_t kk = 0;
    if (p->hwc) { /* taps in (kh, kw, c) order, C a multiple of 4: four channels per group */
        int16_t zx = (int16_t)p->in_zero_point;
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t ih = ih0 + kh * p->dilation[0];
            for (int32_t kw = 0; kw < kw_n; kw++) {
                int32_t iw = iw0 + kw * p->dilation[1];
                if (p->inside || ((uint32_t)ih < (uint32_t)X->h && (uint32_t)iw < (uint32_t)X->w)) {
                    const int8_t *xr = xn + ih * X->sh + iw * X->sw;
                    MCUD_IN_REGISTER(xr);
                    MCUD_UNROLL /* C a constant: every load and store at a constant offset, no loop per tap */
                    for (int32_t c = 0; c < X->c; c += 4) {
                        d[0] = xr[0];
                        d[1] = xr[X->sc];
                        d[2] = xr[2 * X->sc];
                        d[3] = xr[3 * X->sc];
                        xr += 4 * X->sc;
                        d += 16;
                    }
                } else {
                    MCUD_UNROLL
                    for (int32_t c = 0; c < X->c; c += 4) {
                        d[0] = zx;
                        d[1] = zx;
                        d[2] = zx;
                        d[3] = zx;
                        d += 16;
                    }
                }
            }
        }
        return;
    }
    if (p->inside && kh_n == 1 && kw_n == 1) { /* pointwise: four channels per group */
        const int8_t *xr = xn + ih0 * X->sh + iw0 * X->sw;
        int32_t c = 0;
        if (p->in_live != NULL) { /* the channels not of one value only (a multiple of four): offsets constants */
            MCUD_UNROLL
            for (; c < p->in_live_n; c += 4) {
                d[0] = xr[p->in_live[c] * X->sc];
                d[1] = xr[p->in_live[c + 1] * X->sc];
                d[2] = xr[p->in_live[c + 2] * X->sc];
                d[3] = xr[p->in_live[c + 3] * X->sc];
                d += 16;
            }
            return;
        }
        MCUD_UNROLL /* C a constant: no loop's own instructions per group */
        for (; c + 4 <= X->c; c += 4) {
            d[0] = xr[0];
            d[1] = xr[X->sc];
            d[2] = xr[2 * X->sc];
            d[3] = xr[3 * X->sc];
            xr += 4 * X->sc;
            d += 16;
        }
        for (; c < X->c; c++) {
            d[c & 3] = xr[(c & 3) * X->sc];
        }
        return;
    }
    if (p->inside || (ih0 >= 0 && iw0 >= 0 && ih0 + (kh_n - 1) * p->dilation[0] < X->h &&
                      iw0 + (kw_n - 1) * p->dilation[1] < X->w)) { /* the window is inside the input */
        const int8_t *xp = xn + ih0 * X->sh + iw0 * X->sw;
        MCUD_IN_REGISTER(xp);
        MCUD_UNROLL /* every tap's place in the column a constant (few channels: this order has C % 4 != 0) */
        for (int32_t c = 0; c < X->c; c++) {
            MCUD_UNROLL
            for (int32_t kh = 0; kh < kh_n; kh++) {
                const int8_t *xr = xp + c * X->sc + kh * dh;
                MCUD_UNROLL
                for (int32_t kw = 0; kw < kw_n; kw++) {
                    d[MCUD_COL_AT(kk + kw, 0)] = xr[kw * dw];
                }
                kk += kw_n;
            }
        }
        return;
    }
    int16_t zx = (int16_t)p->in_zero_point;
    for (int32_t c = 0; c < X->c; c++) {
        for (int32_t kh = 0; kh < kh_n; kh++) {
            int32_t ih = ih0 + kh * p->dilation[0];
            if ((uint32_t)ih >= (uint32_t)X->h) {
                for (int32_t kw = 0; kw < kw_n; kw++, kk++) {
                    d[MCUD_COL_AT(kk, 0)] = zx;
                }
                continue;
            }
            const int8_t *xr = xn + c * X->sc + ih * X->sh;
            for (int32_t kw = 0; kw < kw_n; kw++, kk++) {
                int32_t iw = iw0 + kw * p->dilation[1];
                d[MCUD_COL_AT(kk, 0)] = (uint32_t)iw < (uint32_t)X->w ? (int16_t)xr[iw * X->sw] : zx;
            }
        }
    }
}

MCUD_INLINE int8_t mcud_conv_fast_out(int32_t acc, int32_t oc, const mcud_conv_s8_fast_params *p)
{
    int32_t q;
    switch (p->hi_shift) { /* a constant once inlined into model.c */
    case 1: q = mcud_requant_hi(acc, p->mult[oc], p->shift[oc]); break;
    case 2: q = mcud_requant_tfl(acc, p->mult[oc], p->shift[oc]); break;
    case 3: q = mcud_requant_tfl_r(acc, p->mult[oc], p->shift[oc]); break;
    default: q = mcud_requant(acc, p->mult[oc], p->shift[oc]); break;
    }
    if (p->act_min == -128 && p->act_max == 127) {
        return (int8_t)mcud_sat8(q + p->out_zero_point);
    }
    return (int8_t)mcud_clamp(q + p->out_zero_point, p->act_min, p->act_max);
}

/* The per-channel constants of the w16 block kernels: p->rq2 where given (the weights doubled where its mult is not 0),
 * else p->rq. */
MCUD_INLINE const int32_t *mcud_fast_rq(const mcud_conv_s8_fast_params *p)
{
    return p->rq2 != NULL ? p->rq2 : p->rq;
}

/* mcud_conv_fast_out through mcud_fast_rq (rq: the channel's four values): the zero point is in k (or c) already. */
MCUD_INLINE int8_t mcud_conv_fast_out_rq(int32_t acc, int32_t mult, int32_t k, int32_t r1,
                                         const mcud_conv_s8_fast_params *p)
{
    int32_t q = p->rq2 != NULL ? mcud_requant_tfl_2(acc, mult, k, r1) : mcud_requant_tfl_k(acc, mult, k, r1);
    if (p->act_min == -128 && p->act_max == 127) {
        return (int8_t)mcud_sat8(q);
    }
    return (int8_t)mcud_clamp(q, p->act_min, p->act_max);
}

/* mcud_conv_fast_out_rq for any channel of mcud_fast_rq(p) (its four values at rq): with p->rq2, a channel off the
 * doubled route (mult 0 there: its sums are single, its own mult and shift follow) as mcud_requant_tfl_any. */
MCUD_INLINE int8_t mcud_conv_fast_out_any(int32_t acc, const int32_t *rq, const mcud_conv_s8_fast_params *p)
{
    if (p->rq2_off && rq[1] == 0) {
        return (int8_t)mcud_clamp(mcud_requant_tfl_any(acc, rq[2], rq[3]) + p->out_zero_point, p->act_min,
                                  p->act_max);
    }
    return mcud_conv_fast_out_rq(acc, rq[1], rq[2], rq[3], p);
}

/* The block's eight sums of channels oc and oc + 1 (a<pixel><channel>) through mcud_conv_fast_out_any (rq: channel oc's
 * four values, oc + 1's after them), pixel i's at oi: the block kernels' epilogue for a pair with a channel off the
 * doubled route. */
MCUD_INLINE void mcud_conv_fast_out8_any(int32_t a00, int32_t a10, int32_t a20, int32_t a30, int32_t a01, int32_t a11,
                                         int32_t a21, int32_t a31, int8_t *o0, int8_t *o1, int8_t *o2, int8_t *o3,
                                         int32_t oc, int32_t ysc, const int32_t *rq, const mcud_conv_s8_fast_params *p)
{
    o0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a00, rq, p);
    o1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a10, rq, p);
    o2[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a20, rq, p);
    o3[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a30, rq, p);
    o0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a01, rq + MCUD_FAST_RQ, p);
    o1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a11, rq + MCUD_FAST_RQ, p);
    o2[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a21, rq + MCUD_FAST_RQ, p);
    o3[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a31, rq + MCUD_FAST_RQ, p);
}

/* Two pairs (four int16) at byte offset `off` of p: one LDRD on cores with the DSP extension
 * (GCC does not fuse the two loads by itself), two loads elsewhere. The memory operand is the eight bytes
 * read, no more: a larger one makes GCC's -Warray-bounds see a read past a short array. */
typedef struct {
    uint32_t w[2];
} __attribute__((__may_alias__)) mcud_col_quad;

#if MCUD_HAVE_DSP && defined(__GNUC__)
#define MCUD_LOAD_QUAD(lo, hi, p, off) \
    __asm__("ldrd %0, %1, [%2, #" #off "]" \
            : "=r"(lo), "=r"(hi) \
            : "r"(p), "m"(*(const mcud_col_quad *)((const uint8_t *)(p) + (off))))
#else
#define MCUD_LOAD_QUAD(lo, hi, p, off) \
    do { \
        (lo) = mcud_load32((const uint8_t *)(p) + (off)); \
        (hi) = mcud_load32((const uint8_t *)(p) + (off) + 4); \
    } while (0)
#endif

/* One pair of taps of two pixels (the words at byte offsets cb and cb + 8 of c) and of two channels (at wb and
 * wb + 8 of w) as four 32-bit loads one after another: on the Cortex-M4 a load that follows a load takes one cycle
 * where LDRD takes three, so a group of 16 multiply-accumulates reads its operands in two runs of four loads,
 * 10 cycles, instead of four LDRDs' 12 (four instructions more), with four registers for the operands at a time.
 * Elsewhere the plain loads, in any order. */
typedef struct {
    uint32_t w;
} __attribute__((__may_alias__)) mcud_col_word; /* the four bytes one LDR of MCUD_LOAD_PAIR4 reads, no more */

#if MCUD_HAVE_DSP && defined(__GNUC__)
#define MCUD_LOAD_PAIR4(x0, x2, w0, w1, c, cb, w, wb) \
    __asm__("ldr %0, [%4, #" #cb "]\n\t" \
            "ldr %1, [%4, #" #cb " + 8]\n\t" \
            "ldr %2, [%5, #" #wb "]\n\t" \
            "ldr %3, [%5, #" #wb " + 8]" \
            : "=&r"(x0), "=&r"(x2), "=&r"(w0), "=r"(w1) \
            : "r"(c), "r"(w), "m"(*(const mcud_col_word *)((const uint8_t *)(c) + (cb))), \
              "m"(*(const mcud_col_word *)((const uint8_t *)(c) + (cb) + 8)), \
              "m"(*(const mcud_col_word *)((const uint8_t *)(w) + (wb))), \
              "m"(*(const mcud_col_word *)((const uint8_t *)(w) + (wb) + 8)))
#else
#define MCUD_LOAD_PAIR4(x0, x2, w0, w1, c, cb, w, wb) \
    do { \
        (x0) = mcud_load32((const uint8_t *)(c) + (cb)); \
        (x2) = mcud_load32((const uint8_t *)(c) + (cb) + 8); \
        (w0) = mcud_load32((const uint8_t *)(w) + (wb)); \
        (w1) = mcud_load32((const uint8_t *)(w) + (wb) + 8); \
    } while (0)
#endif

/* One group of four taps for four pixels: a weight word unpacked once, used four times. */
#define MCUD_GEMM4_STEP(wp, cp) \
    do { \
        uint32_t v_ = mcud_load32(wp); \
        uint32_t lo_ = mcud_sxtb16(v_), hi_ = mcud_sxtb16_ror8(v_); \
        uint32_t x0_, x1_; \
        MCUD_LOAD_QUAD(x0_, x1_, cp, 0); \
        a0 = mcud_smlad(lo_, x0_, a0); \
        a0 = mcud_smlad(hi_, x1_, a0); \
        MCUD_LOAD_QUAD(x0_, x1_, cp, 8); \
        a1 = mcud_smlad(lo_, x0_, a1); \
        a1 = mcud_smlad(hi_, x1_, a1); \
        MCUD_LOAD_QUAD(x0_, x1_, cp, 16); \
        a2 = mcud_smlad(lo_, x0_, a2); \
        a2 = mcud_smlad(hi_, x1_, a2); \
        MCUD_LOAD_QUAD(x0_, x1_, cp, 24); \
        a3 = mcud_smlad(lo_, x0_, a3); \
        a3 = mcud_smlad(hi_, x1_, a3); \
    } while (0)

/* Every output channel of the four pixels in the scratch, one channel at a time. The outputs go to
 * yp[i], or, where flat (a constant: the pixels are consecutive in a dense output), to y0 + i * ysw, so
 * that every store is one register plus a constant. */
MCUD_INLINE void mcud_conv_fast_gemm4(const int16_t *cols, int8_t *const *yp, int8_t *y0, int32_t ysw, int32_t flat,
                                      int32_t oc_n, int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4; /* groups of four taps */
    const int8_t *wa = p->w;
    const int32_t has_rq = p->rq != NULL; /* a constant once inlined */
    for (int32_t oc = 0; oc < oc_n; oc++) {
        const int16_t *c = cols;
        const int32_t *rq = has_rq ? p->rq + oc * MCUD_FAST_RQ : NULL;
        int32_t a0 = has_rq ? rq[0] : p->bias[oc], a1 = a0, a2 = a0, a3 = a0;
        int32_t j = 0;
        for (; j + 2 <= q; j += 2) {
            MCUD_GEMM4_STEP(wa, c);
            MCUD_GEMM4_STEP(wa + 4, c + 16);
            wa += 8;
            c += 32;
        }
        if (j < q) {
            MCUD_GEMM4_STEP(wa, c);
            wa += 4;
        }
        int8_t *o0 = flat ? y0 + MCUD_FAST_YC(oc, ysc, p) : yp[0] + MCUD_FAST_YC(oc, ysc, p);
        int8_t *o1 = flat ? y0 + MCUD_FAST_YC(oc, ysc, p) + ysw : yp[1] + MCUD_FAST_YC(oc, ysc, p);
        int8_t *o2 = flat ? y0 + MCUD_FAST_YC(oc, ysc, p) + 2 * ysw : yp[2] + MCUD_FAST_YC(oc, ysc, p);
        int8_t *o3 = flat ? y0 + MCUD_FAST_YC(oc, ysc, p) + 3 * ysw : yp[3] + MCUD_FAST_YC(oc, ysc, p);
        if (has_rq) {
            const int32_t mult = rq[1], k = rq[2], r1 = rq[3];
            *o0 = mcud_conv_fast_out_rq(a0, mult, k, r1, p);
            *o1 = mcud_conv_fast_out_rq(a1, mult, k, r1, p);
            *o2 = mcud_conv_fast_out_rq(a2, mult, k, r1, p);
            *o3 = mcud_conv_fast_out_rq(a3, mult, k, r1, p);
            continue;
        }
        *o0 = mcud_conv_fast_out(a0, oc, p);
        *o1 = mcud_conv_fast_out(a1, oc, p);
        *o2 = mcud_conv_fast_out(a2, oc, p);
        *o3 = mcud_conv_fast_out(a3, oc, p);
    }
}

/* Four taps of two pixels (their pairs x0 x1 and x2 x3) against one channel's four weights at byte offset off
 * of w: a<pixel 0> and b<pixel 1>. */
#define MCUD_PAIRS_STEP(a, b, w, off) \
    do { \
        uint32_t w0_, w1_; \
        MCUD_LOAD_QUAD(w0_, w1_, w, off); \
        a = mcud_smlad(x0, w0_, a); \
        a = mcud_smlad(x1, w1_, a); \
        if (n == 2) { \
            b = mcud_smlad(x2, w0_, b); \
            b = mcud_smlad(x3, w1_, b); \
        } \
    } while (0)

/* One group of four taps: each pixel's two pairs loaded once (byte offset cb of c) for both channels' weights
 * (byte offset wb of wp). */
#define MCUD_PAIRS_GROUP(cb, wb) \
    do { \
        uint32_t x0, x1, x2 = 0, x3 = 0; \
        if (n == 2) { /* x0 x2: the pixels' pair, w0 w1: the channels' pair, then the group's second pairs */ \
            uint32_t w0, w1; \
            MCUD_LOAD_PAIR4(x0, x2, w0, w1, c, cb, wp, wb); \
            a00 = mcud_smlad(x0, w0, a00); \
            a10 = mcud_smlad(x2, w0, a10); \
            a01 = mcud_smlad(x0, w1, a01); \
            a11 = mcud_smlad(x2, w1, a11); \
            MCUD_LOAD_PAIR4(x1, x3, w0, w1, c, cb + 4, wp, wb + 4); \
            a00 = mcud_smlad(x1, w0, a00); \
            a10 = mcud_smlad(x3, w0, a10); \
            a01 = mcud_smlad(x1, w1, a01); \
            a11 = mcud_smlad(x3, w1, a11); \
            break; \
        } \
        MCUD_LOAD_QUAD(x0, x1, c, cb); \
        MCUD_PAIRS_STEP(a00, a10, wp, wb); \
        MCUD_PAIRS_STEP(a01, a11, wp, wb + 8); \
    } while (0)

/* Every group of four taps (q of them) from c and wp, both moved past them: four groups a turn (a quarter of
 * the loop's own instructions), then the rest. */
#define MCUD_PAIRS_ALL() \
    do { \
        int32_t j_ = 0; \
        for (; j_ + 4 <= q; j_ += 4) { \
            MCUD_PAIRS_GROUP(0, 0); \
            MCUD_PAIRS_GROUP(32, 16); \
            MCUD_PAIRS_GROUP(64, 32); \
            MCUD_PAIRS_GROUP(96, 48); \
            wp += 32; \
            c += 64; \
        } \
        for (; j_ < q; j_++) { \
            MCUD_PAIRS_GROUP(0, 0); \
            wp += 8; \
            c += 16; \
        } \
    } while (0)

/* The block's eight sums of channels oc and oc + 1 (a<pixel><channel>) through mcud_conv_fast_out, pixel i's at oi. */
MCUD_INLINE void mcud_conv_fast_out8(int32_t a00, int32_t a10, int32_t a20, int32_t a30, int32_t a01, int32_t a11,
                                     int32_t a21, int32_t a31, int8_t *o0, int8_t *o1, int8_t *o2, int8_t *o3,
                                     int32_t oc, int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    o0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a00, oc, p);
    o1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a10, oc, p);
    o2[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a20, oc, p);
    o3[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a30, oc, p);
    o0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a01, oc + 1, p);
    o1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a11, oc + 1, p);
    o2[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a21, oc + 1, p);
    o3[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a31, oc + 1, p);
}

/* The last output channel of an odd count (oc) for n (1 or 2) pixels of the scratch from column i0: four weights a
 * group, the channel's int16 weights after every pair's. */
MCUD_INLINE void mcud_conv_fast_last(const int16_t *cols, int32_t i0, int32_t n, int8_t *y0, int8_t *y1, int32_t oc,
                                     int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4;
    const int16_t *wp = p->w16 + oc * p->kpad;
    const int16_t *c = cols + 4 * i0;
    const int32_t *rq = mcud_fast_rq(p); /* with p->rq2, the only bias of the doubled weights */
    int32_t a0 = rq != NULL ? rq[oc * MCUD_FAST_RQ] : p->bias[oc], a1 = a0;
    for (int32_t j = 0; j < q; j++) {
        uint32_t x0, x1, w0, w1;
        MCUD_LOAD_QUAD(w0, w1, wp, 0);
        MCUD_LOAD_QUAD(x0, x1, c, 0);
        a0 = mcud_smlad(x0, w0, a0);
        a0 = mcud_smlad(x1, w1, a0);
        if (n == 2) {
            MCUD_LOAD_QUAD(x0, x1, c, 8);
            a1 = mcud_smlad(x0, w0, a1);
            a1 = mcud_smlad(x1, w1, a1);
        }
        wp += 4;
        c += 16;
    }
    if (rq != NULL) {
        rq += oc * MCUD_FAST_RQ;
        y0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a0, rq, p);
        if (n == 2) {
            y1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a1, rq, p);
        }
        return;
    }
    y0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a0, oc, p);
    if (n == 2) {
        y1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a1, oc, p);
    }
}

/* One group of four taps of a whole block (four pixels, the group's 32 bytes at byte offset cb of c) against a pair of
 * channels (the group's 16 bytes at byte offset wb of w: the first channel's four int16, then the second's): 32
 * multiply-accumulates from four weight and eight column words, a<pixel><channel>. Half a group at a time, each
 * channel's pair of taps is loaded once and meets the four pixels, loaded two at a time: 28 instructions and, on the
 * Cortex-M4, runs of four and two loads (a load after a load takes one cycle), 32 cycles; a pair of pixels
 * (MCUD_PAIRS_GROUP) takes 16 instructions and 18 cycles for 16. The portable form below is the same sums. */
#define MCUD_QUAD_ASM_GROUP(cb, wb) \
    "ldr r7, [%[w], #" #wb "]\n\t" \
    "ldr r9, [%[w], #" #wb " + 8]\n\t" \
    "ldr %[x0], [%[c], #" #cb "]\n\t" \
    "ldr %[x1], [%[c], #" #cb " + 8]\n\t" \
    "smlad %[a00], %[x0], r7, %[a00]\n\t" \
    "smlad %[a01], %[x0], r9, %[a01]\n\t" \
    "smlad %[a10], %[x1], r7, %[a10]\n\t" \
    "smlad %[a11], %[x1], r9, %[a11]\n\t" \
    "ldr %[x0], [%[c], #" #cb " + 16]\n\t" \
    "ldr %[x1], [%[c], #" #cb " + 24]\n\t" \
    "smlad %[a20], %[x0], r7, %[a20]\n\t" \
    "smlad %[a21], %[x0], r9, %[a21]\n\t" \
    "smlad %[a30], %[x1], r7, %[a30]\n\t" \
    "smlad %[a31], %[x1], r9, %[a31]\n\t" \
    "ldr r7, [%[w], #" #wb " + 4]\n\t" \
    "ldr r9, [%[w], #" #wb " + 12]\n\t" \
    "ldr %[x0], [%[c], #" #cb " + 4]\n\t" \
    "ldr %[x1], [%[c], #" #cb " + 12]\n\t" \
    "smlad %[a00], %[x0], r7, %[a00]\n\t" \
    "smlad %[a01], %[x0], r9, %[a01]\n\t" \
    "smlad %[a10], %[x1], r7, %[a10]\n\t" \
    "smlad %[a11], %[x1], r9, %[a11]\n\t" \
    "ldr %[x0], [%[c], #" #cb " + 20]\n\t" \
    "ldr %[x1], [%[c], #" #cb " + 28]\n\t" \
    "smlad %[a20], %[x0], r7, %[a20]\n\t" \
    "smlad %[a21], %[x0], r9, %[a21]\n\t" \
    "smlad %[a30], %[x1], r7, %[a30]\n\t" \
    "smlad %[a31], %[x1], r9, %[a31]\n\t"

/* The operands of MCUD_QUAD_ASM_GROUP: eight accumulators, the two pointers and four temporaries, fourteen registers,
 * every one the core has but sp and pc (C written the same way spills accumulators to the stack, GCC 12). GCC is not
 * asked for fourteen: a frame pointer (-O0, -fno-omit-frame-pointer) leaves it thirteen, and its allocator fails
 * ("impossible constraints") even without one wherever the code around keeps a value more, as VWW's did at -Os, -Og and
 * -O3. So twelve of them are fixed registers (MCUD_QUAD_PINNED, r0 to r6, r8, r10 to r12 and lr, which no code
 * generation reserves) and the weights' temporaries w0 and w1 are r7 (Thumb's frame pointer) and r9 (the platform
 * register of some ABIs), saved on the stack by each assembly block and given back at its end (MCUD_QUAD_SAVE and
 * MCUD_QUAD_RESTORE: a push and a pop, some six cycles an assembly block on the Cortex-M4). */
#define MCUD_QUAD_ASM_OPERANDS \
    [a00] "+r"(r00_), [a01] "+r"(r01_), [a10] "+r"(r10_), [a11] "+r"(r11_), [a20] "+r"(r20_), [a21] "+r"(r21_), \
    [a30] "+r"(r30_), [a31] "+r"(r31_), [c] "+r"(rc_), [w] "+r"(rw_), [x0] "=r"(x0_), [x1] "=r"(x1_)
#define MCUD_QUAD_SAVE "push {r7, r9}\n\t"
#define MCUD_QUAD_RESTORE "pop {r7, r9}"

/* The operands' registers, given the values of a00 .. a31, c and wp (MCUD_QUAD_UNPIN takes them back). */
#define MCUD_QUAD_PINNED() \
    register int32_t r00_ __asm__("r0") = a00; \
    register int32_t r01_ __asm__("r1") = a01; \
    register int32_t r10_ __asm__("r2") = a10; \
    register int32_t r11_ __asm__("r3") = a11; \
    register int32_t r20_ __asm__("r4") = a20; \
    register int32_t r21_ __asm__("r5") = a21; \
    register int32_t r30_ __asm__("r6") = a30; \
    register int32_t r31_ __asm__("r8") = a31; \
    register const int16_t *rc_ __asm__("r10") = c; \
    register const int16_t *rw_ __asm__("r11") = wp; \
    register uint32_t x0_ __asm__("r12"); \
    register uint32_t x1_ __asm__("lr")
#define MCUD_QUAD_UNPIN() \
    do { \
        a00 = r00_, a01 = r01_, a10 = r10_, a11 = r11_, a20 = r20_, a21 = r21_, a30 = r30_, a31 = r31_; \
        c = rc_, wp = rw_; \
    } while (0)

#define MCUD_QUAD_HALF(t, cb, wb) \
    do { \
        uint32_t w0_ = mcud_load32((const uint8_t *)wp + (wb) + 2 * (t)); \
        uint32_t w1_ = mcud_load32((const uint8_t *)wp + (wb) + 8 + 2 * (t)); \
        uint32_t x_ = mcud_load32((const uint8_t *)c + (cb) + 2 * (t)); \
        a00 = mcud_smlad(x_, w0_, a00); \
        a01 = mcud_smlad(x_, w1_, a01); \
        x_ = mcud_load32((const uint8_t *)c + (cb) + 8 + 2 * (t)); \
        a10 = mcud_smlad(x_, w0_, a10); \
        a11 = mcud_smlad(x_, w1_, a11); \
        x_ = mcud_load32((const uint8_t *)c + (cb) + 16 + 2 * (t)); \
        a20 = mcud_smlad(x_, w0_, a20); \
        a21 = mcud_smlad(x_, w1_, a21); \
        x_ = mcud_load32((const uint8_t *)c + (cb) + 24 + 2 * (t)); \
        a30 = mcud_smlad(x_, w0_, a30); \
        a31 = mcud_smlad(x_, w1_, a31); \
    } while (0)

/* MCUD_QUADS_ALL: every group of four taps (q of them, a constant once inlined) of a block from c and a pair of
 * channels from wp, both moved past them. On the DSP path one assembly block runs them all, so that r7 and r9 are saved
 * once: four groups a turn of a loop (the turn's end compared with a word on the stack, no register being left; five
 * instructions a turn), then a tail of two and of one as q has them. */
#if MCUD_HAVE_DSP && defined(__GNUC__)
/* The turns of four groups (the turn's end compared with the word MCUD_QUAD_ASM_LOOP pushed at [sp, #8]), and the
 * groups of a tail of two and of one. */
#define MCUD_QUAD_TURNS \
    "1:\n\t" MCUD_QUAD_ASM_GROUP(0, 0) MCUD_QUAD_ASM_GROUP(32, 16) MCUD_QUAD_ASM_GROUP(64, 32) \
    MCUD_QUAD_ASM_GROUP(96, 48) \
    "add %[c], %[c], #128\n\t" \
    "add %[w], %[w], #64\n\t" \
    "ldr %[x0], [sp, #8]\n\t" \
    "cmp %[c], %[x0]\n\t" \
    "bne 1b\n\t"
#define MCUD_QUAD_TAIL2 MCUD_QUAD_ASM_GROUP(0, 0) MCUD_QUAD_ASM_GROUP(32, 16) "add %[c], %[c], #64\n\t" "add %[w], %[w], #32\n\t"
#define MCUD_QUAD_TAIL1 MCUD_QUAD_ASM_GROUP(0, 0) "add %[c], %[c], #32\n\t" "add %[w], %[w], #16\n\t"
/* BODY between the saving of r7 and r9 and their restoring, with the loop's end pushed too (x0 is r12: at [sp, #8]) */
#define MCUD_QUAD_ASM_LOOP(BODY) \
    __asm__ volatile("ldr %[x0], %[end]\n\t" /* before the push moves sp */ \
                     "push {r7, r9, %[x0]}\n\t" BODY "pop {r7, r9, %[x0]}" \
                     : MCUD_QUAD_ASM_OPERANDS \
                     : [end] "m"(end_) \
                     : "cc", "memory")
#define MCUD_QUAD_ASM(BODY) \
    __asm__ volatile(MCUD_QUAD_SAVE BODY MCUD_QUAD_RESTORE : MCUD_QUAD_ASM_OPERANDS : : "memory")

#define MCUD_QUADS_ALL() \
    do { \
        const int16_t *const end_ = c + 64 * (q / 4); /* before the pinned registers are set */ \
        MCUD_QUAD_PINNED(); \
        if (q >= 4) { \
            switch (q & 3) { \
            case 0: MCUD_QUAD_ASM_LOOP(MCUD_QUAD_TURNS); break; \
            case 1: MCUD_QUAD_ASM_LOOP(MCUD_QUAD_TURNS MCUD_QUAD_TAIL1); break; \
            case 2: MCUD_QUAD_ASM_LOOP(MCUD_QUAD_TURNS MCUD_QUAD_TAIL2); break; \
            default: MCUD_QUAD_ASM_LOOP(MCUD_QUAD_TURNS MCUD_QUAD_TAIL2 MCUD_QUAD_TAIL1); break; \
            } \
        } else if (q == 3) { \
            MCUD_QUAD_ASM(MCUD_QUAD_TAIL2 MCUD_QUAD_TAIL1); \
        } else if (q == 2) { \
            MCUD_QUAD_ASM(MCUD_QUAD_TAIL2); \
        } else if (q == 1) { \
            MCUD_QUAD_ASM(MCUD_QUAD_TAIL1); \
        } \
        MCUD_QUAD_UNPIN(); \
    } while (0)
#else
#define MCUD_QUADS_ALL() \
    do { \
        for (int32_t j_ = 0; j_ < q; j_++) { \
            MCUD_QUAD_HALF(0, 0, 0); \
            MCUD_QUAD_HALF(2, 0, 0); \
            wp += 8; \
            c += 16; \
        } \
    } while (0)
#endif

#if MCUD_HAVE_DSP && defined(__GNUC__)
/* Two outputs of one channel (accumulators A and B, twice the sums: p->rq2) requantized (mcud_requant_tfl_2, then
 * SSAT: the range is int8's) and stored at OA and OB, the channel's mult, c and rs in registers: five instructions an
 * output where GCC 12's C of mcud_conv_fast_out_rq took about six (its moves around SMMLAR), in seven registers. The
 * two outputs' steps alternate, each result used two instructions on, which a dual-issue core (the Cortex-M7) issues
 * in pairs (estimate/dual.py: 16 cycles a channel where one output after another takes 26). */
#define MCUD_RQ2_PAIR_ASM(A, B, m, c, rs, OA, OB) \
    do { \
        uint32_t h_, g_; \
        __asm__("smmlar %[h], %[a], %[m], %[c]\n\t" \
                "smmlar %[g], %[b], %[m], %[c]\n\t" \
                "add %[h], %[h], %[a], asr #31\n\t" \
                "add %[g], %[g], %[b], asr #31\n\t" \
                "asr %[h], %[h], %[rs]\n\t" \
                "asr %[g], %[g], %[rs]\n\t" \
                "ssat %[h], #8, %[h]\n\t" \
                "ssat %[g], #8, %[g]\n\t" \
                "strb %[h], %[oa]\n\t" \
                "strb %[g], %[ob]" \
                : [h] "=&r"(h_), [g] "=&r"(g_), [oa] "=m"(OA), [ob] "=m"(OB) \
                : [a] "r"(A), [b] "r"(B), [m] "r"(m), [c] "r"(c), [rs] "r"(rs)); \
    } while (0)
#endif

/* The four pixels of the block at cols for every pair of output channels (an odd count's last channel:
 * mcud_conv_fast_pairs), with the int16 weights of p->w16: pixel i writes channel oc at yo[i] + oc * ysc, or, where
 * flat (a constant), at y0 + i * ysw + oc * ysc. The pair's constants are read after its sums, channel by channel. */
MCUD_INLINE void mcud_conv_fast_quads(const int16_t *cols, int8_t *const *yo, int8_t *y0, int32_t ysw, int32_t flat,
                                      int32_t oc_n, int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4;
    const int16_t *wp = p->w16;
    const int32_t *const rq0 = mcud_fast_rq(p);
    const int32_t has_rq = rq0 != NULL; /* a constant once inlined */
    int8_t *o0 = flat ? y0 : yo[0], *o1 = flat ? y0 + ysw : yo[1];
    int8_t *o2 = flat ? y0 + 2 * ysw : yo[2], *o3 = flat ? y0 + 3 * ysw : yo[3];
    int32_t oc = 0;
    for (; oc + 2 <= oc_n; oc += 2) {
        const int16_t *c = cols;
        const int32_t *rq = has_rq ? rq0 + oc * MCUD_FAST_RQ : NULL;
        int32_t b0 = has_rq ? rq[0] : p->bias[oc], b1 = has_rq ? rq[MCUD_FAST_RQ] : p->bias[oc + 1];
        int32_t a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
        MCUD_QUADS_ALL();
        if (p->rq2_off && (rq[1] == 0 || rq[MCUD_FAST_RQ + 1] == 0)) { /* a channel off the doubled route */
            mcud_conv_fast_out8_any(a00, a10, a20, a30, a01, a11, a21, a31, o0, o1, o2, o3, oc, ysc, rq, p);
            continue;
        }
#if MCUD_HAVE_DSP && defined(__GNUC__)
        if (p->rq2 != NULL && p->act_min == -128 && p->act_max == 127) { /* in assembly: MCUD_RQ2_PAIR_ASM */
            int32_t m = rq[1], c = rq[2], rs = rq[3];
            MCUD_RQ2_PAIR_ASM(a00, a10, m, c, rs, o0[MCUD_FAST_YC(oc, ysc, p)], o1[MCUD_FAST_YC(oc, ysc, p)]);
            MCUD_RQ2_PAIR_ASM(a20, a30, m, c, rs, o2[MCUD_FAST_YC(oc, ysc, p)], o3[MCUD_FAST_YC(oc, ysc, p)]);
            MCUD_AFTER_STORES(a01); /* the second channel's constants read after the first's outputs (no spills) */
            m = rq[MCUD_FAST_RQ + 1], c = rq[MCUD_FAST_RQ + 2], rs = rq[MCUD_FAST_RQ + 3];
            MCUD_RQ2_PAIR_ASM(a01, a11, m, c, rs, o0[MCUD_FAST_YC(oc + 1, ysc, p)], o1[MCUD_FAST_YC(oc + 1, ysc, p)]);
            MCUD_RQ2_PAIR_ASM(a21, a31, m, c, rs, o2[MCUD_FAST_YC(oc + 1, ysc, p)], o3[MCUD_FAST_YC(oc + 1, ysc, p)]);
            continue;
        }
#endif
        if (has_rq) { /* one output after another (eight at once would spill), each channel's constants read once */
            int32_t mult = rq[1], k = rq[2], r1 = rq[3];
            o0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a00, mult, k, r1, p);
            MCUD_AFTER_STORES(a10);
            o1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a10, mult, k, r1, p);
            MCUD_AFTER_STORES(a20);
            o2[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a20, mult, k, r1, p);
            MCUD_AFTER_STORES(a30);
            o3[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a30, mult, k, r1, p);
            MCUD_AFTER_STORES(a01);
            mult = rq[5];
            k = rq[6];
            r1 = rq[7];
            o0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a01, mult, k, r1, p);
            MCUD_AFTER_STORES(a11);
            o1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a11, mult, k, r1, p);
            MCUD_AFTER_STORES(a21);
            o2[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a21, mult, k, r1, p);
            MCUD_AFTER_STORES(a31);
            o3[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a31, mult, k, r1, p);
        } else {
            mcud_conv_fast_out8(a00, a10, a20, a30, a01, a11, a21, a31, o0, o1, o2, o3, oc, ysc, p);
        }
    }
    if (oc < oc_n) {
        mcud_conv_fast_last(cols, 0, 2, o0, o1, oc, ysc, p);
        mcud_conv_fast_last(cols, 2, 2, o2, o3, oc, ysc, p);
    }
}

/* The sums of channels oc and oc + 1 (a<pixel><channel>) of n (1 or 2) pixels, stored at y0 and y1 + oc * ysc: through
 * mcud_conv_fast_out_any with rq (channel oc's four values, oc + 1's after them) where given, else mcud_conv_fast_out.
 * Channel by channel: three constants live at a time. */
MCUD_INLINE void mcud_conv_fast_pair_out(int32_t a00, int32_t a01, int32_t a10, int32_t a11, int32_t n, int8_t *y0,
                                         int8_t *y1, int32_t oc, int32_t ysc, const int32_t *rq,
                                         const mcud_conv_s8_fast_params *p)
{
    if (rq != NULL) {
        y0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a00, rq, p);
        if (n == 2) {
            y1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_any(a10, rq, p);
        }
        MCUD_BARRIER(); /* keeps GCC from loading the second channel's constants early (fewer spills) */
        y0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a01, rq + MCUD_FAST_RQ, p);
        if (n == 2) {
            y1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_any(a11, rq + MCUD_FAST_RQ, p);
        }
        return;
    }
    y0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a00, oc, p);
    y0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a01, oc + 1, p);
    if (n == 2) {
        y1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a10, oc, p);
        y1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out(a11, oc + 1, p);
    }
}

/* Output channels two at a time for n (1 or 2, a constant) pixels of the scratch, from column i0, with the
 * int16 weights of p->w16: per group of four taps each pixel's two pairs are loaded once and meet both
 * channels' weights, so 16 multiply-accumulates take four 64-bit loads and eight SMLAD (no unpacking of
 * weights). Pixel j writes channel oc at yo[j] + oc * ysc. */
MCUD_INLINE void mcud_conv_fast_pairs(const int16_t *cols, int32_t i0, int32_t n, int8_t *y0, int8_t *y1,
                                      int32_t oc_n, int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4;
    const int16_t *wp = p->w16;
    const int32_t *const rq0 = mcud_fast_rq(p);
    const int32_t has_rq = rq0 != NULL;
    int32_t oc = 0;
    for (; oc + 2 <= oc_n; oc += 2) {
        const int16_t *c = cols + 4 * i0;
        const int32_t *rq = has_rq ? rq0 + oc * MCUD_FAST_RQ : NULL;
        int32_t b0 = has_rq ? rq[0] : p->bias[oc], b1 = has_rq ? rq[MCUD_FAST_RQ] : p->bias[oc + 1];
        int32_t a00 = b0, a01 = b1, a10 = b0, a11 = b1; /* a<pixel><channel> */
        MCUD_PAIRS_ALL();
        mcud_conv_fast_pair_out(a00, a01, a10, a11, n, y0, y1, oc, ysc, rq, p);
    }
    if (oc < oc_n) {
        mcud_conv_fast_last(cols, i0, n, y0, y1, oc, ysc, p);
    }
}

/* The m pixels (a multiple of four) of a tile of the scratch, block b's columns at cols + 4 * kpad * b, and after them
 * tail (0 to 3) pixels in the first columns of block m / 4, for an even count of output channels: per pair of channels
 * every block of the tile, then its tail a pair of pixels at a time (as mcud_conv_fast_pairs), so that the pair's int16
 * weights (4 * kpad bytes) are read from flash once per tile and then from the data cache where it holds them, instead
 * of once per pair of pixels with every other channel's weights between. The pair's constants are read before its
 * weights and kept on the stack. Pixel i writes channel oc at yo[i] + oc * ysc (y0 + i * ysw where flat, for the whole
 * blocks). */
MCUD_INLINE void mcud_conv_fast_tile(const int16_t *cols, int32_t m, int32_t tail, int8_t *const *yo, int8_t *y0,
                                     int32_t ysw, int32_t flat, int32_t oc_n, int32_t ysc,
                                     const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4;
    const int32_t *const rq0 = mcud_fast_rq(p);
    const int32_t has_rq = rq0 != NULL; /* a constant once inlined */
    const int16_t *wo = p->w16;
    for (int32_t oc = 0; oc < oc_n; oc += 2, wo += 8 * q) {
        int32_t k[2 * MCUD_FAST_RQ];
        for (int32_t i = 0; i < 2 * MCUD_FAST_RQ; i++) {
            k[i] = has_rq ? rq0[oc * MCUD_FAST_RQ + i] : (i % MCUD_FAST_RQ ? 0 : p->bias[oc + i / MCUD_FAST_RQ]);
        }
        MCUD_BARRIER(); /* the constants are read here, before the weights */
        for (int32_t i = 0; i < m; i += MCUD_CONV_FAST_PIXELS) { /* a block at a time (mcud_conv_fast_quads) */
            const int16_t *c = cols + (i >> 2) * 4 * p->kpad;
            const int16_t *wp = wo;
            int32_t a00 = k[0], a01 = k[MCUD_FAST_RQ], a10 = k[0], a11 = k[MCUD_FAST_RQ];
            int32_t a20 = k[0], a21 = k[MCUD_FAST_RQ], a30 = k[0], a31 = k[MCUD_FAST_RQ];
            MCUD_QUADS_ALL();
            int8_t *o0 = flat ? y0 + i * ysw : yo[i], *o1 = flat ? y0 + (i + 1) * ysw : yo[i + 1];
            int8_t *o2 = flat ? y0 + (i + 2) * ysw : yo[i + 2], *o3 = flat ? y0 + (i + 3) * ysw : yo[i + 3];
            if (p->rq2_off && (k[1] == 0 || k[MCUD_FAST_RQ + 1] == 0)) { /* a channel off the doubled route */
                mcud_conv_fast_out8_any(a00, a10, a20, a30, a01, a11, a21, a31, o0, o1, o2, o3, oc, ysc, k, p);
                continue;
            }
            if (has_rq) {
                o0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a00, k[1], k[2], k[3], p);
                o1[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a10, k[1], k[2], k[3], p);
                o2[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a20, k[1], k[2], k[3], p);
                o3[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out_rq(a30, k[1], k[2], k[3], p);
                o0[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a01, k[5], k[6], k[7], p);
                o1[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a11, k[5], k[6], k[7], p);
                o2[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a21, k[5], k[6], k[7], p);
                o3[MCUD_FAST_YC(oc + 1, ysc, p)] = mcud_conv_fast_out_rq(a31, k[5], k[6], k[7], p);
            } else {
                mcud_conv_fast_out8(a00, a10, a20, a30, a01, a11, a21, a31, o0, o1, o2, o3, oc, ysc, p);
            }
        }
        for (int32_t t = 0; t < tail; t += 2) { /* the tail: its pixels two at a time, the last one alone */
            const int32_t n = tail - t >= 2 ? 2 : 1;
            const int16_t *c = cols + (m >> 2) * 4 * p->kpad + 4 * t;
            const int16_t *wp = wo;
            int32_t a00 = k[0], a01 = k[MCUD_FAST_RQ], a10 = k[0], a11 = k[MCUD_FAST_RQ];
            MCUD_PAIRS_ALL();
            mcud_conv_fast_pair_out(a00, a01, a10, a11, n, yo[m + t], yo[m + t + n - 1], oc, ysc, has_rq ? k : NULL, p);
        }
    }
}

/* Column i + 1 of the scratch := column i (every tap, the zeros up to kpad too). */
MCUD_INLINE void mcud_conv_fast_repeat(int16_t *cols, int32_t i, const mcud_conv_s8_fast_params *p)
{
    const int16_t *src = cols + 4 * i;
    int16_t *dst = cols + 4 * (i + 1);
    for (int32_t g = 0; g < p->kpad / 4; g++, src += 16, dst += 16) {
        dst[0] = src[0];
        dst[1] = src[1];
        dst[2] = src[2];
        dst[3] = src[3];
    }
}

/* Every output channel of the first pixel of the scratch (a tail block of one pixel). */
MCUD_INLINE void mcud_conv_fast_gemm1(const int16_t *cols, int8_t *y0, int32_t oc_n, int32_t ysc,
                                      const mcud_conv_s8_fast_params *p)
{
    const int32_t q = p->kpad / 4;
    const int8_t *wa = p->w;
    for (int32_t oc = 0; oc < oc_n; oc++) {
        const int16_t *c = cols;
        int32_t a0 = p->bias[oc];
        for (int32_t j = 0; j < q; j++) {
            uint32_t v = mcud_load32(wa);
            a0 = mcud_smlad(mcud_sxtb16(v), mcud_load32(c), a0);
            a0 = mcud_smlad(mcud_sxtb16_ror8(v), mcud_load32(c + 2), a0);
            wa += 4;
            c += 16;
        }
        y0[MCUD_FAST_YC(oc, ysc, p)] = mcud_conv_fast_out(a0, oc, p);
    }
}

#if MCUD_HAVE_MVE
#include "mcud_conv_mve.h"
#endif

/* Output channel c of y, every image, as the one value v (a channel of one value: its sum is its bias alone). */
MCUD_INLINE void mcud_conv_fill_channel(const mcud_view *y, int32_t c, int8_t v)
{
    mcud_fast_dims Y = mcud_fast_dims_of(y);
    for (int32_t n = 0; n < Y.n; n++) {
        int8_t *yc = (int8_t *)y->data + n * Y.sn + c * Y.sc;
        for (int32_t oh = 0; oh < Y.h; oh++) {
            for (int32_t ow = 0; ow < Y.w; ow++) {
                yc[oh * Y.sh + ow * Y.sw] = v;
            }
        }
    }
}

/* The output channels whose weights are all 0 (p->dead: their sums are their bias at every pixel), each its one value
 * (p->dead_y) at every pixel of y. */
MCUD_INLINE void mcud_conv_fast_dead(const mcud_view *y, const mcud_conv_s8_fast_params *p)
{
    for (int32_t j = 0; j < p->dead_n; j++) {
        mcud_conv_fill_channel(y, p->dead[j], p->dead_y[j]);
    }
}

/* The im2col + SMLAD product over every output pixel, in blocks of MCUD_CONV_FAST_PIXELS, with the columns
 * in cols (4 * kpad int16, 4-byte aligned): mcud_conv_s8_fast's scratch, or mcud_conv_s8_direct's stack. */
MCUD_INLINE void mcud_conv_fast_blocks(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                                       const mcud_conv_s8_fast_params *p, int16_t *cols)
{
    mcud_fast_dims X = mcud_fast_dims_of(x), Y = mcud_fast_dims_of(y);
    int32_t kh_n = w->ndim >= 4 ? w->shape[2] : 1;
    int32_t kw_n = w->shape[w->ndim - 1];
    int32_t k = p->in_live != NULL ? p->in_live_n : X.c * kh_n * kw_n; /* the taps of a column */
    const int32_t oc_n = MCUD_FAST_OC_N(Y.c, p); /* the channels the kernels below compute */
    const int32_t tiled = p->blocks > 1 && p->w16 != NULL && oc_n % 2 == 0;
    const int32_t blocks = tiled ? p->blocks : 1;
    for (int32_t i = 0; i < MCUD_CONV_FAST_PIXELS * blocks; i++) {
        for (int32_t kk = k; kk < p->kpad; kk++) {
            cols[(i >> 2) * 4 * p->kpad + MCUD_COL_AT(kk, i & 3)] = 0;
        }
    }
    /* rows follow one another in the output: pixel i of an image at i * Y.sw */
    const int32_t flat = Y.h == 1 || Y.sh == Y.w * Y.sw;
    for (int32_t n = 0; n < Y.n; n++) {
        const int8_t *xn = (const int8_t *)x->data + n * X.sn;
        int8_t *yn = (int8_t *)y->data + n * Y.sn;
        int8_t *yp[MCUD_CONV_FAST_PIXELS];
        int32_t oh = 0, ow = 0;
        int32_t left = Y.h * Y.w;
        while (tiled && left > 0) { /* a tile at a time: whole blocks, the last tile's tail too where it has room */
            const int32_t per = MCUD_CONV_FAST_PIXELS * blocks;
            const int32_t whole = left - left % MCUD_CONV_FAST_PIXELS;
            const int32_t m = whole < per ? whole : per;
            const int32_t tail = whole < per ? left - whole : 0;
            int8_t *yt[MCUD_CONV_FAST_PIXELS * MCUD_TILE_BLOCKS];
            for (int32_t i = 0; i < m + tail; i++) {
                yt[i] = yn + oh * Y.sh + ow * Y.sw;
                mcud_conv_fast_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + (i >> 2) * 4 * p->kpad + 4 * (i & 3));
                if (++ow == Y.w) {
                    ow = 0;
                    oh++;
                }
            }
            mcud_conv_fast_tile(cols, m, tail, yt, yt[0], Y.sw, flat, oc_n, Y.sc, p);
            left -= m + tail;
        }
        for (; left > 0; left -= MCUD_CONV_FAST_PIXELS) {
            int32_t m = left < MCUD_CONV_FAST_PIXELS ? left : MCUD_CONV_FAST_PIXELS;
            if (p->w16 != NULL) { /* pairs of pixels, channels in pairs (mcud_conv_fast_pairs) */
                int8_t *y0 = yn + oh * Y.sh + ow * Y.sw;
                for (int32_t i = 0; i < m; i++) {
                    yp[i] = yn + oh * Y.sh + ow * Y.sw;
                    mcud_conv_fast_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + 4 * i);
                    if (++ow == Y.w) {
                        ow = 0;
                        oh++;
                    }
                }
                if (m == MCUD_CONV_FAST_PIXELS) {
                    mcud_conv_fast_quads(cols, yp, y0, Y.sw, flat, oc_n, Y.sc, p);
                    continue;
                }
                int32_t i = 0;
                for (; i + 2 <= m; i += 2) {
                    mcud_conv_fast_pairs(cols, i, 2, yp[i], yp[i + 1], oc_n, Y.sc, p);
                }
                if (i < m) {
                    mcud_conv_fast_pairs(cols, i, 1, yp[i], yp[i], oc_n, Y.sc, p);
                }
                continue;
            }
            if (flat && m == MCUD_CONV_FAST_PIXELS) {
                int8_t *y0 = yn + oh * Y.sh + ow * Y.sw;
                for (int32_t i = 0; i < MCUD_CONV_FAST_PIXELS; i++) {
                    mcud_conv_fast_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + 4 * i);
                    if (++ow == Y.w) {
                        ow = 0;
                        oh++;
                    }
                }
                mcud_conv_fast_gemm4(cols, yp, y0, Y.sw, 1, oc_n, Y.sc, p);
                continue;
            }
            for (int32_t i = 0; i < m; i++) {
                yp[i] = yn + oh * Y.sh + ow * Y.sw;
                mcud_conv_fast_col(xn, &X, kh_n, kw_n, p, oh, ow, cols + 4 * i);
                if (++ow == Y.w) {
                    ow = 0;
                    oh++;
                }
            }
            if (m == 1) {
                mcud_conv_fast_gemm1(cols, yp[0], oc_n, Y.sc, p);
                continue;
            }
            /* A tail block of two or three pixels repeats its last one in the columns left, stored
             * twice with the same values: one pass for four pixels loads each weight word once,
             * fewer instructions than a pass per pixel. */
            if (m == 2) {
                mcud_conv_fast_repeat(cols, 1, p);
                yp[2] = yp[1];
            }
            if (m < MCUD_CONV_FAST_PIXELS) {
                mcud_conv_fast_repeat(cols, 2, p);
                yp[3] = yp[2];
            }
            mcud_conv_fast_gemm4(cols, yp, yn, 0, 0, oc_n, Y.sc, p);
        }
    }
    mcud_conv_fast_dead(y, p); /* last: a pointwise layer may run in place, its input read block by block above */
}

/* int8 Conv, group 1, on NCHW views (rank 4, or rank 3 read as H = 1). The weights come from
 * p->w (w and b are the model's tensors, unused here); scratch holds 4 * kpad int16, 4-byte
 * aligned (LDRD needs word alignment only on ARMv7-M). */
MCUD_INLINE void mcud_conv_s8_fast(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                   const mcud_conv_s8_fast_params *p, void *scratch)
{
    (void)b;
#if MCUD_HAVE_MVE
    mcud_conv_s8_fast_mve(x, w, y, p, scratch); /* int8 columns, 16 MACs a vector (mcud_conv_mve.h) */
    mcud_conv_fast_dead(y, p); /* last: a pointwise layer may run in place */
    return;
#endif
    mcud_conv_fast_blocks(x, w, y, p, (int16_t *)scratch);
}

/* Taps k in [*lo, *hi) whose input index start + k * dilation lies in [0, size). */
MCUD_INLINE void mcud_fast_taps(int32_t start, int32_t dilation, int32_t kernel, int32_t size, int32_t *lo, int32_t *hi)
{
    int32_t k0 = start < 0 ? (-start + dilation - 1) / dilation : 0;
    int32_t k1 = kernel;
    if (start + (kernel - 1) * dilation >= size) {
        k1 = start >= size ? 0 : (size - 1 - start) / dilation + 1;
    }
    *lo = k0;
    *hi = k1 > k0 ? k1 : k0;
}

/* One output pixel whose window may leave the input: the taps inside it, with the unfolded bias. */
MCUD_INLINE void mcud_conv_direct_edge(const int8_t *xn, const mcud_fast_dims *X, const int8_t *wd,
                                       const mcud_fast_dims *W, int32_t ih, int32_t iw, int8_t *yp, int32_t oc_n,
                                       int32_t ysc, const mcud_conv_s8_fast_params *p)
{
    int32_t kh0, kh1, kw0, kw1;
    mcud_fast_taps(ih, p->dilation[0], W->h, X->h, &kh0, &kh1);
    mcud_fast_taps(iw, p->dilation[1], W->w, X->w, &kw0, &kw1);
    for (int32_t k = 0; k < oc_n; k++) { /* k: the params' channel, oc: the output's and the weights' */
        const int32_t oc = p->live != NULL ? p->live[k] : k;
        uint32_t a = (uint32_t)p->bias_raw[k];
        for (int32_t c = 0; c < X->c; c++) {
            for (int32_t kh = kh0; kh < kh1; kh++) {
                const int8_t *xr = xn + c * X->sc + (ih + kh * p->dilation[0]) * X->sh + iw * X->sw;
                const int8_t *wr = wd + oc * W->sn + c * W->sc + kh * W->sh;
                for (int32_t kw = kw0; kw < kw1; kw++) {
                    a += (uint32_t)(((int32_t)xr[kw * p->dilation[1] * X->sw] - p->in_zero_point) * wr[kw * W->sw]);
                }
            }
        }
        yp[oc * ysc] = mcud_conv_fast_out((int32_t)a, k, p);
    }
}

/* Output channel oc's sums over input channels [c0, c0 + c_n) for four adjacent pixels of a row (stride 1) of a
 * 3-wide kernel (dilation 1), added to a[0..3]: x0 is channel c0's window of the first pixel, its rows dh apart and
 * its channels sc apart, each row's bytes contiguous. For pixel i, taps (0, 2) are one pair and tap 1 one half, all
 * from two words x[0..3] and x[2..5] of each input row: (x0, x2) (x1, x3) (x2, x4) (x3, x5). p->w3 holds each kernel
 * row as [w0 w1 w2 0], so sxtb16 gives (w0, w2) and its ror8 (w1, 0). */
MCUD_INLINE void mcud_conv_direct_row3(const int8_t *x0, int32_t sc, int32_t c0, int32_t c_n, int32_t c_all,
                                       int32_t kh_n, int32_t dh, int32_t oc, const mcud_conv_s8_fast_params *p,
                                       int32_t *a)
{
    const int8_t *wq = p->w3 + (oc * c_all + c0) * kh_n * 4;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    for (int32_t c = 0; c < c_n; c++) {
        const int8_t *xr = x0 + c * sc;
        MCUD_UNROLL /* the kernel's height a constant: no loop per row */
        for (int32_t kh = 0; kh < kh_n; kh++) {
#if MCUD_HAVE_DSP && defined(__GNUC__)
            /* the same sums in eleven registers (GCC 12 spilled the unrolled C's temporaries to the stack), each
             * unpacking two instructions before its use: the Cortex-M7 issues them beside the multiplies
             * (estimate/dual.py) */
            uint32_t v, w02, lo, hi, e;
            __asm__("ldr %[v], %[mw]\n\t"
                    "ldr %[lo], %[mlo]\n\t"
                    "ldr %[hi], %[mhi]\n\t"
                    "sxtb16 %[w02], %[v]\n\t"
                    "sxtb16 %[e], %[lo]\n\t"
                    "sxtb16 %[v], %[v], ror #8\n\t"
                    "smlad %[a0], %[e], %[w02], %[a0]\n\t"
                    "sxtb16 %[lo], %[lo], ror #8\n\t"
                    "smlatb %[a1], %[e], %[v], %[a1]\n\t"
                    "sxtb16 %[e], %[hi]\n\t"
                    "smlabb %[a0], %[lo], %[v], %[a0]\n\t"
                    "smlad %[a1], %[lo], %[w02], %[a1]\n\t"
                    "sxtb16 %[hi], %[hi], ror #8\n\t"
                    "smlatb %[a2], %[lo], %[v], %[a2]\n\t"
                    "smlad %[a2], %[e], %[w02], %[a2]\n\t"
                    "smlatb %[a3], %[e], %[v], %[a3]\n\t"
                    "smlad %[a3], %[hi], %[w02], %[a3]"
                    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [v] "=&r"(v), [w02] "=&r"(w02),
                      [lo] "=&r"(lo), [hi] "=&r"(hi), [e] "=&r"(e)
                    : [mw] "m"(*(const mcud_col_word *)(wq + 4 * kh)),
                      [mlo] "m"(*(const mcud_col_word *)(xr + kh * dh)),
                      [mhi] "m"(*(const mcud_col_word *)(xr + kh * dh + 2)));
#else
            uint32_t v = mcud_load32(wq + 4 * kh);
            uint32_t w02 = mcud_sxtb16(v), w1 = mcud_sxtb16_ror8(v);
            uint32_t lo = mcud_load32(xr + kh * dh), hi = mcud_load32(xr + kh * dh + 2);
            uint32_t e0 = mcud_sxtb16(lo), o0 = mcud_sxtb16_ror8(lo);
            a0 = mcud_smlad(e0, w02, a0);
            a0 = mcud_smlabb(o0, w1, a0);
            a1 = mcud_smlad(o0, w02, a1);
            a1 = mcud_smlatb(e0, w1, a1);
            a2 = mcud_smlatb(o0, w1, a2);
            uint32_t e2 = mcud_sxtb16(hi), o2 = mcud_sxtb16_ror8(hi);
            a2 = mcud_smlad(e2, w02, a2);
            a3 = mcud_smlad(o2, w02, a3);
            a3 = mcud_smlatb(e2, w1, a3);
#endif
        }
        wq += 4 * kh_n;
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* The same for any kernel, stride and dilation: pixel i's window at x0 + i * step, its taps dw apart along a row. */
MCUD_INLINE void mcud_conv_direct_sums4(const int8_t *x0, int32_t sc, int32_t c0, int32_t c_n, int32_t dh, int32_t dw,
                                        int32_t step, int32_t oc, const int8_t *wd, const mcud_fast_dims *W,
                                        int32_t *a)
{
    uint32_t a0 = (uint32_t)a[0], a1 = (uint32_t)a[1], a2 = (uint32_t)a[2], a3 = (uint32_t)a[3];
    for (int32_t c = 0; c < c_n; c++) {
        for (int32_t kh = 0; kh < W->h; kh++) {
            const int8_t *wr = wd + oc * W->sn + (c0 + c) * W->sc + kh * W->sh;
            const int8_t *xr = x0 + c * sc + kh * dh;
            MCUD_UNROLL
            for (int32_t kw = 0; kw < W->w; kw++) {
                int32_t wv = wr[kw * W->sw];
                a0 += (uint32_t)(xr[kw * dw] * wv);
                a1 += (uint32_t)(xr[kw * dw + step] * wv);
                a2 += (uint32_t)(xr[kw * dw + 2 * step] * wv);
                a3 += (uint32_t)(xr[kw * dw + 3 * step] * wv);
            }
        }
    }
    a[0] = (int32_t)a0;
    a[1] = (int32_t)a1;
    a[2] = (int32_t)a2;
    a[3] = (int32_t)a3;
}

/* Output channel oc's sums over input channels [c0, c0 + c_n) of four adjacent pixels of a row whose windows start at
 * x0 (channel c0's), added to a: mcud_conv_direct_row3 where its weights exist and the rows' bytes are contiguous. */
MCUD_INLINE void mcud_conv_direct_acc4(const int8_t *x0, int32_t sc, int32_t sw, int32_t c0, int32_t c_n,
                                       int32_t c_all, int32_t dh, int32_t dw, int32_t step, int32_t oc, int32_t k,
                                       const int8_t *wd, const mcud_fast_dims *W, const mcud_conv_s8_fast_params *p,
                                       int32_t *a)
{
    if (p->w3 != NULL && sw == 1) {
        mcud_conv_direct_row3(x0, sc, c0, c_n, c_all, W->h, dh, k, p, a);
        return;
    }
    mcud_conv_direct_sums4(x0, sc, c0, c_n, dh, dw, step, oc, wd, W, a);
}

MCUD_INLINE void mcud_conv_direct_store4(const int32_t *a, int8_t *y0, int32_t oc, int32_t k, const mcud_fast_dims *Y,
                                         const mcud_conv_s8_fast_params *p)
{
    y0[oc * Y->sc] = mcud_conv_fast_out(a[0], k, p);
    y0[oc * Y->sc + Y->sw] = mcud_conv_fast_out(a[1], k, p);
    y0[oc * Y->sc + 2 * Y->sw] = mcud_conv_fast_out(a[2], k, p);
    y0[oc * Y->sc + 3 * Y->sw] = mcud_conv_fast_out(a[3], k, p);
}

/* The windows of four adjacent pixels of a row, input channels [c0, c0 + c_n), copied into strip with the input zero
 * point where they leave the input: per channel and kernel row `span` bytes, the row's taps for the four pixels
 * (ih: the first kernel row's input row, iw: the first pixel's first input column). */
MCUD_INLINE void mcud_conv_direct_strip(const int8_t *xn, const mcud_fast_dims *X, int32_t kh_n, int32_t span,
                                        int32_t c0, int32_t c_n, int32_t ih, int32_t iw,
                                        const mcud_conv_s8_fast_params *p, int8_t *strip)
{
    const int8_t zx = (int8_t)p->in_zero_point;
    for (int32_t c = 0; c < c_n; c++) {
        for (int32_t kh = 0; kh < kh_n; kh++, strip += span) {
            const int32_t r = ih + kh * p->dilation[0];
            const int8_t *xr = xn + (c0 + c) * X->sc + r * X->sh;
            for (int32_t j = 0; j < span; j++) {
                strip[j] = (uint32_t)r < (uint32_t)X->h && (uint32_t)(iw + j) < (uint32_t)X->w ? xr[(iw + j) * X->sw]
                                                                                              : zx;
            }
        }
    }
}

/* The same convolution without working memory, for a layer whose scratch would raise the arena's
 * peak (mcudeploy.memory.lifetimes.fit_scratch). Where mcud_conv_s8_fast's columns are small (kpad up to 144:
 * a first layer on few channels, a 3x3 one on up to 16, a pointwise one on up to 144) they go on the stack,
 * MCUD_DIRECT_COLS bytes, and the layer runs as mcud_conv_s8_fast: the stack is reserved anyway. Else
 * straight from the input, four pixels of a row at a time (each weight loaded once for four pixels, the offsets
 * constant; a row's last block ends at its last pixel, over pixels already written with the same values: this
 * kernel never runs in place). A block whose windows leave the input (padding) reads them from a strip on the
 * stack, MCUD_DIRECT_COLS bytes, that holds the input zero point outside the input, so that it too runs with the
 * folded bias and no bounds checks: the whole block's channels at once where they fit, else as many as fit, again
 * for each output channel. So does a block of an input whose rows are not contiguous, where the pair-packed row
 * kernel (p->w3) can then take it and one strip holds every channel. Pixel by pixel only where not even one channel
 * of a block's windows fits the strip, or a row is narrower than four pixels (only the taps inside, with
 * p->bias_raw, the unfolded bias). Same params as mcud_conv_s8_fast; the weights come from w. Sums modulo 2^32,
 * like SMLAD. */
MCUD_INLINE void mcud_conv_s8_direct(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                     const mcud_conv_s8_fast_params *p)
{
    mcud_fast_dims X = mcud_fast_dims_of(x), Y = mcud_fast_dims_of(y), W = mcud_fast_dims_of(w);
    const int8_t *wd = (const int8_t *)w->data;
    const int32_t dh = p->dilation[0] * X.sh, dw = p->dilation[1] * X.sw, step = p->stride[1] * X.sw;
    (void)b;
#if MCUD_HAVE_MVE
    if (mcud_conv_s8_direct_mve(x, w, y, p)) { /* columns on the stack, 16 MACs a vector (mcud_conv_mve.h) */
        mcud_conv_fast_dead(y, p);
        return;
    }
#endif
    uint32_t on_stack[MCUD_DIRECT_COLS / 4]; /* the columns, or a block's strip */
    if (MCUD_CONV_FAST_PIXELS * 2 * p->kpad <= MCUD_DIRECT_COLS) { /* the columns fit on the stack */
        mcud_conv_fast_blocks(x, w, y, p, (int16_t *)on_stack);
        return;
    }
    /* a block's strip: per channel and kernel row the input columns of its four windows */
    const int32_t span = 3 * p->stride[1] + (W.w - 1) * p->dilation[1] + 1;
    const int32_t per_c = W.h * span;
    const int32_t strip_c = per_c <= MCUD_DIRECT_COLS
                                ? (MCUD_DIRECT_COLS / per_c < X.c ? MCUD_DIRECT_COLS / per_c : X.c)
                                : 0; /* channels a strip holds */
    int8_t *strip = (int8_t *)on_stack;
    const int32_t oc_n = MCUD_FAST_OC_N(Y.c, p); /* k below: the params' channel, oc the output's */
    mcud_conv_fast_dead(y, p); /* (this path never runs in place) */
    for (int32_t n = 0; n < Y.n; n++) {
        const int8_t *xn = (const int8_t *)x->data + n * X.sn;
        int8_t *yn = (int8_t *)y->data + n * Y.sn;
        for (int32_t oh = 0; oh < Y.h; oh++) {
            const int32_t ih = oh * p->stride[0] - p->pad[0];
            const int32_t rows_in = p->inside || (ih >= 0 && ih + (W.h - 1) * p->dilation[0] < X.h);
            for (int32_t ow = 0; Y.w >= 4 && ow < Y.w; ow += 4) {
                const int32_t s = ow + 4 <= Y.w ? ow : Y.w - 4;
                const int32_t iw = s * p->stride[1] - p->pad[1];
                int8_t *y0 = yn + oh * Y.sh + s * Y.sw;
                const int32_t in = p->inside || (rows_in && iw >= 0 && iw + span <= X.w);
                const int32_t row_strip = p->w3 != NULL && X.sw != 1 && strip_c == X.c; /* all channels, once */
                if (in && !row_strip) {
                    const int8_t *x0 = xn + ih * X.sh + iw * X.sw;
                    for (int32_t k = 0; k < oc_n; k++) {
                        const int32_t oc = p->live != NULL ? p->live[k] : k;
                        int32_t a[4] = {p->bias[k], p->bias[k], p->bias[k], p->bias[k]};
                        mcud_conv_direct_acc4(x0, X.sc, X.sw, 0, X.c, X.c, dh, dw, step, oc, k, wd, &W, p, a);
                        mcud_conv_direct_store4(a, y0, oc, k, &Y, p);
                    }
                    continue;
                }
                if (strip_c == 0) { /* not one channel fits: pixel by pixel */
                    for (int32_t i = 0; i < 4; i++) {
                        mcud_conv_direct_edge(xn, &X, wd, &W, ih, iw + i * p->stride[1], y0 + i * Y.sw, oc_n, Y.sc, p);
                    }
                    continue;
                }
                for (int32_t k = 0; k < oc_n; k++) {
                    const int32_t oc = p->live != NULL ? p->live[k] : k;
                    int32_t a[4] = {p->bias[k], p->bias[k], p->bias[k], p->bias[k]};
                    for (int32_t c0 = 0; c0 < X.c; c0 += strip_c) {
                        const int32_t c_n = X.c - c0 < strip_c ? X.c - c0 : strip_c;
                        if (k == 0 || strip_c < X.c) { /* one strip for every output channel where it holds all */
                            mcud_conv_direct_strip(xn, &X, W.h, span, c0, c_n, ih, iw, p, strip);
                        }
                        mcud_conv_direct_acc4(strip, per_c, 1, c0, c_n, X.c, span, p->dilation[1], p->stride[1], oc,
                                              k, wd, &W, p, a);
                    }
                    mcud_conv_direct_store4(a, y0, oc, k, &Y, p);
                }
            }
            for (int32_t ow = 0; Y.w < 4 && ow < Y.w; ow++) { /* a row narrower than a block */
                const int32_t iw = ow * p->stride[1] - p->pad[1];
                mcud_conv_direct_edge(xn, &X, wd, &W, ih, iw, yn + oh * Y.sh + ow * Y.sw, oc_n, Y.sc, p);
            }
        }
    }
}

#endif /* MCUD_CONV_FAST_H */
