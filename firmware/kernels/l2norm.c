/* L2 normalization on views: per row (each position of the outer dimensions) the sum of squares over the
 * reduced ones, then every element scaled by its inverse square root. */
#include <math.h>

#include "mcud_fixedpoint.h"
#include "mcud_l2norm.h"
#include "mcud_walk.h"

void mcud_l2norm_f32(const mcud_view *x, const mcud_view *y, const mcud_l2norm_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    mcud_walk outer, inner;
    mcud_walk_pos o, r;
    mcud_walk_split(x, y, p->axis, p->axis_end, &outer, &inner);
    mcud_walk_start(&o, 0, 0);
    for (int32_t row = 0; row < outer.count; row++, mcud_walk_step(&outer, &o)) {
        float squares = 0.0f;
        mcud_walk_start(&r, o.xo, o.yo);
        for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
            squares += xd[r.xo] * xd[r.xo];
        }
        float norm = sqrtf(squares);
        norm = norm < 1e-6f ? 1e-6f : norm;
        for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
            yd[r.yo] = xd[r.xo] / norm;
        }
    }
}

void mcud_l2norm_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_l2norm_params *p)
{
    const int8_t *xd = (const int8_t *)x->data;
    int8_t *yd = (int8_t *)y->data;
    mcud_walk outer, inner;
    mcud_walk_pos o, r;
    mcud_walk_split(x, y, p->axis, p->axis_end, &outer, &inner);
    mcud_walk_start(&o, 0, 0);
    for (int32_t row = 0; row < outer.count; row++, mcud_walk_step(&outer, &o)) {
        uint32_t squares = 0; /* wraps as TFLite's int32 sum does */
        mcud_walk_start(&r, o.xo, o.yo);
        for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
            const int32_t d = xd[r.xo] - p->zero_point;
            squares += (uint32_t)(d * d);
        }
        int32_t mult, exponent;
        mcud_fx_inv_sqrt((int32_t)squares, &mult, &exponent);
        const int32_t shift = 31 - (exponent + 7); /* the output's 7 fraction bits */
        for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
            yd[r.yo] = (int8_t)mcud_clamp(mcud_requant_tfl(xd[r.xo] - p->zero_point, mult, shift), -128, 127);
        }
    }
}
