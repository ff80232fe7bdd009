/* Logic on bools and SELECT_V2 with broadcasting, on views (mcud_bcast.h walks the rows). */
#include "mcud_bcast.h"
#include "mcud_logical.h"

void mcud_logical(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_logical_params *p)
{
    const mcud_view *views[3] = {a, b, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 3);
    int32_t len = mcud_bcast_len(&w);
    int32_t sa = mcud_bcast_step(&w, 0), sb = mcud_bcast_step(&w, 1), sy = mcud_bcast_step(&w, 2);
    const int is_and = p->op == MCUD_LOGICAL_AND;
    do {
        const uint8_t *pa = (const uint8_t *)a->data + w.off[0];
        const uint8_t *pb = (const uint8_t *)b->data + w.off[1];
        uint8_t *py = (uint8_t *)y->data + w.off[2];
        for (int32_t i = 0; i < len; i++) {
            int va = pa[i * sa] != 0, vb = pb[i * sb] != 0;
            py[i * sy] = (uint8_t)(is_and ? (va && vb) : (va || vb));
        }
    } while (mcud_bcast_next(&w));
}

void mcud_logical_not(const mcud_view *x, const mcud_view *y)
{
    const mcud_view *views[2] = {x, y};
    mcud_bcast w;
    mcud_bcast_init(&w, views, 2);
    int32_t len = mcud_bcast_len(&w);
    int32_t sx = mcud_bcast_step(&w, 0), sy = mcud_bcast_step(&w, 1);
    do {
        const uint8_t *px = (const uint8_t *)x->data + w.off[0];
        uint8_t *py = (uint8_t *)y->data + w.off[1];
        for (int32_t i = 0; i < len; i++) {
            py[i * sy] = (uint8_t)(px[i * sx] == 0);
        }
    } while (mcud_bcast_next(&w));
}

#define WHERE(NAME, T)                                                                                        \
    void NAME(const mcud_view *cond, const mcud_view *x, const mcud_view *x_else, const mcud_view *y)         \
    {                                                                                                         \
        const mcud_view *views[4] = {cond, x, x_else, y};                                                     \
        mcud_bcast w;                                                                                         \
        mcud_bcast_init(&w, views, 4);                                                                        \
        int32_t len = mcud_bcast_len(&w);                                                                     \
        int32_t sc = mcud_bcast_step(&w, 0), sx = mcud_bcast_step(&w, 1), se = mcud_bcast_step(&w, 2);        \
        int32_t sy = mcud_bcast_step(&w, 3);                                                                  \
        do {                                                                                                  \
            const uint8_t *pc = (const uint8_t *)cond->data + w.off[0];                                       \
            const T *px = (const T *)x->data + w.off[1];                                                      \
            const T *pe = (const T *)x_else->data + w.off[2];                                                 \
            T *py = (T *)y->data + w.off[3];                                                                  \
            for (int32_t i = 0; i < len; i++) {                                                               \
                py[i * sy] = pc[i * sc] ? px[i * sx] : pe[i * se];                                            \
            }                                                                                                 \
        } while (mcud_bcast_next(&w));                                                                        \
    }

WHERE(mcud_where_8, uint8_t)
WHERE(mcud_where_16, uint16_t)
WHERE(mcud_where_32, uint32_t)
WHERE(mcud_where_64, uint64_t)
