/* SVDF (mcud_svdf.h; the arithmetic in mcudeploy/ops/svdf.py). Per batch row: every filter's row of the state moves
 * one column left into next (a forward copy, so next may be the state itself) and takes the feature dot product
 * as its last column; then each unit sums, onto its bias, its rank filters' dot products with the time weights.
 * Integer sums wrap in 32 bits (computed unsigned), as TensorFlow Lite Micro's int32 accumulators do in practice. */
#include <math.h>

#include "mcud_svdf.h"

/* Element (b, k) of a 2-D view. */
#define AT2(V, B, K) ((B) * (V)->stride[0] + (K) * (V)->stride[1])

void mcud_svdf_f32(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                   const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_f32_params *p)
{
    const int32_t batches = x->shape[0], features = x->shape[1], filters = wt->shape[0], memory = wt->shape[1];
    const int32_t rank = p->rank, units = filters / rank;
    const float *xd = (const float *)x->data, *wfd = (const float *)wf->data, *wtd = (const float *)wt->data;
    const float *sd = (const float *)state->data;
    float *nd = (float *)next->data, *yd = (float *)y->data;
    for (int32_t b = 0; b < batches; b++) {
        for (int32_t f = 0; f < filters; f++) {
            float dot = 0.0f;
            for (int32_t k = 0; k < features; k++) {
                dot += wfd[f * features + k] * xd[AT2(x, b, k)];
            }
            for (int32_t m = 0; m + 1 < memory; m++) {
                nd[AT2(next, b, f * memory + m)] = sd[AT2(state, b, f * memory + m + 1)];
            }
            nd[AT2(next, b, f * memory + memory - 1)] = dot;
        }
        for (int32_t u = 0; u < units; u++) {
            float acc = bias ? ((const float *)bias->data)[u * bias->stride[0]] : 0.0f;
            for (int32_t r = 0; r < rank; r++) {
                const int32_t f = u * rank + r;
                float t = 0.0f;
                for (int32_t m = 0; m < memory; m++) {
                    t += wtd[f * memory + m] * nd[AT2(next, b, f * memory + m)];
                }
                acc += t;
            }
            if (p->clip_low && acc < p->low) {
                acc = p->low;
            }
            if (p->clip_high && acc > p->high) {
                acc = p->high;
            }
            if (p->function == 1) {
                acc = tanhf(acc);
            } else if (p->function == 2) {
                acc = signbit(acc) ? 1.0f : 0.0f;
            }
            yd[AT2(y, b, u)] = acc;
        }
    }
}

/* T: the type of the time weights and the state; LO and HI its range. */
#define MCUD_SVDF_INT(T, LO, HI)                                                                                      \
    const int32_t batches = x->shape[0], features = x->shape[1], filters = wt->shape[0], memory = wt->shape[1];      \
    const int32_t rank = p->rank, units = filters / rank;                                                            \
    const int8_t *xd = (const int8_t *)x->data, *wfd = (const int8_t *)wf->data;                                     \
    const T *wtd = (const T *)wt->data, *sd = (const T *)state->data;                                                \
    T *nd = (T *)next->data;                                                                                         \
    int8_t *yd = (int8_t *)y->data;                                                                                  \
    for (int32_t b = 0; b < batches; b++) {                                                                          \
        for (int32_t f = 0; f < filters; f++) {                                                                      \
            uint32_t dot = 0;                                                                                        \
            for (int32_t k = 0; k < features; k++) {                                                                 \
                dot += (uint32_t)((int32_t)wfd[f * features + k] * ((int32_t)xd[AT2(x, b, k)] - p->x_zero));        \
            }                                                                                                        \
            const int32_t v = mcud_clamp(mcud_requant_tfl((int32_t)dot, p->mult1, p->shift1), LO, HI);               \
            for (int32_t m = 0; m + 1 < memory; m++) {                                                               \
                nd[AT2(next, b, f * memory + m)] = sd[AT2(state, b, f * memory + m + 1)];                            \
            }                                                                                                        \
            /* the zero point added after the clamp: taken to T, wrapping, as TensorFlow Lite Micro stores it */   \
            nd[AT2(next, b, f * memory + memory - 1)] = (T)(p->state_zero + v);                                      \
        }                                                                                                            \
        for (int32_t u = 0; u < units; u++) {                                                                        \
            uint32_t acc = bias ? (uint32_t)((const int32_t *)bias->data)[u * bias->stride[0]] : 0u;                 \
            for (int32_t r = 0; r < rank; r++) {                                                                     \
                const int32_t f = u * rank + r;                                                                      \
                uint32_t t = 0;                                                                                      \
                for (int32_t m = 0; m < memory; m++) {                                                               \
                    const int64_t s = (int64_t)nd[AT2(next, b, f * memory + m)] - p->state_zero;                     \
                    t += (uint32_t)(uint64_t)((int64_t)wtd[f * memory + m] * s);                                     \
                }                                                                                                    \
                acc += t;                                                                                            \
            }                                                                                                        \
            const int32_t q = mcud_requant_tfl((int32_t)acc, p->mult2, p->shift2) + p->y_zero;                       \
            yd[AT2(y, b, u)] = (int8_t)mcud_sat8(q);                                                                 \
        }                                                                                                            \
    }

void mcud_svdf_s8_s16(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                      const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_q_params *p)
{
    MCUD_SVDF_INT(int16_t, -32768, 32767)
}

void mcud_svdf_s8_s8(const mcud_view *x, const mcud_view *wf, const mcud_view *wt, const mcud_view *bias,
                     const mcud_view *state, const mcud_view *y, const mcud_view *next, const mcud_svdf_q_params *p)
{
    MCUD_SVDF_INT(int8_t, -128, 127)
}
