#ifndef MCUD_PAD_H
#define MCUD_PAD_H
#include "mcud.h"

#define MCUD_PAD_CONSTANT 0
#define MCUD_PAD_REFLECT 1
#define MCUD_PAD_EDGE 2
#define MCUD_PAD_WRAP 3
#define MCUD_PAD_SYMMETRIC 4 /* reflect, the edge repeated (TFLite's MIRROR_PAD SYMMETRIC) */

/* Output coordinate o of dim d reads input coordinate o - pad_begin[d], mapped by the mode
 * (negative pads crop). Input and output views have the same ndim. */
typedef struct {
    int32_t pad_begin[MCUD_MAX_DIMS];
    int32_t mode;
    float value;    /* float32: constant pad value */
    int32_t ivalue; /* integers: the pad value (int8 of an ONNX model: quantized with the input's parameters) */
} mcud_pad_params;

void mcud_pad_f32(const mcud_view *x, const mcud_view *y, const mcud_pad_params *p);
void mcud_pad_s8(const mcud_view *x, const mcud_view *y, const mcud_pad_params *p);
void mcud_pad_s16(const mcud_view *x, const mcud_view *y, const mcud_pad_params *p);
void mcud_pad_s32(const mcud_view *x, const mcud_view *y, const mcud_pad_params *p);

#endif
