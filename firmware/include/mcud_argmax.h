#ifndef MCUD_ARGMAX_H
#define MCUD_ARGMAX_H
#include "mcud.h"

/* ArgMax, ArgMin along dimension `axis` of x; y has x's other dimensions and holds the index of the
 * first extreme (a strictly better element replaces the one kept), int32 or, when wide, int64.
 * See mcudeploy/ops/argmax.py. */
typedef struct {
    int32_t axis;
    int32_t wide;
} mcud_arg_params;

void mcud_argmax_f32(const mcud_view *x, const mcud_view *y, const mcud_arg_params *p);
void mcud_argmin_f32(const mcud_view *x, const mcud_view *y, const mcud_arg_params *p);
void mcud_argmax_s8(const mcud_view *x, const mcud_view *y, const mcud_arg_params *p);
void mcud_argmin_s8(const mcud_view *x, const mcud_view *y, const mcud_arg_params *p);

#endif
