/* Concat along one axis of up to MCUD_CONCAT_MAX_INPUTS views. float32 and equally quantized
 * integer inputs are copied; an int8/uint8/int16 input whose quantization differs from the output's is
 * requantized: y = clamp(out_zp + requant(x - in_zp, mult, shift), lo, hi). */
#ifndef MCUD_CONCAT_H
#define MCUD_CONCAT_H
#include "mcud.h"

#define MCUD_CONCAT_MAX_INPUTS 8

typedef struct {
    int32_t axis;
    int32_t count;          /* number of inputs; x[count..] are NULL */
    int32_t out_zp;
    int32_t lo, hi;
    const int32_t *in_zp;   /* per input; NULL when no input is requantized */
    const int32_t *mult;
    const int32_t *shift;   /* 0 marks an input with the output's quantization: a plain copy */
} mcud_concat_params;

#define MCUD_DECLARE_CONCAT(SUFFIX)                                                                \
    void mcud_concat_##SUFFIX(const mcud_view *x0, const mcud_view *x1, const mcud_view *x2,       \
                              const mcud_view *x3, const mcud_view *x4, const mcud_view *x5,       \
                              const mcud_view *x6, const mcud_view *x7, const mcud_view *y,        \
                              const mcud_concat_params *p);

MCUD_DECLARE_CONCAT(s8)
MCUD_DECLARE_CONCAT(u8)
MCUD_DECLARE_CONCAT(s16)
MCUD_DECLARE_CONCAT(s32)
MCUD_DECLARE_CONCAT(s64)
MCUD_DECLARE_CONCAT(f32)

#endif
