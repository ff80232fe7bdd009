#ifndef MCUD_ACTIVATION_H
#define MCUD_ACTIVATION_H
#include "mcud.h"

/* Unary activations and math functions on views of the same shape (y may be x: every element is read
 * before it is written). float32 kernels compute with math.h; int8/uint8 share one lookup table; TFLite's
 * int16 activations compute its arithmetic per element. */

typedef struct {
    float alpha; /* Clip: min; LeakyRelu, HardSigmoid, Swish: alpha */
    float beta;  /* Clip: max; HardSigmoid: beta */
} mcud_act_params;

typedef struct {
    const int8_t *table; /* 256 output codes, indexed by input code + 128 */
} mcud_lut_s8_params;

typedef struct {
    const uint8_t *table; /* 256 output codes, indexed by input code */
} mcud_lut_u8_params;

/* TFLite's int16 RELU, RELU6, LEAKY_RELU, ABS: y = clamp(out_zero_point + M(x - in_zero_point)), M being
 * mcud_requant_tfl with (pos_mult, pos_shift) at and above the zero point, (neg_mult, neg_shift) below */
typedef struct {
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t pos_mult;
    int32_t pos_shift;
    int32_t neg_mult; /* negative: the result negated (LEAKY_RELU's negative alpha, ABS) */
    int32_t neg_shift;
    int32_t out_min;
    int32_t out_max;
} mcud_piecewise_s16_params;

/* TFLite's int16 LOGISTIC and TANH (zero points 0, output scale 2^-15): the input taken to the sigmoid
 * table's scale by (x * mult + 2^(shift-1)) >> shift */
typedef struct {
    int32_t mult;
    int32_t shift;
} mcud_sigmoid_s16_params;

void mcud_relu_f32(const mcud_view *x, const mcud_view *y);
void mcud_clip_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p);
void mcud_leaky_relu_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p);
void mcud_sigmoid_f32(const mcud_view *x, const mcud_view *y);
void mcud_tanh_f32(const mcud_view *x, const mcud_view *y);
void mcud_hard_sigmoid_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p);
void mcud_hard_swish_f32(const mcud_view *x, const mcud_view *y);
void mcud_erf_f32(const mcud_view *x, const mcud_view *y);
void mcud_gelu_f32(const mcud_view *x, const mcud_view *y);      /* 0.5 x (1 + erf(x / sqrt 2)) */
void mcud_gelu_tanh_f32(const mcud_view *x, const mcud_view *y); /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
void mcud_sqrt_f32(const mcud_view *x, const mcud_view *y);
void mcud_swish_f32(const mcud_view *x, const mcud_view *y, const mcud_act_params *p);

void mcud_elu_f32(const mcud_view *x, const mcud_view *y); /* expm1 below 0 */
void mcud_abs_f32(const mcud_view *x, const mcud_view *y);
void mcud_neg_f32(const mcud_view *x, const mcud_view *y);
void mcud_exp_f32(const mcud_view *x, const mcud_view *y);
void mcud_log_f32(const mcud_view *x, const mcud_view *y);
void mcud_sin_f32(const mcud_view *x, const mcud_view *y);
void mcud_cos_f32(const mcud_view *x, const mcud_view *y);
void mcud_floor_f32(const mcud_view *x, const mcud_view *y);
void mcud_ceil_f32(const mcud_view *x, const mcud_view *y);
void mcud_round_f32(const mcud_view *x, const mcud_view *y); /* half to even */
void mcud_square_f32(const mcud_view *x, const mcud_view *y);
void mcud_rsqrt_f32(const mcud_view *x, const mcud_view *y);

void mcud_lut_s8(const mcud_view *x, const mcud_view *y, const mcud_lut_s8_params *p);
void mcud_lut_u8(const mcud_view *x, const mcud_view *y, const mcud_lut_u8_params *p);

void mcud_piecewise_s16(const mcud_view *x, const mcud_view *y, const mcud_piecewise_s16_params *p);
void mcud_sigmoid_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_sigmoid_s16_params *p);
void mcud_tanh_s16_tfl(const mcud_view *x, const mcud_view *y, const mcud_sigmoid_s16_params *p);

#endif
