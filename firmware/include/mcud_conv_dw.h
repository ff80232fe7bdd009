/* Fast int8 depthwise convolution (group == C_in == C_out) on NCHW views.
 *
 * Why static inline: model.c calls it with pointers to its static const views and params, so
 * GCC inlines it and folds every extent, stride and the output range into constants. The same
 * code runs on host and Cortex-M0/M3 through the portable operations of mcud_dsp.h, so the host
 * tests check the exact algorithm the M4 runs.
 *
 * The fast path covers 3x3 windows, dilation 1, stride 1 or 2 along W (any stride along H). Each
 * channel is one plane, copied into a stack buffer whose padding holds the input zero point: the
 * whole padded plane when it fits (KWS's 25 x 5 planes: no per-row bookkeeping at all), else a
 * ring of three padded rows, each input row copied once, plus a row of zero points for the rows
 * above and below the input. So every output pixel sums all nine taps with no bounds checks, and
 * the zero point is folded into the bias once per channel: sum (x - zx) w = sum x w - zx sum w,
 * exact, and a padded tap holding zx adds nothing. The copy also reads any input strides (a
 * channels-last or stepped view), so the loops below always see dense rows.
 *
 * Stride 1 computes two neighbouring outputs from one 32-bit load per window row:
 * v = (x0, x1, x2, x3), sxtb16(v) = (x0, x2) and its ror8 form (x1, x3) meet the weight pair
 * (w0, w2) in one SMLAD each, the middle taps (x1 for the first, x2 for the second) in one
 * 16x16 multiply-accumulate each. Requantization takes the 32-bit route of mcud_requant_hi_r
 * when the channel's shift is in [33, 62] and mcud_requant otherwise, both exact; a TFLite model's channel whose table
 * holds twice its weights and bias (cores without MVE: mcudeploy/offload/wide.py, dsp_packings) takes
 * mcud_requant_tfl_2 on the doubled sum (route 5 of mcud_dw_out).
 *
 * What a channel needs besides its input (the bias with the zero point folded in, the weights in
 * pairs) comes precomputed from flash when p->dw is given (mcudeploy/ops/conv.py, _dw_channels):
 * a cut's pieces each call the kernel, and working it out from w and b costs about 40
 * instructions per channel per call.
 *
 * A channel of one value (p->dead: weights of 0, or an input that is the zero point at every pixel, as after a
 * pointwise layer's channel of weights 0 through a Relu; mcudeploy/ops/conv.py constant_channels) is written as that
 * value (p->dead_y) at its turn, not read.
 *
 * Stack: MCUD_DW_BUF (528) bytes of buffer; no scratch in the arena.
 *
 * A kernel of one column or one row of taps (K x 1, 1 x K) goes to mcud_dw_lines: each line widened to int16 in a
 * buffer of the same size, its taps in pairs beside it (another 256 bytes of stack). Anything else (other windows,
 * dilation, stride > 2 along W, rows wider than the ring, 1-D, lines longer than that buffer) goes to the generic
 * mcud_conv_s8. */
#ifndef MCUD_CONV_DW_H
#define MCUD_CONV_DW_H
#include "mcud.h"
#include "mcud_conv.h"
#include "mcud_conv_fast.h" /* mcud_mve_requant (mcud_conv_mve.h) on an MVE core */
#include "mcud_dsp.h"

/* Bytes of the stack buffer: the padded plane of a channel when it fits (KWS: 27 rows of 8), else
 * four rows of up to MCUD_DW_BUF / 4 bytes each (input rows up to 128 wide at stride 1, about twice
 * the output width at stride 2). */
#ifndef MCUD_DW_BUF
#define MCUD_DW_BUF 528
#endif

/* p->dw per channel: bias - zx * sum w, pair[0], pair[1], pair[2], mid01, mid2 (mcud_dw_channel), then mult, c, rs of
 * mcud_requant_tfl_2 where the channel takes the doubled route (its bias and weights then twice theirs: route 5),
 * else 0, 0, 0 (mcudeploy/ops/conv.py, _dw_channels) */
#define MCUD_DW_FIELDS 9

#if MCUD_HAVE_DSP
/* acc + a.lo * b.lo, acc + a.hi * b.lo, acc + a.lo * b.hi, acc + a.hi * b.hi */
MCUD_INLINE int32_t mcud_dw_mac_bb(uint32_t a, uint32_t b, int32_t acc) { return __smlabb((int32_t)a, (int32_t)b, acc); }
MCUD_INLINE int32_t mcud_dw_mac_tb(uint32_t a, uint32_t b, int32_t acc) { return __smlatb((int32_t)a, (int32_t)b, acc); }
MCUD_INLINE int32_t mcud_dw_mac_bt(uint32_t a, uint32_t b, int32_t acc) { return __smlabt((int32_t)a, (int32_t)b, acc); }
MCUD_INLINE int32_t mcud_dw_mac_tt(uint32_t a, uint32_t b, int32_t acc) { return __smlatt((int32_t)a, (int32_t)b, acc); }
#else
MCUD_INLINE int32_t mcud_dw_mac_bb(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_lo16(a) * mcud_lo16(b)));
}
MCUD_INLINE int32_t mcud_dw_mac_tb(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_hi16(a) * mcud_lo16(b)));
}
MCUD_INLINE int32_t mcud_dw_mac_bt(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_lo16(a) * mcud_hi16(b)));
}
MCUD_INLINE int32_t mcud_dw_mac_tt(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_hi16(a) * mcud_hi16(b)));
}
#endif

/* v clamped to [lo, hi] within [-128, 127]; the bounds are constants once inlined into model.c,
 * so the usual ranges cost one instruction (SSAT) and a fused Relu6 one compare more. */
MCUD_INLINE int8_t mcud_dw_clamp8(int32_t v, int32_t lo, int32_t hi)
{
    v = mcud_sat8(v);
    if (lo > -128) {
        v = v < lo ? lo : v;
    }
    if (hi < 127) {
        v = v > hi ? hi : v;
    }
    return (int8_t)v;
}

typedef struct {
    int32_t bias;       /* b - zx * sum w */
    uint32_t pair[3];   /* (w[kh][0], w[kh][2]) */
    uint32_t mid01;     /* (w[0][1], w[1][1]) */
    uint32_t mid2;      /* w[2][1] in the low half */
    int32_t mult, shift, r, half;
    int32_t k_hi;         /* TFLite models: mcud_requant_tfl_k's constant (r1 is r, shift - 32) */
} mcud_dw_channel;

/* route (a constant at every call): 0 mcud_requant, 1 mcud_requant_hi_r; TFLite models: 2
 * mcud_requant_tfl, 3 mcud_requant_tfl_k, 4 the same with the output zero point in k_hi (k_hi + zy * 2^r: the
 * high word grows by zy * 2^r, which the shift by r turns into exactly + zy; taken where it stays in int32), 5
 * mcud_requant_tfl_2 on twice the sum (the channel table's doubled weights; mult, c and rs in mult, k_hi and r) */
MCUD_INLINE int8_t mcud_dw_out(int32_t acc, const mcud_dw_channel *ch, int32_t hi_route,
                               const mcud_conv_s8_params *p)
{
    if (hi_route == 5) {
        return mcud_dw_clamp8(mcud_requant_tfl_2(acc, ch->mult, ch->k_hi, ch->r), p->act_min, p->act_max);
    }
    if (hi_route == 4) {
        return mcud_dw_clamp8(mcud_requant_tfl_k(acc, ch->mult, ch->k_hi, ch->r), p->act_min, p->act_max);
    }
    int32_t q = hi_route == 3 ? mcud_requant_tfl_k(acc, ch->mult, ch->k_hi, ch->r)
              : hi_route == 2 ? mcud_requant_tfl(acc, ch->mult, ch->shift)
              : hi_route ? mcud_requant_hi_r(acc, ch->mult, ch->r, ch->half)
                         : mcud_requant(acc, ch->mult, ch->shift);
    return mcud_dw_clamp8(q + p->out_zero_point, p->act_min, p->act_max);
}

#if MCUD_HAVE_MVE
/* mcud_dw_row on a core with Helium: four outputs a step in 32-bit lanes, each tap one load of four
 * bytes (a gather at stride 2) and one vector-by-scalar multiply-accumulate, the requantization
 * vectorized with the channel's constants taken once (mcud_mve_rq), whole steps unpredicated and the
 * last one predicated (VCTP); the same sums, so the same bits. Rows of any width: a row of 6 is one
 * whole step and a predicated one of 2 lanes. */
MCUD_INLINE void mcud_dw_row_mve_as(const int8_t *r0, const int8_t *r1, const int8_t *r2, int8_t *yr,
                                    int32_t ysw, int32_t ow_n, int32_t sw, const mcud_dw_channel *ch,
                                    int32_t hi_route, const mcud_conv_s8_params *p, int32_t kind)
{
    const int32_t w00 = mcud_lo16(ch->pair[0]), w02 = mcud_hi16(ch->pair[0]), w01 = mcud_lo16(ch->mid01);
    const int32_t w10 = mcud_lo16(ch->pair[1]), w12 = mcud_hi16(ch->pair[1]), w11 = mcud_hi16(ch->mid01);
    const int32_t w20 = mcud_lo16(ch->pair[2]), w22 = mcud_hi16(ch->pair[2]), w21 = mcud_lo16(ch->mid2);
    const mcud_mve_rq rq = mcud_mve_rq_of(ch->mult, ch->shift, kind < 0 ? hi_route : 0);
    const int32_t mult = ch->mult, sh = 31 - ch->shift;
    const int32x4_t bias = vdupq_n_s32(ch->bias);
#define MCUD_DW_OUT(a)                                                                                          \
    (kind < 0 ? mcud_mve_rq_apply((a), &rq, hi_route, p->out_zero_point, p->act_min, p->act_max)              \
              : mcud_mve_out8(mcud_mve_tfl_kind((a), mult, sh, kind), p->out_zero_point, p->act_min, p->act_max))
    const uint32x4_t in = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)sw);
    const uint32x4_t out = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)ysw);
#define MCUD_DW_TAP(ptr) (sw == 1 ? vldrbq_s32(ptr) : vldrbq_gather_offset_s32((ptr), in))
#define MCUD_DW_TAP_Z(ptr) (sw == 1 ? vldrbq_z_s32((ptr), pm) : vldrbq_gather_offset_z_s32((ptr), in, pm))
#define MCUD_DW_SUM(TAP, j)                                                                                     \
    a = vmlaq_n_s32(a, TAP(r0 + (j)), w00);                                                                   \
    a = vmlaq_n_s32(a, TAP(r0 + (j) + 1), w01);                                                               \
    a = vmlaq_n_s32(a, TAP(r0 + (j) + 2), w02);                                                               \
    a = vmlaq_n_s32(a, TAP(r1 + (j)), w10);                                                                   \
    a = vmlaq_n_s32(a, TAP(r1 + (j) + 1), w11);                                                               \
    a = vmlaq_n_s32(a, TAP(r1 + (j) + 2), w12);                                                               \
    a = vmlaq_n_s32(a, TAP(r2 + (j)), w20);                                                                   \
    a = vmlaq_n_s32(a, TAP(r2 + (j) + 1), w21);                                                               \
    a = vmlaq_n_s32(a, TAP(r2 + (j) + 2), w22)
    for (int32_t n = ow_n >> 2; n > 0; n--) { /* the row pointers step: no index arithmetic per tap */
        int32x4_t a = bias;
        MCUD_DW_SUM(MCUD_DW_TAP, 0);
        int32x4_t q = MCUD_DW_OUT(a);
        if (ysw == 1) {
            vstrbq_s32(yr, q);
        } else {
            vstrbq_scatter_offset_s32(yr, out, q);
        }
        r0 += 4 * sw;
        r1 += 4 * sw;
        r2 += 4 * sw;
        yr += 4 * ysw;
    }
    const int32_t left = ow_n & 3;
    if (left) {
        const mve_pred16_t pm = vctp32q((uint32_t)left);
        int32x4_t a = bias;
        MCUD_DW_SUM(MCUD_DW_TAP_Z, 0);
        int32x4_t q = MCUD_DW_OUT(a);
        vstrbq_scatter_offset_p_s32(yr, out, q, pm);
    }
#undef MCUD_DW_OUT
#undef MCUD_DW_SUM
#undef MCUD_DW_TAP_Z
#undef MCUD_DW_TAP
}

/* mcud_dw_row_mve_as with TFLite's requantization (routes 2 and 3) specialised by the channel's shift before
 * the row: the loop then keeps two scalars for it (mcud_mve_tfl_kind), where the general form held three
 * vectors and spilled the window's weights. */
MCUD_INLINE void mcud_dw_row_mve(const int8_t *r0, const int8_t *r1, const int8_t *r2, int8_t *yr, int32_t ysw,
                                 int32_t ow_n, int32_t sw, const mcud_dw_channel *ch, int32_t hi_route,
                                 const mcud_conv_s8_params *p)
{
    if (hi_route == 3 || (hi_route == 2 && ch->shift > 31)) {
        mcud_dw_row_mve_as(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route, p, 0);
    } else if (hi_route == 2 && ch->shift == 31) {
        mcud_dw_row_mve_as(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route, p, 1);
    } else if (hi_route == 2) {
        mcud_dw_row_mve_as(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route, p, 2);
    } else {
        mcud_dw_row_mve_as(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route, p, -1);
    }
}
#endif

#if MCUD_HAVE_MVE
/* A whole padded plane (rows rw bytes apart) at equal strides s along H and W: output (oh, ow) reads from
 * s * (oh * rw + ow), so the outputs f = oh * rw + ow of the plane are one row of mcud_dw_row_mve, written
 * to a stack buffer, of which the columns ow < yw go out (ow from yw to rw - 1 are computed and dropped:
 * fewer than the per-row set-up and the predicated tail of every row would cost). */
MCUD_INLINE void mcud_dw_plane_mve(const int8_t *buf, int32_t rw, int32_t yh, int32_t yw, int32_t s, int8_t *yp,
                                   int32_t yh_s, int32_t yw_s, const mcud_dw_channel *ch, int32_t hi_route,
                                   const mcud_conv_s8_params *p)
{
    int8_t out[MCUD_DW_BUF]; /* (yh - 1) * rw + yw outputs, fewer than the plane's bytes */
    mcud_dw_row_mve(buf, buf + rw, buf + 2 * rw, out, 1, (yh - 1) * rw + yw, s, ch, hi_route, p);
    for (int32_t oh = 0; oh < yh; oh++) {
        const int8_t *o = out + oh * rw;
        int8_t *yr = yp + oh * yh_s;
        if (yw_s == 1) {
            for (int32_t k = 0; k < yw; k += 16) {
                const mve_pred16_t pr = vctp8q((uint32_t)(yw - k));
                vstrbq_p_s8(yr + k, vldrbq_z_s8(o + k, pr), pr);
            }
        } else {
            for (int32_t ow = 0; ow < yw; ow++) {
                yr[ow * yw_s] = o[ow];
            }
        }
    }
}
#endif

/* Cores with neither the DSP extension nor MVE (Cortex-M0/M3, RV32IMAC, the host) keep the lanes unpacked: each
 * tap one byte load and one 32-bit multiply-accumulate (MLA on ARMv7-M; MUL and ADD on RISC-V), the window's nine
 * weights taken out of their pairs once a row. The packed path below emulates SXTB16 and SMLAD in C there, which
 * costs more than the byte loads it saves (a KWS depthwise layer: 578,000 instructions packed, 388,000 unpacked on
 * qemu-rv32; 314,000 and 277,000 on qemu-m3; benchmarks/README.md, "RISC-V against Cortex-M3"). The same sums in
 * another order, modulo 2^32, so the same bits. -DMCUD_DW_PACKED keeps the packed path on such a core (the host tests' check of the M4's algorithm). */
#if !MCUD_HAVE_DSP && !MCUD_HAVE_MVE && !defined(MCUD_DW_PACKED)
#define MCUD_DW_SCALAR 1
#else
#define MCUD_DW_SCALAR 0
#endif

#if MCUD_DW_SCALAR
/* acc + x * w, modulo 2^32 */
#define MCUD_DW_MAC(acc, x, w) ((acc) = (int32_t)((uint32_t)(acc) + (uint32_t)((int32_t)(x) * (w))))
/* the channel's nine weights, w[kh][kw] as wKHKW, out of their pairs */
#define MCUD_DW_WEIGHTS(ch)                                                                                       \
    const int32_t w00 = mcud_lo16((ch)->pair[0]), w01 = mcud_lo16((ch)->mid01), w02 = mcud_hi16((ch)->pair[0]); \
    const int32_t w10 = mcud_lo16((ch)->pair[1]), w11 = mcud_hi16((ch)->mid01), w12 = mcud_hi16((ch)->pair[1]); \
    const int32_t w20 = mcud_lo16((ch)->pair[2]), w21 = mcud_lo16((ch)->mid2), w22 = mcud_hi16((ch)->pair[2])
/* one window row's three taps at x (bytes 0, 1, 2) into acc */
#define MCUD_DW_TAPS3(acc, x, wa, wb, wc)                                                                         \
    do {                                                                                                          \
        MCUD_DW_MAC(acc, (x)[0], wa);                                                                             \
        MCUD_DW_MAC(acc, (x)[1], wb);                                                                             \
        MCUD_DW_MAC(acc, (x)[2], wc);                                                                             \
    } while (0)

MCUD_INLINE void mcud_dw_row_scalar(const int8_t *r0, const int8_t *r1, const int8_t *r2, int8_t *yr, int32_t ysw,
                                    int32_t ow_n, int32_t sw, const mcud_dw_channel *ch, int32_t hi_route,
                                    const mcud_conv_s8_params *p)
{
    MCUD_DW_WEIGHTS(ch);
    for (int32_t n = ow_n; n > 0; n--) { /* the row pointers step: each tap a load at a constant offset */
        int32_t a = ch->bias;
        MCUD_DW_TAPS3(a, r0, w00, w01, w02);
        MCUD_DW_TAPS3(a, r1, w10, w11, w12);
        MCUD_DW_TAPS3(a, r2, w20, w21, w22);
        *yr = mcud_dw_out(a, ch, hi_route, p);
        r0 += sw;
        r1 += sw;
        r2 += sw;
        yr += ysw;
    }
}

/* Two output rows at stride 1 from four buffered rows (r0 the top, rw bytes apart): each output column's two
 * outputs from the twelve bytes of its window column pair, the middle rows loaded once for both. */
MCUD_INLINE void mcud_dw_rows2_scalar(const int8_t *r0, int32_t rw, int8_t *yr, int32_t yhs, int32_t ysw,
                                      int32_t ow_n, const mcud_dw_channel *ch, int32_t hi_route,
                                      const mcud_conv_s8_params *p)
{
    MCUD_DW_WEIGHTS(ch);
    for (int32_t n = ow_n; n > 0; n--) {
        int32_t a = ch->bias, b = a; /* a: row oh, b: row oh + 1 */
        int32_t x0, x1, x2;
        MCUD_DW_TAPS3(a, r0, w00, w01, w02);
        x0 = r0[rw];
        x1 = r0[rw + 1];
        x2 = r0[rw + 2];
        MCUD_DW_MAC(a, x0, w10);
        MCUD_DW_MAC(a, x1, w11);
        MCUD_DW_MAC(a, x2, w12);
        MCUD_DW_MAC(b, x0, w00);
        MCUD_DW_MAC(b, x1, w01);
        MCUD_DW_MAC(b, x2, w02);
        x0 = r0[2 * rw];
        x1 = r0[2 * rw + 1];
        x2 = r0[2 * rw + 2];
        MCUD_DW_MAC(a, x0, w20);
        MCUD_DW_MAC(a, x1, w21);
        MCUD_DW_MAC(a, x2, w22);
        MCUD_DW_MAC(b, x0, w10);
        MCUD_DW_MAC(b, x1, w11);
        MCUD_DW_MAC(b, x2, w12);
        MCUD_DW_TAPS3(b, r0 + 3 * rw, w20, w21, w22);
        yr[0] = mcud_dw_out(a, ch, hi_route, p);
        yr[yhs] = mcud_dw_out(b, ch, hi_route, p);
        r0++;
        yr += ysw;
    }
}
#undef MCUD_DW_TAPS3
#undef MCUD_DW_WEIGHTS
#undef MCUD_DW_MAC
#endif

/* One output row: ow in [0, ow_n), window columns start at buffer index ow * sw. */
MCUD_INLINE void mcud_dw_row(const int8_t *r0, const int8_t *r1, const int8_t *r2, int8_t *yr, int32_t ysw,
                             int32_t ow_n, int32_t sw, const mcud_dw_channel *ch, int32_t hi_route,
                             const mcud_conv_s8_params *p)
{
#if MCUD_HAVE_MVE
    mcud_dw_row_mve(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route == 4 ? 3 : hi_route, p); /* shift, not k_hi */
    return;
#endif
#if MCUD_DW_SCALAR
    mcud_dw_row_scalar(r0, r1, r2, yr, ysw, ow_n, sw, ch, hi_route, p);
    return;
#endif
    const uint32_t p0 = ch->pair[0], p1 = ch->pair[1], p2 = ch->pair[2];
    const uint32_t m01 = ch->mid01, m2 = ch->mid2;
    int32_t ow = 0;
    if (sw == 1) {
        for (; ow + 2 <= ow_n; ow += 2) {
            int32_t a0 = ch->bias, a1 = ch->bias;
            uint32_t v, e, o;
            v = mcud_load32(r0 + ow);
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p0, a0);
            a1 = mcud_smlad(o, p0, a1);
            a0 = mcud_dw_mac_bb(o, m01, a0);
            a1 = mcud_dw_mac_tb(e, m01, a1);
            v = mcud_load32(r1 + ow);
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p1, a0);
            a1 = mcud_smlad(o, p1, a1);
            a0 = mcud_dw_mac_bt(o, m01, a0);
            a1 = mcud_dw_mac_tt(e, m01, a1);
            v = mcud_load32(r2 + ow);
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p2, a0);
            a1 = mcud_smlad(o, p2, a1);
            a0 = mcud_dw_mac_bb(o, m2, a0);
            a1 = mcud_dw_mac_tb(e, m2, a1);
            yr[ow * ysw] = mcud_dw_out(a0, ch, hi_route, p);
            yr[(ow + 1) * ysw] = mcud_dw_out(a1, ch, hi_route, p);
        }
    } else if (sw == 2) {
        /* two outputs at stride 2 from one word of each row, (c0, c2) and (c1, c3), and the next byte c4: output
         * ow takes c0..c2, ow + 1 c2..c4, so each row's word is loaded and unpacked once for both (three loads,
         * three byte loads and six unpackings for two outputs, where one at a time takes six and twelve) */
        for (; ow + 2 <= ow_n; ow += 2) {
            const int32_t j = 2 * ow;
            int32_t a0 = ch->bias, a1 = ch->bias;
            uint32_t v, e, o, n;
            v = mcud_load32(r0 + j);
            n = (uint32_t)(int32_t)r0[j + 4];
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p0, a0);
            a0 = mcud_dw_mac_bb(o, m01, a0);
            a1 = mcud_dw_mac_tb(e, p0, a1);
            a1 = mcud_dw_mac_tb(o, m01, a1);
            a1 = mcud_dw_mac_bt(n, p0, a1);
            v = mcud_load32(r1 + j);
            n = (uint32_t)(int32_t)r1[j + 4];
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p1, a0);
            a0 = mcud_dw_mac_bt(o, m01, a0);
            a1 = mcud_dw_mac_tb(e, p1, a1);
            a1 = mcud_dw_mac_tt(o, m01, a1);
            a1 = mcud_dw_mac_bt(n, p1, a1);
            v = mcud_load32(r2 + j);
            n = (uint32_t)(int32_t)r2[j + 4];
            e = mcud_sxtb16(v);
            o = mcud_sxtb16_ror8(v);
            a0 = mcud_smlad(e, p2, a0);
            a0 = mcud_dw_mac_bb(o, m2, a0);
            a1 = mcud_dw_mac_tb(e, p2, a1);
            a1 = mcud_dw_mac_tb(o, m2, a1);
            a1 = mcud_dw_mac_bt(n, p2, a1);
            yr[ow * ysw] = mcud_dw_out(a0, ch, hi_route, p);
            yr[(ow + 1) * ysw] = mcud_dw_out(a1, ch, hi_route, p);
        }
    }
    for (; ow < ow_n; ow++) {
        int32_t j = ow * sw;
        int32_t a0 = ch->bias;
        uint32_t v;
        v = mcud_load32(r0 + j);
        a0 = mcud_smlad(mcud_sxtb16(v), p0, a0);
        a0 = mcud_dw_mac_bb(mcud_sxtb16_ror8(v), m01, a0);
        v = mcud_load32(r1 + j);
        a0 = mcud_smlad(mcud_sxtb16(v), p1, a0);
        a0 = mcud_dw_mac_bt(mcud_sxtb16_ror8(v), m01, a0);
        v = mcud_load32(r2 + j);
        a0 = mcud_smlad(mcud_sxtb16(v), p2, a0);
        a0 = mcud_dw_mac_bb(mcud_sxtb16_ror8(v), m2, a0);
        yr[ow * ysw] = mcud_dw_out(a0, ch, hi_route, p);
    }
}

/* Two output rows at stride 1 (both axes) from four buffered rows r0 (its top) at rw bytes apart: the two
 * middle input rows are loaded and unpacked once for both, so a 2 x 2 block of outputs takes four loads and
 * eight unpackings where two rows one after the other take six and twelve. Row oh + 1 goes to yr + yhs. */
MCUD_INLINE void mcud_dw_rows2(const int8_t *r0, int32_t rw, int8_t *yr, int32_t yhs, int32_t ysw, int32_t ow_n,
                               const mcud_dw_channel *ch, int32_t hi_route, const mcud_conv_s8_params *p)
{
#if MCUD_DW_SCALAR
    mcud_dw_rows2_scalar(r0, rw, yr, yhs, ysw, ow_n, ch, hi_route, p);
    return;
#endif
    const uint32_t p0 = ch->pair[0], p1 = ch->pair[1], p2 = ch->pair[2];
    const uint32_t m01 = ch->mid01, m2 = ch->mid2;
    int32_t ow = 0;
    for (; ow + 2 <= ow_n; ow += 2) {
        int32_t a0 = ch->bias, a1 = a0, b0 = a0, b1 = a0; /* a: row oh, b: row oh + 1 */
        const int8_t *xr = r0 + ow;
        uint32_t v, e, o;
        v = mcud_load32(xr);
        e = mcud_sxtb16(v);
        o = mcud_sxtb16_ror8(v);
        a0 = mcud_smlad(e, p0, a0);
        a1 = mcud_smlad(o, p0, a1);
        a0 = mcud_dw_mac_bb(o, m01, a0);
        a1 = mcud_dw_mac_tb(e, m01, a1);
        v = mcud_load32(xr + rw);
        e = mcud_sxtb16(v);
        o = mcud_sxtb16_ror8(v);
        a0 = mcud_smlad(e, p1, a0);
        a1 = mcud_smlad(o, p1, a1);
        a0 = mcud_dw_mac_bt(o, m01, a0);
        a1 = mcud_dw_mac_tt(e, m01, a1);
        b0 = mcud_smlad(e, p0, b0);
        b1 = mcud_smlad(o, p0, b1);
        b0 = mcud_dw_mac_bb(o, m01, b0);
        b1 = mcud_dw_mac_tb(e, m01, b1);
        v = mcud_load32(xr + 2 * rw);
        e = mcud_sxtb16(v);
        o = mcud_sxtb16_ror8(v);
        a0 = mcud_smlad(e, p2, a0);
        a1 = mcud_smlad(o, p2, a1);
        a0 = mcud_dw_mac_bb(o, m2, a0);
        a1 = mcud_dw_mac_tb(e, m2, a1);
        b0 = mcud_smlad(e, p1, b0);
        b1 = mcud_smlad(o, p1, b1);
        b0 = mcud_dw_mac_bt(o, m01, b0);
        b1 = mcud_dw_mac_tt(e, m01, b1);
        v = mcud_load32(xr + 3 * rw);
        e = mcud_sxtb16(v);
        o = mcud_sxtb16_ror8(v);
        b0 = mcud_smlad(e, p2, b0);
        b1 = mcud_smlad(o, p2, b1);
        b0 = mcud_dw_mac_bb(o, m2, b0);
        b1 = mcud_dw_mac_tb(e, m2, b1);
        yr[ow * ysw] = mcud_dw_out(a0, ch, hi_route, p);
        yr[(ow + 1) * ysw] = mcud_dw_out(a1, ch, hi_route, p);
        yr[yhs + ow * ysw] = mcud_dw_out(b0, ch, hi_route, p);
        yr[yhs + (ow + 1) * ysw] = mcud_dw_out(b1, ch, hi_route, p);
    }
    if (ow < ow_n) { /* an odd width: the last column of each row as mcud_dw_row does it */
        mcud_dw_row(r0 + ow, r0 + ow + rw, r0 + ow + 2 * rw, yr + ow * ysw, ysw, 1, 1, ch, hi_route, p);
        mcud_dw_row(r0 + ow + rw, r0 + ow + 2 * rw, r0 + ow + 3 * rw, yr + yhs + ow * ysw, ysw, 1, 1, ch, hi_route,
                    p);
    }
}

/* Channel c's requantization into ch (mult, shift, r, half, k_hi) and its route as the kernels below take it:
 * 0 or 1 (ONNX: mcud_requant, or mcud_requant_hi_r where the shift is in [33, 62]); for TFLite 0, 1 or 2, whose
 * routes are 2 + 0, 3 and 4 (mcud_dw_out). */
MCUD_INLINE int32_t mcud_dw_requant_of(mcud_dw_channel *ch, const mcud_conv_s8_params *p, int32_t c, int32_t tfl)
{
    ch->mult = p->mult[c];
    ch->shift = p->shift[c];
    ch->r = ch->shift - 32;
    ch->half = ch->r >= 1 ? (int32_t)1 << (ch->r - 1) : 0;
    int32_t hi_route = ch->shift >= 33 && ch->shift <= 62;
    if (tfl) {
        ch->k_hi = hi_route ? (int32_t)1 << (ch->shift - 33) : 0;
        if (hi_route) { /* route 4 where the high word stays below 2^31: |acc * mult| / 2^32 < 2^30 */
            const int64_t k = (int64_t)ch->k_hi + (int64_t)p->out_zero_point * ((int64_t)1 << ch->r);
            const int64_t mag = k < 0 ? -k : k;
            if (mag + 1 < ((int64_t)1 << 30)) {
                ch->k_hi = (int32_t)k;
                hi_route = 2; /* 2 + tfl * 2 below: route 4 */
            }
        }
    }
    return hi_route;
}

/* The largest kernel of mcud_dw_lines and its int16 buffer (elements): a line's windows, zero points around */
#define MCUD_DW_LINE_TAPS 64
#define MCUD_DW_LINE_BUF (MCUD_DW_BUF / 2)

/* The o_n outputs of one widened line (mcud_dw_lines: window o at buf + o s, taps d apart) at yl, ya apart, through
 * requantization route (a constant at each call) */
MCUD_INLINE void mcud_dw_line_out(const int16_t *buf, int32_t o_n, int32_t s, int32_t d, int32_t k_n,
                                  const uint32_t *pairs, const int16_t *taps, const mcud_dw_channel *ch, int32_t route,
                                  int8_t *yl, int32_t ya, const mcud_conv_s8_params *p)
{
    for (int32_t o = 0; o < o_n; o++) {
        const int16_t *t = buf + o * s;
        int32_t acc = ch->bias, k = 0;
        if (d == 1) {
            MCUD_UNROLL /* K a constant: the pairs' loads at constant offsets */
            for (int32_t i = 0; i < k_n / 2; i++) {
                acc = mcud_smlad(mcud_load32(t + 2 * i), pairs[i], acc);
            }
            k = k_n & ~1;
        }
        for (; k < k_n; k++) {
            acc += (int32_t)t[k * d] * taps[k];
        }
        yl[o * ya] = mcud_dw_out(acc, ch, route, p);
    }
}

/* A depthwise kernel of one column or one row (K x 1 or 1 x K, K up to MCUD_DW_LINE_TAPS, any stride, dilation and
 * padding; rank 4): each channel's lines along the kernel's axis, one at a time, are widened to int16 in a stack
 * buffer with the input zero point where the windows leave the input, so every output is bias - zx sum w + the
 * window's dot product with no bounds to check: at dilation 1 two taps a SMLAD from a 32-bit load of two int16
 * (any alignment) and the channel's weights in pairs, else a tap at a time. Where the generic kernel took about 50
 * instructions a multiply-accumulate (an index and a bounds test per tap), this takes under two. Returns 0 (nothing
 * written) where the shape is not one of these or a line does not fit the buffer. */
MCUD_INLINE int32_t mcud_dw_lines(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                  const mcud_conv_s8_params *p, const int32_t tfl)
{
    if (x->ndim != 4 || w->ndim != 4 || (w->shape[2] != 1 && w->shape[3] != 1) ||
        (w->shape[2] == 1 && w->shape[3] == 1)) {
        return 0;
    }
    const int32_t along_h = w->shape[3] == 1; /* the kernel's axis: H (K x 1) or W (1 x K) */
    const int32_t k_n = along_h ? w->shape[2] : w->shape[3];
    const int32_t ax = along_h ? 2 : 3, other = along_h ? 3 : 2;
    const int32_t s = p->stride[ax - 2], d = p->dilation[ax - 2], pad = p->pad[ax - 2];
    const int32_t so = p->stride[other - 2], po = p->pad[other - 2];
    const int32_t len = x->shape[ax], o_n = y->shape[ax], lines = y->shape[other], x_other = x->shape[other];
    const int32_t span = (o_n - 1) * s + (k_n - 1) * d + 1; /* buffer elements the windows reach */
    if (k_n > MCUD_DW_LINE_TAPS || span + 1 > MCUD_DW_LINE_BUF) {
        return 0;
    }
    const int32_t zx = p->in_zero_point;
    const int8_t *xd = (const int8_t *)x->data, *wd = (const int8_t *)w->data;
    const int32_t *bd = b != NULL ? (const int32_t *)b->data : NULL;
    int8_t *yd = (int8_t *)y->data;
    const int32_t xa_s = x->stride[ax], xo_s = x->stride[other], ya_s = y->stride[ax], yo_s = y->stride[other];
    const int32_t wk_s = w->stride[ax];
    int16_t buf[MCUD_DW_LINE_BUF];
    uint32_t pairs[MCUD_DW_LINE_TAPS / 2];
    int16_t taps[MCUD_DW_LINE_TAPS];
    /* input elements [i0, i1) of a line land at buf[pad + i]; the rest of the span holds zx */
    const int32_t i0 = pad > 0 ? 0 : -pad, i1 = len < span - pad ? len : span - pad;
    for (int32_t c = 0; c < y->shape[1]; c++) {
        mcud_dw_channel ch;
        int32_t sum = 0;
        for (int32_t k = 0; k < k_n; k++) {
            taps[k] = wd[c * w->stride[0] + k * wk_s];
            sum += taps[k];
        }
        for (int32_t k = 0; k + 1 < k_n; k += 2) {
            pairs[k / 2] = mcud_pack16(taps[k], taps[k + 1]);
        }
        ch.bias = (bd != NULL ? bd[c * b->stride[0]] : 0) - zx * sum;
        const int32_t hi_route = mcud_dw_requant_of(&ch, p, c, tfl);
        const int32_t route = tfl ? (hi_route == 2 ? 4 : hi_route ? 3 : 2) : hi_route;
        for (int32_t n = 0; n < y->shape[0]; n++) {
            for (int32_t j = 0; j < lines; j++) {
                const int32_t io = j * so - po; /* the input line of output line j (a kernel of 1 across) */
                const int8_t *xl = xd + n * x->stride[0] + c * x->stride[1] + io * xo_s;
                const int32_t inside = io >= 0 && io < x_other;
                const int32_t from = inside ? pad + i0 : span, to = inside ? pad + i1 : span;
                for (int32_t i = 0; i < from; i++) { /* the zero point where the windows leave the line */
                    buf[i] = (int16_t)zx;
                }
                for (int32_t i = from; i < to; i++) {
                    buf[i] = xl[(i - pad) * xa_s];
                }
                for (int32_t i = to; i < span + 1; i++) {
                    buf[i] = (int16_t)zx;
                }
                int8_t *yl = yd + n * y->stride[0] + c * y->stride[1] + j * yo_s;
                switch (route) { /* each route a constant in its loop */
                case 0:
                    mcud_dw_line_out(buf, o_n, s, d, k_n, pairs, taps, &ch, 0, yl, ya_s, p);
                    break;
                case 1:
                    mcud_dw_line_out(buf, o_n, s, d, k_n, pairs, taps, &ch, 1, yl, ya_s, p);
                    break;
                case 2:
                    mcud_dw_line_out(buf, o_n, s, d, k_n, pairs, taps, &ch, 2, yl, ya_s, p);
                    break;
                case 3:
                    mcud_dw_line_out(buf, o_n, s, d, k_n, pairs, taps, &ch, 3, yl, ya_s, p);
                    break;
                default:
                    mcud_dw_line_out(buf, o_n, s, d, k_n, pairs, taps, &ch, 4, yl, ya_s, p);
                    break;
                }
            }
        }
    }
    return 1;
}

/* Input row ih of the plane into buf[pad + c] for the columns c in [0, n) the windows reach. */
MCUD_INLINE void mcud_dw_copy_row(int8_t *buf, const int8_t *xr, int32_t xsw, int32_t n)
{
    if (xsw == 1) {
        int32_t c = 0;
        for (; c + 4 <= n; c += 4) {
            mcud_store32(buf + c, mcud_load32(xr + c));
        }
        for (; c < n; c++) {
            buf[c] = xr[c];
        }
    } else {
        for (int32_t c = 0; c < n; c++) {
            buf[c] = xr[c * xsw];
        }
    }
}

/* The kernel for ONNX models (tfl 0) and for TFLite models (tfl 1), a constant in each wrapper below. */
/* fn(args..., route, p) with the channel's route a constant at each call: 0 or 1 for ONNX models; for TFLite models
 * 2, 3, 4 from mcud_dw_requant_of's 0, 1, 2, and 5 (the doubled route) as it is */
#define MCUD_DW_ROUTED(fn, ...)                                                                                 \
    do {                                                                                                        \
        if (tfl) {                                                                                              \
            if (hi_route == 5) {                                                                                \
                fn(__VA_ARGS__, 5, p);                                                                          \
            } else if (hi_route == 2) {                                                                         \
                fn(__VA_ARGS__, 4, p);                                                                          \
            } else if (hi_route) {                                                                              \
                fn(__VA_ARGS__, 3, p);                                                                          \
            } else {                                                                                            \
                fn(__VA_ARGS__, 2, p);                                                                          \
            }                                                                                                   \
        } else if (hi_route) {                                                                                  \
            fn(__VA_ARGS__, 1, p);                                                                              \
        } else {                                                                                                \
            fn(__VA_ARGS__, 0, p);                                                                              \
        }                                                                                                       \
    } while (0)

MCUD_INLINE void mcud_conv_s8_dw_body(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                      const mcud_conv_s8_params *p, const int32_t tfl)
{
    const int32_t rank4 = x->ndim >= 4;
    const int32_t kh_n = w->ndim >= 4 ? w->shape[2] : 1, kw_n = w->shape[w->ndim - 1];
    const int32_t sh = p->stride[0], sw = p->stride[1];
    const int32_t yh = y->shape[y->ndim - 2], yw = y->shape[y->ndim - 1];
#if MCUD_HAVE_MVE
    /* bytes of one buffered row: the windows' columns (the vector loads read no byte past a window) */
    const int32_t rw = (yw - 1) * sw + 3;
#else
    /* bytes of one buffered row: what the 32-bit loads of one output row touch, rounded to words */
    const int32_t rw = ((yw - 1) * sw + 4 + 3) & ~3;
#endif
    const int32_t plane_rows = (yh - 1) * sh + 3;
    if (!rank4 || kh_n != 3 || kw_n != 3 || p->dilation[0] != 1 || p->dilation[1] != 1 || sw > 2 ||
        4 * rw > MCUD_DW_BUF) {
        if (mcud_dw_lines(x, w, b, y, p, tfl)) {
            return;
        }
        if (tfl) {
            mcud_conv_s8_tfl(x, w, b, y, p);
        } else {
            mcud_conv_s8(x, w, b, y, p);
        }
        return;
    }
    /* the whole padded plane when it fits, else a ring of three rows and a zero-point row */
    const int32_t whole = plane_rows * rw <= MCUD_DW_BUF;
    const int32_t xn_s = x->stride[0], xc_s = x->stride[1], xh = x->shape[2], xh_s = x->stride[2];
    const int32_t xw = x->shape[3], xw_s = x->stride[3];
    const int32_t yn = y->shape[0], yc = y->shape[1];
    const int32_t yn_s = y->stride[0], yc_s = y->stride[1], yh_s = y->stride[2], yw_s = y->stride[3];
    const int32_t ph = p->pad[0], pw = p->pad[1];
    const int32_t zx = p->in_zero_point;
    /* input columns [c0, c1) land at row index pw + c; input rows [r0, r1) at plane row ph + r */
    const int32_t c0 = pw > 0 ? 0 : -pw;
    const int32_t c1 = xw < rw - pw ? xw : rw - pw;
    const int32_t ncopy = c1 > c0 ? c1 - c0 : 0;
    const int32_t r0 = ph > 0 ? 0 : -ph;
    const int32_t r1 = xh < plane_rows - ph ? xh : plane_rows - ph;

    uint32_t mem[MCUD_DW_BUF / 4];
    int8_t *buf = (int8_t *)mem;
    int8_t *zrow = buf + 3 * rw;
    const int32_t used = whole ? plane_rows * rw : 4 * rw;
    const uint32_t zx4 = (uint32_t)(uint8_t)zx * 0x01010101u;
    for (int32_t i = 0; i < (used + 3) / 4; i++) {
        mem[i] = zx4;
    }

    const int8_t *xd = (const int8_t *)x->data;
    const int8_t *wd = (const int8_t *)w->data;
    const int32_t *bd = b != NULL ? (const int32_t *)b->data : NULL;
    int8_t *yd = (int8_t *)y->data;
    int32_t quiet = 0; /* the next of p->dead: a channel of one value */
    for (int32_t c = 0; c < yc; c++) {
        if (quiet < p->dead_n && p->dead[quiet] == c) { /* the bias alone, one value: at its turn (in place) */
            mcud_conv_fill_channel(y, c, p->dead_y[quiet++]);
            continue;
        }
        mcud_dw_channel ch;
        int32_t doubled = 0;
        const int32_t *t = p->dw != NULL ? p->dw + c * MCUD_DW_FIELDS : NULL;
#if MCUD_HAVE_MVE
        if (t != NULL && t[6] != 0) {
            t = NULL; /* a channel doubled for the DSP path's route 5, which the MVE kernels do not take: from w and b */
        }
#endif
        if (t != NULL) {
            ch.bias = t[0];
            ch.pair[0] = (uint32_t)t[1];
            ch.pair[1] = (uint32_t)t[2];
            ch.pair[2] = (uint32_t)t[3];
            ch.mid01 = (uint32_t)t[4];
            ch.mid2 = (uint32_t)t[5];
            doubled = t[6] != 0;
        } else {
            const int8_t *wc = wd + c * w->stride[0];
            int32_t sum = 0, mid[3];
            for (int32_t kh = 0; kh < 3; kh++) {
                const int8_t *wr = wc + kh * w->stride[2];
                int32_t w0 = wr[0], w1 = wr[w->stride[3]], w2 = wr[2 * w->stride[3]];
                ch.pair[kh] = mcud_pack16(w0, w2);
                mid[kh] = w1;
                sum += w0 + w1 + w2;
            }
            ch.mid01 = mcud_pack16(mid[0], mid[1]);
            ch.mid2 = mcud_pack16(mid[2], 0);
            ch.bias = (bd != NULL ? bd[c * b->stride[0]] : 0) - zx * sum;
        }
        int32_t hi_route = mcud_dw_requant_of(&ch, p, c, tfl);
        if (tfl && doubled) { /* route 5 (offload.dsp_packings gives it to cores without MVE only) */
            ch.mult = t[6];
            ch.k_hi = t[7];
            ch.r = t[8];
            hi_route = 5;
        }
        for (int32_t n = 0; n < yn; n++) {
            const int8_t *xp = xd + n * xn_s + c * xc_s + c0 * xw_s;
            int8_t *yp = yd + n * yn_s + c * yc_s;
            if (whole) {
                for (int32_t r = r0; r < r1; r++) {
                    mcud_dw_copy_row(buf + (ph + r) * rw + pw + c0, xp + r * xh_s, xw_s, ncopy);
                }
#if MCUD_HAVE_MVE
                if (sh == sw) { /* the plane as one run of outputs: no per-row set-up */
                    if (tfl) {
                        if (hi_route) {
                            mcud_dw_plane_mve(buf, rw, yh, yw, sw, yp, yh_s, yw_s, &ch, 3, p);
                        } else {
                            mcud_dw_plane_mve(buf, rw, yh, yw, sw, yp, yh_s, yw_s, &ch, 2, p);
                        }
                    } else if (hi_route) {
                        mcud_dw_plane_mve(buf, rw, yh, yw, sw, yp, yh_s, yw_s, &ch, 1, p);
                    } else {
                        mcud_dw_plane_mve(buf, rw, yh, yw, sw, yp, yh_s, yw_s, &ch, 0, p);
                    }
                    continue;
                }
#endif
                int32_t oh = 0;
#if MCUD_HAVE_MVE
                const int32_t rows2 = 0; /* rows of any width: mcud_dw_row_mve */
#else
                const int32_t rows2 = sh == 1 && sw == 1;
#endif
                if (rows2) { /* output rows two at a time */
                    for (; oh + 2 <= yh; oh += 2) {
                        const int8_t *top = buf + oh * rw;
                        int8_t *yr = yp + oh * yh_s;
                        MCUD_DW_ROUTED(mcud_dw_rows2, top, rw, yr, yh_s, yw_s, yw, &ch);
                    }
                }
                for (; oh < yh; oh++) {
                    const int8_t *top = buf + oh * sh * rw;
                    MCUD_DW_ROUTED(mcud_dw_row, top, top + rw, top + 2 * rw, yp + oh * yh_s, yw_s, yw, sw, &ch);
                }
                continue;
            }
#if !MCUD_HAVE_MVE
            if (sh == 1 && sw == 1) { /* a plane too big for the buffer: two output rows at a time all the same */
                /* the four input rows of two output rows one after another in buf (ring mode keeps 4 * rw bytes):
                 * each step moves the last two down (words) and brings in the next two, zero points outside the
                 * input, so mcud_dw_rows2 loads and unpacks the middle rows once for both output rows */
                for (int32_t oh = 0; oh < yh; oh += 2) {
                    int32_t k = 0;
                    if (oh > 0) {
                        for (int32_t i = 0; i < rw / 2; i++) { /* rows 2 and 3 to 0 and 1: 2 * rw / 4 words */
                            mem[i] = mem[i + rw / 2];
                        }
                        k = 2;
                    }
                    for (; k < 4; k++) {
                        const int32_t r = oh - ph + k;
                        if (r >= 0 && r < xh) {
                            mcud_dw_copy_row(buf + k * rw + pw + c0, xp + r * xh_s, xw_s, ncopy);
                        } else {
                            for (int32_t i = 0; i < rw / 4; i++) {
                                mem[k * rw / 4 + i] = zx4;
                            }
                        }
                    }
                    int8_t *yr = yp + oh * yh_s;
                    if (oh + 1 == yh) { /* an odd height: the last row alone */
                        MCUD_DW_ROUTED(mcud_dw_row, buf, buf + rw, buf + 2 * rw, yr, yw_s, yw, 1, &ch);
                        break;
                    }
                    MCUD_DW_ROUTED(mcud_dw_rows2, buf, rw, yr, yh_s, yw_s, yw, &ch);
                }
                continue;
            }
#endif
            /* rows[k] is input row next - 3 + k: a ring slot, or the zero-point row outside the input */
            int8_t *slot[3] = {buf, buf + rw, buf + 2 * rw};
            const int8_t *rows[3] = {zrow, zrow, zrow};
            int32_t next = -ph;
            for (int32_t oh = 0; oh < yh; oh++) {
                const int32_t top = oh * sh - ph + 3;
                if (top - next > 3) {
                    next = top - 3; /* rows no window reads (stride above 3) */
                }
                for (; next < top; next++) {
                    int8_t *s = slot[0];
                    slot[0] = slot[1];
                    slot[1] = slot[2];
                    slot[2] = s;
                    rows[0] = rows[1];
                    rows[1] = rows[2];
                    if (next >= 0 && next < xh) {
                        mcud_dw_copy_row(s + pw + c0, xp + next * xh_s, xw_s, ncopy);
                        rows[2] = s;
                    } else {
                        rows[2] = zrow;
                    }
                }
                MCUD_DW_ROUTED(mcud_dw_row, rows[0], rows[1], rows[2], yp + oh * yh_s, yw_s, yw, sw, &ch);
            }
        }
    }
}

MCUD_INLINE void mcud_conv_s8_dw(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                 const mcud_conv_s8_params *p)
{
    mcud_conv_s8_dw_body(x, w, b, y, p, 0);
}

MCUD_INLINE void mcud_conv_s8_dw_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                     const mcud_conv_s8_params *p)
{
    mcud_conv_s8_dw_body(x, w, b, y, p, 1);
}

#endif /* MCUD_CONV_DW_H */
