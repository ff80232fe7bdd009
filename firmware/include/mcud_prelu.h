#ifndef MCUD_PRELU_H
#define MCUD_PRELU_H
#include "mcud.h"

/* TFLite's PRELU with numpy broadcasting of alpha against x (mcudeploy/ops/prelu.py). Quantized:
 * v = x - x_zero; v >= 0 ? requant(v, pos) : requant(v * (alpha - alpha_zero), neg); + y_zero, clamped to
 * the type's range; TFLite's requantization. int16 x takes an int8 alpha. */
typedef struct {
    int32_t x_zero, alpha_zero, y_zero;
    int32_t pos_mult, pos_shift;
    int32_t neg_mult, neg_shift;
} mcud_prelu_params;

void mcud_prelu_f32(const mcud_view *x, const mcud_view *alpha, const mcud_view *y);
void mcud_prelu_s8_tfl(const mcud_view *x, const mcud_view *alpha, const mcud_view *y, const mcud_prelu_params *p);
void mcud_prelu_s16_tfl(const mcud_view *x, const mcud_view *alpha, const mcud_view *y, const mcud_prelu_params *p);

#endif
