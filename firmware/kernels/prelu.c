/* PRELU with broadcasting, on views (mcud_bcast.h walks the rows). */
#include "mcud_bcast.h"
#include "mcud_prelu.h"

void mcud_prelu_f32(const mcud_view *x, const mcud_view *alpha, const mcud_view *y)
{
    const mcud_view *views[3] = {x, alpha, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 3);
    int32_t len = mcud_bcast_len(&w);
    int32_t sx = mcud_bcast_step(&w, 0), sa = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);
    do {
        const float *px = (const float *)x->data + w.off[0];
        const float *pa = (const float *)alpha->data + w.off[1];
        float *py = (float *)y->data + w.off[2];
        for (int32_t i = 0; i < len; i++) {
            float v = px[i * sx];
            py[i * sy] = v >= 0.0f ? v : v * pa[i * sa];
        }
    } while (mcud_bcast_next(&w));
}

#define PRELU_TFL(NAME, T, LO, HI)                                                                            \
    void NAME(const mcud_view *x, const mcud_view *alpha, const mcud_view *y, const mcud_prelu_params *p)    \
    {                                                                                                         \
        const mcud_view *views[3] = {x, alpha, y};                                                            \
        mcud_bcast w;                                                                                         \
        mcud_bcast_init(&w, views, 3);                                                                        \
        int32_t len = mcud_bcast_len(&w);                                                                     \
        int32_t sx = mcud_bcast_step(&w, 0), sa = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);        \
        do {                                                                                                  \
            const T *px = (const T *)x->data + w.off[0];                                                      \
            const int8_t *pa = (const int8_t *)alpha->data + w.off[1];                                        \
            T *py = (T *)y->data + w.off[2];                                                                  \
            for (int32_t i = 0; i < len; i++) {                                                               \
                int32_t v = (int32_t)px[i * sx] - p->x_zero, out;                                             \
                if (v >= 0) {                                                                                 \
                    out = mcud_requant_tfl(v, p->pos_mult, p->pos_shift);                                     \
                } else {                                                                                      \
                    int32_t prod = (int32_t)((uint32_t)v * (uint32_t)((int32_t)pa[i * sa] - p->alpha_zero));  \
                    out = mcud_requant_tfl(prod, p->neg_mult, p->neg_shift);                                  \
                }                                                                                             \
                py[i * sy] = (T)mcud_clamp(out + p->y_zero, LO, HI);                                          \
            }                                                                                                 \
        } while (mcud_bcast_next(&w));                                                                        \
    }

PRELU_TFL(mcud_prelu_s8_tfl, int8_t, -128, 127)
PRELU_TFL(mcud_prelu_s16_tfl, int16_t, -32768, 32767)
