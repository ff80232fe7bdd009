/* Data-moving kernels: Transpose, Split, Gather, StridedSlice and BroadcastTo (x's dimensions of one, or
 * missing on the left, repeated to y's shape), on views of any element type (the copy depends only
 * on the element size). View operators (Reshape, Flatten, Squeeze, Unsqueeze, Identity) have
 * no kernel: their output shares the input's bytes. */
#ifndef MCUD_SHAPE_H
#define MCUD_SHAPE_H
#include "mcud.h"

#define MCUD_SPLIT_MAX_OUTPUTS 8

typedef struct {
    int32_t perm[MCUD_MAX_DIMS]; /* output dimension d reads input dimension perm[d] */
} mcud_transpose_params;

typedef struct {
    int32_t axis;
    int32_t count; /* number of outputs; y[count..] are NULL */
} mcud_split_params;

/* Gather along axis with indices known at compile time: y's dimensions are x's before axis, then
 * idx_rank index dimensions (count positions, row-major), then x's after axis; position k reads
 * x's index indices[k] (in [0, x->shape[axis])). */
typedef struct {
    int32_t axis;
    int32_t idx_rank;
    int32_t count;
    const int32_t *indices;
} mcud_gather_params;

/* Output index i of dimension d reads input index begin[d] + i * step[d] (step != 0: negative reads
 * backwards). */
typedef struct {
    int32_t begin[MCUD_MAX_DIMS];
    int32_t step[MCUD_MAX_DIMS];
} mcud_strided_slice_params;

/* Copy an n-D block of `shape` (ndim <= MCUD_MAX_DIMS) of elements of `elem_size` bytes from
 * src to dst, each addressed through its own strides in elements. */
void mcud_copy_strided(void *dst, const int32_t *dst_stride, const void *src, const int32_t *src_stride,
                       const int32_t *shape, int32_t ndim, int32_t elem_size);

#define MCUD_DECLARE_SHAPE_KERNELS(SUFFIX)                                                          \
    void mcud_transpose_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_transpose_params *p); \
    void mcud_split_##SUFFIX(const mcud_view *x, const mcud_view *y0, const mcud_view *y1,            \
                             const mcud_view *y2, const mcud_view *y3, const mcud_view *y4,            \
                             const mcud_view *y5, const mcud_view *y6, const mcud_view *y7,            \
                             const mcud_split_params *p);                                         \
    void mcud_gather_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_gather_params *p); \
    void mcud_strided_slice_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_strided_slice_params *p); \
    void mcud_broadcast_to_##SUFFIX(const mcud_view *x, const mcud_view *y);

MCUD_DECLARE_SHAPE_KERNELS(s8)
MCUD_DECLARE_SHAPE_KERNELS(u8)
MCUD_DECLARE_SHAPE_KERNELS(s16)
MCUD_DECLARE_SHAPE_KERNELS(s32)
MCUD_DECLARE_SHAPE_KERNELS(s64)
MCUD_DECLARE_SHAPE_KERNELS(f32)

#endif
