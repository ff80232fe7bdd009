/* Concat: each input goes to its slice of the output along the axis, as a strided copy or,
 * for a requantized int8/uint8/int16 input, element by element through mcud_requant. */
#include "mcud_concat.h"
#include "mcud_shape.h"

#define REQUANT_ND(NAME, T)                                                                        \
    static void NAME(T *dst, const int32_t *ds, const T *src, const int32_t *ss, const int32_t *n, \
                     int32_t in_zp, int32_t mult, int32_t shift, const mcud_concat_params *p)      \
    {                                                                                              \
        for (int32_t i0 = 0; i0 < n[0]; i0++) {                                                   \
            for (int32_t i1 = 0; i1 < n[1]; i1++) {                                               \
                for (int32_t i2 = 0; i2 < n[2]; i2++) {                                           \
                    for (int32_t i3 = 0; i3 < n[3]; i3++) {                                       \
                        for (int32_t i4 = 0; i4 < n[4]; i4++) {                                   \
                            const T *s = src + i0 * ss[0] + i1 * ss[1] + i2 * ss[2] + i3 * ss[3] + i4 * ss[4]; \
                            T *d = dst + i0 * ds[0] + i1 * ds[1] + i2 * ds[2] + i3 * ds[3] + i4 * ds[4]; \
                            for (int32_t i5 = 0; i5 < n[5]; i5++) {                               \
                                int32_t v = mcud_requant((int32_t)s[i5 * ss[5]] - in_zp, mult, shift); \
                                d[i5 * ds[5]] = (T)mcud_clamp(v + p->out_zp, p->lo, p->hi);      \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

REQUANT_ND(requant_nd_s8, int8_t)
REQUANT_ND(requant_nd_u8, uint8_t)
REQUANT_ND(requant_nd_s16, int16_t)

/* Whether input x already sits in its slice of y: same first byte, same strides. */
static int in_its_slice(const mcud_view *x, const char *dst, const mcud_view *y)
{
    if ((const char *)x->data != dst || x->ndim != y->ndim) {
        return 0;
    }
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->shape[d] > 1 && x->stride[d] != y->stride[d]) {
            return 0;
        }
    }
    return 1;
}

/* kind: 0 copy only, 1 int8 requant allowed, 2 uint8 requant allowed, 3 int16 requant allowed */
static void concat(const mcud_view *const *xs, const mcud_view *y, const mcud_concat_params *p, int32_t size,
                   int32_t kind)
{
    int32_t start = 0;
    for (int32_t k = 0; k < p->count; k++) {
        const mcud_view *x = xs[k];
        char *dst = (char *)y->data + (size_t)start * (size_t)y->stride[p->axis] * (size_t)size;
        start += x->shape[p->axis];
        if (kind == 0 || p->shift == NULL || p->shift[k] == 0) {
            if (in_its_slice(x, dst, y)) {
                continue; /* its producer wrote it there (memory/alias.py, "partial") */
            }
            mcud_copy_strided(dst, y->stride, x->data, x->stride, x->shape, x->ndim, size);
            continue;
        }
        int32_t n[MCUD_MAX_DIMS], ss[MCUD_MAX_DIMS], ds[MCUD_MAX_DIMS], unused[MCUD_MAX_DIMS];
        mcud_pad_dims(x->ndim, x->shape, x->stride, n, ss);
        mcud_pad_dims(y->ndim, y->shape, y->stride, unused, ds);
        if (kind == 1) {
            requant_nd_s8((int8_t *)dst, ds, (const int8_t *)x->data, ss, n, p->in_zp[k], p->mult[k], p->shift[k], p);
        } else if (kind == 2) {
            requant_nd_u8((uint8_t *)dst, ds, (const uint8_t *)x->data, ss, n, p->in_zp[k], p->mult[k], p->shift[k],
                          p);
        } else {
            requant_nd_s16((int16_t *)dst, ds, (const int16_t *)x->data, ss, n, p->in_zp[k], p->mult[k],
                           p->shift[k], p);
        }
    }
}

#define CONCAT(SUFFIX, SIZE, KIND)                                                                 \
    void mcud_concat_##SUFFIX(const mcud_view *x0, const mcud_view *x1, const mcud_view *x2,       \
                              const mcud_view *x3, const mcud_view *x4, const mcud_view *x5,       \
                              const mcud_view *x6, const mcud_view *x7, const mcud_view *y,        \
                              const mcud_concat_params *p)                                         \
    {                                                                                              \
        const mcud_view *xs[MCUD_CONCAT_MAX_INPUTS] = {x0, x1, x2, x3, x4, x5, x6, x7};            \
        concat(xs, y, p, (SIZE), (KIND));                                                          \
    }

CONCAT(s8, 1, 1)
CONCAT(u8, 1, 2)
CONCAT(s16, 2, 3)
CONCAT(s32, 4, 0)
CONCAT(s64, 8, 0)
CONCAT(f32, 4, 0)
