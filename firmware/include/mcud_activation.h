#ifndef MCUD_ACTIVATION_H
#define MCUD_ACTIVATION_H
#include "mcud.h"

/* Unary activations on views of the same shape (y may be x: every element is read before it
 * is written). float32 kernels compute with math.h; int8/uint8 share one lookup table. */

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

void mcud_lut_s8(const mcud_view *x, const mcud_view *y, const mcud_lut_s8_params *p);
void mcud_lut_u8(const mcud_view *x, const mcud_view *y, const mcud_lut_u8_params *p);

#endif
