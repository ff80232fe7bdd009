#ifndef MCUD_L2NORM_H
#define MCUD_L2NORM_H
#include "mcud.h"

/* L2 normalization over the dimensions [axis, axis_end) of views x and y of the same shape (y may be x):
 * TFLite's L2_NORMALIZATION (mcudeploy/ops/l2norm.py). float32: x / max(sqrt(sum of x^2), 1e-6). int8:
 * TFLite's fixed-point 1 / sqrt of the sum of (x - zero_point)^2, the output in steps of 1/128. */
typedef struct {
    int32_t axis;
    int32_t axis_end;
    int32_t zero_point; /* the input's (int8) */
} mcud_l2norm_params;

void mcud_l2norm_f32(const mcud_view *x, const mcud_view *y, const mcud_l2norm_params *p);
void mcud_l2norm_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_l2norm_params *p);

#endif
