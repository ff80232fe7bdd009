/* LayerNormalization on views. Rows are the positions of the dimensions before axis, a row's
 * elements those from axis on, in row-major order; an offset is found by dividing the position
 * into per-dimension indices, except in a dense row, where element i is at i. */
#include <math.h>

#include "mcud_layernorm.h"

/* Offset in v of position k of the block of dimensions [from, to), row-major. */
static int32_t offset_of(const mcud_view *v, int32_t from, int32_t to, int32_t k)
{
    int32_t off = 0;
    for (int32_t d = to - 1; d >= from; d--) {
        off += (k % v->shape[d]) * v->stride[d];
        k /= v->shape[d];
    }
    return off;
}

static int row_is_dense(const mcud_view *v, int32_t axis)
{
    int32_t expect = 1;
    for (int32_t d = v->ndim - 1; d >= axis; d--) {
        if (v->shape[d] != 1 && v->stride[d] != expect) {
            return 0;
        }
        expect *= v->shape[d];
    }
    return 1;
}

typedef struct {
    int32_t n;     /* elements per row */
    int32_t rows;
    int32_t dense; /* x's and y's rows are both dense */
} ln_shape;

static ln_shape ln_plan(const mcud_view *x, const mcud_view *y, int32_t axis)
{
    ln_shape s;
    s.n = 1;
    for (int32_t d = axis; d < x->ndim; d++) {
        s.n *= x->shape[d];
    }
    s.rows = mcud_numel(x) / s.n;
    s.dense = row_is_dense(x, axis) && row_is_dense(y, axis);
    return s;
}

#define AT(V, I) (s.dense ? (I) : offset_of((V), p->axis, (V)->ndim, (I)))

void mcud_layernorm_f32(const mcud_view *x, const mcud_view *y, const mcud_view *mean, const mcud_view *inv_std,
                        const mcud_layernorm_f32_params *p)
{
    const ln_shape s = ln_plan(x, y, p->axis);
    for (int32_t r = 0; r < s.rows; r++) {
        const float *xr = (const float *)x->data + offset_of(x, 0, p->axis, r);
        float *yr = (float *)y->data + offset_of(y, 0, p->axis, r);
        float acc = 0.0f;
        for (int32_t i = 0; i < s.n; i++) {
            acc = acc + xr[AT(x, i)];
        }
        const float m = acc / (float)s.n;
        acc = 0.0f;
        for (int32_t i = 0; i < s.n; i++) {
            float d = xr[AT(x, i)] - m;
            acc = acc + d * d;
        }
        const float inv = 1.0f / sqrtf(acc / (float)s.n + p->epsilon);
        for (int32_t i = 0; i < s.n; i++) {
            yr[AT(y, i)] = (xr[AT(x, i)] - m) * inv * p->scale[i] + p->bias[i];
        }
        if (mean) {
            ((float *)mean->data)[offset_of(mean, 0, p->axis, r)] = m;
        }
        if (inv_std) {
            ((float *)inv_std->data)[offset_of(inv_std, 0, p->axis, r)] = inv;
        }
    }
}

/* One pass for the exact statistics: S = sum q and Q = sum q^2 give
 * V = sum (n q - S)^2 = n (n Q - S^2), exact in int64 for n <= 2^15. */
void mcud_layernorm_s8(const mcud_view *x, const mcud_view *y, const mcud_layernorm_s8_params *p)
{
    const ln_shape s = ln_plan(x, y, p->axis);
    for (int32_t r = 0; r < s.rows; r++) {
        const int8_t *xr = (const int8_t *)x->data + offset_of(x, 0, p->axis, r);
        int8_t *yr = (int8_t *)y->data + offset_of(y, 0, p->axis, r);
        int32_t sum = 0;
        int64_t squares = 0;
        for (int32_t i = 0; i < s.n; i++) {
            int32_t q = xr[AT(x, i)];
            sum += q;
            squares += q * q;
        }
        const int64_t v = (int64_t)s.n * ((int64_t)s.n * squares - (int64_t)sum * sum);
        const float inv = 1.0f / sqrtf((float)v * p->k_var + p->epsilon);
        for (int32_t i = 0; i < s.n; i++) {
            int32_t c = s.n * (int32_t)xr[AT(x, i)] - sum;
            float t = (float)c * p->k_c * inv * p->gamma[i] + p->beta[i];
            t = t < -1e9f ? -1e9f : (t > 1e9f ? 1e9f : t); /* lrintf stays within int32 */
            yr[AT(y, i)] = (int8_t)mcud_clamp((int32_t)lrintf(t) + p->out_zero_point, p->act_min, p->act_max);
        }
    }
}
