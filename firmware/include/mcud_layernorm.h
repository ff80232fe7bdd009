#ifndef MCUD_LAYERNORM_H
#define MCUD_LAYERNORM_H
#include "mcud.h"

/* LayerNormalization over the dimensions [axis, ndim) of x; y has x's shape. scale and bias
 * hold one value per element of a row (the normalised shape, row-major). The arithmetic is
 * mcudeploy/ops/layernorm.py's, which the numpy reference mirrors operation by operation. */
typedef struct {
    int32_t axis;
    float epsilon;
    const float *scale;
    const float *bias;
} mcud_layernorm_f32_params;

/* int8: c = n q - sum q, V = sum c^2 (exact, from sum q and sum q^2); inv = 1 / sqrtf((float)V * k_var + epsilon);
 * y = clamp(lrintf((float)c * k_c * inv * gamma[i] + beta[i]) + out_zero_point). */
typedef struct {
    int32_t axis;
    int32_t out_zero_point;
    int32_t act_min, act_max;
    float k_var, k_c, epsilon;
    const float *gamma;
    const float *beta;
} mcud_layernorm_s8_params;

/* mean and inv_std (may be NULL): the row's mean and 1 / sqrt(var + epsilon), one per row. */
void mcud_layernorm_f32(const mcud_view *x, const mcud_view *y, const mcud_view *mean, const mcud_view *inv_std,
                        const mcud_layernorm_f32_params *p);
void mcud_layernorm_s8(const mcud_view *x, const mcud_view *y, const mcud_layernorm_s8_params *p);

#endif
