#ifndef MCUD_RESIZE_H
#define MCUD_RESIZE_H
#include "mcud.h"

/* Resize of the last two dims (H, W) of views of ndim 2 to 4; leading dims are copied through.
 * All geometry is in the tables, indexed by output row (h_*) and output column (w_*). */
typedef struct {
    const int32_t *h_index;   /* source row of each output row */
    const int32_t *w_index;   /* source column of each output column */
    int32_t requant;          /* int8: 0 copies; 1 requantizes (x - zx) by mult/shift, adds zy */
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t mult;
    int32_t shift;
} mcud_resize_nearest_params;

typedef struct {
    const int32_t *h_index;   /* per output row: the two source rows */
    const int32_t *w_index;   /* per output column: the two source columns */
    const float *h_weight;    /* per output row: the weights of the two rows */
    const float *w_weight;
} mcud_resize_linear_f32_params;

typedef struct {
    const int32_t *h_index;
    const int32_t *w_index;
    const int16_t *h_weight;  /* Q11 pairs summing to 2048 */
    const int16_t *w_weight;
    int32_t in_zero_point;
    int32_t out_zero_point;
    int32_t mult;             /* ~ s_x / (s_y * 2^22) */
    int32_t shift;
} mcud_resize_linear_s8_params;

/* A TFLite model's int8 bilinear (ResizeBilinearInteger): weights in 1/1024, a pair per output row and
 * column (the first may exceed 1024 and the second be negative at a half-pixel edge; they sum to 1024). */
typedef struct {
    const int32_t *h_index;
    const int32_t *w_index;
    const int16_t *h_weight;
    const int16_t *w_weight;
} mcud_resize_linear_tfl_params;

void mcud_resize_nearest_f32(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p);
void mcud_resize_nearest_s8(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p);
void mcud_resize_nearest_s16(const mcud_view *x, const mcud_view *y, const mcud_resize_nearest_params *p);
void mcud_resize_linear_f32(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_f32_params *p);
void mcud_resize_linear_s8(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_s8_params *p);
void mcud_resize_linear_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_resize_linear_tfl_params *p);

#endif
