#ifndef MCUD_FIXEDPOINT_H
#define MCUD_FIXEDPOINT_H
#include "mcud.h"

/* gemmlowp's fixed-point arithmetic on raw int32 values, and TFLite's helpers built on it, for the TFLite
 * kernels that need them per row at run time (softmax's reciprocal, log softmax's log, L2 normalization's
 * 1 / sqrt). Bit-identical to mcudeploy/ops/fixedpoint.py; additions wrap as int32 (through uint32). */

/* doubling high multiply, rounded half away from zero (SaturatingRoundingDoublingHighMul) */
static inline int32_t mcud_fx_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

/* x / 2^e rounded half away from zero, e in [0, 31] (RoundingDivideByPOT) */
static inline int32_t mcud_fx_div_pot(int32_t x, int32_t e)
{
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0 ? 1 : 0) ? 1 : 0);
}

/* x * 2^e: saturated going up, rounded going down (SaturatingRoundingMultiplyByPOT) */
static inline int32_t mcud_fx_shl_sat(int32_t x, int32_t e)
{
    if (e <= 0) {
        return mcud_fx_div_pot(x, -e);
    }
    int32_t threshold = (int32_t)(((uint32_t)1 << (31 - e)) - 1);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << e);
}

static inline int32_t mcud_fx_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t mcud_fx_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline int32_t mcud_fx_sat_add(int32_t a, int32_t b)
{
    int64_t s = (int64_t)a + b;
    return s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : (int32_t)s);
}

/* (a + b) / 2 rounded half away from zero (RoundingHalfSum) */
static inline int32_t mcud_fx_half_sum(int32_t a, int32_t b)
{
    int64_t s = (int64_t)a + b;
    return (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
}

/* leading zeros of a uint32 (32 for 0) */
static inline int32_t mcud_fx_clz(uint32_t x)
{
    return x == 0u ? 32 : __builtin_clz(x);
}

/* 1 / (1 + a) for a in [0, 1) in Q0.31: three Newton-Raphson steps from 48/17 - 32/17 d, in Q2.29 */
static inline int32_t mcud_fx_one_over_one_plus_x(int32_t a)
{
    int32_t half = mcud_fx_half_sum(a, INT32_MAX);
    int32_t x = mcud_fx_add(1515870810, mcud_fx_mul(half, -1010580540));
    for (int32_t i = 0; i < 3; i++) {
        x = mcud_fx_add(x, mcud_fx_shl_sat(mcud_fx_mul(x, mcud_fx_sub(1 << 29, mcud_fx_mul(half, x))), 2));
    }
    return mcud_fx_shl_sat(x, 1);
}

/* log(a) for a >= 1 with bits_in integer bits, with bits_out integer bits (TFLite's
 * log_x_for_x_greater_than_or_equal_to_1: the binary exponent, then a rational approximation) */
static inline int32_t mcud_fx_log_x(int32_t a, int32_t bits_in, int32_t bits_out)
{
    const int32_t acc = bits_out + 1;
    const int32_t sqrt_half = 1518500250, sqrt_sqrt_half = 1805811301;
    const int32_t quarter = mcud_fx_div_pot(536870912, acc);
    const int32_t head_a = mcud_fx_clz((uint32_t)a);
    const int32_t r_a = mcud_fx_shl_sat(mcud_fx_mul(mcud_fx_shl_sat(a, head_a - 1), sqrt_half), 1);
    const int32_t pow_a = mcud_fx_sat_add(mcud_fx_shl_sat(bits_in - head_a, 31 - acc), quarter);
    const int32_t head_b = mcud_fx_clz((uint32_t)mcud_fx_mul(a, sqrt_half)) - 1;
    const int32_t r_b = mcud_fx_shl_sat(a, head_b);
    const int32_t pow_b = mcud_fx_sat_add(mcud_fx_shl_sat(bits_in - head_b, 31 - acc), -quarter);
    const int32_t r = r_a < r_b ? r_a : r_b;
    const int32_t pow2 = pow_a > pow_b ? pow_a : pow_b;
    const int32_t p = mcud_fx_half_sum(r, sqrt_sqrt_half);
    int32_t q = mcud_fx_sub(r, sqrt_sqrt_half);
    q = mcud_fx_add(q, q);
    const int32_t sq = mcud_fx_mul(q, q);
    const int32_t num = mcud_fx_add(mcud_fx_mul(q, r), mcud_fx_mul(mcud_fx_mul(q, sq), 117049297));
    const int32_t den = mcud_fx_add(mcud_fx_mul(p, mcud_fx_add(mcud_fx_add(1057819769, q), mcud_fx_mul(127690142, sq))),
                                    mcud_fx_mul(638450708, q));
    const int32_t total = mcud_fx_add(mcud_fx_mul(pow2, 1488522236),
                                      mcud_fx_mul(mcud_fx_div_pot(num, acc), mcud_fx_one_over_one_plus_x(den)));
    return mcud_fx_shl_sat(total, acc - bits_out);
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp(v, kReverseShift): mult * 2^exponent / 2^31 ~ 1 / sqrt(v) */
static inline void mcud_fx_inv_sqrt(int32_t v, int32_t *mult, int32_t *exponent)
{
    if (v <= 1) {
        *mult = INT32_MAX;
        *exponent = 0;
        return;
    }
    int32_t shift = 11;
    while (v >= (1 << 29)) {
        v /= 4;
        shift++;
    }
    const int32_t pairs = (mcud_fx_clz((uint32_t)v) - 1) / 2 - 1;
    shift -= pairs;
    v <<= 2 * pairs;
    const int32_t half = mcud_fx_div_pot(v >> 1, 1);
    int32_t x = 1 << 28; /* 1.0 in Q3.28 */
    for (int32_t i = 0; i < 5; i++) {
        const int32_t x3 = mcud_fx_shl_sat(mcud_fx_mul(mcud_fx_mul(x, x), x), 6);
        x = mcud_fx_shl_sat(mcud_fx_sub(mcud_fx_mul((1 << 28) + (1 << 27), x), mcud_fx_mul(half, x3)), 3);
    }
    int32_t m = mcud_fx_mul(x, 1518500250); /* times sqrt(2) / 2 */
    if (shift < 0) {
        m = (int32_t)((uint32_t)m << -shift);
        shift = 0;
    }
    *mult = m;
    *exponent = -shift;
}

#endif
