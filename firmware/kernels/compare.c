/* Comparisons and MAXIMUM / MINIMUM with broadcasting, on views (mcud_bcast.h walks the rows). One loop
 * per operator, chosen once per call. */
#include "mcud_bcast.h"
#include "mcud_compare.h"

/* Calls the row loop with each operand's row pointer (pa, pb, py), its step and the row's length. */
#define WALK(TA, TY, BODY)                                                                                    \
    do {                                                                                                      \
        const mcud_view *views[3] = {a, b, y};                                                                \
        mcud_bcast w;                                                                                         \
        mcud_bcast_init(&w, views, 3);                                                                        \
        int32_t len = mcud_bcast_len(&w);                                                                     \
        int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);        \
        do {                                                                                                  \
            const TA *pa = (const TA *)a->data + w.off[0];                                                    \
            const TA *pb = (const TA *)b->data + w.off[1];                                                    \
            TY *py = (TY *)y->data + w.off[2];                                                                \
            BODY                                                                                              \
        } while (mcud_bcast_next(&w));                                                                        \
    } while (0)

#define ROW_OF(TY, EXPR)                                                                                      \
    for (int32_t i = 0; i < len; i++) {                                                                       \
        py[i * sy] = (TY)(EXPR);                                                                              \
    }
#define ROW(EXPR) ROW_OF(uint8_t, EXPR)

#define COMPARE(NAME, T)                                                                                      \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_params *p)      \
    {                                                                                                         \
        switch (p->op) {                                                                                      \
        case MCUD_EQUAL: WALK(T, uint8_t, ROW(pa[i * sa] == pb[i * sb])); break;                              \
        case MCUD_NOT_EQUAL: WALK(T, uint8_t, ROW(pa[i * sa] != pb[i * sb])); break;                          \
        case MCUD_GREATER: WALK(T, uint8_t, ROW(pa[i * sa] > pb[i * sb])); break;                             \
        case MCUD_GREATER_EQUAL: WALK(T, uint8_t, ROW(pa[i * sa] >= pb[i * sb])); break;                      \
        case MCUD_LESS: WALK(T, uint8_t, ROW(pa[i * sa] < pb[i * sb])); break;                                \
        default: WALK(T, uint8_t, ROW(pa[i * sa] <= pb[i * sb])); break;                                      \
        }                                                                                                     \
    }

COMPARE(mcud_compare_f32, float)
COMPARE(mcud_compare_int32, int32_t)
COMPARE(mcud_compare_int64, int64_t)
COMPARE(mcud_compare_bool, uint8_t)

static inline int32_t scaled(int32_t x, int32_t zero, int32_t mult, int32_t shift, int32_t left_shift)
{
    return mcud_requant_tfl((x - zero) * ((int32_t)1 << left_shift), mult, shift);
}

#define SCALED_A scaled(pa[i * sa], p->a_zero, p->a_mult, p->a_shift, p->left_shift)
#define SCALED_B scaled(pb[i * sb], p->b_zero, p->b_mult, p->b_shift, p->left_shift)

void mcud_compare_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_compare_s8_params *p)
{
    switch (p->op) {
    case MCUD_EQUAL: WALK(int8_t, uint8_t, ROW(SCALED_A == SCALED_B)); break;
    case MCUD_NOT_EQUAL: WALK(int8_t, uint8_t, ROW(SCALED_A != SCALED_B)); break;
    case MCUD_GREATER: WALK(int8_t, uint8_t, ROW(SCALED_A > SCALED_B)); break;
    case MCUD_GREATER_EQUAL: WALK(int8_t, uint8_t, ROW(SCALED_A >= SCALED_B)); break;
    case MCUD_LESS: WALK(int8_t, uint8_t, ROW(SCALED_A < SCALED_B)); break;
    default: WALK(int8_t, uint8_t, ROW(SCALED_A <= SCALED_B)); break;
    }
}

#define EXTREMUM(NAME, T)                                                                                     \
    void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_extremum_params *p)     \
    {                                                                                                         \
        if (p->larger) {                                                                                      \
            WALK(T, T, ROW_OF(T, pa[i * sa] > pb[i * sb] ? pa[i * sa] : pb[i * sb]));                         \
        } else {                                                                                              \
            WALK(T, T, ROW_OF(T, pa[i * sa] < pb[i * sb] ? pa[i * sa] : pb[i * sb]));                         \
        }                                                                                                     \
    }

EXTREMUM(mcud_extremum_f32, float)
EXTREMUM(mcud_extremum_int8, int8_t)
EXTREMUM(mcud_extremum_int16, int16_t)
EXTREMUM(mcud_extremum_int32, int32_t)
EXTREMUM(mcud_extremum_int64, int64_t)
