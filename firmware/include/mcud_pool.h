#ifndef MCUD_POOL_H
#define MCUD_POOL_H
#include "mcud.h"

/* Views are NCHW (ndim 4) or NCL (ndim 3, pooled as H = 1). Geometry fields are (H, W). */
typedef struct {
    int32_t kernel[2];
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad_begin[2];
    float clip_min;           /* float: fused activation range */
    float clip_max;
    int32_t in_zero_point;    /* int8 */
    int32_t out_zero_point;
    int32_t act_min;          /* int8: output range after a fused activation */
    int32_t act_max;
    int32_t requant;          /* int8: 0 when input and output quantization agree (plain max) */
    int32_t mult;
    int32_t shift;
} mcud_maxpool_params;

typedef struct {
    int32_t kernel[2];
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad_begin[2];
    int32_t pad_end[2];
    int32_t count_include_pad; /* divisor counts positions in [-pad_begin, in + pad_end) */
    float clip_min;
    float clip_max;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    float in_scale;           /* int8: the QDQ definition in float32, see ops/pool.py */
    float out_scale;
} mcud_avgpool_params;

/* TFLite models' int8 and int16 average (input and output share their quantization): the codes summed over
 * the window's positions inside the input, divided by their count rounding half away from zero. */
typedef struct {
    int32_t kernel[2];
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad_begin[2];
    int32_t pad_end[2];
    int32_t act_min;
    int32_t act_max;
} mcud_avgpool_tfl_params;

/* An average of whole maps cut along its rows (mcudeploy/ops/accumulate.py): each piece adds its
 * rows to the running sum per (n, c) (before is NULL for the first piece), row-major, in the
 * whole average's order; the finish divides by the count and quantizes as mcud_avgpool_* do. */
typedef struct {
    int32_t in_zero_point;    /* int8 */
    float in_scale;           /* QDQ int8: taps dequantized one by one */
} mcud_avgpool_sum_params;

typedef struct {
    int32_t count;            /* positions of one map */
    int32_t out_zero_point;
    float out_scale;
    int32_t act_min;
    int32_t act_max;
    float clip_min;
    float clip_max;
} mcud_avgpool_finish_params;

void mcud_maxpool_f32(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p);
void mcud_maxpool_s8(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p);
void mcud_maxpool_s16(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p);
void mcud_avgpool_f32(const mcud_view *x, const mcud_view *y, const mcud_avgpool_params *p);
void mcud_avgpool_s8(const mcud_view *x, const mcud_view *y, const mcud_avgpool_params *p);
void mcud_avgpool_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_avgpool_tfl_params *p);
void mcud_avgpool_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_avgpool_tfl_params *p);
void mcud_avgpool_sum_f32(const mcud_view *x, const mcud_view *before, const mcud_view *sum,
                          const mcud_avgpool_sum_params *p);
void mcud_avgpool_sum_s8(const mcud_view *x, const mcud_view *before, const mcud_view *sum,
                         const mcud_avgpool_sum_params *p);
void mcud_avgpool_sum_s8_tfl(const mcud_view *x, const mcud_view *before, const mcud_view *sum,
                             const mcud_avgpool_sum_params *p);
void mcud_avgpool_sum_s16_tfl(const mcud_view *x, const mcud_view *before, const mcud_view *sum,
                              const mcud_avgpool_sum_params *p);
void mcud_avgpool_finish_f32(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p);
void mcud_avgpool_finish_s8(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p);
void mcud_avgpool_finish_s8_tfl(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p);
void mcud_avgpool_finish_s16_tfl(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p);

#endif
