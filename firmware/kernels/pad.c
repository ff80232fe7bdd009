/* Pad on strided views, row by row: the outer coordinates of a row are mapped once, then the
 * innermost dim is copied with its begin and end padding, as ops/pad.py. */
#include "mcud_pad.h"

/* Input coordinate for shifted output coordinate i of a dim of extent n; -1: the pad value. */
static int32_t source_index(int32_t i, int32_t n, int32_t mode)
{
    if (i >= 0 && i < n) {
        return i;
    }
    if (mode == MCUD_PAD_EDGE) {
        return i < 0 ? 0 : n - 1;
    }
    if (mode == MCUD_PAD_WRAP) {
        int32_t m = i % n;
        return m < 0 ? m + n : m;
    }
    if (mode == MCUD_PAD_SYMMETRIC) {
        int32_t m = i % (2 * n);
        if (m < 0) {
            m += 2 * n;
        }
        return m < n ? m : 2 * n - 1 - m;
    }
    if (mode == MCUD_PAD_REFLECT) {
        if (n == 1) {
            return 0;
        }
        int32_t period = 2 * (n - 1);
        int32_t m = i % period;
        if (m < 0) {
            m += period;
        }
        return m < n ? m : period - m;
    }
    return -1;
}

#define PAD_KERNEL(NAME, T, VALUE)                                                            \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_pad_params *p)               \
    {                                                                                         \
        const T *xp = (const T *)x->data;                                                     \
        T *yp = (T *)y->data;                                                                 \
        const T value = (T)(VALUE);                                                           \
        int32_t nd = y->ndim, last = nd - 1;                                                  \
        int32_t idx[MCUD_MAX_DIMS] = {0};                                                     \
        int32_t rows = 1;                                                                     \
        for (int32_t d = 0; d < last; d++) {                                                  \
            rows *= y->shape[d];                                                              \
        }                                                                                     \
        int32_t n = x->shape[last], b = p->pad_begin[last];                                   \
        for (int32_t r = 0; r < rows; r++) {                                                  \
            int32_t xoff = 0, yoff = 0, fill = 0;                                             \
            for (int32_t d = 0; d < last; d++) {                                              \
                int32_t s = source_index(idx[d] - p->pad_begin[d], x->shape[d], p->mode);     \
                fill |= s < 0;                                                                \
                xoff += s * x->stride[d];                                                     \
                yoff += idx[d] * y->stride[d];                                                \
            }                                                                                 \
            for (int32_t o = 0; o < y->shape[last]; o++) {                                    \
                int32_t s = fill ? -1 : source_index(o - b, n, p->mode);                      \
                yp[yoff + o * y->stride[last]] = s < 0 ? value : xp[xoff + s * x->stride[last]]; \
            }                                                                                 \
            for (int32_t d = last - 1; d >= 0; d--) {                                         \
                if (++idx[d] < y->shape[d]) {                                                 \
                    break;                                                                    \
                }                                                                             \
                idx[d] = 0;                                                                   \
            }                                                                                 \
        }                                                                                     \
    }

PAD_KERNEL(mcud_pad_f32, float, p->value)
PAD_KERNEL(mcud_pad_s8, int8_t, p->ivalue)
PAD_KERNEL(mcud_pad_s16, int16_t, p->ivalue)
PAD_KERNEL(mcud_pad_s32, int32_t, p->ivalue)
