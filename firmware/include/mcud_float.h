/* Float arithmetic in integer instructions for cores that emulate float in software (RV32IMAC: libgcc's routines
 * there are generic C), where a kernel's inner loop would otherwise call libgcc for every operation.
 *
 * mcud_fadd_soft(a, b) is IEEE 754 single addition rounded to nearest, ties to even: the same bits as a + b on any
 * conforming FPU or libgcc's __addsf3. It works the usual way (align the smaller operand's significand with six
 * bits below the result's last, the bits shifted out jammed into the lowest; add or subtract; normalise; round) and
 * only where both operands and the result are normal numbers: anything else (a zero, a subnormal, an infinity, a
 * NaN, a result that underflows or overflows) is left to a + b, so the rare cases cost what they did.
 * tests/ops/test_pool.py (test_c_float_add_equals_ieee) checks it against the host FPU on millions of pairs. */
#ifndef MCUD_FLOAT_H
#define MCUD_FLOAT_H

#include <stdint.h>
#include <string.h>

static inline float mcud_fadd_soft(float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    if ((ua & 0x7fffffffu) < (ub & 0x7fffffffu)) { /* a the larger in magnitude: the result takes its sign */
        const uint32_t t = ua;
        ua = ub;
        ub = t;
    }
    const int32_t ea = (int32_t)((ua >> 23) & 0xffu), eb = (int32_t)((ub >> 23) & 0xffu);
    if (eb == 0 || ea == 0xff) { /* a zero or subnormal (eb <= ea), an infinity or a NaN */
        return a + b;
    }
    uint32_t ma = ((ua & 0x7fffffu) | 0x800000u) << 6, mb = ((ub & 0x7fffffu) | 0x800000u) << 6; /* bit 29 */
    const int32_t d = ea - eb;
    if (d > 0) {
        mb = d >= 31 ? 1u : (mb >> d) | ((mb & ((1u << d) - 1u)) != 0u); /* the bits shifted out, jammed */
    }
    int32_t e = ea;
    uint32_t m;
    if ((ua ^ ub) >> 31) {
        m = ma - mb; /* ma >= mb: |a| >= |b| */
        if (m == 0u) {
            return 0.0f; /* x + (-x) is +0 rounding to nearest */
        }
        while (m < 0x20000000u) { /* more than one step only where nothing was shifted out (d <= 1) */
            m <<= 1;
            e--;
        }
        if (e <= 0) {
            return a + b; /* a subnormal result */
        }
    } else {
        m = ma + mb;
        if (m >= 0x40000000u) {
            m = (m >> 1) | (m & 1u);
            e++;
        }
    }
    const uint32_t low = m & 63u;
    m >>= 6;
    if (low > 32u || (low == 32u && (m & 1u))) {
        m++;
        if (m == 0x1000000u) {
            m >>= 1;
            e++;
        }
    }
    if (e >= 0xff) {
        return a + b; /* overflow */
    }
    const uint32_t r = (ua & 0x80000000u) | ((uint32_t)e << 23) | (m & 0x7fffffu);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

#endif /* MCUD_FLOAT_H */
