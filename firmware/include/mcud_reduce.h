#ifndef MCUD_REDUCE_H
#define MCUD_REDUCE_H
#include "mcud.h"

/* ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2 over the input dimensions d with
 * reduced[d] = 1. y has x's rank with those dimensions of extent 1 (keepdims) or lacks them.
 * See mcudeploy/ops/reduce.py for the arithmetic, which the numpy reference mirrors. */
#define MCUD_REDUCE_SUM 0
#define MCUD_REDUCE_MEAN 1
#define MCUD_REDUCE_MAX 2
#define MCUD_REDUCE_MIN 3
#define MCUD_REDUCE_L2 4

typedef struct {
    int32_t op;                      /* MCUD_REDUCE_* */
    int32_t reduced[MCUD_MAX_DIMS];
    int32_t keepdims;
} mcud_reduce_f32_params;

/* int8: Sum/Mean y = mcud_requant(sum (x - in_zero_point), mult, shift) + out_zero_point;
 * Max/Min the extreme code, requantized likewise when requant; L2
 * y = lrintf(sqrtf((float)sum (x - in_zero_point)^2) * ratio) + out_zero_point; clamped. */
typedef struct {
    int32_t op;
    int32_t reduced[MCUD_MAX_DIMS];
    int32_t keepdims;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    int32_t requant;
    int32_t mult;
    int32_t shift;
    float ratio;
} mcud_reduce_s8_params;

/* A TFLite model's int8 and int16 (mcudeploy/ops/reduce.py, TFLite Micro's QuantizedMeanOrSum): Sum/Mean
 * y = mcud_requant_tfl(sum x - in_zero_point * count, mult, shift) + out_zero_point (the sums wrap in
 * 32 bits; Mean's 1/count is folded into mult and shift), clamped; Max/Min the extreme code. */
typedef struct {
    int32_t op;
    int32_t reduced[MCUD_MAX_DIMS];
    int32_t keepdims;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    int32_t mult;
    int32_t shift;
} mcud_reduce_tfl_params;

/* A TFLite model's Sum or Mean cut along its outermost reduced axis (mcudeploy/ops/accumulate.py): each
 * piece adds its rows to the running sum (acc, keepdims shape; before is NULL for the first piece, and
 * may be acc itself), float32 or int32 of the codes (wrapping); the finish turns the last sum into y
 * (y's elements in acc's order): float Mean divides by count, integers requantize as
 * mcud_reduce_s8_tfl does. */
typedef struct {
    int32_t reduced[MCUD_MAX_DIMS];
} mcud_reduce_part_params;

typedef struct {
    int32_t op;                      /* MCUD_REDUCE_SUM or MCUD_REDUCE_MEAN */
    int32_t count;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    int32_t mult;
    int32_t shift;
} mcud_reduce_finish_params;

void mcud_reduce_f32(const mcud_view *x, const mcud_view *y, const mcud_reduce_f32_params *p);
void mcud_reduce_s8(const mcud_view *x, const mcud_view *y, const mcud_reduce_s8_params *p);
void mcud_reduce_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_reduce_tfl_params *p);
void mcud_reduce_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_reduce_tfl_params *p);
void mcud_reduce_part_f32(const mcud_view *x, const mcud_view *before, const mcud_view *acc,
                          const mcud_reduce_part_params *p);
void mcud_reduce_part_s8(const mcud_view *x, const mcud_view *before, const mcud_view *acc,
                         const mcud_reduce_part_params *p);
void mcud_reduce_part_s16(const mcud_view *x, const mcud_view *before, const mcud_view *acc,
                          const mcud_reduce_part_params *p);
void mcud_reduce_finish_f32(const mcud_view *acc, const mcud_view *y, const mcud_reduce_finish_params *p);
void mcud_reduce_finish_s8_tfl(const mcud_view *acc, const mcud_view *y, const mcud_reduce_finish_params *p);
void mcud_reduce_finish_s16_tfl(const mcud_view *acc, const mcud_view *y, const mcud_reduce_finish_params *p);

#endif
