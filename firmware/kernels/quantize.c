/* QuantizeLinear / DequantizeLinear on views, per tensor or per axis. Rounding is to nearest
 * even (lrintf in the default rounding mode), as numpy's rint in the reference; the _tfl kernels
 * (TFLite models) round half away from zero (lroundf), as TFLite's QUANTIZE. */
#include <math.h>

#include "mcud_quantize.h"

static int32_t channel_of(const mcud_qdq_params *p, int32_t flat)
{
    return p->channels == 1 ? 0 : (flat / p->inner) % p->channels;
}

#define QUANTIZE(NAME, T, LO, HI, ROUND)                                                   \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p)            \
    {                                                                                      \
        const float *xd = (const float *)x->data;                                          \
        T *yd = (T *)y->data;                                                              \
        int32_t n = mcud_numel(y);                                                         \
        for (int32_t i = 0; i < n; i++) {                                                  \
            int32_t c = channel_of(p, i);                                                  \
            float v = xd[mcud_bcast_offset(x, y->shape, y->ndim, i)] / p->scale[c];        \
            int32_t q = (int32_t)ROUND(v) + p->zero_point[c];                              \
            yd[mcud_bcast_offset(y, y->shape, y->ndim, i)] = (T)mcud_clamp(q, LO, HI);     \
        }                                                                                  \
    }

#define DEQUANTIZE(NAME, T)                                                                \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p)            \
    {                                                                                      \
        const T *xd = (const T *)x->data;                                                  \
        float *yd = (float *)y->data;                                                      \
        int32_t n = mcud_numel(y);                                                         \
        for (int32_t i = 0; i < n; i++) {                                                  \
            int32_t c = channel_of(p, i);                                                  \
            int32_t q = (int32_t)xd[mcud_bcast_offset(x, y->shape, y->ndim, i)];           \
            yd[mcud_bcast_offset(y, y->shape, y->ndim, i)] =                               \
                (float)(q - p->zero_point[c]) * p->scale[c];                               \
        }                                                                                  \
    }

QUANTIZE(mcud_quantize_s8, int8_t, -128, 127, lrintf)
QUANTIZE(mcud_quantize_u8, uint8_t, 0, 255, lrintf)
QUANTIZE(mcud_quantize_s16, int16_t, -32768, 32767, lrintf)
/* TFLite models: TfLiteRound, half away from zero */
QUANTIZE(mcud_quantize_s8_tfl, int8_t, -128, 127, lroundf)
QUANTIZE(mcud_quantize_u8_tfl, uint8_t, 0, 255, lroundf)
QUANTIZE(mcud_quantize_s16_tfl, int16_t, -32768, 32767, lroundf)
DEQUANTIZE(mcud_dequantize_s8, int8_t)
DEQUANTIZE(mcud_dequantize_u8, uint8_t)
DEQUANTIZE(mcud_dequantize_s16, int16_t)
DEQUANTIZE(mcud_dequantize_s32, int32_t)

/* Element by element in row-major order of y; in place (x and y one view) reads each element before
 * writing it. */
#define REQUANTIZE(IN, OUT, TI, TO, LO, HI)                                                      \
    void mcud_requantize_##IN##_##OUT(const mcud_view *x, const mcud_view *y, const mcud_requantize_params *p) \
    {                                                                                            \
        const TI *xd = (const TI *)x->data;                                                      \
        TO *yd = (TO *)y->data;                                                                  \
        int32_t n = mcud_numel(y);                                                               \
        int dense = mcud_is_contiguous(x) && mcud_is_contiguous(y);                              \
        for (int32_t i = 0; i < n; i++) {                                                        \
            int32_t xo = dense ? i : mcud_bcast_offset(x, y->shape, y->ndim, i);                 \
            int32_t yo = dense ? i : mcud_bcast_offset(y, y->shape, y->ndim, i);                 \
            int32_t v = mcud_requant_tfl((int32_t)xd[xo] - p->in_zp, p->mult, p->shift) + p->out_zp; \
            yd[yo] = (TO)mcud_clamp(v, LO, HI);                                                  \
        }                                                                                        \
    }

REQUANTIZE(s8, s8, int8_t, int8_t, -128, 127)
REQUANTIZE(s8, s16, int8_t, int16_t, -32768, 32767)
REQUANTIZE(s8, s32, int8_t, int32_t, INT32_MIN, INT32_MAX)
REQUANTIZE(s16, s8, int16_t, int8_t, -128, 127)
REQUANTIZE(s16, s16, int16_t, int16_t, -32768, 32767)
REQUANTIZE(s16, s32, int16_t, int32_t, INT32_MIN, INT32_MAX)
REQUANTIZE(s32, s8, int32_t, int8_t, -128, 127)
REQUANTIZE(s32, s16, int32_t, int16_t, -32768, 32767)
REQUANTIZE(s8, u8, int8_t, uint8_t, 0, 255)
REQUANTIZE(u8, s8, uint8_t, int8_t, -128, 127)
