/* Transpose, Split, Gather and StridedSlice as strided copies. The element is moved with a fixed-size memcpy, which
 * compilers turn into one load and one store and which is free of strict-aliasing trouble
 * (float data is copied as bytes). */
#include <string.h>

#include "mcud_shape.h"

/* One contiguous run of bytes. Runs that overlap (an in-place move) go to memmove; the others,
 * mostly short (the rows of one channel in a halo of a tensor cut along its height: 5 to 15 bytes
 * on KWS), 16 bytes at a time and then by the bits of what is left, without a loop: newlib-nano's
 * memmove copies byte by byte, and a call or a loop per run costs more than such a run. memcpy of
 * four bytes is one (unaligned) load and store on Cortex-M3 and up, byte loads where unaligned
 * access is not allowed. Measured on KWS cut in 24 pieces with kept halos (qemu-m4): its 94 halo
 * gathers (Concat of 64 rows of 5 bytes per input) took 28,038 ticks element by element, 19,741
 * ticks run by run so, 12,865 with copy_runs below. */
static inline void copy_run(char *d, const char *s, size_t len)
{
    if (d < s + len && s < d + len) {
        memmove(d, s, len);
        return;
    }
    uint32_t w0, w1, w2, w3;
    for (; len >= 16; len -= 16, s += 16, d += 16) {
        memcpy(&w0, s, 4);
        memcpy(&w1, s + 4, 4);
        memcpy(&w2, s + 8, 4);
        memcpy(&w3, s + 12, 4);
        memcpy(d, &w0, 4);
        memcpy(d + 4, &w1, 4);
        memcpy(d + 8, &w2, 4);
        memcpy(d + 12, &w3, 4);
    }
    if (len & 8) {
        memcpy(&w0, s, 4);
        memcpy(&w1, s + 4, 4);
        memcpy(d, &w0, 4);
        memcpy(d + 4, &w1, 4);
        s += 8;
        d += 8;
    }
    if (len & 4) {
        memcpy(&w0, s, 4);
        memcpy(d, &w0, 4);
        s += 4;
        d += 4;
    }
    if (len & 2) {
        uint16_t h;
        memcpy(&h, s, 2);
        memcpy(d, &h, 2);
        s += 2;
        d += 2;
    }
    if (len & 1) {
        *d = *s;
    }
}

/* n runs of len bytes, the k-th from s + k * sstep to d + k * dstep. When no destination byte of
 * the block lies among its source bytes (checked once for the whole block), each run is copied
 * with the length's words and bits decided once, not per run: a halo gather is mostly 64 runs of
 * 5 bytes, where the tests of copy_run cost as much as the copy. */
static void copy_runs(char *d, int32_t dstep, const char *s, int32_t sstep, int32_t n, size_t len)
{
    const int32_t sspan = (n - 1) * sstep, dspan = (n - 1) * dstep;
    const char *slo = sspan < 0 ? s + sspan : s, *shi = (sspan < 0 ? s : s + sspan) + len;
    const char *dlo = dspan < 0 ? d + dspan : d, *dhi = (dspan < 0 ? d : d + dspan) + len;
    if (dlo < shi && slo < dhi) {
        for (int32_t k = 0; k < n; k++, s += sstep, d += dstep) {
            copy_run(d, s, len);
        }
        return;
    }
    const size_t words = len >> 2;
    const int half = (len & 2) != 0, odd = (len & 1) != 0;
    for (int32_t k = 0; k < n; k++, s += sstep, d += dstep) {
        const char *si = s;
        char *di = d;
        for (size_t w = 0; w < words; w++, si += 4, di += 4) {
            uint32_t v;
            memcpy(&v, si, 4);
            memcpy(di, &v, 4);
        }
        if (half) {
            uint16_t h;
            memcpy(&h, si, 2);
            memcpy(di, &h, 2);
            si += 2;
            di += 2;
        }
        if (odd) {
            *di = *si;
        }
    }
}

/* Six nested loops over the block; the two innermost, when the innermost is contiguous in both
 * buffers, are runs (copy_runs). Extents and strides are read once into locals (in bytes): a char store may alias
 * the caller's arrays, so the compiler would otherwise load them again at every element. */
#define COPY_ND(NAME, SIZE)                                                                        \
    static void NAME(char *dst, const int32_t *ds, const char *src, const int32_t *ss, const int32_t *n) \
    {                                                                                              \
        const int32_t n0 = n[0], n1 = n[1], n2 = n[2], n3 = n[3], n4 = n[4], n5 = n[5];           \
        const int32_t s0 = ss[0] * (SIZE), s1 = ss[1] * (SIZE), s2 = ss[2] * (SIZE);             \
        const int32_t s3 = ss[3] * (SIZE), s4 = ss[4] * (SIZE), s5 = ss[5] * (SIZE);             \
        const int32_t d0 = ds[0] * (SIZE), d1 = ds[1] * (SIZE), d2 = ds[2] * (SIZE);             \
        const int32_t d3 = ds[3] * (SIZE), d4 = ds[4] * (SIZE), d5 = ds[5] * (SIZE);             \
        const int run = s5 == (SIZE) && d5 == (SIZE);                                             \
        for (int32_t i0 = 0; i0 < n0; i0++) {                                                     \
            for (int32_t i1 = 0; i1 < n1; i1++) {                                                 \
                for (int32_t i2 = 0; i2 < n2; i2++) {                                             \
                    for (int32_t i3 = 0; i3 < n3; i3++) {                                         \
                        const char *s = src + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;              \
                        char *d = dst + i0 * d0 + i1 * d1 + i2 * d2 + i3 * d3;                    \
                        if (run) {                                                                 \
                            copy_runs(d, d4, s, s4, n4, (size_t)n5 * (SIZE));                      \
                            continue;                                                              \
                        }                                                                          \
                        for (int32_t i4 = 0; i4 < n4; i4++, s += s4, d += d4) {                   \
                            const char *si = s;                                                    \
                            char *di = d;                                                          \
                            for (int32_t i5 = 0; i5 < n5; i5++, si += s5, di += d5) {             \
                                memcpy(di, si, (SIZE));                                            \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

COPY_ND(copy_nd_1, 1)
COPY_ND(copy_nd_2, 2)
COPY_ND(copy_nd_4, 4)
COPY_ND(copy_nd_8, 8)

/* Dimensions in decreasing order of destination stride (insertion sort, the source's strides along),
 * for blocks whose bytes do not overlap: a copy then reads and writes in the destination's memory
 * order, and coalesce can merge what is contiguous in memory but not in the tensor's own dimension
 * order (a band of rows of a tensor laid out band by band, NHCW: the rows of a halo are one run,
 * where in N, C, H, W order they are one run of W bytes per channel). Overlapping blocks keep their
 * order (an in-place move relies on it), and so do blocks with a negative stride. */
static int overlap(const char *d, const int32_t *ds, const char *s, const int32_t *ss, const int32_t *n, int32_t size)
{
    int32_t dspan = size, sspan = size;
    for (int32_t k = 0; k < MCUD_MAX_DIMS; k++) {
        if (ds[k] < 0 || ss[k] < 0) {
            return 1;
        }
        dspan += (n[k] - 1) * ds[k] * size;
        sspan += (n[k] - 1) * ss[k] * size;
    }
    return d < s + sspan && s < d + dspan;
}

static void by_destination(int32_t *n, int32_t *ds, int32_t *ss)
{
    for (int32_t i = 1; i < MCUD_MAX_DIMS; i++) {
        const int32_t tn = n[i], td = ds[i], ts = ss[i];
        int32_t j = i - 1;
        for (; j >= 0 && ds[j] < td; j--) {
            n[j + 1] = n[j];
            ds[j + 1] = ds[j];
            ss[j + 1] = ss[j];
        }
        n[j + 1] = tn;
        ds[j + 1] = td;
        ss[j + 1] = ts;
    }
}

/* Merge each dimension into the next inner one wherever both buffers step over the inner one
 * contiguously (and drop dimensions of extent 1), so the innermost run is as long as it can be:
 * the rows of a slice of a tensor cut along its height become one run per channel. */
static void coalesce(int32_t *n, int32_t *ds, int32_t *ss)
{
    int32_t cn[MCUD_MAX_DIMS], cd[MCUD_MAX_DIMS], cs[MCUD_MAX_DIMS], m = 0;
    for (int32_t d = MCUD_MAX_DIMS - 1; d >= 0; d--) { /* innermost first */
        if (n[d] == 1) {
            continue;
        }
        if (m > 0 && ds[d] == cd[m - 1] * cn[m - 1] && ss[d] == cs[m - 1] * cn[m - 1]) {
            cn[m - 1] *= n[d];
            continue;
        }
        cn[m] = n[d];
        cd[m] = ds[d];
        cs[m] = ss[d];
        m++;
    }
    for (int32_t d = 0; d < MCUD_MAX_DIMS; d++) {
        int32_t k = MCUD_MAX_DIMS - 1 - d; /* position d from the inside */
        n[k] = d < m ? cn[d] : 1;
        ds[k] = d < m ? cd[d] : 0;
        ss[k] = d < m ? cs[d] : 0;
    }
}

/* The elements of a block that is one run in both buffers, laid out alike, else -1: every
 * dimension of more than one element has the same positive stride in both, and those strides are
 * a row-major layout of the block in some order of its dimensions (1, then each the one before
 * times its extent: no two alike, each but the 1 the next of another). The halo rows of a tensor
 * laid out band by band, or a whole piece going into its gather, are such blocks: a few compares
 * here spare the general path's padding, sorting and merging of six dimensions. */
static int32_t one_run(const int32_t *ds, const int32_t *ss, const int32_t *shape, int32_t ndim)
{
    int32_t elements = 1, unit = 0;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 0;
        }
        if (shape[d] == 1) {
            continue;
        }
        if (ds[d] != ss[d] || ds[d] <= 0) {
            return -1;
        }
        elements *= shape[d];
        if (ds[d] == 1) {
            unit++;
            continue;
        }
        int32_t next_of = 0;
        for (int32_t e = 0; e < ndim; e++) {
            if (e != d && shape[e] > 1) {
                if (ds[e] == ds[d]) {
                    return -1;
                }
                next_of |= ds[e] * shape[e] == ds[d];
            }
        }
        if (!next_of) {
            return -1;
        }
    }
    return unit <= 1 ? elements : -1;
}

void mcud_copy_strided(void *dst, const int32_t *dst_stride, const void *src, const int32_t *src_stride,
                       const int32_t *shape, int32_t ndim, int32_t elem_size)
{
    const int32_t run = one_run(dst_stride, src_stride, shape, ndim);
    if (run >= 0) {
        copy_run((char *)dst, (const char *)src, (size_t)run * (size_t)elem_size);
        return;
    }
    int32_t n[MCUD_MAX_DIMS], ds[MCUD_MAX_DIMS], ss[MCUD_MAX_DIMS];
    mcud_pad_dims(ndim, shape, dst_stride, n, ds);
    mcud_pad_dims(ndim, shape, src_stride, n, ss);
    for (int32_t d = 0; d < MCUD_MAX_DIMS; d++) {
        if (n[d] == 0) {
            return;
        }
    }
    if (!overlap((const char *)dst, ds, (const char *)src, ss, n, elem_size)) {
        by_destination(n, ds, ss);
    }
    coalesce(n, ds, ss);
    /* a block contiguous in both buffers is one memcpy */
    int32_t expect = 1, contiguous = 1;
    for (int32_t d = MCUD_MAX_DIMS - 1; d >= 0; d--) {
        if (n[d] != 1 && (ds[d] != expect || ss[d] != expect)) {
            contiguous = 0;
            break;
        }
        expect *= n[d];
    }
    if (contiguous) {
        copy_run((char *)dst, (const char *)src, (size_t)expect * (size_t)elem_size);
        return;
    }
    switch (elem_size) {
    case 1: copy_nd_1((char *)dst, ds, (const char *)src, ss, n); break;
    case 2: copy_nd_2((char *)dst, ds, (const char *)src, ss, n); break;
    case 4: copy_nd_4((char *)dst, ds, (const char *)src, ss, n); break;
    default: copy_nd_8((char *)dst, ds, (const char *)src, ss, n); break;
    }
}

static void transpose(const mcud_view *x, const mcud_view *y, const mcud_transpose_params *p, int32_t size)
{
    int32_t src_stride[MCUD_MAX_DIMS];
    for (int32_t d = 0; d < y->ndim; d++) {
        src_stride[d] = x->stride[p->perm[d]];
    }
    mcud_copy_strided(y->data, y->stride, x->data, src_stride, y->shape, y->ndim, size);
}

static void split(const mcud_view *x, const mcud_view *const *ys, const mcud_split_params *p, int32_t size)
{
    int32_t start = 0;
    for (int32_t k = 0; k < p->count; k++) {
        const mcud_view *y = ys[k];
        const char *src = (const char *)x->data + (size_t)start * (size_t)x->stride[p->axis] * (size_t)size;
        mcud_copy_strided(y->data, y->stride, src, x->stride, y->shape, y->ndim, size);
        start += y->shape[p->axis];
    }
}

/* One strided copy per index: x's slice at indices[k] (x without the axis dimension) into y's slice
 * at index position k (y without its index dimensions). */
static void gather(const mcud_view *x, const mcud_view *y, const mcud_gather_params *p, int32_t size)
{
    int32_t shape[MCUD_MAX_DIMS], xs[MCUD_MAX_DIMS], ys[MCUD_MAX_DIMS];
    int32_t n = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d == p->axis) {
            continue;
        }
        shape[n] = x->shape[d];
        xs[n] = x->stride[d];
        ys[n] = y->stride[d < p->axis ? d : d - 1 + p->idx_rank];
        n++;
    }
    for (int32_t k = 0; k < p->count; k++) {
        int32_t yo = 0, rem = k;
        for (int32_t j = p->idx_rank - 1; j >= 0; j--) {
            int32_t dim = p->axis + j;
            yo += (rem % y->shape[dim]) * y->stride[dim];
            rem /= y->shape[dim];
        }
        const char *src = (const char *)x->data + (size_t)p->indices[k] * (size_t)x->stride[p->axis] * (size_t)size;
        mcud_copy_strided((char *)y->data + (size_t)yo * (size_t)size, ys, src, xs, shape, n, size);
    }
}

/* The input read from its first element with every stride multiplied by its step: one strided copy
 * (mcud_copy_strided keeps the order of a block with a negative stride). */
static void strided_slice(const mcud_view *x, const mcud_view *y, const mcud_strided_slice_params *p, int32_t size)
{
    int32_t src_stride[MCUD_MAX_DIMS];
    int32_t offset = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        offset += p->begin[d] * x->stride[d];
        src_stride[d] = x->stride[d] * p->step[d];
    }
    const char *src = (const char *)x->data + (ptrdiff_t)offset * size;
    mcud_copy_strided(y->data, y->stride, src, src_stride, y->shape, y->ndim, size);
}

/* x read with stride 0 along the dimensions y repeats. */
static void broadcast_to(const mcud_view *x, const mcud_view *y, int32_t size)
{
    int32_t src_stride[MCUD_MAX_DIMS];
    int32_t lead = y->ndim - x->ndim;
    for (int32_t d = 0; d < y->ndim; d++) {
        int32_t k = d - lead;
        src_stride[d] = (k < 0 || x->shape[k] == 1) ? 0 : x->stride[k];
    }
    mcud_copy_strided(y->data, y->stride, x->data, src_stride, y->shape, y->ndim, size);
}

#define SHAPE_KERNELS(SUFFIX, SIZE)                                                                \
    void mcud_transpose_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_transpose_params *p) \
    {                                                                                              \
        transpose(x, y, p, (SIZE));                                                                \
    }                                                                                              \
    void mcud_split_##SUFFIX(const mcud_view *x, const mcud_view *y0, const mcud_view *y1,         \
                             const mcud_view *y2, const mcud_view *y3, const mcud_view *y4,         \
                             const mcud_view *y5, const mcud_view *y6, const mcud_view *y7,         \
                             const mcud_split_params *p)                                           \
    {                                                                                              \
        const mcud_view *ys[MCUD_SPLIT_MAX_OUTPUTS] = {y0, y1, y2, y3, y4, y5, y6, y7};            \
        split(x, ys, p, (SIZE));                                                                   \
    }                                                                                              \
    void mcud_gather_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_gather_params *p) \
    {                                                                                              \
        gather(x, y, p, (SIZE));                                                                   \
    }                                                                                              \
    void mcud_strided_slice_##SUFFIX(const mcud_view *x, const mcud_view *y, const mcud_strided_slice_params *p) \
    {                                                                                              \
        strided_slice(x, y, p, (SIZE));                                                            \
    }                                                                                              \
    void mcud_broadcast_to_##SUFFIX(const mcud_view *x, const mcud_view *y)                        \
    {                                                                                              \
        broadcast_to(x, y, (SIZE));                                                                \
    }

SHAPE_KERNELS(s8, 1)
SHAPE_KERNELS(u8, 1)
SHAPE_KERNELS(s16, 2)
SHAPE_KERNELS(s32, 4)
SHAPE_KERNELS(s64, 8)
SHAPE_KERNELS(f32, 4)
