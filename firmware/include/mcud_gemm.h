#ifndef MCUD_GEMM_H
#define MCUD_GEMM_H
#include "mcud.h"

/* Gemm and MatMul: y = alpha * A' B' + beta * C, batched over leading dimensions with numpy
 * broadcasting. A 1-D A is one row, a 1-D B one column (that dimension is absent from y).
 * C (NULL when absent) has rank <= 2 and broadcasts to (M, N). */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    float alpha;
    float beta;
    float act_min;
    float act_max;
} mcud_gemm_f32_params;

/* int8: acc[n] = bias[n] + sum_k a * b (a with its zero point, folded into bias at compile
 * time), y = clamp(mcud_requant(acc, mult[c], shift[c]) + y_zero), c = n or 0. */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    int32_t channels;      /* 1: one multiplier for every column; else N */
    const int32_t *bias;   /* N values, in accumulator units */
    const int32_t *mult;
    const int32_t *shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
} mcud_gemm_s8_params;

void mcud_gemm_f32(const mcud_view *a, const mcud_view *b, const mcud_view *c, const mcud_view *y,
                   const mcud_gemm_f32_params *p);
void mcud_gemm_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p);

#endif
