/* ConvTranspose, float32, int8 (TFLite's rounding) and 16x8, on strided views. TFLite Micro scatters each
 * input pixel into a scratch of the whole output; here each output pixel gathers the taps that reach it
 * (input pixel i, tap k, with i * stride + k * dilation - pad = o), so a piece of the output needs no
 * scratch and reads only its own weights. Integer sums are the same in any order: the int8 one wraps in
 * 32 bits (unsigned arithmetic) as TFLite Micro's int32 scratch does, the 16x8 one is exact in int64. */
#include "mcud_conv.h"

typedef struct {
    int32_t n, c, h, w;     /* extents */
    int32_t sn, sc, sh, sw; /* strides in elements */
} convt_dims;

/* (N, C, H, W), or (N, C, W) read as H = 1 */
static convt_dims convt_dims_of(const mcud_view *v)
{
    convt_dims d;
    d.n = v->shape[0];
    d.sn = v->stride[0];
    d.c = v->shape[1];
    d.sc = v->stride[1];
    if (v->ndim >= 4) {
        d.h = v->shape[2];
        d.sh = v->stride[2];
        d.w = v->shape[3];
        d.sw = v->stride[3];
    } else {
        d.h = 1;
        d.sh = 0;
        d.w = v->shape[2];
        d.sw = v->stride[2];
    }
    return d;
}

/* The input pixel that tap k brings to output pixel o along one axis, or -1 when none does. */
static inline int32_t convt_source(int32_t o, int32_t k, int32_t stride, int32_t dilation, int32_t pad, int32_t size)
{
    int32_t t = o + pad - k * dilation;
    if (t < 0 || t % stride != 0) {
        return -1;
    }
    t /= stride;
    return t < size ? t : -1;
}

/* The loops every type shares: ACC(xp, wp) adds the products of one tap over the group's input channels
 * (xp[ic * X.sc] * wp[ic * W.sn]); OUT stores output pixel yp from the sum. */
#define CONVT_LOOPS(TX, TW, INIT, ACC, OUT)                                                                     \
    do {                                                                                                        \
        convt_dims X = convt_dims_of(x), W = convt_dims_of(w), Y = convt_dims_of(y);                            \
        const TX *xd = (const TX *)x->data;                                                                     \
        const TW *wd = (const TW *)w->data;                                                                     \
        const int32_t ocpg = Y.c / p->group, cipg = W.n / p->group;                                             \
        for (int32_t n = 0; n < Y.n; n++) {                                                                     \
            for (int32_t oc = 0; oc < Y.c; oc++) {                                                              \
                const int32_t g = oc / ocpg;                                                                    \
                const TX *xg = xd + n * X.sn + g * cipg * X.sc;                                                 \
                const TW *wo = wd + g * cipg * W.sn + (oc % ocpg) * W.sc;                                       \
                for (int32_t oh = 0; oh < Y.h; oh++) {                                                          \
                    for (int32_t ow = 0; ow < Y.w; ow++) {                                                      \
                        INIT;                                                                                   \
                        for (int32_t kh = 0; kh < W.h; kh++) {                                                  \
                            const int32_t ih = convt_source(oh, kh, p->stride[0], p->dilation[0], p->pad[0], X.h); \
                            if (ih < 0) {                                                                       \
                                continue;                                                                       \
                            }                                                                                   \
                            for (int32_t kw = 0; kw < W.w; kw++) {                                              \
                                const int32_t iw = convt_source(ow, kw, p->stride[1], p->dilation[1], p->pad[1], \
                                                                X.w);                                           \
                                if (iw < 0) {                                                                   \
                                    continue;                                                                   \
                                }                                                                               \
                                const TX *xp = xg + ih * X.sh + iw * X.sw;                                      \
                                const TW *wp = wo + kh * W.sh + kw * W.sw;                                      \
                                for (int32_t ic = 0; ic < cipg; ic++) {                                         \
                                    ACC;                                                                        \
                                }                                                                               \
                            }                                                                                   \
                        }                                                                                       \
                        OUT;                                                                                    \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    } while (0)

#define CONVT_Y(T) ((T *)y->data)[n * Y.sn + oc * Y.sc + oh * Y.sh + ow * Y.sw]

void mcud_conv_transpose_f32(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                             const mcud_conv_transpose_f32_params *p)
{
    const float *bd = b != NULL ? (const float *)b->data : NULL;
    CONVT_LOOPS(float, float, float acc = bd != NULL ? bd[oc * b->stride[0]] : 0.0f,
                acc += xp[ic * X.sc] * wp[ic * W.sn],
                CONVT_Y(float) = mcud_clampf(acc, p->act_min, p->act_max));
}

void mcud_conv_transpose_s8_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                const mcud_conv_transpose_q_params *p)
{
    const int32_t *bd = b != NULL ? (const int32_t *)b->data : NULL;
    const int32_t zx = p->in_zero_point;
    CONVT_LOOPS(int8_t, int8_t, uint32_t acc = bd != NULL ? (uint32_t)bd[oc * b->stride[0]] : 0u,
                acc += (uint32_t)(((int32_t)xp[ic * X.sc] - zx) * (int32_t)wp[ic * W.sn]),
                CONVT_Y(int8_t) = (int8_t)mcud_clamp(mcud_requant_tfl((int32_t)acc, p->mult[oc], p->shift[oc])
                                                     + p->out_zero_point, p->act_min, p->act_max));
}

void mcud_conv_transpose_s16(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                             const mcud_conv_transpose_q_params *p)
{
    const int64_t *bd = b != NULL ? (const int64_t *)b->data : NULL;
    CONVT_LOOPS(int16_t, int8_t, int64_t acc = bd != NULL ? bd[oc * b->stride[0]] : 0,
                acc += (int32_t)xp[ic * X.sc] * (int32_t)wp[ic * W.sn],
                CONVT_Y(int16_t) = (int16_t)mcud_clamp(mcud_requant_tfl64(acc, p->mult[oc], p->shift[oc]),
                                                       p->act_min, p->act_max));
}
