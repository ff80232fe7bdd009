/* LayerNormalization on views. The dimensions before axis are rows (an odometer over them), the
 * ones from axis on a row's elements, walked in row-major order by a second odometer (dense rows
 * take a flat loop: offset = i). */
#include <math.h>

#include "mcud_layernorm.h"

typedef struct {
    int32_t ndim;
    int32_t shape[MCUD_MAX_DIMS];
    int32_t idx[MCUD_MAX_DIMS];
    const int32_t *xs;
    const int32_t *ys;
    int32_t xo;
    int32_t yo;
} ln_walk;

static void walk_start(ln_walk *w, const mcud_view *x, const mcud_view *y, int32_t from, int32_t to)
{
    w->ndim = to - from;
    for (int32_t d = 0; d < w->ndim; d++) {
        w->shape[d] = x->shape[from + d];
        w->idx[d] = 0;
    }
    w->xs = x->stride + from;
    w->ys = y->stride + from;
    w->xo = 0;
    w->yo = 0;
}

static void walk_step(ln_walk *w)
{
    for (int32_t d = w->ndim - 1; d >= 0; d--) {
        w->xo += w->xs[d];
        w->yo += w->ys[d];
        if (++w->idx[d] < w->shape[d]) {
            return;
        }
        w->xo -= w->xs[d] * w->shape[d];
        w->yo -= w->ys[d] * w->shape[d];
        w->idx[d] = 0;
    }
}

/* Offsets of element i of a row in x and y: the flat index when both rows are dense. */
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

static int32_t row_length(const mcud_view *x, int32_t axis)
{
    int32_t n = 1;
    for (int32_t d = axis; d < x->ndim; d++) {
        n *= x->shape[d];
    }
    return n;
}

static int32_t stat_offset(const mcud_view *s, const ln_walk *rows)
{
    int32_t off = 0;
    for (int32_t d = 0; d < rows->ndim; d++) {
        off += rows->idx[d] * s->stride[d];
    }
    return off;
}

void mcud_layernorm_f32(const mcud_view *x, const mcud_view *y, const mcud_view *mean, const mcud_view *inv_std,
                        const mcud_layernorm_f32_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    const int32_t n = row_length(x, p->axis);
    const int dense = row_is_dense(x, p->axis) && row_is_dense(y, p->axis);
    ln_walk rows, in;
    walk_start(&rows, x, y, 0, p->axis);
    int32_t count = mcud_numel(x) / n;
    for (int32_t r = 0; r < count; r++, walk_step(&rows)) {
        const float *xr = xd + rows.xo;
        float *yr = yd + rows.yo;
        float acc = 0.0f;
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            acc = acc + xr[dense ? i : in.xo];
        }
        const float m = acc / (float)n;
        acc = 0.0f;
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            float d = xr[dense ? i : in.xo] - m;
            acc = acc + d * d;
        }
        const float inv = 1.0f / sqrtf(acc / (float)n + p->epsilon);
        if (mean) {
            ((float *)mean->data)[stat_offset(mean, &rows)] = m;
        }
        if (inv_std) {
            ((float *)inv_std->data)[stat_offset(inv_std, &rows)] = inv;
        }
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            float v = xr[dense ? i : in.xo];
            yr[dense ? i : in.yo] = (v - m) * inv * p->scale[i] + p->bias[i];
        }
    }
}

void mcud_layernorm_s8(const mcud_view *x, const mcud_view *y, const mcud_layernorm_s8_params *p)
{
    const int8_t *xd = (const int8_t *)x->data;
    int8_t *yd = (int8_t *)y->data;
    const int32_t n = row_length(x, p->axis);
    const int dense = row_is_dense(x, p->axis) && row_is_dense(y, p->axis);
    ln_walk rows, in;
    walk_start(&rows, x, y, 0, p->axis);
    int32_t count = mcud_numel(x) / n;
    for (int32_t r = 0; r < count; r++, walk_step(&rows)) {
        const int8_t *xr = xd + rows.xo;
        int8_t *yr = yd + rows.yo;
        int32_t s = 0;
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            s += xr[dense ? i : in.xo];
        }
        int64_t v = 0;
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            int64_t c = (int64_t)n * xr[dense ? i : in.xo] - s;
            v += c * c;
        }
        const float inv = 1.0f / sqrtf((float)v * p->k_var + p->epsilon);
        walk_start(&in, x, y, p->axis, x->ndim);
        for (int32_t i = 0; i < n; i++, walk_step(&in)) {
            int32_t c = n * (int32_t)xr[dense ? i : in.xo] - s;
            float t = (float)c * p->k_c * inv * p->gamma[i] + p->beta[i];
            t = t < -1e9f ? -1e9f : (t > 1e9f ? 1e9f : t); /* lrintf stays within int32 */
            int32_t q = (int32_t)lrintf(t) + p->out_zero_point;
            yr[dense ? i : in.yo] = (int8_t)mcud_clamp(q, p->act_min, p->act_max);
        }
    }
}
