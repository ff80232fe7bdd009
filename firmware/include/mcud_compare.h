#ifndef MCUD_COMPARE_H
#define MCUD_COMPARE_H
#include "mcud.h"

/* TFLite's comparisons (a bool output: 0 or 1 in a uint8_t) and MAXIMUM / MINIMUM, with numpy
 * broadcasting: every input view's shape broadcasts to the output's (mcudeploy/ops/compare.py). */
#define MCUD_EQUAL 0
#define MCUD_NOT_EQUAL 1
#define MCUD_GREATER 2
#define MCUD_GREATER_EQUAL 3
#define MCUD_LESS 4
#define MCUD_LESS_EQUAL 5

typedef struct {
    int32_t op; /* MCUD_EQUAL ... */
} mcud_compare_params;

/* int8: each input's (x - zero) << left_shift requantized by its multiplier (TFLite's), then compared. */
typedef struct {
    int32_t op;
    int32_t a_zero, a_mult, a_shift;
    int32_t b_zero, b_mult, b_shift;
    int32_t left_shift;
} mcud_compare_s8_params;

void mcud_compare_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_params *p);
void mcud_compare_int32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_params *p);
void mcud_compare_int64(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_params *p);
void mcud_compare_bool(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_params *p);
void mcud_compare_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                         const mcud_compare_s8_params *p);

/* MAXIMUM (larger 1) and MINIMUM (larger 0): a > b ? a : b and a < b ? a : b on the stored values. */
typedef struct {
    int32_t larger;
} mcud_extremum_params;

void mcud_extremum_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p);
void mcud_extremum_int8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p);
void mcud_extremum_int16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p);
void mcud_extremum_int32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p);
void mcud_extremum_int64(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p);

#endif
