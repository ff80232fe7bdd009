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
void mcud_quantize_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_quantize_u8_tfl(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_s8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_u8(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);
void mcud_dequantize_s32(const mcud_view *x, const mcud_view *y, const mcud_qdq_params *p);

#endif
