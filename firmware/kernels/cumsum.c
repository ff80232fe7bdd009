/* CumSum on views: an odometer over the other dimensions, and for each position one walk along the
 * axis (backwards when reverse). Each element is read before its output is written, so y may be x. */
#include "mcud_cumsum.h"
#include "mcud_walk.h"

static void plan(const mcud_view *x, const mcud_view *y, int32_t axis, mcud_walk *outer)
{
    outer->ndim = 0;
    outer->count = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d == axis) {
            continue;
        }
        outer->shape[outer->ndim] = x->shape[d];
        outer->xs[outer->ndim] = x->stride[d];
        outer->ys[outer->ndim] = y->stride[d];
        outer->count *= x->shape[d];
        outer->ndim++;
    }
}

void mcud_cumsum_f32(const mcud_view *x, const mcud_view *y, const mcud_cumsum_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    const int32_t n = x->shape[p->axis];
    const int32_t xs = p->reverse ? -x->stride[p->axis] : x->stride[p->axis];
    const int32_t ys = p->reverse ? -y->stride[p->axis] : y->stride[p->axis];
    const int32_t first = p->reverse ? n - 1 : 0;
    mcud_walk outer;
    mcud_walk_pos o;
    plan(x, y, p->axis, &outer);
    mcud_walk_start(&o, 0, 0);
    for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {
        const float *xr = xd + o.xo + first * x->stride[p->axis];
        float *yr = yd + o.yo + first * y->stride[p->axis];
        float acc = 0.0f;
        for (int32_t i = 0; i < n; i++) {
            float v = xr[i * xs];
            if (p->exclusive) {
                yr[i * ys] = acc;
                acc += v;
            } else {
                acc += v;
                yr[i * ys] = acc;
            }
        }
    }
}

void mcud_cumsum_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_cumsum_tfl_params *p)
{
    const int8_t *xd = (const int8_t *)x->data;
    int8_t *yd = (int8_t *)y->data;
    const int32_t n = x->shape[p->axis];
    const int32_t xs = p->reverse ? -x->stride[p->axis] : x->stride[p->axis];
    const int32_t ys = p->reverse ? -y->stride[p->axis] : y->stride[p->axis];
    const int32_t first = p->reverse ? n - 1 : 0;
    const int32_t start = mcud_requant_tfl((int32_t)((uint32_t)(-p->in_zero_point) << 20), p->in_mult, p->in_shift);
    mcud_walk outer;
    mcud_walk_pos o;
    plan(x, y, p->axis, &outer);
    mcud_walk_start(&o, 0, 0);
    for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {
        const int8_t *xr = xd + o.xo + first * x->stride[p->axis];
        int8_t *yr = yd + o.yo + first * y->stride[p->axis];
        uint32_t acc = (uint32_t)start;
        for (int32_t i = 0; i < n; i++) {
            int32_t d = (int32_t)xr[i * xs] - p->in_zero_point;
            uint32_t v = (uint32_t)mcud_requant_tfl((int32_t)((uint32_t)d << 20), p->in_mult, p->in_shift);
            uint32_t out = acc;
            acc += v;
            if (!p->exclusive) {
                out = acc;
            }
            int32_t q = mcud_requant_tfl((int32_t)out, p->out_mult, p->out_shift) + p->out_zero_point;
            yr[i * ys] = (int8_t)mcud_clamp(q, -128, 127);
        }
    }
}
