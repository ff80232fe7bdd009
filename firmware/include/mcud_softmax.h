#ifndef MCUD_SOFTMAX_H
#define MCUD_SOFTMAX_H
#include "mcud.h"

/* Softmax and LogSoftmax over the dimensions [axis, axis_end) of views x and y of the same shape (y may be x).
 * The quantized kernels are integer-exact; see mcudeploy/ops/softmax.py for the arithmetic. */

typedef struct {
    int32_t axis;
    int32_t axis_end;
    float beta; /* mcud_softmax_f32: exp((x - max) * beta), as TFLite's float kernel (1 for ONNX); LogSoftmax: unused */
} mcud_softmax_params;

typedef struct {
    int32_t axis;
    int32_t axis_end;
    const int32_t *exp_table; /* 256 entries: round(exp(-s_x * d) * 2^24) */
    int32_t inv_out_scale;    /* round(2^16 / s_y) */
    int32_t out_zero_point;
    int32_t out_min;
    int32_t out_max;
} mcud_softmax_q_params;

/* TFLite models' int8 softmax (output scale 1/256, zero point -128), as TFLite's reference kernel:
 * exp of each difference from the row's max in Q0.31 and its Q12.19 share of the sum come from two
 * tables of 256 (mcudeploy/ops/softmax.py); per row, gemmlowp's fixed-point reciprocal of the sum. */
typedef struct {
    int32_t axis;
    int32_t axis_end;
    const int32_t *exp_q31; /* indexed by max - x */
    const int32_t *exp_q19;
} mcud_softmax_tfl_params;

/* TFLite models' int8 LogSoftmax (output scale 16/256, zero point 127), as TFLite's LogSoftmaxQuantized:
 * the difference from the row's max rescaled to Q5.26 and its exp in Q12.19 from two tables of 256
 * (mcudeploy/ops/softmax.py); per row, gemmlowp's fixed-point log of the sum. */
typedef struct {
    int32_t axis;
    int32_t axis_end;
    const int32_t *q5;      /* indexed by max - x */
    const int32_t *exp_q12; /* 0 where the difference is below diff_min */
    int32_t diff_min;
    int32_t reverse_mult; /* the floor of the differences: Q5.26's least value plus the log, rescaled back */
    int32_t reverse_shift;
} mcud_log_softmax_tfl_params;

/* TFLite models' int16 softmax (zero points 0, output scale 2^-15): differences rescaled by
 * mult / 2^shift (TFLite's double rounding) into an interpolated exp table; the sum's reciprocal from a
 * second table. */
typedef struct {
    int32_t axis;
    int32_t axis_end;
    int32_t mult;
    int32_t shift;
} mcud_softmax_s16_params;

void mcud_softmax_f32(const mcud_view *x, const mcud_view *y, const mcud_softmax_params *p);
void mcud_softmax_s8(const mcud_view *x, const mcud_view *y, const mcud_softmax_q_params *p);
void mcud_softmax_u8(const mcud_view *x, const mcud_view *y, const mcud_softmax_q_params *p);
void mcud_softmax_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_softmax_tfl_params *p);
/* the same kernel with an int16 output (scale 1/65536, zero point -32768) */
void mcud_softmax_s8_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_softmax_tfl_params *p);
void mcud_softmax_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_softmax_s16_params *p);
void mcud_log_softmax_f32(const mcud_view *x, const mcud_view *y, const mcud_softmax_params *p);
void mcud_log_softmax_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_log_softmax_tfl_params *p);

#endif
