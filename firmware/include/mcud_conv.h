#ifndef MCUD_CONV_H
#define MCUD_CONV_H
#include "mcud.h"

/* Conv over NCHW views: x (N, C, H, W), w (OC, C/group, KH, KW), optional bias (OC), y (N, OC, OH, OW).
 * A 1-D convolution passes rank-3 views (N, C, W) and reads as H = 1 (stride, dilation and pad
 * along H are then 1, 1 and 0). Only the begin padding is given: the output view's extent fixes
 * how far the windows reach, and any input position outside the x view reads as padding. */
typedef struct {
    int32_t group;
    int32_t stride[2];   /* along H, W */
    int32_t dilation[2]; /* along H, W */
    int32_t pad[2];      /* begin padding along H, W */
    float act_min;       /* fused Relu/Clip (+-FLT_MAX when none) */
    float act_max;
} mcud_conv_f32_params;

typedef struct {
    int32_t group;
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    int32_t in_zero_point;  /* padded positions hold it, so they add 0 */
    int32_t out_zero_point;
    int32_t act_min;        /* output range after a fused Relu/Clip */
    int32_t act_max;
    const int32_t *mult;    /* per output channel: requantize s_x * s_w[c] / s_y */
    const int32_t *shift;
    const int32_t *dw;      /* depthwise fast path: per channel MCUD_DW_FIELDS precomputed values
                               (mcud_conv_dw.h), or NULL: the kernel works them out from w and b */
    const int32_t *dead;    /* depthwise fast path: the channels (ascending) of one value (weights 0, or an input
                               that is the zero point at every pixel), written as dead_y without being read; dead_n */
    const int8_t *dead_y;
    int32_t dead_n;
} mcud_conv_s8_params;

/* 16x8, as TFLite's: int16 x and y with zero point 0, int8 w, a bias of the
 * accumulator's type (int64_t when acc64, else int32_t). acc64: the sum is exact in int64 and requantized
 * by mcud_requant_tfl64 with the reduced multipliers; else it wraps in 32 bits, as TFLite Micro's int32
 * sum does, and takes mcud_requant_tfl. */
typedef struct {
    int32_t group;
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    int32_t acc64;
    int32_t act_min;
    int32_t act_max;
    const int32_t *mult;  /* per output channel; acc64: (mult16, shift16) of requant.tflite_reduced */
    const int32_t *shift;
} mcud_conv_s16_params;

/* mcud_conv_s16 with working memory, for the Cortex-M DSP instructions: each output pixel's receptive field
 * is copied into the scratch as a column of kpad int16 (int16_t[kpad], word aligned), which every output
 * channel of its group meets in dual multiply-accumulates (SMLALD, or SMLAD for an int32 sum). The weights
 * come packed, not through w: per output channel its cin_per_group x KH x KW taps in the weights' order,
 * zeros up to kpad (a multiple of 4), each four bytes as (k0, k2, k1, k3). */
typedef struct {
    int32_t group;
    int32_t kernel[2];
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    int32_t kpad;
    int32_t acc64;
    int32_t act_min;
    int32_t act_max;
    const int32_t *mult;
    const int32_t *shift;
    const int8_t *w;
    /* acc64: per output channel 0, or the multiplier scaled for SMMLAR, mult 2^(32 - shift), where the channel's
     * products and bias sum within int32 and its shift is 16 to 32 (mcudeploy/ops/conv.py _smmlar_multipliers);
     * NULL: none */
    const int32_t *m32;
} mcud_conv_s16_fast_params;

/* mcud_conv_s16 for a pointwise convolution (1x1, stride 1, no padding, one group), without working memory: in
 * NCHW its input channels are rows of pixels, so two pixels of a row are one word of each channel, and the pairs
 * of channels a dual multiply-accumulate takes are made from two such words (PKHBT, PKHTB). The weights come
 * packed per pair of output channels (oc, oc + 1; a last odd one with zeros): for each input channel the pair's
 * two weights, up to kpad channels (cin rounded up to even, the last with zeros), so a pair's weights are 2 kpad
 * bytes and output channel oc's start at oc kpad; an odd last input channel is summed alone. */
typedef struct {
    int32_t kpad;
    int32_t acc64;
    int32_t act_min;
    int32_t act_max;
    const int32_t *mult;
    const int32_t *shift;
    const int8_t *w;
} mcud_conv_s16_pw_params;

/* mcud_conv_s16 where every group reads one input channel (a depthwise convolution, any multiplier):
 * output channel oc reads input channel oc / multiplier, the weights widened to int16 in w (per output
 * channel KH rows of kw2 values: KW rounded up to even, a 0 after an odd row), not through the w view. */
typedef struct {
    int32_t multiplier;
    int32_t kernel[2];
    int32_t kw2;
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    int32_t acc64;
    int32_t act_min;
    int32_t act_max;
    const int32_t *mult;
    const int32_t *shift;
    const int16_t *w;
} mcud_conv_s16_dw_params;

/* ConvTranspose (firmware/kernels/conv_transpose.c) over NCHW views: x (N, C_in, H, W), w (C_in, C_out/group,
 * KH, KW), optional bias (C_out), y (N, C_out, OH, OW); rank-3 views (N, C, W) read as H = 1. Input pixel i
 * meets tap k at output pixel i * stride + k * dilation - pad; the output view's extent fixes the rest.
 * Each output pixel gathers the taps that reach it. */
typedef struct {
    int32_t group;
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    float act_min;
    float act_max;
} mcud_conv_transpose_f32_params;

/* int8 (TFLite's rounding; bias int32, an int32 sum wrapping as TFLite Micro's) and 16x8 (zero points 0,
 * bias int64, an int64 sum, mcud_requant_tfl64 with the reduced multipliers) */
typedef struct {
    int32_t group;
    int32_t stride[2];
    int32_t dilation[2];
    int32_t pad[2];
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t act_min;
    int32_t act_max;
    const int32_t *mult;  /* per output channel */
    const int32_t *shift;
} mcud_conv_transpose_q_params;

void mcud_conv_f32(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                   const mcud_conv_f32_params *p);
void mcud_conv_s8(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                  const mcud_conv_s8_params *p);
void mcud_conv_s8_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s8_params *p);

void mcud_conv_s16(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                   const mcud_conv_s16_params *p);
void mcud_conv_s16_fast(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                        const mcud_conv_s16_fast_params *p, void *scratch);
void mcud_conv_s16_pw(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s16_pw_params *p);
void mcud_conv_s16_dw(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s16_dw_params *p);
void mcud_conv_transpose_f32(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                             const mcud_conv_transpose_f32_params *p);
void mcud_conv_transpose_s8_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                                const mcud_conv_transpose_q_params *p);
void mcud_conv_transpose_s16(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                             const mcud_conv_transpose_q_params *p);

#endif
