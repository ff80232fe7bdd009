#ifndef MCUD_LOGICAL_H
#define MCUD_LOGICAL_H
#include "mcud.h"

/* TFLite's LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT on bools (a byte, 0 or 1) and SELECT_V2, with numpy
 * broadcasting (mcudeploy/ops/logical.py). */
#define MCUD_LOGICAL_AND 0
#define MCUD_LOGICAL_OR 1

typedef struct {
    int32_t op; /* MCUD_LOGICAL_* */
} mcud_logical_params;

void mcud_logical(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_logical_params *p);
void mcud_logical_not(const mcud_view *x, const mcud_view *y);

/* y = cond ? x : y_else, elements of 8, 16, 32 or 64 bits copied as they are. */
void mcud_where_8(const mcud_view *cond, const mcud_view *x, const mcud_view *x_else, const mcud_view *y);
void mcud_where_16(const mcud_view *cond, const mcud_view *x, const mcud_view *x_else, const mcud_view *y);
void mcud_where_32(const mcud_view *cond, const mcud_view *x, const mcud_view *x_else, const mcud_view *y);
void mcud_where_64(const mcud_view *cond, const mcud_view *x, const mcud_view *x_else, const mcud_view *y);

#endif
