#ifndef MCUD_VARIADIC_H
#define MCUD_VARIADIC_H
#include "mcud.h"

/* Sum, Mean, Max and Min of any number of inputs xs[0 .. n-1], each broadcasting to y (numpy rules).
 * See mcudeploy/ops/variadic.py for the arithmetic, which the numpy reference mirrors. */
#define MCUD_VARIADIC_SUM 0
#define MCUD_VARIADIC_MAX 1
#define MCUD_VARIADIC_MIN 2
#define MCUD_VARIADIC_CHUNK 32 /* output elements folded at once (the accumulator on the stack) */

typedef struct {
    int32_t op;      /* MCUD_VARIADIC_* */
    int32_t mean;    /* divide the sum by n */
    float act_min;
    float act_max;
} mcud_variadic_f32_params;

/* int8: term_i = (x_i - zero[i]) * mult[i] (64-bit); Sum folds by +, Max/Min keep the extreme term;
 * y = clamp(acc / 2^shift rounded half to even + y_zero). */
typedef struct {
    int32_t op;
    const int32_t *zero;
    const int32_t *mult;
    int32_t shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
} mcud_variadic_s8_params;

/* Integers without quantization: Max and Min. */
typedef struct {
    int32_t op;
} mcud_variadic_int_params;

/* A TFLite model's int8 ADD_N (mcudeploy/ops/variadic.py): acc = base + sum_i requant((x_i - zero) << 20,
 * mult, shift) in 32 bits, y = clamp(requant(acc, y_mult, y_shift) + y_zero); TFLite's requantization. */
typedef struct {
    int32_t zero, mult, shift, base;
    int32_t y_zero, y_mult, y_shift;
} mcud_add_n_s8_tfl_params;

void mcud_add_n_s8_tfl(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_add_n_s8_tfl_params *p);
void mcud_variadic_f32(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_f32_params *p);
void mcud_variadic_s8(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_s8_params *p);
void mcud_variadic_int8(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p);
void mcud_variadic_uint8(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p);
void mcud_variadic_int16(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p);
void mcud_variadic_int32(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p);
void mcud_variadic_int64(const mcud_view *const *xs, int32_t n, const mcud_view *y, const mcud_variadic_int_params *p);

#endif
