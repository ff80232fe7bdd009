#ifndef MCUD_BINARY_H
#define MCUD_BINARY_H
#include "mcud.h"

/* Element-wise Add, Sub, Mul, Div, Pow (float only), SquaredDifference, FloorDiv and FloorMod with numpy
 * broadcasting: every input view's shape broadcasts to the output's. */
#define MCUD_SUM_MAX_INPUTS 8

typedef struct {
    float act_min;
    float act_max;
} mcud_binary_f32_params;

/* int8 weighted sum (Add, Sub: two of the slots): acc = sum_i (x_i - zero[i]) * mult[i] in 64 bits,
 * y = clamp(acc / 2^shift rounded half to even + y_zero). Absent inputs are NULL. */
typedef struct {
    int32_t zero[MCUD_SUM_MAX_INPUTS];
    int32_t mult[MCUD_SUM_MAX_INPUTS];
    int32_t shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
} mcud_sum_s8_params;

/* int8 Mul: y = clamp(mcud_requant((a - a_zero) * (b - b_zero), mult, shift) + y_zero). */
typedef struct {
    int32_t a_zero;
    int32_t b_zero;
    int32_t mult;
    int32_t shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
} mcud_mul_s8_params;

void mcud_add_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p);
void mcud_sub_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p);
void mcud_mul_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p);
void mcud_div_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p);
void mcud_pow_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_binary_f32_params *p);
void mcud_sum_s8(const mcud_view *x0, const mcud_view *x1, const mcud_view *x2, const mcud_view *x3,
                 const mcud_view *x4, const mcud_view *x5, const mcud_view *x6, const mcud_view *x7,
                 const mcud_view *y, const mcud_sum_s8_params *p);
void mcud_mul_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p);
void mcud_mul_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p);

/* TFLite models' ADD (sign 1) and SUB (sign -1) of int8 (left_shift 20) and int16 (15), as TFLite
 * computes them (mcudeploy/ops/binary.py): each input less its zero point, times 2^left_shift,
 * requantized by its multiplier; their sum (or difference) requantized by the output's, plus its zero
 * point, clamped. SQUARED_DIFFERENCE takes the same parameters (left_shift 7 or 0, sign unused) and
 * squares the difference before the output's multiplier. */
typedef struct {
    int32_t a_zero, a_mult, a_shift;
    int32_t b_zero, b_mult, b_shift;
    int32_t y_zero, y_mult, y_shift;
    int32_t act_min, act_max;
    int32_t sign;
    int32_t left_shift;
    /* int8 ADD and SUB (or NULL): per input, its scaled value for each code -128..127 (ta: a's, tb: b's times
     * sign, wrapped to int32), so an element takes two table reads and the output's requantization */
    const int32_t *ta;
    const int32_t *tb;
} mcud_add_tfl_params;

void mcud_add_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_add_tfl_params *p);
void mcud_add_s16_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_add_tfl_params *p);
void mcud_squared_difference_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                                    const mcud_add_tfl_params *p);
void mcud_squared_difference_s16_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                                     const mcud_add_tfl_params *p);

/* TFLite's int16 MUL: mcud_mul_s8_params, every zero point 0, TFLite's requantization. */
void mcud_mul_s16_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_mul_s8_params *p);

/* TFLite's int8 DIV: recip[d] is gemmlowp's reciprocal of the divisor d = 0 .. 255 in Q0.31 (computed at
 * compile time); mult and exponent the output multiplier as TFLite's QuantizeMultiplier gives them. */
typedef struct {
    int32_t a_zero, b_zero, y_zero;
    int32_t mult, exponent;
    int32_t act_min, act_max;
    const int32_t *recip;
} mcud_div_s8_tfl_params;

void mcud_div_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_div_s8_tfl_params *p);

/* TFLite's float SQUARED_DIFFERENCE, FLOOR_DIV (floor of the quotient in double) and FLOOR_MOD: no clamp. */
void mcud_squared_difference_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y);
void mcud_floor_div_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y);
void mcud_floor_mod_f32(const mcud_view *a, const mcud_view *b, const mcud_view *y);

/* Integers without quantization: wrap-around arithmetic; Div truncates toward zero, x / 0 = 0. */
#define MCUD_BINARY_INT_DECL(T)                                                       \
    void mcud_add_##T(const mcud_view *a, const mcud_view *b, const mcud_view *y); \
    void mcud_sub_##T(const mcud_view *a, const mcud_view *b, const mcud_view *y); \
    void mcud_mul_##T(const mcud_view *a, const mcud_view *b, const mcud_view *y); \
    void mcud_div_##T(const mcud_view *a, const mcud_view *b, const mcud_view *y);
MCUD_BINARY_INT_DECL(int8)
MCUD_BINARY_INT_DECL(uint8)
MCUD_BINARY_INT_DECL(int16)
MCUD_BINARY_INT_DECL(int32)
MCUD_BINARY_INT_DECL(int64)
void mcud_squared_difference_int32(const mcud_view *a, const mcud_view *b, const mcud_view *y);

#endif
