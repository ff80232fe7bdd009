/* Reductions on views. The input's dimensions split into kept ones (one output each) and reduced
 * ones, each list merged where its strides allow (so a reduction over H and W of a dense NCHW
 * tensor is one contiguous run per output); both are walked with an odometer over the strides,
 * the reduced ones in row-major order, the order the numpy reference accumulates in. */
#include <math.h>

#include "mcud_dsp.h"
#include "mcud_reduce.h"
#include "mcud_walk.h"

static void walk_add(mcud_walk *w, int32_t n, int32_t xs, int32_t ys)
{
    if (n == 1) {
        return;
    }
    w->count *= n;
    if (w->ndim > 0 && w->xs[w->ndim - 1] == xs * n && w->ys[w->ndim - 1] == ys * n) {
        w->shape[w->ndim - 1] *= n;
        w->xs[w->ndim - 1] = xs;
        w->ys[w->ndim - 1] = ys;
        return;
    }
    w->shape[w->ndim] = n;
    w->xs[w->ndim] = xs;
    w->ys[w->ndim] = ys;
    w->ndim++;
}

static void plan(const mcud_view *x, const mcud_view *y, const int32_t *reduced, int32_t keepdims,
                 mcud_walk *outer, mcud_walk *inner)
{
    outer->ndim = inner->ndim = 0;
    outer->count = inner->count = 1;
    int32_t yd = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (reduced[d]) {
            walk_add(inner, x->shape[d], x->stride[d], 0);
            yd += keepdims;
        } else {
            walk_add(outer, x->shape[d], x->stride[d], y->stride[yd]);
            yd++;
        }
    }
}

/* One reduced run of n elements `stride` apart (the common case: every reduced dim merged). */
static int run_of(const mcud_walk *inner, int32_t *n, int32_t *stride)
{
    *n = inner->ndim ? inner->shape[0] : 1;
    *stride = inner->ndim ? inner->xs[0] : 1;
    return inner->ndim <= 1;
}

static float combine_f32(int32_t op, float acc, float v)
{
    switch (op) {
    case MCUD_REDUCE_MAX: return v > acc ? v : acc;
    case MCUD_REDUCE_MIN: return v < acc ? v : acc;
    case MCUD_REDUCE_L2: return acc + v * v;
    default: return acc + v;
    }
}

void mcud_reduce_f32(const mcud_view *x, const mcud_view *y, const mcud_reduce_f32_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    mcud_walk outer, inner;
    mcud_walk_pos o, r;
    int32_t n, s;
    plan(x, y, p->reduced, p->keepdims, &outer, &inner);
    const int flat = run_of(&inner, &n, &s);
    mcud_walk_start(&o, 0, 0);
    for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {
        const float *base = xd + o.xo;
        float acc = p->op == MCUD_REDUCE_L2 ? base[0] * base[0] : base[0];
        if (flat) {
            for (int32_t i = 1; i < n; i++) {
                acc = combine_f32(p->op, acc, base[i * s]);
            }
        } else {
            mcud_walk_start(&r, 0, 0);
            mcud_walk_step(&inner, &r);
            for (int32_t i = 1; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
                acc = combine_f32(p->op, acc, base[r.xo]);
            }
        }
        if (p->op == MCUD_REDUCE_MEAN) {
            acc = acc / (float)inner.count;
        } else if (p->op == MCUD_REDUCE_L2) {
            acc = sqrtf(acc);
        }
        yd[o.yo] = acc;
    }
}

/* Sum of n contiguous int8: four per load, each pair of bytes added by one SMLAD against (1, 1). */
static int32_t sum_s8_run(const int8_t *v, int32_t n)
{
    int32_t acc = 0, i = 0;
    const uint32_t ones = 0x00010001u;
    for (; i + 8 <= n; i += 8) {
        uint32_t a = mcud_load32(v + i), b = mcud_load32(v + i + 4);
        acc = mcud_smlad(mcud_sxtb16(a), ones, acc);
        acc = mcud_smlad(mcud_sxtb16_ror8(a), ones, acc);
        acc = mcud_smlad(mcud_sxtb16(b), ones, acc);
        acc = mcud_smlad(mcud_sxtb16_ror8(b), ones, acc);
    }
    for (; i < n; i++) {
        acc += v[i];
    }
    return acc;
}

void mcud_reduce_s8(const mcud_view *x, const mcud_view *y, const mcud_reduce_s8_params *p)
{
    const int8_t *xd = (const int8_t *)x->data;
    int8_t *yd = (int8_t *)y->data;
    mcud_walk outer, inner;
    mcud_walk_pos o, r;
    int32_t n, s;
    plan(x, y, p->reduced, p->keepdims, &outer, &inner);
    int flat = run_of(&inner, &n, &s);
    const int32_t zx = p->in_zero_point;
    mcud_walk_start(&o, 0, 0);
    for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {
        const int8_t *base = xd + o.xo;
        int32_t q;
        if (p->op == MCUD_REDUCE_SUM || p->op == MCUD_REDUCE_MEAN) {
            int32_t acc = 0;
            if (flat && s == 1) {
                acc = sum_s8_run(base, n);
            } else if (flat) {
                for (int32_t i = 0; i < n; i++) {
                    acc += base[i * s];
                }
            } else {
                mcud_walk_start(&r, 0, 0);
                for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {
                    acc += base[r.xo];
                }
            }
            q = mcud_requant(acc - zx * inner.count, p->mult, p->shift) + p->out_zero_point;
        } else if (p->op == MCUD_REDUCE_L2) {
            int64_t acc = 0;
            mcud_walk_start(&r, 0, 0);
            for (int32_t i = 0; i < inner.count; i++) {
                int32_t d = (int32_t)(flat ? base[i * s] : base[r.xo]) - zx;
                acc += (int64_t)(d * d);
                if (!flat) {
                    mcud_walk_step(&inner, &r);
                }
            }
            q = (int32_t)lrintf(sqrtf((float)acc) * p->ratio) + p->out_zero_point;
        } else {
            const int is_max = p->op == MCUD_REDUCE_MAX;
            int32_t m = is_max ? -128 : 127;
            mcud_walk_start(&r, 0, 0);
            for (int32_t i = 0; i < inner.count; i++) {
                int32_t v = flat ? base[i * s] : base[r.xo];
                m = is_max ? (v > m ? v : m) : (v < m ? v : m);
                if (!flat) {
                    mcud_walk_step(&inner, &r);
                }
            }
            q = p->requant ? mcud_requant(m - zx, p->mult, p->shift) + p->out_zero_point : m;
        }
        yd[o.yo] = (int8_t)mcud_clamp(q, p->act_min, p->act_max);
    }
}

/* Sum of n contiguous int16: two per load, added by one SMLAD against (1, 1) (wrapping, as TFLite). */
static int32_t sum_s16_run(const int16_t *v, int32_t n)
{
    int32_t acc = 0, i = 0;
    const uint32_t ones = 0x00010001u;
    for (; i + 4 <= n; i += 4) {
        acc = mcud_smlad(mcud_load32(v + i), ones, acc);
        acc = mcud_smlad(mcud_load32(v + i + 2), ones, acc);
    }
    for (; i < n; i++) {
        acc = (int32_t)((uint32_t)acc + (uint32_t)(int32_t)v[i]);
    }
    return acc;
}

/* TFLite's integer reductions (mcud_reduce_tfl_params): the sums in uint32 so that they wrap as TFLite's
 * int32 sums do, without the undefined behaviour of a signed overflow. */
#define REDUCE_TFL(NAME, T, LO, HI, RUN)                                                                \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_reduce_tfl_params *p)                  \
    {                                                                                                   \
        const T *xd = (const T *)x->data;                                                               \
        T *yd = (T *)y->data;                                                                           \
        mcud_walk outer, inner;                                                                         \
        mcud_walk_pos o, r;                                                                             \
        int32_t n, s;                                                                                   \
        plan(x, y, p->reduced, p->keepdims, &outer, &inner);                                            \
        const int flat = run_of(&inner, &n, &s);                                                        \
        const uint32_t offset = (uint32_t)p->in_zero_point * (uint32_t)inner.count;                     \
        mcud_walk_start(&o, 0, 0);                                                                      \
        for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {                         \
            const T *base = xd + o.xo;                                                                  \
            int32_t q;                                                                                  \
            if (p->op == MCUD_REDUCE_SUM || p->op == MCUD_REDUCE_MEAN) {                                \
                uint32_t acc = 0;                                                                       \
                if (flat && s == 1) {                                                                   \
                    acc = (uint32_t)RUN(base, n);                                                       \
                } else if (flat) {                                                                      \
                    for (int32_t i = 0; i < n; i++) {                                                   \
                        acc += (uint32_t)(int32_t)base[i * s];                                          \
                    }                                                                                   \
                } else {                                                                                \
                    mcud_walk_start(&r, 0, 0);                                                          \
                    for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {             \
                        acc += (uint32_t)(int32_t)base[r.xo];                                           \
                    }                                                                                   \
                }                                                                                       \
                q = mcud_requant_tfl((int32_t)(acc - offset), p->mult, p->shift) + p->out_zero_point;   \
            } else {                                                                                    \
                const int is_max = p->op == MCUD_REDUCE_MAX;                                            \
                int32_t m = is_max ? (LO) : (HI);                                                       \
                mcud_walk_start(&r, 0, 0);                                                              \
                for (int32_t i = 0; i < inner.count; i++) {                                             \
                    int32_t v = flat ? base[i * s] : base[r.xo];                                        \
                    m = is_max ? (v > m ? v : m) : (v < m ? v : m);                                     \
                    if (!flat) {                                                                        \
                        mcud_walk_step(&inner, &r);                                                     \
                    }                                                                                   \
                }                                                                                       \
                q = m;                                                                                  \
            }                                                                                           \
            yd[o.yo] = (T)mcud_clamp(q, p->act_min, p->act_max);                                        \
        }                                                                                               \
    }

REDUCE_TFL(mcud_reduce_s8_tfl, int8_t, -128, 127, sum_s8_run)
REDUCE_TFL(mcud_reduce_s16_tfl, int16_t, -32768, 32767, sum_s16_run)

/* Element offset of row-major index `flat` inside view v. */
static int32_t offset_of(const mcud_view *v, int32_t flat)
{
    int32_t off = 0;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        off += (flat % v->shape[d]) * v->stride[d];
        flat /= v->shape[d];
    }
    return off;
}

/* A piece of a cut Sum or Mean: its rows added to the running sum, in the whole reduction's order. */
#define REDUCE_PART(NAME, T, ACC, ADD)                                                                  \
    void NAME(const mcud_view *x, const mcud_view *before, const mcud_view *acc,                        \
              const mcud_reduce_part_params *p)                                                         \
    {                                                                                                   \
        const T *xd = (const T *)x->data;                                                               \
        ACC *ad = (ACC *)acc->data;                                                                     \
        const ACC *bd = before != NULL ? (const ACC *)before->data : NULL;                              \
        mcud_walk outer, inner;                                                                         \
        mcud_walk_pos o, r;                                                                             \
        plan(x, acc, p->reduced, 1, &outer, &inner);                                                    \
        mcud_walk_start(&o, 0, 0);                                                                      \
        for (int32_t k = 0; k < outer.count; k++, mcud_walk_step(&outer, &o)) {                         \
            ACC s = bd != NULL ? bd[offset_of(before, k)] : (ACC)0;                                     \
            mcud_walk_start(&r, 0, 0);                                                                  \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {                     \
                s = ADD(s, xd[o.xo + r.xo]);                                                            \
            }                                                                                           \
            ad[o.yo] = s;                                                                               \
        }                                                                                               \
    }

#define ADD_F32(s, v) ((s) + (v))
#define ADD_WRAP(s, v) ((int32_t)((uint32_t)(s) + (uint32_t)(int32_t)(v)))

REDUCE_PART(mcud_reduce_part_f32, float, float, ADD_F32)
REDUCE_PART(mcud_reduce_part_s8, int8_t, int32_t, ADD_WRAP)
REDUCE_PART(mcud_reduce_part_s16, int16_t, int32_t, ADD_WRAP)

void mcud_reduce_finish_f32(const mcud_view *acc, const mcud_view *y, const mcud_reduce_finish_params *p)
{
    const float *ad = (const float *)acc->data;
    float *yd = (float *)y->data;
    const int32_t n = mcud_numel(y);
    for (int32_t k = 0; k < n; k++) {
        float s = ad[offset_of(acc, k)];
        yd[offset_of(y, k)] = p->op == MCUD_REDUCE_MEAN ? s / (float)p->count : s;
    }
}

#define REDUCE_FINISH(NAME, T)                                                                          \
    void NAME(const mcud_view *acc, const mcud_view *y, const mcud_reduce_finish_params *p)             \
    {                                                                                                   \
        const int32_t *ad = (const int32_t *)acc->data;                                                 \
        T *yd = (T *)y->data;                                                                           \
        const int32_t n = mcud_numel(y);                                                                \
        const uint32_t offset = (uint32_t)p->in_zero_point * (uint32_t)p->count;                        \
        for (int32_t k = 0; k < n; k++) {                                                               \
            int32_t shifted = (int32_t)((uint32_t)ad[offset_of(acc, k)] - offset);                      \
            int32_t q = mcud_requant_tfl(shifted, p->mult, p->shift) + p->out_zero_point;               \
            yd[offset_of(y, k)] = (T)mcud_clamp(q, p->act_min, p->act_max);                             \
        }                                                                                               \
    }

REDUCE_FINISH(mcud_reduce_finish_s8_tfl, int8_t)
REDUCE_FINISH(mcud_reduce_finish_s16_tfl, int16_t)
