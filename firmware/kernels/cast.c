/* mcud_cast.h: element by element in row-major order of y (in place: each element read before it is
 * written, both types of one size). */
#include "mcud_cast.h"

/* A float to int32: truncated toward zero, saturated, NaN to 0 (C leaves the rest undefined). */
static inline int32_t float_to_int(float v)
{
    if (v != v) {
        return 0;
    }
    if (v >= 2147483648.0f) {
        return INT32_MAX;
    }
    if (v <= -2147483648.0f) {
        return INT32_MIN;
    }
    return (int32_t)v;
}

#define TO_INT(T, v) ((T)(v))
#define FROM_FLOAT(T, v) ((T)float_to_int(v))

#define CAST(NAME, TI, TO, CONVERT)                                                                \
    void NAME(const mcud_view *x, const mcud_view *y)                                              \
    {                                                                                              \
        const TI *xd = (const TI *)x->data;                                                        \
        TO *yd = (TO *)y->data;                                                                    \
        int32_t n = mcud_numel(y);                                                                 \
        int dense = mcud_is_contiguous(x) && mcud_is_contiguous(y);                                \
        for (int32_t i = 0; i < n; i++) {                                                          \
            int32_t xo = dense ? i : mcud_bcast_offset(x, y->shape, y->ndim, i);                   \
            int32_t yo = dense ? i : mcud_bcast_offset(y, y->shape, y->ndim, i);                   \
            yd[yo] = CONVERT(TO, xd[xo]);                                                          \
        }                                                                                          \
    }

#define CAST_INTS(IN, TI)                                   \
    CAST(mcud_cast_##IN##_s8, TI, int8_t, TO_INT)           \
    CAST(mcud_cast_##IN##_s16, TI, int16_t, TO_INT)         \
    CAST(mcud_cast_##IN##_s32, TI, int32_t, TO_INT)         \
    CAST(mcud_cast_##IN##_u32, TI, uint32_t, TO_INT)        \
    CAST(mcud_cast_##IN##_f32, TI, float, TO_INT)

CAST_INTS(s8, int8_t)
CAST_INTS(u8, uint8_t)
CAST_INTS(s16, int16_t)
CAST_INTS(s32, int32_t)
CAST_INTS(u32, uint32_t)
CAST(mcud_cast_f32_s8, float, int8_t, FROM_FLOAT)
CAST(mcud_cast_f32_s16, float, int16_t, FROM_FLOAT)
CAST(mcud_cast_f32_s32, float, int32_t, FROM_FLOAT)
CAST(mcud_cast_f32_f32, float, float, TO_INT)
