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
} mcud_conv_s8_params;

void mcud_conv_f32(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                   const mcud_conv_f32_params *p);
void mcud_conv_s8(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                  const mcud_conv_s8_params *p);
void mcud_conv_s8_tfl(const mcud_view *x, const mcud_view *w, const mcud_view *b, const mcud_view *y,
                      const mcud_conv_s8_params *p);

#endif
