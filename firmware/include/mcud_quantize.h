#ifndef MCUD_QUANTIZE_H
#define MCUD_QUANTIZE_H
#include "mcud.h"

typedef struct {
    const float *scale;       /* one per channel (channels == 1: per tensor) */
    const int32_t *zero_point;
    int32_t channels;         /* extent of the quantization axis, or 1 */
    int32_t inner;            /* elements after the axis in row-major order */
} mcud_qdq_params;

void mcud_quantize_s8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_u8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_s16(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_u8_tfl(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_s8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_u8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_s16(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_s32(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);

/* TFLite's QUANTIZE of an integer tensor: y = clamp(out_zp + mcud_requant_tfl(x - in_zp, mult, shift)),
 * the range of y's type (reference/requantize.h). */
typedef struct {
    int32_t in_zp, out_zp;
    int32_t mult, shift;
} mcud_requantize_params;

#define MCUD_DECLARE_REQUANTIZE(IN, OUT) \
    void mcud_requantize_##IN##_##OUT(const mcud_view *x, const mcud_view *y, const mcud_requantize_params *p);

MCUD_DECLARE_REQUANTIZE(s8, s8)
MCUD_DECLARE_REQUANTIZE(s8, s16)
MCUD_DECLARE_REQUANTIZE(s8, s32)
MCUD_DECLARE_REQUANTIZE(s16, s8)
MCUD_DECLARE_REQUANTIZE(s16, s16)
MCUD_DECLARE_REQUANTIZE(s16, s32)
MCUD_DECLARE_REQUANTIZE(s32, s8)
MCUD_DECLARE_REQUANTIZE(s32, s16)
MCUD_DECLARE_REQUANTIZE(s8, u8)
MCUD_DECLARE_REQUANTIZE(u8, s8)

#endif
