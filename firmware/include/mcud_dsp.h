/* Packed 16-bit arithmetic for int8 kernels: the Cortex-M DSP instructions where the core has
 * them (ACLE intrinsics from arm_acle.h), the same operations in portable C elsewhere (host,
 * Cortex-M0/M3), so one algorithm gives the same bits on every target.
 *
 * A "pair" is a uint32_t holding two signed 16-bit halves: (lo, hi). */
#ifndef MCUD_DSP_H
#define MCUD_DSP_H

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define MCUD_HAVE_DSP 1
#else
#define MCUD_HAVE_DSP 0
#endif

/* Helium (the M-profile vector extension, integer part): Cortex-M55 and M85. Kernels that have an
 * MVE path take it at compile time; it gives the same bits as the DSP and portable paths. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#define MCUD_HAVE_MVE 1
#else
#define MCUD_HAVE_MVE 0
#endif

/* Four bytes from any address (unaligned loads are legal on M3/M4/M7; memcpy compiles to one LDR
 * unless the kernels are built with -ffreestanding, which they must not be). */
static inline uint32_t mcud_load32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void mcud_store32(void *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

/* Two int16 from any address, as a pair. */
static inline uint32_t mcud_load_pair(const int16_t *p)
{
    return mcud_load32(p);
}

static inline uint32_t mcud_pack16(int32_t lo, int32_t hi)
{
    return ((uint32_t)(uint16_t)lo) | ((uint32_t)(uint16_t)hi << 16);
}

static inline int32_t mcud_lo16(uint32_t v)
{
    return (int32_t)(int16_t)(uint16_t)(v & 0xffffu);
}

static inline int32_t mcud_hi16(uint32_t v)
{
    return (int32_t)(int16_t)(uint16_t)(v >> 16);
}

static inline uint32_t mcud_ror(uint32_t v, uint32_t n)
{
    return (v >> n) | (v << ((32u - n) & 31u));
}

#if MCUD_HAVE_DSP

/* bytes 0 and 2, sign-extended: (b0, b2) */
static inline uint32_t mcud_sxtb16(uint32_t v) { return (uint32_t)__sxtb16((int32_t)v); }
/* bytes 1 and 3, sign-extended: (b1, b3); one instruction (GCC does not fold the rotation itself) */
static inline uint32_t mcud_sxtb16_ror8(uint32_t v)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}
/* acc + a.lo * b.lo + a.hi * b.hi */
static inline int32_t mcud_smlad(uint32_t a, uint32_t b, int32_t acc) { return __smlad((int16x2_t)a, (int16x2_t)b, acc); }
/* c + the high word of a * b rounded half up (SMMLAR): (c * 2^32 + a * b + 2^31) >> 32, modulo 2^32 */
static inline int32_t mcud_smmlar(int32_t a, int32_t b, int32_t c)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
/* acc + a.lo * b.lo + a.hi * b.hi in 64 bits (SMLALD) */
static inline int64_t mcud_smlald(uint32_t a, uint32_t b, int64_t acc) { return __smlald((int16x2_t)a, (int16x2_t)b, acc); }
/* per-half a + b (wrapping) */
static inline uint32_t mcud_sadd16(uint32_t a, uint32_t b) { return (uint32_t)__sadd16((int16x2_t)a, (int16x2_t)b); }
/* acc + a.lo * b.lo and acc + a.hi * b.lo (SMLABB, SMLATB), modulo 2^32 */
static inline int32_t mcud_smlabb(uint32_t a, uint32_t b, int32_t acc) { return __smlabb((int32_t)a, (int32_t)b, acc); }
static inline int32_t mcud_smlatb(uint32_t a, uint32_t b, int32_t acc) { return __smlatb((int32_t)a, (int32_t)b, acc); }
/* (a.lo, b.lo): one PKHBT (GCC 12 makes two or three instructions of the C) */
static inline uint32_t mcud_pkhbt(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* (a.hi, b.hi): one PKHTB */
static inline uint32_t mcud_pkhtb(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

#else

static inline uint32_t mcud_sxtb16(uint32_t v)
{
    return mcud_pack16((int8_t)(uint8_t)(v & 0xffu), (int8_t)(uint8_t)((v >> 16) & 0xffu));
}

static inline uint32_t mcud_sxtb16_ror8(uint32_t v)
{
    return mcud_pack16((int8_t)(uint8_t)((v >> 8) & 0xffu), (int8_t)(uint8_t)(v >> 24));
}

static inline int32_t mcud_smmlar(int32_t a, int32_t b, int32_t c)
{
    return (int32_t)((uint32_t)c + (uint32_t)(int32_t)(((int64_t)a * b + ((int64_t)1 << 31)) >> 32));
}

static inline int32_t mcud_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_lo16(a) * mcud_lo16(b)) + (uint32_t)(mcud_hi16(a) * mcud_hi16(b)));
}

static inline int64_t mcud_smlald(uint32_t a, uint32_t b, int64_t acc)
{
    return acc + (int64_t)(mcud_lo16(a) * mcud_lo16(b)) + (int64_t)(mcud_hi16(a) * mcud_hi16(b));
}

static inline uint32_t mcud_sadd16(uint32_t a, uint32_t b)
{
    return mcud_pack16(mcud_lo16(a) + mcud_lo16(b), mcud_hi16(a) + mcud_hi16(b));
}

static inline int32_t mcud_smlabb(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_lo16(a) * mcud_lo16(b)));
}

static inline int32_t mcud_smlatb(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcud_hi16(a) * mcud_lo16(b)));
}

static inline uint32_t mcud_pkhbt(uint32_t a, uint32_t b) { return (a & 0xffffu) | (b << 16); }
static inline uint32_t mcud_pkhtb(uint32_t a, uint32_t b) { return (a >> 16) | (b & 0xffff0000u); }

#endif

/* mcud_requant_tfl_k's result (mcud.h) from twice the accumulator, acc2 (the block kernels' w16 and bias doubled, or
 * the sum added to itself), with c = 2 k and rs = r1 + 1 (rq2's values): four instructions where it takes five. Why
 * exact: TFLite's doubling high multiply, its nudge 1 - 2^30 for a negative product and its division truncating, is
 * floor((acc mult + 2^30) / 2^31) for every product, which is SMMLAR's rounded high word of acc2 * mult; its rounding
 * right shift by rs, half away from zero, is floor((h + 2^(rs-1) - [h < 0]) / 2^rs), and c = 2^(rs-1) + zy 2^rs brings
 * the half and the output zero point in one addition. The accumulator's sign stands in for h's, as in
 * mcud_requant_tfl_k: they differ only where h = 0, which gives zy either way. It needs |acc| < 2^30 (acc2 does not
 * wrap) and |c| + 2^30 < 2^31 (the sum stays in int32): mcudeploy/ops/requant.py (doubled_route) gives a channel this
 * route only then. tests/test_tflite.py (test_c_doubled_requantization_equals_numpy) checks it against TFLite's
 * arithmetic at the rounding ties. */
static inline __attribute__((always_inline)) int32_t mcud_requant_tfl_2(int32_t acc2, int32_t mult, int32_t c,
                                                                        int32_t rs)
{
    return (mcud_smmlar(acc2, mult, c) + (acc2 >> 31)) >> rs;
}

#endif /* MCUD_DSP_H */
