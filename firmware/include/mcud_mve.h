/* Requantization of int32 lanes on a core with Helium (MVE: Cortex-M55, M85), the bits of the scalar
 * functions of mcud.h; used by the MVE paths of the convolutions (mcud_conv_mve.h, mcud_conv_dw.h) and of the
 * elementwise kernels. Empty on any other core. */
#ifndef MCUD_MVE_H
#define MCUD_MVE_H
#include "mcud.h"
#include "mcud_dsp.h"
#if MCUD_HAVE_MVE

/* Four accumulators of one channel requantized (mult, shift) by route (0 mcud_requant, 1
 * mcud_requant_hi, 2 and 3 mcud_requant_tfl and its [33, 62] form), plus the zero point, clamped
 * to [lo, hi]: the scalar functions' bits. Route 1: the product's high and low words (VMULH, VMUL),
 * the tie to even where the low word is 0, then a truncating shift. Routes 2 and 3: TFLite's
 * doubling high multiply rounding half up is VQRDMULH (exact: the multiplier is never -2^31), its
 * division by 2^right rounding half away from zero is VRSHL after subtracting 1 from a negative
 * value. Route 0 (a 64-bit shift below 33) goes lane by lane through mcud_requant. */
MCUD_INLINE int32x4_t mcud_mve_requant(int32x4_t acc, int32_t mult, int32_t shift, int32_t route, int32_t zy,
                                       int32_t lo, int32_t hi)
{
    int32x4_t q;
    if (route == 1) {
        int32_t r = shift - 32;
        int32x4_t h = vmulhq_s32(acc, vdupq_n_s32(mult));
        int32x4_t odd = vandq_s32(vmvnq_s32(vshlq_s32(h, vdupq_n_s32(-r))), vdupq_n_s32(1));
        h = vsubq_m_s32(h, h, odd, vcmpeqq_s32(vmulq_s32(acc, vdupq_n_s32(mult)), vdupq_n_s32(0)));
        q = vshlq_s32(vaddq_n_s32(h, (int32_t)1 << (r - 1)), vdupq_n_s32(-r));
    } else if (route >= 2) {
        int32_t left = shift < 31 ? 31 - shift : 0, right = shift > 31 ? shift - 31 : 0;
        q = vqrdmulhq_n_s32(left ? vshlq_s32(acc, vdupq_n_s32(left)) : acc, mult);
        if (right) {
            q = vrshlq_s32(vaddq_s32(q, vshrq_n_s32(q, 31)), vdupq_n_s32(-right));
        }
    } else {
        q = vdupq_n_s32(mcud_requant(vgetq_lane_s32(acc, 0), mult, shift));
        q = vsetq_lane_s32(mcud_requant(vgetq_lane_s32(acc, 1), mult, shift), q, 1);
        q = vsetq_lane_s32(mcud_requant(vgetq_lane_s32(acc, 2), mult, shift), q, 2);
        q = vsetq_lane_s32(mcud_requant(vgetq_lane_s32(acc, 3), mult, shift), q, 3);
    }
    return vminq_s32(vmaxq_s32(vaddq_n_s32(q, zy), vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* mcud_mve_requant with what depends only on the channel worked out once, before a loop over its pixels:
 * the loop then has no branch on the shift (GCC does not hoist them). route is a constant at every call. */
typedef struct {
    int32x4_t left, right, neg; /* routes 2, 3: 31 - shift (or 0), shift - 31 negated (or 0), -1 when right */
    int32_t mult, shift, r;     /* route 1: r = shift - 32 */
} mcud_mve_rq;

MCUD_INLINE mcud_mve_rq mcud_mve_rq_of(int32_t mult, int32_t shift, int32_t route)
{
    mcud_mve_rq rq;
    int32_t left = shift < 31 ? 31 - shift : 0, right = shift > 31 ? shift - 31 : 0;
    rq.mult = mult;
    rq.shift = shift;
    rq.r = shift - 32;
    rq.left = vdupq_n_s32(route >= 2 ? left : 0);
    rq.right = vdupq_n_s32(route >= 2 ? -right : -rq.r);
    rq.neg = vdupq_n_s32(right ? -1 : 0);
    return rq;
}

/* The requantized value of every lane, before the zero point and the clamp; route 0 is not taken here. */
MCUD_INLINE int32x4_t mcud_mve_rq_scale(int32x4_t acc, const mcud_mve_rq *rq, int32_t route)
{
    int32x4_t q;
    if (route >= 2) { /* a shift by 0 and a mask of 0 leave a value as it is */
        q = vqrdmulhq_n_s32(vshlq_s32(acc, rq->left), rq->mult);
        q = vrshlq_s32(vaddq_s32(q, vandq_s32(vshrq_n_s32(q, 31), rq->neg)), rq->right);
    } else if (route == 1) {
        int32x4_t h = vmulhq_s32(acc, vdupq_n_s32(rq->mult));
        int32x4_t odd = vandq_s32(vmvnq_s32(vshlq_s32(h, rq->right)), vdupq_n_s32(1));
        h = vsubq_m_s32(h, h, odd, vcmpeqq_s32(vmulq_n_s32(acc, rq->mult), vdupq_n_s32(0)));
        q = vshlq_s32(vaddq_n_s32(h, (int32_t)1 << (rq->r - 1)), rq->right);
    }
    return q;
}

/* Plus the zero point zy, clamped to [lo, hi]: the clamp to int8 is two shifts (a saturating one) when
 * [lo, hi] is the whole range. */
MCUD_INLINE int32x4_t mcud_mve_out8(int32x4_t q, int32_t zy, int32_t lo, int32_t hi)
{
    q = vaddq_n_s32(q, zy);
    if (lo <= -128 && hi >= 127) {
        return vshrq_n_s32(vqshlq_n_s32(q, 24), 24); /* saturates at int32's bounds: [-128, 127] */
    }
    return vminq_s32(vmaxq_s32(q, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

MCUD_INLINE int32x4_t mcud_mve_rq_apply(int32x4_t acc, const mcud_mve_rq *rq, int32_t route, int32_t zy, int32_t lo,
                                        int32_t hi)
{
    if (route == 0) {
        return mcud_mve_requant(acc, rq->mult, rq->shift, 0, zy, lo, hi);
    }
    return mcud_mve_out8(mcud_mve_rq_scale(acc, rq, route), zy, lo, hi);
}

/* mcud_requant_tfl of every lane for a shift of 31 or more (no left shift; a right shift of shift - 31, whose
 * fix-up of a negative value, one less before VRSHL, is multiplied by 0 when there is none), with only scalar
 * constants (VQRDMULH, VMLA and VRSHL by a general register): no vector register held for them. */
MCUD_INLINE int32x4_t mcud_mve_tfl_right(int32x4_t acc, int32_t mult, int32_t shift)
{
    int32x4_t q = vqrdmulhq_n_s32(acc, mult);
    return vrshlq_n_s32(vmlaq_n_s32(q, vshrq_n_s32(q, 31), shift > 31), 31 - shift);
}

/* The vector (a0, a1, a2, a3) from four general registers in two instructions, where vsetq_lane takes a VDUP and
 * three lane moves: "VMOV Qd[i], Qd[i - 2], Rt, Rt2" puts Rt in the lower lane i - 2 and Rt2 in lane i, as QEMU
 * executes it (tests/ops/test_mve.py's requantization firmware checks the order). */
MCUD_INLINE int32x4_t mcud_mve_lanes4(int32_t a0, int32_t a1, int32_t a2, int32_t a3)
{
    int32x4_t v;
    __asm__("vmov %q0[2], %q0[0], %1, %2\n\tvmov %q0[3], %q0[1], %3, %4" : "=w"(v) : "r"(a0), "r"(a2), "r"(a1),
            "r"(a3));
    return v;
}

/* mcud_requant_tfl of every lane, the kind of its shift known before a loop (kind 0: shift above 31, 1: equal
 * to 31, 2: below 31), with sh = 31 - shift: two scalar constants, no vector register held for them. */
MCUD_INLINE int32x4_t mcud_mve_tfl_kind(int32x4_t acc, int32_t mult, int32_t sh, int32_t kind)
{
    if (kind == 2) {
        return vqrdmulhq_n_s32(vshlq_r_s32(acc, sh), mult);
    }
    int32x4_t q = vqrdmulhq_n_s32(acc, mult);
    return kind == 1 ? q : vrshlq_n_s32(vaddq_s32(q, vshrq_n_s32(q, 31)), sh);
}

#endif /* MCUD_HAVE_MVE */
#endif /* MCUD_MVE_H */
