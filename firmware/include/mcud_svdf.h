#ifndef MCUD_SVDF_H
#define MCUD_SVDF_H
#include "mcud.h"

/* SVDF as TensorFlow Lite Micro computes it (kernels/svdf_common.cc; mcudeploy/ops/svdf.py gives the arithmetic,
 * which its numpy reference mirrors).
 *
 * Views: x [B, I]; wf [F, I] and wt [F, M], dense constants; bias [F / rank] (NULL: none); state [B, F x M], per
 * batch row F rows of M columns, the oldest first; y [B, F / rank]; next [B, F x M], the state after the call,
 * which may be the state's own buffer (each row moves one column left, the new column last). */
typedef struct {
    int32_t rank;
    int32_t clip_low, clip_high; /* the fused activation: y clamped below by low, above by high where set */
    float low, high;
    int32_t function; /* then, as TensorFlow Lite Micro's ActivationValFloat: 1 tanhf, 2 the sign bit (1.0 or 0.0) */
} mcud_svdf_f32_params;

/* int8 x, feature weights and y, int32 bias; int16 (mcud_svdf_s8_s16) or int8 (mcud_svdf_s8_s8) time weights and
 * state. (mult1, shift1) takes the feature dot product to the state, (mult2, shift2) the unit's sum to y, both
 * mcud_requant_tfl's. */
typedef struct {
    int32_t rank;
    int32_t x_zero, state_zero, y_zero;
    int32_t mult1, shift1, mult2, shift2;
} mcud_svdf_q_params;

void mcud_svdf_f32(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                   const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_f32_params *p);
void mcud_svdf_s8_s16(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                      const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_q_params *p);
void mcud_svdf_s8_s8(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                     const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_q_params *p);

#endif
