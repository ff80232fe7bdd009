/* mcud_gather.h: one strided copy (mcud_copy_strided) per gathered slice. */
#include "mcud_gather.h"
#include "mcud_shape.h"

/* The element offset, through `stride`, of the flat row-major index `flat` over dimensions
 * [first, first + count) of `shape`. */
static int32_t offset_of(int32_t flat, const int32_t *shape, const int32_t *stride, int32_t first, int32_t count)
{
    int32_t off = 0;
    for (int32_t d = first + count - 1; d >= first; d--) {
        off += (flat % shape[d]) * stride[d];
        flat /= shape[d];
    }
    return off;
}

static int32_t product(const int32_t *shape, int32_t first, int32_t count)
{
    int32_t n = 1;
    for (int32_t d = first; d < first + count; d++) {
        n *= shape[d];
    }
    return n;
}

static void gather_indexed(const mcud_view *x, const mcud_view *p, const mcud_view *y,
                           const mcud_gather_indexed_params *params, int32_t size)
{
    const int32_t axis = params->axis, batch = params->batch_dims;
    const int32_t outer = axis - batch, coords = p->ndim - batch, inner = x->ndim - axis - 1;
    const int32_t nb = product(x->shape, 0, batch), no = product(x->shape, batch, outer);
    const int32_t nc = product(p->shape, batch, coords), n = x->shape[axis];
    const int32_t *ys_inner = y->stride + batch + outer + coords;
    const int32_t *pd = (const int32_t *)p->data;
    for (int32_t b = 0; b < nb; b++) {
        const int32_t xb = offset_of(b, x->shape, x->stride, 0, batch);
        const int32_t yb = offset_of(b, y->shape, y->stride, 0, batch);
        const int32_t pb = offset_of(b, p->shape, p->stride, 0, batch);
        for (int32_t o = 0; o < no; o++) {
            const int32_t xo = xb + offset_of(o, x->shape, x->stride, batch, outer);
            const int32_t yo = yb + offset_of(o, y->shape, y->stride, batch, outer);
            for (int32_t c = 0; c < nc; c++) {
                int32_t k = pd[pb + offset_of(c, p->shape, p->stride, batch, coords)];
                k = k < 0 ? 0 : (k >= n ? n - 1 : k);
                const int32_t yc = yo + offset_of(c, y->shape, y->stride, batch + outer, coords);
                mcud_copy_strided((char *)y->data + (ptrdiff_t)yc * size, ys_inner,
                                  (const char *)x->data + (ptrdiff_t)(xo + k * x->stride[axis]) * size,
                                  x->stride + axis + 1, x->shape + axis + 1, inner, size);
            }
        }
    }
}

static void gather_nd(const mcud_view *x, const mcud_view *p, const mcud_view *y, const mcud_gather_nd_params *params,
                      int32_t size)
{
    const int32_t nd = params->nd, lead = p->ndim - 1, inner = x->ndim - nd;
    const int32_t rows = product(x->shape, 0, nd), nc = product(p->shape, 0, lead);
    const int32_t *pd = (const int32_t *)p->data;
    int32_t counts[MCUD_GATHER_ND_MAX];
    for (int32_t j = 0; j < nd; j++) {
        counts[j] = product(x->shape, j + 1, nd - j - 1);
    }
    for (int32_t c = 0; c < nc; c++) {
        const int32_t pc = offset_of(c, p->shape, p->stride, 0, lead);
        int32_t row = 0;
        for (int32_t j = 0; j < nd; j++) {
            row += pd[pc + j * p->stride[lead]] * counts[j];
        }
        row = row < 0 ? 0 : (row >= rows ? rows - 1 : row);
        const int32_t xo = offset_of(row, x->shape, x->stride, 0, nd);
        const int32_t yo = offset_of(c, y->shape, y->stride, 0, lead);
        mcud_copy_strided((char *)y->data + (ptrdiff_t)yo * size, y->stride + lead,
                          (const char *)x->data + (ptrdiff_t)xo * size, x->stride + nd, x->shape + nd, inner, size);
    }
}

#define GATHER_KERNELS(SUFFIX, SIZE)                                                               \
    void mcud_gather_indexed_##SUFFIX(const mcud_view *x, const mcud_view *p, const mcud_view *y,  \
                                      const mcud_gather_indexed_params *params)                    \
    {                                                                                              \
        gather_indexed(x, p, y, params, (SIZE));                                                   \
    }                                                                                              \
    void mcud_gather_nd_##SUFFIX(const mcud_view *x, const mcud_view *p, const mcud_view *y,       \
                                 const mcud_gather_nd_params *params)                              \
    {                                                                                              \
        gather_nd(x, p, y, params, (SIZE));                                                        \
    }

GATHER_KERNELS(s8, 1)
GATHER_KERNELS(u8, 1)
GATHER_KERNELS(s16, 2)
GATHER_KERNELS(s32, 4)
GATHER_KERNELS(s64, 8)
GATHER_KERNELS(f32, 4)
