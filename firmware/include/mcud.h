/* mcudeploy kernel library: tensor views and the integer arithmetic shared by all kernels.
 *
 * A view is a base pointer, a shape and strides in elements, so a kernel can read or write a
 * slice of a larger buffer (a piece of a split operator) without copies. The requantization
 * below is bit-identical to mcudeploy/ops/requant.py (mcud_requant for ONNX models, mcud_requant_tfl
 * for TFLite models: a model's kernels are chosen at compile time, no kernel tests which at run time). */
#ifndef MCUD_H
#define MCUD_H

#include <stddef.h>
#include <stdint.h>
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
#include <arm_acle.h>
#endif

/* Kernels inlined into model.c, where their shapes and parameters become constants. Not forced unoptimized (-O0):
 * GCC then gives every variable of every inlined kernel a stack slot of its own, never shared, and one operator's
 * function took 84 KB of stack (KWS), overflowing the stack silently; called instead, each kernel's frame lives for
 * its call only. */
#if defined(__GNUC__) && defined(__OPTIMIZE__)
#define MCUD_INLINE static inline __attribute__((always_inline))
#else
#define MCUD_INLINE static inline
#endif

/* A constant array of model.c the latency objective reads from SRAM (mcudeploy/offload/sram.py): in a .data section,
 * which every GCC start-up code (the firmware's, CMSIS's, a vendor's) copies from flash before main. Elsewhere (not
 * ELF, not GCC) it stays in flash: the same values, read more slowly. */
#if defined(__GNUC__) && defined(__ELF__)
#define MCUD_IN_RAM __attribute__((section(".data.mcud_in_ram")))
#else
#define MCUD_IN_RAM
#endif

#define MCUD_MAX_DIMS 6

typedef struct {
    void *data;
    int32_t ndim;
    int32_t shape[MCUD_MAX_DIMS];
    int32_t stride[MCUD_MAX_DIMS]; /* in elements */
} mcud_view;

/* p / 2^shift rounded half to even (shift in [1, 62]), as QuantizeLinear rounds.
 * Right shift of a negative int64_t is arithmetic on every compiler mcudeploy supports. */
static inline int64_t mcud_round_shift(int64_t p, int32_t shift)
{
    return (p + ((int64_t)1 << (shift - 1)) - 1 + ((p >> shift) & 1)) >> shift;
}

/* acc * mult / 2^shift, rounded half to even, with a 64-bit product. */
static inline int32_t mcud_requant(int32_t acc, int32_t mult, int32_t shift)
{
    return (int32_t)mcud_round_shift((int64_t)acc * (int64_t)mult, shift);
}

/* mcud_requant for a shift in [33, 62], in 32-bit steps, with r = shift - 32 and half = 2^(r-1) given
 * (kernels compute them once per channel). With the product p = hi * 2^32 + lo, the result is
 * (hi + half) >> r, one less before the shift when lo == 0 and bit r of hi is clear (the tie
 * that rounds to even). |hi| < 2^30, so nothing overflows. */
MCUD_INLINE int32_t mcud_requant_hi_r(int32_t acc, int32_t mult, int32_t r, int32_t half)
{
    int64_t prod = (int64_t)acc * (int64_t)mult;
    int32_t hi = (int32_t)(prod >> 32);
    if (__builtin_expect((uint32_t)prod == 0u, 0)) {
        hi -= (int32_t)(~(uint32_t)(hi >> r) & 1u);
    }
    return (hi + half) >> r;
}

MCUD_INLINE int32_t mcud_requant_hi(int32_t acc, int32_t mult, int32_t shift)
{
    int32_t r = shift - 32;
    return mcud_requant_hi_r(acc, mult, r, (int32_t)1 << (r - 1));
}

/* TFLite's requantization (a model imported from .tflite; mcudeploy/ops/requant.py): the same
 * (mult, shift), TFLite's exponent being 31 - shift. gemmlowp's doubling high multiply of the
 * accumulator (shifted left first when shift < 31) rounds half up, then a right shift by
 * shift - 31 rounds half away from zero: two roundings, as TFLite's reference kernels and CMSIS-NN. */
static inline int32_t mcud_requant_tfl(int32_t acc, int32_t mult, int32_t shift)
{
    int32_t left = shift < 31 ? 31 - shift : 0, right = shift > 31 ? shift - 31 : 0;
    int32_t t = (int32_t)((uint32_t)acc << left); /* wraps as TFLite's x * (1 << left_shift) */
    int32_t h = (int32_t)(((int64_t)t * (int64_t)mult + ((int64_t)1 << 30)) >> 31);
    int32_t mask = (int32_t)(((int64_t)1 << right) - 1);
    return (h >> right) + ((h & mask) > (mask >> 1) + (h < 0 ? 1 : 0) ? 1 : 0);
}

/* mcud_requant_tfl for a shift in [33, 62] as one 32 x 32 + 64-bit multiply-accumulate (SMLAL): with
 * r = shift - 31, both roundings fold into (acc * mult + k) >> (31 + r), k = 2^30 + 2^(30+r) less
 * 2^31 for a negative accumulator. k's low word is 2^30 with acc's sign bit, its high word
 * k_hi = 2^(r-2) plus acc >> 31 (kernels take k_hi and r1 = r - 1 = shift - 32 once per channel). */
MCUD_INLINE int32_t mcud_requant_tfl_k(int32_t acc, int32_t mult, int32_t k_hi, int32_t r1)
{
    uint32_t lo = ((uint32_t)acc & 0x80000000u) | 0x40000000u;
    int32_t hi = k_hi + (acc >> 31);
    int64_t p = (int64_t)(((uint64_t)(uint32_t)hi << 32) | lo) + (int64_t)acc * (int64_t)mult;
    return (int32_t)(p >> 32) >> r1;
}

MCUD_INLINE int32_t mcud_requant_tfl_r(int32_t acc, int32_t mult, int32_t shift)
{
    return mcud_requant_tfl_k(acc, mult, (int32_t)1 << (shift - 33), shift - 32);
}

/* mcud_requant_tfl of any shift, in one SMLAL (mcud_requant_tfl_r) where the shift is in [33, 62]: a channel whose
 * route is chosen at run time (the kernels' channels off the doubled route, rq2) */
MCUD_INLINE int32_t mcud_requant_tfl_any(int32_t acc, int32_t mult, int32_t shift)
{
    return shift >= 33 && shift <= 62 ? mcud_requant_tfl_r(acc, mult, shift) : mcud_requant_tfl(acc, mult, shift);
}

/* TFLite's requantization of an int64 accumulator (its 16x8 kernels, |acc| < 2^47): mult16 and shift16 are
 * the reduced multiplier and its shift (requant.py, tflite_reduced), one rounding half up, the result
 * truncated to 32 bits as TFLite's conversion does. */
static inline int32_t mcud_requant_tfl64(int64_t acc, int32_t mult16, int32_t shift16)
{
    return (int32_t)(uint32_t)(uint64_t)((acc * mult16 + ((int64_t)1 << (shift16 - 1))) >> shift16);
}

/* v clamped to [-128, 127]: one SSAT where the core has it. */
MCUD_INLINE int32_t mcud_sat8(int32_t v)
{
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
    return __ssat(v, 8);
#else
    return v < -128 ? -128 : (v > 127 ? 127 : v);
#endif
}

static inline int32_t mcud_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

static inline float mcud_clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

static inline int32_t mcud_numel(const mcud_view *v)
{
    int32_t n = 1;
    for (int32_t i = 0; i < v->ndim; i++) {
        n *= v->shape[i];
    }
    return n;
}

/* Element offset of the flat row-major index `flat` of `shape` inside view `v`, whose shape
 * broadcasts to `shape` (dimensions of extent 1 in v are read at 0; v may have fewer dims). */
static inline int32_t mcud_bcast_offset(const mcud_view *v, const int32_t *shape, int32_t ndim, int32_t flat)
{
    int32_t off = 0;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        int32_t i = flat % shape[d];
        flat /= shape[d];
        int32_t vd = d - (ndim - v->ndim);
        if (vd >= 0 && v->shape[vd] != 1) {
            off += i * v->stride[vd];
        }
    }
    return off;
}

/* `ndim` dimensions padded on the left to MCUD_MAX_DIMS: leading extents 1, strides 0. */
static inline void mcud_pad_dims(int32_t ndim, const int32_t *shape, const int32_t *stride, int32_t *n, int32_t *s)
{
    int32_t lead = MCUD_MAX_DIMS - ndim;
    for (int32_t d = 0; d < MCUD_MAX_DIMS; d++) {
        n[d] = d < lead ? 1 : shape[d - lead];
        s[d] = d < lead ? 0 : stride[d - lead];
    }
}

/* Whether a view is dense row-major (its elements are data[0 .. numel-1] in order). */
static inline int mcud_is_contiguous(const mcud_view *v)
{
    int32_t expect = 1;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->stride[d] != expect) {
            return 0;
        }
        expect *= v->shape[d];
    }
    return 1;
}

#endif /* MCUD_H */
