#ifndef MCUD_BATCHNORM_H
#define MCUD_BATCHNORM_H
#include "mcud.h"

/* Inference BatchNormalization: y = clamp(x * a[c] + b[c]) with c the index along dimension 1
 * (a and b precomputed at compile time). x and y have the same shape; y may be x. */

typedef struct {
    const float *a;
    const float *b;
    float act_min; /* fused Relu/Clip, or -/+FLT_MAX */
    float act_max;
} mcud_batchnorm_params;

void mcud_batchnorm_f32(const mcud_view *x, const mcud_view *y, const mcud_batchnorm_params *p);

#endif
