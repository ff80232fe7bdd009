/* Resize as a gather through compile-time tables (ops/resize.py computes every index and
 * weight with onnxruntime's arithmetic). The int8 linear kernel accumulates
 * (x - zx) * wy * wx with Q11 weights in int32 and requantizes once; a TFLite model's int8 kernel adds
 * the codes times TFLite's 1/1024 weights and divides by 2^20 rounding half away from zero, as TFLite's
 * ResizeBilinearInteger does. */
#include "mcud_resize.h"

typedef struct {
    int32_t n, c, h, w;
    int32_t sn, sc, sh, sw;
} resize_dims;

/* Leading dims missing from a view of ndim 2 or 3 have extent 1. */
static resize_dims dims_of(const mcud_view *v)
{
    int32_t shape[4] = {1, 1, 1, 1}, stride[4] = {0, 0, 0, 0};
    int32_t lead = 4 - v->ndim;
    for (int32_t d = 0; d < v->ndim; d++) {
        shape[lead + d] = v->shape[d];
        stride[lead + d] = v->stride[d];
    }
    resize_dims r = {shape[0], shape[1], shape[2], shape[3], stride[0], stride[1], stride[2], stride[3]};
    return r;
}

#define RESIZE_LOOP_BEGIN                                                                     \
    resize_dims xd = dims_of(x), yd = dims_of(y);                                             \
    for (int32_t n = 0; n < yd.n; n++) {                                                      \
        for (int32_t c = 0; c < yd.c; c++) {                                                  \
            int32_t xbase = n * xd.sn + c * xd.sc;                                            \
            for (int32_t oh = 0; oh < yd.h; oh++) {                                           \
                int32_t yrow = n * yd.sn + c * yd.sc + oh * yd.sh;                            \
                for (int32_t ow = 0; ow < yd.w; ow++) {

#define RESIZE_LOOP_END \
                }       \
            }           \
        }               \
    }

void mcud_resize_nearest_f32(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p)
{
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    RESIZE_LOOP_BEGIN
    yp[yrow + ow * yd.sw] = xp[xbase + p->h_index[oh] * xd.sh + p->w_index[ow] * xd.sw];
    RESIZE_LOOP_END
}

void mcud_resize_nearest_s8(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
    RESIZE_LOOP_BEGIN
    int32_t v = xp[xbase + p->h_index[oh] * xd.sh + p->w_index[ow] * xd.sw];
    if (p->requant) {
        v = mcud_clamp(mcud_requant(v - p->in_zero_point, p->mult, p->shift) + p->out_zero_point, -128, 127);
    }
    yp[yrow + ow * yd.sw] = (int8_t)v;
    RESIZE_LOOP_END
}

void mcud_resize_nearest_s16(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p)
{
    const int16_t *xp = (const int16_t *)x->data;
    int16_t *yp = (int16_t *)y->data;
    RESIZE_LOOP_BEGIN
    yp[yrow + ow * yd.sw] = xp[xbase + p->h_index[oh] * xd.sh + p->w_index[ow] * xd.sw];
    RESIZE_LOOP_END
}

void mcud_resize_linear_f32(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_f32_params *p)
{
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    RESIZE_LOOP_BEGIN
    const float *r0 = xp + xbase + p->h_index[2 * oh] * xd.sh;
    const float *r1 = xp + xbase + p->h_index[2 * oh + 1] * xd.sh;
    int32_t c0 = p->w_index[2 * ow] * xd.sw, c1 = p->w_index[2 * ow + 1] * xd.sw;
    float wx0 = p->w_weight[2 * ow], wx1 = p->w_weight[2 * ow + 1];
    float top = wx0 * r0[c0] + wx1 * r0[c1];
    float bottom = wx0 * r1[c0] + wx1 * r1[c1];
    yp[yrow + ow * yd.sw] = p->h_weight[2 * oh] * top + p->h_weight[2 * oh + 1] * bottom;
    RESIZE_LOOP_END
}

void mcud_resize_linear_s8(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_s8_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
    int32_t z = p->in_zero_point;
    RESIZE_LOOP_BEGIN
    const int8_t *r0 = xp + xbase + p->h_index[2 * oh] * xd.sh;
    const int8_t *r1 = xp + xbase + p->h_index[2 * oh + 1] * xd.sh;
    int32_t c0 = p->w_index[2 * ow] * xd.sw, c1 = p->w_index[2 * ow + 1] * xd.sw;
    int32_t wx0 = p->w_weight[2 * ow], wx1 = p->w_weight[2 * ow + 1];
    int32_t top = wx0 * (r0[c0] - z) + wx1 * (r0[c1] - z);
    int32_t bottom = wx0 * (r1[c0] - z) + wx1 * (r1[c1] - z);
    int32_t acc = p->h_weight[2 * oh] * top + p->h_weight[2 * oh + 1] * bottom;
    int32_t v = mcud_requant(acc, p->mult, p->shift) + p->out_zero_point;
    yp[yrow + ow * yd.sw] = (int8_t)mcud_clamp(v, -128, 127);
    RESIZE_LOOP_END
}

void mcud_resize_linear_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_tfl_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
    RESIZE_LOOP_BEGIN
    const int8_t *r0 = xp + xbase + p->h_index[2 * oh] * xd.sh;
    const int8_t *r1 = xp + xbase + p->h_index[2 * oh + 1] * xd.sh;
    int32_t c0 = p->w_index[2 * ow] * xd.sw, c1 = p->w_index[2 * ow + 1] * xd.sw;
    int32_t wx0 = p->w_weight[2 * ow], wx1 = p->w_weight[2 * ow + 1];
    int32_t top = wx0 * r0[c0] + wx1 * r0[c1];
    int32_t bottom = wx0 * r1[c0] + wx1 * r1[c1];
    int32_t acc = p->h_weight[2 * oh] * top + p->h_weight[2 * oh + 1] * bottom;
    yp[yrow + ow * yd.sw] = (int8_t)((acc + (acc > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20));
    RESIZE_LOOP_END
}
