/* mcud_update.h: the operand copied (unless y is its view), then the block, each one strided copy. */
#include "mcud_shape.h"
#include "mcud_update.h"

static void update(const mcud_view *x, const mcud_view *u, const int32_t *start, const mcud_view *y, int32_t size)
{
    if (y->data != x->data) {
        mcud_copy_strided(y->data, y->stride, x->data, x->stride, y->shape, y->ndim, size);
    }
    int32_t offset = 0;
    for (int32_t d = 0; d < y->ndim; d++) {
        offset += start[d] * y->stride[d];
    }
    mcud_copy_strided((char *)y->data + (ptrdiff_t)offset * size, y->stride, u->data, u->stride, u->shape, u->ndim,
                      size);
}

#define STARTS(T)                                                                                  \
    int32_t start[MCUD_MAX_DIMS];                                                                  \
    for (int32_t d = 0; d < x->ndim; d++) {                                                        \
        T s = ((const T *)p->data)[d * p->stride[0]];                                              \
        T hi = (T)(x->shape[d] - u->shape[d]);                                                     \
        start[d] = (int32_t)(s < 0 ? 0 : (s > hi ? hi : s));                                       \
    }

#define UPDATE_KERNELS(SUFFIX, SIZE)                                                               \
    void mcud_dynamic_update_slice_##SUFFIX##_s32(const mcud_view *x, const mcud_view *u, const mcud_view *p, \
                                                  const mcud_view *y)                              \
    {                                                                                              \
        STARTS(int32_t)                                                                            \
        update(x, u, start, y, (SIZE));                                                            \
    }                                                                                              \
    void mcud_dynamic_update_slice_##SUFFIX##_s64(const mcud_view *x, const mcud_view *u, const mcud_view *p, \
                                                  const mcud_view *y)                              \
    {                                                                                              \
        STARTS(int64_t)                                                                            \
        update(x, u, start, y, (SIZE));                                                            \
    }

UPDATE_KERNELS(s8, 1)
UPDATE_KERNELS(u8, 1)
UPDATE_KERNELS(s16, 2)
UPDATE_KERNELS(s32, 4)
UPDATE_KERNELS(s64, 8)
UPDATE_KERNELS(f32, 4)
