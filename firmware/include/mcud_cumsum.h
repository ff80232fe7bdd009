#ifndef MCUD_CUMSUM_H
#define MCUD_CUMSUM_H
#include "mcud.h"

/* CumSum along dimension `axis` of x into y (same shape; y may be x's own view): y[i] is the sum of the
 * elements up to i (exclusive: before i), counted from the end when reverse. See mcudeploy/ops/cumsum.py. */
typedef struct {
    int32_t axis;
    int32_t exclusive;
    int32_t reverse;
} mcud_cumsum_params;

/* A TFLite model's int8: each mcud_requant_tfl((x - in_zero_point) << 20, in_mult, in_shift) added in
 * 32 bits onto mcud_requant_tfl(-in_zero_point << 20, ...) (TFLite's start), every partial sum
 * requantized by out_mult, out_shift, + out_zero_point, clamped. */
typedef struct {
    int32_t axis;
    int32_t exclusive;
    int32_t reverse;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t in_mult;
    int32_t in_shift;
    int32_t out_mult;
    int32_t out_shift;
} mcud_cumsum_tfl_params;

void mcud_cumsum_f32(const mcud_view *x, const mcud_view *y, const mcud_cumsum_params *p);
void mcud_cumsum_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_cumsum_tfl_params *p);

#endif
