/* Matrix products on views. Every operand is read through its strides, so transposition is
 * only a swap of two strides and a piece of a split operator reads a slice in place. */
#include "mcud_gemm.h"
#include "mcud_dsp.h"

typedef struct {
    int32_t m, n, k;
    int32_t a_m, a_k, b_k, b_n, y_m, y_n; /* element strides of the matrix dimensions */
    int32_t batch_dims;                   /* leading dimensions of y that are batch */
    int32_t batches;
} mcud_gemm_shape;

static void gemm_shape(const mcud_view *a, const mcud_view *b, const mcud_view *y, int32_t trans_a,
                       int32_t trans_b, mcud_gemm_shape *s)
{
    int32_t na = a->ndim, nb = b->ndim;
    if (na == 1) {
        s->m = 1;
        s->k = a->shape[0];
        s->a_m = 0;
        s->a_k = a->stride[0];
    } else if (trans_a) {
        s->m = a->shape[na - 1];
        s->k = a->shape[na - 2];
        s->a_m = a->stride[na - 1];
        s->a_k = a->stride[na - 2];
    } else {
        s->m = a->shape[na - 2];
        s->k = a->shape[na - 1];
        s->a_m = a->stride[na - 2];
        s->a_k = a->stride[na - 1];
    }
    if (nb == 1) {
        s->n = 1;
        s->b_k = b->stride[0];
        s->b_n = 0;
    } else if (trans_b) {
        s->n = b->shape[nb - 2];
        s->b_k = b->stride[nb - 1];
        s->b_n = b->stride[nb - 2];
    } else {
        s->n = b->shape[nb - 1];
        s->b_k = b->stride[nb - 2];
        s->b_n = b->stride[nb - 1];
    }
    s->batch_dims = y->ndim - (na >= 2) - (nb >= 2);
    s->y_m = na >= 2 ? y->stride[s->batch_dims] : 0;
    s->y_n = nb >= 2 ? y->stride[y->ndim - 1] : 0;
    s->batches = 1;
    for (int32_t d = 0; d < s->batch_dims; d++) {
        s->batches *= y->shape[d];
    }
}

/* Offset of batch `flat` (row-major over y's batch dimensions) in a view whose batch
 * dimensions (all but its last `mat` ones) broadcast against y's. */
static int32_t batch_offset(const mcud_view *v, int32_t mat, const mcud_view *y, int32_t batch_dims, int32_t flat)
{
    int32_t own = v->ndim - mat;
    int32_t off = 0;
    for (int32_t d = batch_dims - 1; d >= 0 && flat > 0; d--) {
        int32_t i = flat % y->shape[d];
        int32_t vd = d - (batch_dims - own);
        flat /= y->shape[d];
        if (vd >= 0 && v->shape[vd] != 1) {
            off += i * v->stride[vd];
        }
    }
    return off;
}

static int32_t mat_dims(const mcud_view *v)
{
    return v->ndim >= 2 ? 2 : v->ndim;
}

void mcud_gemm_f32(const mcud_view *a, const mcud_view *b, const mcud_view *c, const mcud_view *y,
                   const mcud_gemm_f32_params *p)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    int32_t c_m = 0, c_n = 0;
    const float *cd = NULL;
    if (c != NULL) {
        cd = (const float *)c->data;
        if (c->ndim == 2) {
            c_m = c->shape[0] != 1 ? c->stride[0] : 0;
            c_n = c->shape[1] != 1 ? c->stride[1] : 0;
        } else if (c->ndim == 1) {
            c_n = c->shape[0] != 1 ? c->stride[0] : 0;
        }
    }
    for (int32_t t = 0; t < s.batches; t++) {
        const float *ad = (const float *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const float *bd = (const float *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        float *yd = (float *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        for (int32_t m = 0; m < s.m; m++) {
            for (int32_t n = 0; n < s.n; n++) {
                const float *pa = ad + m * s.a_m;
                const float *pb = bd + n * s.b_n;
                float acc = 0.0f;
                for (int32_t k = 0; k < s.k; k++) {
                    acc += *pa * *pb;
                    pa += s.a_k;
                    pb += s.b_k;
                }
                float v = p->alpha * acc;
                if (cd != NULL) {
                    v += p->beta * cd[m * c_m + n * c_n];
                }
                yd[m * s.y_m + n * s.y_n] = mcud_clampf(v, p->act_min, p->act_max);
            }
        }
    }
}

/* ---- int8 ---- */

static int32_t gemm_s8_out(int32_t acc, int32_t n, const mcud_gemm_s8_params *p)
{
    int32_t c = p->channels == 1 ? 0 : n;
    int32_t mult = p->mult[c], shift = p->shift[c], q;
    if (shift >= 33 && shift <= 62) {
        q = mcud_requant_hi(acc, mult, shift);
    } else {
        q = mcud_requant(acc, mult, shift);
    }
    return mcud_clamp(q + p->y_zero, p->act_min, p->act_max);
}

static int32_t gemm_s8_out_tfl(int32_t acc, int32_t n, const mcud_gemm_s8_params *p)
{
    int32_t c = p->channels == 1 ? 0 : n;
    int32_t mult = p->mult[c], shift = p->shift[c], q;
    if (shift >= 33 && shift <= 62) {
        q = mcud_requant_tfl_r(acc, mult, shift);
    } else {
        q = mcud_requant_tfl(acc, mult, shift);
    }
    return mcud_clamp(q + p->y_zero, p->act_min, p->act_max);
}

/* Where B[k, n] sits in the packed weights (see mcud_gemm.h). */
static int32_t gemm_s8_packed_offset(int32_t k, int32_t n, int32_t kk, int32_t nn)
{
    int32_t blocks = nn / 4, quads = kk / 4;
    if (n < 4 * blocks) {
        int32_t base = (n / 4) * 4 * kk, i = n % 4;
        if (k < 4 * quads) {
            return base + (k / 4) * 16 + i * 4 + k % 4;
        }
        return base + 16 * quads + (k - 4 * quads) * 4 + i;
    }
    return 4 * kk * blocks + (n - 4 * blocks) * ((kk + 3) & ~3) + k;
}

/* GCC's scheduling before register allocation hoists the loads of the next quads and spills the
 * accumulators for it (1.6 instructions per MAC instead of 1.44 on Cortex-M4). */
#if defined(__GNUC__) && !defined(__clang__)
#define MCUD_GEMM_NO_SCHED __attribute__((optimize("no-schedule-insns")))
#else
#define MCUD_GEMM_NO_SCHED
#endif

/* Four k of one row of A against the same four k of four packed columns, into s0..s3. */
#define GEMM_S8_QUAD(ap, wp)                                                   \
    do {                                                                       \
        uint32_t av_ = mcud_load32(ap);                                        \
        uint32_t ae_ = mcud_sxtb16(av_), ao_ = mcud_sxtb16_ror8(av_);          \
        uint32_t w0_ = mcud_load32(wp), w1_ = mcud_load32((wp) + 4);           \
        uint32_t w2_ = mcud_load32((wp) + 8), w3_ = mcud_load32((wp) + 12);    \
        s0 = mcud_smlad(mcud_sxtb16(w0_), ae_, s0);                            \
        s0 = mcud_smlad(mcud_sxtb16_ror8(w0_), ao_, s0);                       \
        s1 = mcud_smlad(mcud_sxtb16(w1_), ae_, s1);                            \
        s1 = mcud_smlad(mcud_sxtb16_ror8(w1_), ao_, s1);                       \
        s2 = mcud_smlad(mcud_sxtb16(w2_), ae_, s2);                            \
        s2 = mcud_smlad(mcud_sxtb16_ror8(w2_), ao_, s2);                       \
        s3 = mcud_smlad(mcud_sxtb16(w3_), ae_, s3);                            \
        s3 = mcud_smlad(mcud_sxtb16_ror8(w3_), ao_, s3);                       \
    } while (0)

/* One row of A (k contiguous) times packed B: four columns at a time, each 32-bit load of A
 * (a0..a3) giving the pairs (a0, a2) and (a1, a3) that meet the same halves of each column's
 * four weights in two SMLADs. */
/* the packed weights are word aligned (codegen aligns every constant array to 4): GCC may fetch two
 * columns' quads with one LDRD */
#if defined(__arm__) && defined(__GNUC__)
#define GEMM_PACKED(p) ((const int8_t *)__builtin_assume_aligned((p)->packed, 4))
#else
#define GEMM_PACKED(p) ((p)->packed)
#endif

/* One row for ONNX models (OUT = gemm_s8_out) and TFLite models (gemm_s8_out_tfl): one text, two functions. */
#define GEMM_S8_ROW(NAME, OUT) \
MCUD_GEMM_NO_SCHED static void NAME(const int8_t *a, int8_t *y, int32_t y_n, int32_t kk, int32_t nn, const mcud_gemm_s8_params *p)  \
{                                                                                                                                   \
    const int8_t *wp = GEMM_PACKED(p);                                                                                              \
    const int32_t quads = kk >> 2, tail = kk & 3;                                                                                   \
    int32_t n = 0;                                                                                                                  \
    for (; n + 4 <= nn; n += 4) {                                                                                                   \
        int32_t s0 = p->bias[n], s1 = p->bias[n + 1], s2 = p->bias[n + 2], s3 = p->bias[n + 3];                                     \
        const int8_t *ap = a;                                                                                                       \
        for (int32_t q = quads >> 1; q > 0; q--) {                                                                                  \
            GEMM_S8_QUAD(ap, wp);                                                                                                   \
            GEMM_S8_QUAD(ap + 4, wp + 16);                                                                                          \
            ap += 8;                                                                                                                \
            wp += 32;                                                                                                               \
        }                                                                                                                           \
        if (quads & 1) {                                                                                                            \
            GEMM_S8_QUAD(ap, wp);                                                                                                   \
            ap += 4;                                                                                                                \
            wp += 16;                                                                                                               \
        }                                                                                                                           \
        for (int32_t t = 0; t < tail; t++) {                                                                                        \
            int32_t av = ap[t];                                                                                                     \
            s0 += av * wp[0];                                                                                                       \
            s1 += av * wp[1];                                                                                                       \
            s2 += av * wp[2];                                                                                                       \
            s3 += av * wp[3];                                                                                                       \
            wp += 4;                                                                                                                \
        }                                                                                                                           \
        y[n * y_n] = (int8_t)OUT(s0, n, p);                                                                                         \
        y[(n + 1) * y_n] = (int8_t)OUT(s1, n + 1, p);                                                                               \
        y[(n + 2) * y_n] = (int8_t)OUT(s2, n + 2, p);                                                                               \
        y[(n + 3) * y_n] = (int8_t)OUT(s3, n + 3, p);                                                                               \
    }                                                                                                                               \
    const int8_t *wb = wp;                                                                                                          \
    for (; n < nn; n++) {                                                                                                           \
        int32_t s0 = p->bias[n];                                                                                                    \
        int32_t k = 0;                                                                                                              \
        for (; k + 4 <= kk; k += 4) {                                                                                               \
            uint32_t av = mcud_load32(a + k), w0 = mcud_load32(wb + k);                                                             \
            s0 = mcud_smlad(mcud_sxtb16(w0), mcud_sxtb16(av), s0);                                                                  \
            s0 = mcud_smlad(mcud_sxtb16_ror8(w0), mcud_sxtb16_ror8(av), s0);                                                        \
        }                                                                                                                           \
        for (; k < kk; k++) {                                                                                                       \
            s0 += (int32_t)a[k] * (int32_t)wb[k];                                                                                   \
        }                                                                                                                           \
        wb += (kk + 3) & ~3;                                                                                                        \
        y[n * y_n] = (int8_t)OUT(s0, n, p);                                                                                         \
    }                                                                                                                               \
}

GEMM_S8_ROW(gemm_s8_row, gemm_s8_out)
GEMM_S8_ROW(gemm_s8_row_tfl, gemm_s8_out_tfl)

#define GEMM_S8(NAME, ROW, OUT) \
void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p)             \
{                                                                                                               \
    /* B is 2-D, constant and packed: its extents come from A (K) and Y (N), a (K, N) view of them              \
     * stands in for b in the shape computation */                                                              \
    mcud_gemm_shape s;                                                                                          \
    mcud_view kn;                                                                                               \
    int32_t na = a->ndim;                                                                                       \
    (void)b;                                                                                                    \
    kn.data = NULL;                                                                                             \
    kn.ndim = 2;                                                                                                \
    kn.shape[0] = na == 1 ? a->shape[0] : a->shape[p->trans_a ? na - 2 : na - 1];                               \
    kn.shape[1] = y->shape[y->ndim - 1];                                                                        \
    kn.stride[0] = kn.shape[1];                                                                                 \
    kn.stride[1] = 1;                                                                                           \
    gemm_shape(a, &kn, y, p->trans_a, 0, &s);                                                                   \
    for (int32_t t = 0; t < s.batches; t++) {                                                                   \
        const int8_t *ad = (const int8_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);          \
        int8_t *yd = (int8_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);           \
        for (int32_t m = 0; m < s.m; m++) {                                                                     \
            const int8_t *pa = ad + m * s.a_m;                                                                  \
            int8_t *py = yd + m * s.y_m;                                                                        \
            if (s.a_k == 1) {                                                                                   \
                ROW(pa, py, s.y_n, s.k, s.n, p);                                                                \
                continue;                                                                                       \
            }                                                                                                   \
            for (int32_t n = 0; n < s.n; n++) { /* A through its strides (transA, a stepped view) */            \
                int32_t acc = p->bias[n];                                                                       \
                for (int32_t k = 0; k < s.k; k++) {                                                             \
                    acc += (int32_t)pa[k * s.a_k] * (int32_t)p->packed[gemm_s8_packed_offset(k, n, s.k, s.n)];  \
                }                                                                                               \
                py[n * s.y_n] = (int8_t)OUT(acc, n, p);                                                         \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
}

GEMM_S8(mcud_gemm_s8, gemm_s8_row, gemm_s8_out)
GEMM_S8(mcud_gemm_s8_tfl, gemm_s8_row_tfl, gemm_s8_out_tfl)
