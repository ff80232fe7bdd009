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

/* The requantization of one product: per column (channels = N) or one for all (channels = 1);
 * r > 0: one multiplier mult0 for all with its shift in [33, 62], r = shift - 32 and half = 2^(r-1)
 * computed once (mcud_requant_hi_r), which saves a third of the epilogue where K is small;
 * tfl_k (TFLite's rounding): every column's shift in [33, 62], so that each output takes one SMLAL
 * (mcud_requant_tfl_k) inline in the row loop (gemm_s8_out_k) rather than a call that tests the shift. */
typedef struct {
    int32_t channels;
    const int32_t *mult;
    const int32_t *shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
    int32_t r;
    int32_t half;
    int32_t mult0;
    int32_t tfl_k;
    const int32_t *rq2; /* mcud_gemm_s8_params.rq2 (TFLite models; NULL: mult and shift) */
    int32_t rq2_off;
} gemm_requant;

/* One output through rq2's three values k of its column: TFLite's requantization of the sum, as mcud_requant_tfl_2 of
 * twice it, or where the column is off that route (k[0] is 0) as mcud_requant_tfl_any, written out: through the call
 * GCC 12 compiled the four columns' epilogue an instruction longer (the autoencoder 432,160 -> 432,600). */
MCUD_INLINE int32_t gemm_s8_out_2(int32_t acc, const int32_t *k, const gemm_requant *p)
{
    if (p->rq2_off && k[0] == 0) {
        const int32_t q = k[2] >= 33 && k[2] <= 62 ? mcud_requant_tfl_r(acc, k[1], k[2])
                                                   : mcud_requant_tfl(acc, k[1], k[2]);
        return mcud_clamp(q + p->y_zero, p->act_min, p->act_max);
    }
    return mcud_clamp(mcud_requant_tfl_2(acc + acc, k[0], k[1], k[2]), p->act_min, p->act_max);
}

static int32_t gemm_s8_out(int32_t acc, int32_t n, const gemm_requant *p)
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

static int32_t gemm_s8_out_tfl(int32_t acc, int32_t n, const gemm_requant *p)
{
    int32_t c = p->channels == 1 ? 0 : n;
    if (p->rq2 != NULL) {
        return gemm_s8_out_2(acc, p->rq2 + 3 * c, p);
    }
    return mcud_clamp(mcud_requant_tfl_any(acc, p->mult[c], p->shift[c]) + p->y_zero, p->act_min, p->act_max);
}

/* 1 where each of the count shifts lies in [33, 62] (gemm_requant.tfl_k). */
static int32_t gemm_tfl_k(const int32_t *shift, int32_t count)
{
    for (int32_t c = 0; c < count; c++) {
        if (shift[c] < 33 || shift[c] > 62) {
            return 0;
        }
    }
    return 1;
}

/* gemm_s8_out_tfl of column c where p->tfl_k: mcud_requant_tfl_r without its call and its tests. */
MCUD_INLINE int32_t gemm_s8_out_k(int32_t acc, int32_t c, const gemm_requant *p)
{
    const int32_t shift = p->shift[c];
    const int32_t q = mcud_requant_tfl_k(acc, p->mult[c], (int32_t)1 << (shift - 33), shift - 32);
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

/* A's word at byte offset ao of ap and the four columns' words at offset wo of wp (16 bytes, word aligned) as five
 * 32-bit loads one after another: on the Cortex-M4 a load that follows a load takes one cycle, where GCC's LDRDs take
 * three each. The offsets are constants in the instructions, so the quads of one turn of the loop take no ADDs. */
#if MCUD_HAVE_DSP && defined(__GNUC__)
typedef struct {
    uint32_t w[4];
} __attribute__((__may_alias__)) gemm_quad16;
typedef uint32_t __attribute__((__may_alias__)) gemm_word;
#define GEMM_S8_LOAD5(av, w0, w1, w2, w3, ap, ao, wp, wo) \
    __asm__("ldr %0, [%5, #" #ao "]\n\t" \
            "ldr %1, [%6, #" #wo "]\n\t" \
            "ldr %2, [%6, #" #wo " + 4]\n\t" \
            "ldr %3, [%6, #" #wo " + 8]\n\t" \
            "ldr %4, [%6, #" #wo " + 12]" \
            : "=&r"(av), "=&r"(w0), "=&r"(w1), "=&r"(w2), "=r"(w3) \
            : "r"(ap), "r"(wp), "m"(*(const gemm_word *)(const void *)((ap) + (ao))), \
              "m"(*(const gemm_quad16 *)(const void *)((wp) + (wo))))
#else
#define GEMM_S8_LOAD5(av, w0, w1, w2, w3, ap, ao, wp, wo) \
    do { \
        (av) = mcud_load32((ap) + (ao)); \
        (w0) = mcud_load32((wp) + (wo)); \
        (w1) = mcud_load32((wp) + (wo) + 4); \
        (w2) = mcud_load32((wp) + (wo) + 8); \
        (w3) = mcud_load32((wp) + (wo) + 12); \
    } while (0)
#endif

/* The four columns' eight products of a quad of k (GEMM_S8_QUAD, GEMM_S8_QUAD16), each SXTB16 followed by the SMLAD
 * of the one before: the Cortex-M7 issues the two together (SXTB16 only as the first of a pair, one multiply-accumulate
 * a cycle), nine cycles where GCC's order of two SXTB16s then two SMLADs takes thirteen; the Cortex-M4 runs one at a
 * time either way. */
#if MCUD_HAVE_DSP && defined(__GNUC__) && defined(__OPTIMIZE__) /* unoptimized, GCC cannot find its eleven registers */
#define GEMM_S8_MAC16(S0, S1, S2, S3, W0, W1, W2, W3, AE, AO)   \
    do {                                                       \
        uint32_t t_;                                           \
        __asm__("sxtb16 %[t], %[w0]\n\t"                        \
                "sxtb16 %[w0], %[w0], ror #8\n\t"               \
                "smlad %[s0], %[t], %[ae], %[s0]\n\t"           \
                "sxtb16 %[t], %[w1]\n\t"                        \
                "smlad %[s0], %[w0], %[ao], %[s0]\n\t"          \
                "sxtb16 %[w1], %[w1], ror #8\n\t"               \
                "smlad %[s1], %[t], %[ae], %[s1]\n\t"           \
                "sxtb16 %[t], %[w2]\n\t"                        \
                "smlad %[s1], %[w1], %[ao], %[s1]\n\t"          \
                "sxtb16 %[w2], %[w2], ror #8\n\t"               \
                "smlad %[s2], %[t], %[ae], %[s2]\n\t"           \
                "sxtb16 %[t], %[w3]\n\t"                        \
                "smlad %[s2], %[w2], %[ao], %[s2]\n\t"          \
                "sxtb16 %[w3], %[w3], ror #8\n\t"               \
                "smlad %[s3], %[t], %[ae], %[s3]\n\t"           \
                "smlad %[s3], %[w3], %[ao], %[s3]"               \
                : [s0] "+r"(S0), [s1] "+r"(S1), [s2] "+r"(S2), [s3] "+r"(S3), [w0] "+r"(W0), [w1] "+r"(W1), \
                  [w2] "+r"(W2), [w3] "+r"(W3), [t] "=&r"(t_)                                              \
                : [ae] "r"(AE), [ao] "r"(AO));                                                              \
    } while (0)
#else
#define GEMM_S8_MAC16(s0, s1, s2, s3, w0, w1, w2, w3, ae, ao)   \
    do {                                                       \
        s0 = mcud_smlad(mcud_sxtb16(w0), ae, s0);              \
        s0 = mcud_smlad(mcud_sxtb16_ror8(w0), ao, s0);         \
        s1 = mcud_smlad(mcud_sxtb16(w1), ae, s1);              \
        s1 = mcud_smlad(mcud_sxtb16_ror8(w1), ao, s1);         \
        s2 = mcud_smlad(mcud_sxtb16(w2), ae, s2);              \
        s2 = mcud_smlad(mcud_sxtb16_ror8(w2), ao, s2);         \
        s3 = mcud_smlad(mcud_sxtb16(w3), ae, s3);              \
        s3 = mcud_smlad(mcud_sxtb16_ror8(w3), ao, s3);         \
    } while (0)
#endif

/* Four k of one row of A (at byte offset ao of ap) against the same four k of four packed columns (offset wo of
 * wp), into s0..s3, by MAC (GEMM_S8_MAC16, or GEMM_S8_MACP on paired weights). */
#define GEMM_S8_QUAD_BY(MAC, ap, ao, wp, wo)                                   \
    do {                                                                       \
        uint32_t av_, w0_, w1_, w2_, w3_;                                      \
        GEMM_S8_LOAD5(av_, w0_, w1_, w2_, w3_, ap, ao, wp, wo);                \
        uint32_t ae_ = mcud_sxtb16(av_), ao_ = mcud_sxtb16_ror8(av_);          \
        MAC(s0, s1, s2, s3, w0_, w1_, w2_, w3_, ae_, ao_);                    \
    } while (0)
#define GEMM_S8_QUAD(ap, ao, wp, wo) GEMM_S8_QUAD_BY(GEMM_S8_MAC16, ap, ao, wp, wo)

/* GEMM_S8_QUAD with A's four k already widened (gemm_s8_widen: its SXTB16 pair at byte offset xo of xp, 8 bytes): six
 * loads in a row, and two SXTB16s fewer per quad, which the Cortex-M7 issues one a cycle. */
#if MCUD_HAVE_DSP && defined(__GNUC__) && defined(__OPTIMIZE__)
typedef struct {
    uint32_t w[2];
} __attribute__((__may_alias__)) gemm_pair32;
#define GEMM_S8_LOAD6(ae, ao, w0, w1, w2, w3, xp, xo, wp, wo) \
    __asm__("ldr %0, [%6, #" #xo "]\n\t" \
            "ldr %1, [%6, #" #xo " + 4]\n\t" \
            "ldr %2, [%7, #" #wo "]\n\t" \
            "ldr %3, [%7, #" #wo " + 4]\n\t" \
            "ldr %4, [%7, #" #wo " + 8]\n\t" \
            "ldr %5, [%7, #" #wo " + 12]" \
            : "=&r"(ae), "=&r"(ao), "=&r"(w0), "=&r"(w1), "=&r"(w2), "=r"(w3) \
            : "r"(xp), "r"(wp), "m"(*(const gemm_pair32 *)(const void *)((xp) + (xo))), \
              "m"(*(const gemm_quad16 *)(const void *)((wp) + (wo))))
#else
#define GEMM_S8_LOAD6(ae, ao, w0, w1, w2, w3, xp, xo, wp, wo) \
    do { \
        (ae) = mcud_load32((xp) + (xo)); \
        (ao) = mcud_load32((xp) + (xo) + 4); \
        (w0) = mcud_load32((wp) + (wo)); \
        (w1) = mcud_load32((wp) + (wo) + 4); \
        (w2) = mcud_load32((wp) + (wo) + 8); \
        (w3) = mcud_load32((wp) + (wo) + 12); \
    } while (0)
#endif

#define GEMM_S8_QUAD16(xp, xo, wp, wo)                                         \
    do {                                                                       \
        uint32_t ae_, ao_, w0_, w1_, w2_, w3_;                                 \
        GEMM_S8_LOAD6(ae_, ao_, w0_, w1_, w2_, w3_, xp, xo, wp, wo);           \
        GEMM_S8_MAC16(s0, s1, s2, s3, w0_, w1_, w2_, w3_, ae_, ao_);          \
    } while (0)

/* GEMM_S8_QUAD16 on paired weights (the _a16p kernels): the words of columns (0, 1) and (2, 3), each k one
 * int16 256 b_odd + b_even. SMLAD of a word sums 256 x the odd column's products plus the even's (into s1, s3), SMLAD
 * of its SXTB16 the even's alone (s0, s2): one SXTB16 for every four products where GEMM_S8_MAC16 takes two, and
 * GEMM_S8_UNPAIR gives the odd columns' sums back. Each SXTB16 follows the SMLAD of the word it widens in place. */
#if MCUD_HAVE_DSP && defined(__GNUC__) && defined(__OPTIMIZE__)
#define GEMM_S8_MACP(S0, S1, S2, S3, W0, W1, W2, W3, AE, AO)   \
    __asm__("smlad %[s1], %[w0], %[ae], %[s1]\n\t"              \
            "sxtb16 %[w0], %[w0]\n\t"                          \
            "smlad %[s1], %[w1], %[ao], %[s1]\n\t"              \
            "sxtb16 %[w1], %[w1]\n\t"                          \
            "smlad %[s3], %[w2], %[ae], %[s3]\n\t"              \
            "sxtb16 %[w2], %[w2]\n\t"                          \
            "smlad %[s3], %[w3], %[ao], %[s3]\n\t"              \
            "sxtb16 %[w3], %[w3]\n\t"                          \
            "smlad %[s0], %[w0], %[ae], %[s0]\n\t"              \
            "smlad %[s0], %[w1], %[ao], %[s0]\n\t"              \
            "smlad %[s2], %[w2], %[ae], %[s2]\n\t"              \
            "smlad %[s2], %[w3], %[ao], %[s2]"                   \
            : [s0] "+r"(S0), [s1] "+r"(S1), [s2] "+r"(S2), [s3] "+r"(S3), [w0] "+r"(W0), [w1] "+r"(W1), \
              [w2] "+r"(W2), [w3] "+r"(W3)                                                              \
            : [ae] "r"(AE), [ao] "r"(AO))
#else
#define GEMM_S8_MACP(s0, s1, s2, s3, w0, w1, w2, w3, ae, ao)   \
    do {                                                       \
        s1 = mcud_smlad(w0, ae, s1);                           \
        s1 = mcud_smlad(w1, ao, s1);                           \
        s3 = mcud_smlad(w2, ae, s3);                           \
        s3 = mcud_smlad(w3, ao, s3);                           \
        s0 = mcud_smlad(mcud_sxtb16(w0), ae, s0);              \
        s0 = mcud_smlad(mcud_sxtb16(w1), ao, s0);              \
        s2 = mcud_smlad(mcud_sxtb16(w2), ae, s2);              \
        s2 = mcud_smlad(mcud_sxtb16(w3), ao, s2);              \
    } while (0)
#endif

/* GEMM_S8_QUAD on paired weights (the _p kernels): 19 instructions a quad where GEMM_S8_QUAD takes 23. */
#define GEMM_S8_PAIRQ(ap, ao, wp, wo) GEMM_S8_QUAD_BY(GEMM_S8_MACP, ap, ao, wp, wo)

#define GEMM_S8_PAIR16(xp, xo, wp, wo)                                         \
    do {                                                                       \
        uint32_t ae_, ao_, w0_, w1_, w2_, w3_;                                 \
        GEMM_S8_LOAD6(ae_, ao_, w0_, w1_, w2_, w3_, xp, xo, wp, wo);           \
        GEMM_S8_MACP(s0, s1, s2, s3, w0_, w1_, w2_, w3_, ae_, ao_);           \
    } while (0)

/* The odd columns' sums from GEMM_S8_MACP's: s1 (256 x the odd column's plus s0) less s0, over 256, exact where the
 * odd column's sum lies in 24 bits (mcudeploy/ops/gemm.py, pairs_fit). */
#define GEMM_S8_UNPAIR(s0, s1, s2, s3)                                         \
    do {                                                                       \
        s1 = (int32_t)((uint32_t)(s1) - (uint32_t)(s0)) >> 8;                  \
        s3 = (int32_t)((uint32_t)(s3) - (uint32_t)(s2)) >> 8;                  \
    } while (0)

/* Every quad of a row (left of them) into s0..s3, A read at P (moved past them: O1 bytes a quad, 4 for A's bytes, 8
 * for its widened pairs in x16; O2 and O3 twice and three times O1, literal offsets of the asm) and the packed
 * weights at wp (moved past them): STEP (GEMM_S8_QUAD, GEMM_S8_QUAD16, or on paired weights GEMM_S8_PAIRQ and
 * GEMM_S8_PAIR16) four quads a turn, then two and one as left has them. */
#define GEMM_S8_QUADS_ALL(STEP, P, O1, O2, O3)                                 \
    do {                                                                       \
        for (int32_t q = left >> 2; q > 0; q--) {                              \
            STEP(P, 0, wp, 0);                                                 \
            STEP(P, O1, wp, 16);                                               \
            STEP(P, O2, wp, 32);                                               \
            STEP(P, O3, wp, 48);                                               \
            P += 4 * (O1);                                                     \
            wp += 64;                                                          \
        }                                                                      \
        if (left & 2) {                                                        \
            STEP(P, 0, wp, 0);                                                 \
            STEP(P, O1, wp, 16);                                               \
            P += 2 * (O1);                                                     \
            wp += 32;                                                          \
        }                                                                      \
        if (left & 1) {                                                        \
            STEP(P, 0, wp, 0);                                                 \
            P += O1;                                                           \
            wp += 16;                                                          \
        }                                                                      \
    } while (0)

/* A row's quads widened once for every column (the _a16 kernels' scratch, 8 bytes a quad): k 4q.. as the pairs
 * (a0, a2), (a1, a3) that GEMM_S8_QUAD makes for each block of four columns. */
static void gemm_s8_widen(const int8_t *a, int32_t quads, uint32_t *x)
{
    for (int32_t q = 0; q < quads; q++) {
        const uint32_t v = mcud_load32(a + 4 * q);
        x[2 * q] = mcud_sxtb16(v);
        x[2 * q + 1] = mcud_sxtb16_ror8(v);
    }
}

#if MCUD_HAVE_MVE
/* Helium: sixteen k (four quads) of one row of A against the same k of four packed columns, into s0..s3, while
 * left (quads still to do) holds four or more. The 64 packed bytes are the four quads' 4 x 4 words column by
 * column, so VLD4's de-interleave of 32-bit words gives each column's sixteen k in order (val[c]: column c),
 * and one VMLADAVA a column does sixteen multiply-accumulates against A's sixteen bytes: the same products, the
 * same sum modulo 2^32 as the SMLADs. */
#define GEMM_S8_MVE16(ap, wp, left)                                                                       \
    for (; (left) >= 4; (left) -= 4, (ap) += 16, (wp) += 64) {                                          \
        const int8x16_t av_ = vldrbq_s8(ap);                                                             \
        const int32x4x4_t w_ = vld4q_s32((const int32_t *)(const void *)(wp));                           \
        s0 = vmladavaq_s8(s0, av_, vreinterpretq_s8_s32(w_.val[0]));                                     \
        s1 = vmladavaq_s8(s1, av_, vreinterpretq_s8_s32(w_.val[1]));                                     \
        s2 = vmladavaq_s8(s2, av_, vreinterpretq_s8_s32(w_.val[2]));                                     \
        s3 = vmladavaq_s8(s3, av_, vreinterpretq_s8_s32(w_.val[3]));                                     \
    }
#else
#define GEMM_S8_MVE16(ap, wp, left)
#endif

/* the packed weights are word aligned (codegen aligns every constant array to 4, matmul's scratch is
 * word aligned): GCC may fetch two columns' quads with one LDRD */
#if defined(__arm__) && defined(__GNUC__)
#define GEMM_PACKED(w) ((const int8_t *)__builtin_assume_aligned((w), 4))
#else
#define GEMM_PACKED(w) (w)
#endif

/* sum_k a[k] of one contiguous row */
static int32_t row_sum_s8(const int8_t *a, int32_t kk)
{
    int32_t sum = 0, k = 0;
    const uint32_t ones = 0x00010001u;
    for (; k + 4 <= kk; k += 4) {
        uint32_t v = mcud_load32(a + k);
        sum = mcud_smlad(mcud_sxtb16(v), ones, mcud_smlad(mcud_sxtb16_ror8(v), ones, sum));
    }
    for (; k < kk; k++) {
        sum += a[k];
    }
    return sum;
}

/* Four accumulators through the r > 0 requantization into py[0], py[y_n], .. . The constants are
 * read from p after the MAC loop, all before the first store (an int8 store may alias p): loaded
 * once per four outputs into registers the MAC loop has freed, where constants kept across
 * the loop live on the stack and are reloaded for every output. */
#define GEMM_S8_OUT4_R(py, y_n, s0, s1, s2, s3, p)                                                      \
    do {                                                                                                \
        const int32_t m_ = (p)->mult0, r_ = (p)->r, h_ = (p)->half, z_ = (p)->y_zero;                  \
        const int32_t lo_ = (p)->act_min, hi_ = (p)->act_max;                                           \
        const int32_t o0_ = mcud_clamp(mcud_requant_hi_r((s0), m_, r_, h_) + z_, lo_, hi_);             \
        const int32_t o1_ = mcud_clamp(mcud_requant_hi_r((s1), m_, r_, h_) + z_, lo_, hi_);             \
        const int32_t o2_ = mcud_clamp(mcud_requant_hi_r((s2), m_, r_, h_) + z_, lo_, hi_);             \
        const int32_t o3_ = mcud_clamp(mcud_requant_hi_r((s3), m_, r_, h_) + z_, lo_, hi_);             \
        (py)[0] = (int8_t)o0_;                                                                          \
        (py)[(y_n)] = (int8_t)o1_;                                                                      \
        (py)[2 * (y_n)] = (int8_t)o2_;                                                                  \
        (py)[3 * (y_n)] = (int8_t)o3_;                                                                  \
    } while (0)

/* Four accumulators of columns n.. through rq2 (gemm_s8_out_2) into py[0], py[y_n], .. : the four outputs before the
 * first store, as GEMM_S8_OUT4_R. Where sat (every column on the doubled route, the activation's range int8's: a
 * constant of the call) each output is mcud_requant_tfl_2 and one SSAT, with no tests: the autoencoder's layers; one:
 * a single multiplier for every column (p->channels is 1), hoisted out of the loop as sat. */
#define GEMM_S8_OUT4_2(py, y_n, s0, s1, s2, s3, n, p, sat, one)                                         \
    do {                                                                                                \
        const int32_t d_ = (one) ? 0 : 3;                                                               \
        const int32_t *k_ = (p)->rq2 + d_ * (n);                                                        \
        int32_t o0_, o1_, o2_, o3_;                                                                     \
        if ((sat) && (one)) { /* one multiplier for every column: its three values once */              \
            const int32_t m_ = k_[0], c_ = k_[1], r_ = k_[2];                                           \
            o0_ = mcud_sat8(mcud_requant_tfl_2((s0) + (s0), m_, c_, r_));                               \
            o1_ = mcud_sat8(mcud_requant_tfl_2((s1) + (s1), m_, c_, r_));                               \
            o2_ = mcud_sat8(mcud_requant_tfl_2((s2) + (s2), m_, c_, r_));                               \
            o3_ = mcud_sat8(mcud_requant_tfl_2((s3) + (s3), m_, c_, r_));                               \
        } else if (sat) {                                                                               \
            o0_ = mcud_sat8(mcud_requant_tfl_2((s0) + (s0), k_[0], k_[1], k_[2]));                      \
            o1_ = mcud_sat8(mcud_requant_tfl_2((s1) + (s1), k_[3], k_[4], k_[5]));                      \
            o2_ = mcud_sat8(mcud_requant_tfl_2((s2) + (s2), k_[6], k_[7], k_[8]));                      \
            o3_ = mcud_sat8(mcud_requant_tfl_2((s3) + (s3), k_[9], k_[10], k_[11]));                    \
        } else {                                                                                        \
            o0_ = gemm_s8_out_2((s0), k_, (p));                                                         \
            o1_ = gemm_s8_out_2((s1), k_ + d_, (p));                                                    \
            o2_ = gemm_s8_out_2((s2), k_ + 2 * d_, (p));                                                \
            o3_ = gemm_s8_out_2((s3), k_ + 3 * d_, (p));                                                \
        }                                                                                               \
        (py)[0] = (int8_t)o0_;                                                                          \
        (py)[(y_n)] = (int8_t)o1_;                                                                      \
        (py)[2 * (y_n)] = (int8_t)o2_;                                                                  \
        (py)[3 * (y_n)] = (int8_t)o3_;                                                                  \
    } while (0)

/* mm rows of A (k contiguous, rows a_m apart) times packed B: four columns at a time, each 32-bit
 * load of A (a0..a3) giving the pairs (a0, a2) and (a1, a3) that meet the same halves of each
 * column's four weights in two SMLADs. Column n of a row starts from bias[n] - b_zero * sum_k a[k]
 * (b_zero is 0 for constant weights, whose zero point is folded into bias). The rows are one call,
 * so the set-up is paid once, not per row: with a short K (attention's heads) it is a good part
 * of the work. One text, six functions: ONNX models' rounding (OUT = gemm_s8_out) and TFLite models'
 * (gemm_s8_out_tfl; p->r is 0 for TFLite models, whose products all have constant weights), each with A's rows as
 * they are (X16 0), widened once into x16 (1), widened and the weights paired (2: GEMM_S8_PAIR16), or as they are
 * and the weights paired (3: GEMM_S8_PAIRQ). */
#define GEMM_S8_ROWS(NAME, OUT, TFL, X16)                                                                \
MCUD_GEMM_NO_SCHED static void NAME(const int8_t *a, int32_t a_m, int8_t *y, int32_t y_m, int32_t y_n,  \
                                    int32_t mm, int32_t kk, int32_t nn, const int8_t *packed,             \
                                    const int32_t *bias, int32_t b_zero, const gemm_requant *p,          \
                                    uint32_t *x16)                                                       \
{                                                                                                        \
    const int32_t quads = kk >> 2, tail = kk & 3;                                                        \
    const int32_t rq2 = TFL && p->rq2 != NULL, one = p->channels == 1;                                   \
    const int32_t sat = rq2 && !p->rq2_off && p->act_min == -128 && p->act_max == 127;                   \
    const int32_t wide = X16 == 1 || X16 == 2, paired = X16 >= 2;                                        \
    (void)x16;                                                                                           \
    for (int32_t m = 0; m < mm; m++, a += a_m, y += y_m) {                                               \
        const int32_t bias_add = b_zero != 0 ? -b_zero * row_sum_s8(a, kk) : 0;                          \
        const int8_t *wp = GEMM_PACKED(packed);                                                          \
        int32_t n = 0;                                                                                   \
        if (wide) {                                                                                      \
            gemm_s8_widen(a, quads, x16);                                                                \
        }                                                                                                \
        for (; n + 4 <= nn; n += 4) {                                                                    \
            int32_t s0 = paired ? 0 : bias[n] + bias_add, s1 = paired ? 0 : bias[n + 1] + bias_add,      \
                    s2 = paired ? 0 : bias[n + 2] + bias_add, s3 = paired ? 0 : bias[n + 3] + bias_add;  \
            const int8_t *ap = a;                                                                        \
            int32_t left = quads;                                                                        \
            if (wide) {                                                                                  \
                const uint8_t *xp = (const uint8_t *)x16;                                                \
                if (paired) {                                                                            \
                    GEMM_S8_QUADS_ALL(GEMM_S8_PAIR16, xp, 8, 16, 24);                                    \
                } else {                                                                                 \
                    GEMM_S8_QUADS_ALL(GEMM_S8_QUAD16, xp, 8, 16, 24);                                    \
                }                                                                                        \
                ap += 4 * quads;                                                                         \
                left = 0;                                                                                \
            } else if (paired) {                                                                         \
                GEMM_S8_QUADS_ALL(GEMM_S8_PAIRQ, ap, 4, 8, 12);                                          \
                left = 0;                                                                                \
            } else {                                                                                     \
                GEMM_S8_MVE16(ap, wp, left)                                                              \
            }                                                                                            \
            if (paired) {                                                                                \
                GEMM_S8_UNPAIR(s0, s1, s2, s3);                                                          \
                s0 += bias[n] + bias_add;                                                                \
                s1 += bias[n + 1] + bias_add;                                                            \
                s2 += bias[n + 2] + bias_add;                                                            \
                s3 += bias[n + 3] + bias_add;                                                            \
            }                                                                                            \
            GEMM_S8_QUADS_ALL(GEMM_S8_QUAD, ap, 4, 8, 12);                                               \
            for (int32_t t = 0; t < tail; t++) {                                                         \
                int32_t av = ap[t];                                                                      \
                s0 += av * wp[0];                                                                        \
                s1 += av * wp[1];                                                                        \
                s2 += av * wp[2];                                                                        \
                s3 += av * wp[3];                                                                        \
                wp += 4;                                                                                 \
            }                                                                                            \
            int8_t *py = y + n * y_n;                                                                    \
            if (rq2) {                                                                                   \
                GEMM_S8_OUT4_2(py, y_n, s0, s1, s2, s3, n, p, sat, one);                                 \
                continue;                                                                                \
            }                                                                                            \
            if (p->r > 0) {                                                                              \
                GEMM_S8_OUT4_R(py, y_n, s0, s1, s2, s3, p);                                              \
                continue;                                                                                \
            }                                                                                            \
            if (TFL && p->tfl_k) {                                                                       \
                const int32_t c_ = p->channels == 1 ? 0 : n, d_ = p->channels == 1 ? 0 : 1;              \
                py[0] = (int8_t)gemm_s8_out_k(s0, c_, p);                                                \
                py[y_n] = (int8_t)gemm_s8_out_k(s1, c_ + d_, p);                                         \
                py[2 * y_n] = (int8_t)gemm_s8_out_k(s2, c_ + 2 * d_, p);                                 \
                py[3 * y_n] = (int8_t)gemm_s8_out_k(s3, c_ + 3 * d_, p);                                 \
                continue;                                                                                \
            }                                                                                            \
            py[0] = (int8_t)OUT(s0, n, p);                                                               \
            py[y_n] = (int8_t)OUT(s1, n + 1, p);                                                         \
            py[2 * y_n] = (int8_t)OUT(s2, n + 2, p);                                                     \
            py[3 * y_n] = (int8_t)OUT(s3, n + 3, p);                                                     \
        }                                                                                                \
        const int8_t *wb = wp;                                                                           \
        const int32_t kpad = (kk + 3) & ~3;                                                              \
        for (; wide && n + 2 <= nn; n += 2) { /* two last columns at a time, A's widened pairs loaded once */ \
            int32_t s0 = bias[n] + bias_add, s1 = bias[n + 1] + bias_add;                                \
            const int8_t *wc = wb + kpad;                                                                \
            for (int32_t q = 0; q < quads; q++) {                                                        \
                const uint32_t ae = x16[2 * q], ao = x16[2 * q + 1];                                     \
                const uint32_t w0 = mcud_load32(wb + 4 * q), w1 = mcud_load32(wc + 4 * q);               \
                s0 = mcud_smlad(mcud_sxtb16(w0), ae, s0);                                                \
                s0 = mcud_smlad(mcud_sxtb16_ror8(w0), ao, s0);                                           \
                s1 = mcud_smlad(mcud_sxtb16(w1), ae, s1);                                                \
                s1 = mcud_smlad(mcud_sxtb16_ror8(w1), ao, s1);                                           \
            }                                                                                            \
            for (int32_t k = 4 * quads; k < kk; k++) {                                                   \
                s0 += (int32_t)a[k] * (int32_t)wb[k];                                                    \
                s1 += (int32_t)a[k] * (int32_t)wc[k];                                                    \
            }                                                                                            \
            wb = wc + kpad;                                                                              \
            y[n * y_n] = (int8_t)OUT(s0, n, p);                                                          \
            y[(n + 1) * y_n] = (int8_t)OUT(s1, n + 1, p);                                                \
        }                                                                                                \
        for (; n < nn; n++) {                                                                            \
            int32_t s0 = bias[n] + bias_add;                                                             \
            int32_t k = 0;                                                                               \
            for (; wide && k + 4 <= kk; k += 4) {                                                         \
                const uint32_t w0 = mcud_load32(wb + k);                                                 \
                s0 = mcud_smlad(mcud_sxtb16(w0), x16[k >> 1], s0);                                       \
                s0 = mcud_smlad(mcud_sxtb16_ror8(w0), x16[(k >> 1) + 1], s0);                            \
            }                                                                                            \
            for (; k + 4 <= kk; k += 4) {                                                                \
                uint32_t av = mcud_load32(a + k), w0 = mcud_load32(wb + k);                              \
                s0 = mcud_smlad(mcud_sxtb16(w0), mcud_sxtb16(av), s0);                                   \
                s0 = mcud_smlad(mcud_sxtb16_ror8(w0), mcud_sxtb16_ror8(av), s0);                         \
            }                                                                                            \
            for (; k < kk; k++) {                                                                        \
                s0 += (int32_t)a[k] * (int32_t)wb[k];                                                    \
            }                                                                                            \
            wb += kpad;                                                                                  \
            y[n * y_n] = (int8_t)OUT(s0, n, p);                                                          \
        }                                                                                                \
    }                                                                                                    \
}

GEMM_S8_ROWS(gemm_s8_rows, gemm_s8_out, 0, 0)
GEMM_S8_ROWS(gemm_s8_rows_tfl, gemm_s8_out_tfl, 1, 0)
GEMM_S8_ROWS(gemm_s8_rows_a16, gemm_s8_out, 0, 1)
GEMM_S8_ROWS(gemm_s8_rows_tfl_a16, gemm_s8_out_tfl, 1, 1)
GEMM_S8_ROWS(gemm_s8_rows_a16p, gemm_s8_out, 0, 2)
GEMM_S8_ROWS(gemm_s8_rows_tfl_a16p, gemm_s8_out_tfl, 1, 2)
GEMM_S8_ROWS(gemm_s8_rows_p, gemm_s8_out, 0, 3)
GEMM_S8_ROWS(gemm_s8_rows_tfl_p, gemm_s8_out_tfl, 1, 3)

/* B[k, n] of the packed weights, paired or not (see mcud_gemm.h): a paired quad's k of an even column is its word's
 * low byte, of an odd column (the int16 less that byte) over 256. */
static int32_t gemm_s8_packed_at(const int8_t *packed, int32_t paired, int32_t k, int32_t n, int32_t kk, int32_t nn)
{
    if (!paired || n >= 4 * (nn / 4) || k >= 4 * (kk / 4)) {
        return packed[gemm_s8_packed_offset(k, n, kk, nn)];
    }
    const int8_t *h = packed + (n / 4) * 4 * kk + (k / 4) * 16 + (n & 2) * 4 + (k & 1) * 4 + (k & 2);
    const int32_t even = h[0];
    if (!(n & 1)) {
        return even;
    }
    return ((int32_t)(int16_t)(uint16_t)((uint32_t)(uint8_t)h[0] | ((uint32_t)(uint8_t)h[1] << 8)) - even) >> 8;
}

#define GEMM_S8(NAME, ROWS, ROWSP, ROWS16, ROWS16P, OUT, TFL)                                                    \
/* The four entry points' one text, inlined into each with widened (x16 holds the scratch) and paired constants, so \
 * that each links only the row kernel it runs (gc-sections). */                                                   \
static inline __attribute__((always_inline)) void NAME##_run(const mcud_view *a, const mcud_view *y,             \
                                                             const mcud_gemm_s8_params *p, uint32_t *x16,         \
                                                             int32_t widened, int32_t paired)                     \
{                                                                                                               \
    /* B is 2-D, constant and packed: its extents come from A (K) and Y (N), a (K, N) view of them              \
     * stands in for b in the shape computation */                                                              \
    mcud_gemm_shape s;                                                                                          \
    mcud_view kn;                                                                                               \
    int32_t na = a->ndim;                                                                                       \
    kn.data = NULL;                                                                                             \
    kn.ndim = 2;                                                                                                \
    kn.shape[0] = na == 1 ? a->shape[0] : a->shape[p->trans_a ? na - 2 : na - 1];                               \
    kn.shape[1] = y->shape[y->ndim - 1];                                                                        \
    kn.stride[0] = kn.shape[1];                                                                                 \
    kn.stride[1] = 1;                                                                                           \
    gemm_shape(a, &kn, y, p->trans_a, 0, &s);                                                                   \
    const int32_t tfl_k_ = TFL && p->rq2 == NULL && gemm_tfl_k(p->shift, p->channels == 1 ? 1 : kn.shape[1]);   \
    const gemm_requant rq = {p->channels, p->mult, p->shift, p->y_zero, p->act_min, p->act_max, 0, 0, 0, tfl_k_, \
                             p->rq2, p->rq2_off};                                                               \
    for (int32_t t = 0; t < s.batches; t++) {                                                                   \
        const int8_t *ad = (const int8_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);          \
        int8_t *yd = (int8_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);           \
        if (s.a_k == 1 && widened && paired) {                                                                  \
            ROWS16P(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, p->packed, p->bias, 0, &rq, x16);               \
            continue;                                                                                           \
        }                                                                                                       \
        if (s.a_k == 1 && widened) {                                                                            \
            ROWS16(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, p->packed, p->bias, 0, &rq, x16);                \
            continue;                                                                                           \
        }                                                                                                       \
        if (s.a_k == 1 && paired) {                                                                             \
            ROWSP(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, p->packed, p->bias, 0, &rq, NULL);                \
            continue;                                                                                           \
        }                                                                                                       \
        if (s.a_k == 1) {                                                                                       \
            ROWS(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, p->packed, p->bias, 0, &rq, NULL);                 \
            continue;                                                                                           \
        }                                                                                                       \
        for (int32_t m = 0; m < s.m; m++) {                                                                     \
            const int8_t *pa = ad + m * s.a_m;                                                                  \
            int8_t *py = yd + m * s.y_m;                                                                        \
            for (int32_t n = 0; n < s.n; n++) { /* A through its strides (transA, a stepped view) */            \
                int32_t acc = p->bias[n];                                                                       \
                for (int32_t k = 0; k < s.k; k++) {                                                             \
                    acc += (int32_t)pa[k * s.a_k] * gemm_s8_packed_at(p->packed, paired, k, n, s.k, s.n);       \
                }                                                                                               \
                py[n * s.y_n] = (int8_t)OUT(acc, n, &rq);                                                       \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
}                                                                                                               \
                                                                                                                \
void NAME(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p)             \
{                                                                                                               \
    (void)b;                                                                                                    \
    NAME##_run(a, y, p, NULL, 0, 0);                                                                            \
}                                                                                                               \
                                                                                                                \
void NAME##_p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p)          \
{                                                                                                               \
    (void)b;                                                                                                    \
    NAME##_run(a, y, p, NULL, 0, 1);                                                                            \
}                                                                                                               \
                                                                                                                \
void NAME##_a16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,       \
                void *scratch)                                                                                  \
{                                                                                                               \
    (void)b;                                                                                                    \
    NAME##_run(a, y, p, (uint32_t *)scratch, 1, 0);                                                             \
}                                                                                                               \
                                                                                                                \
void NAME##_a16p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,      \
                 void *scratch)                                                                                 \
{                                                                                                               \
    (void)b;                                                                                                    \
    NAME##_run(a, y, p, (uint32_t *)scratch, 1, 1);                                                             \
}

GEMM_S8(mcud_gemm_s8, gemm_s8_rows, gemm_s8_rows_p, gemm_s8_rows_a16, gemm_s8_rows_a16p, gemm_s8_out, 0)
GEMM_S8(mcud_gemm_s8_tfl, gemm_s8_rows_tfl, gemm_s8_rows_tfl_p, gemm_s8_rows_tfl_a16, gemm_s8_rows_tfl_a16p,
        gemm_s8_out_tfl, 1)

/* ---- int8, both operands activations ---- */

/* B of one batch (K x N, through its strides) in pack_weights's order, into `packed`; col[n] gets
 * -a_zero * sum_k B[k, n] + K * a_zero * b_zero. */
static void matmul_s8_pack(const int8_t *b, int32_t b_k, int32_t b_n, int32_t kk, int32_t nn, int32_t a_zero,
                           int32_t b_zero, int8_t *packed, int32_t *col)
{
    const int32_t quads = kk >> 2, k4 = (kk + 3) & ~3, blocks = nn >> 2;
    int8_t *w = packed;
    for (int32_t j = 0; j < blocks && b_n == 1; j++) {
        /* B's rows hold N contiguous: each k-quad of four columns is four words, transposed as 4x4 bytes */
        const int8_t *bc = b + 4 * j;
        for (int32_t q = 0; q < quads; q++) {
            const int8_t *bq = bc + 4 * q * b_k;
            uint32_t r0 = mcud_load32(bq), r1 = mcud_load32(bq + b_k);
            uint32_t r2 = mcud_load32(bq + 2 * b_k), r3 = mcud_load32(bq + 3 * b_k);
            uint32_t t0 = (r0 & 0x00ff00ffu) | ((r1 & 0x00ff00ffu) << 8);   /* r0[0] r1[0] r0[2] r1[2] */
            uint32_t t1 = ((r0 >> 8) & 0x00ff00ffu) | (r1 & 0xff00ff00u);   /* r0[1] r1[1] r0[3] r1[3] */
            uint32_t t2 = (r2 & 0x00ff00ffu) | ((r3 & 0x00ff00ffu) << 8);
            uint32_t t3 = ((r2 >> 8) & 0x00ff00ffu) | (r3 & 0xff00ff00u);
            mcud_store32(w, mcud_pkhbt(t0, t2));
            mcud_store32(w + 4, mcud_pkhbt(t1, t3));
            mcud_store32(w + 8, mcud_pkhtb(t0, t2));
            mcud_store32(w + 12, mcud_pkhtb(t1, t3));
            w += 16;
        }
        for (int32_t k = 4 * quads; k < kk; k++) {
            mcud_store32(w, mcud_load32(bc + k * b_k));
            w += 4;
        }
    }
    for (int32_t j = 0; j < blocks && b_n != 1; j++) {
        const int8_t *bc = b + 4 * j * b_n;
        for (int32_t q = 0; q < quads; q++) {
            for (int32_t i = 0; i < 4; i++) {
                const int8_t *bq = bc + i * b_n + 4 * q * b_k;
                w[0] = bq[0];
                w[1] = bq[b_k];
                w[2] = bq[2 * b_k];
                w[3] = bq[3 * b_k];
                w += 4;
            }
        }
        for (int32_t k = 4 * quads; k < kk; k++) {
            for (int32_t i = 0; i < 4; i++) {
                *w++ = bc[i * b_n + k * b_k];
            }
        }
    }
    for (int32_t n = 4 * blocks; n < nn; n++) {
        for (int32_t k = 0; k < k4; k++) {
            *w++ = k < kk ? b[n * b_n + k * b_k] : 0;
        }
    }
    /* column sums from the packed bytes: every word holds four k of one column (pad bytes are 0) */
    const uint32_t ones = 0x00010001u;
    const int8_t *wp = packed;
    const int32_t base = kk * a_zero * b_zero;
    for (int32_t j = 0; j < blocks; j++) {
        int32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
        for (int32_t q = 0; q < quads; q++) {
            uint32_t w0 = mcud_load32(wp), w1 = mcud_load32(wp + 4), w2 = mcud_load32(wp + 8);
            uint32_t w3 = mcud_load32(wp + 12);
            c0 = mcud_smlad(mcud_sxtb16(w0), ones, mcud_smlad(mcud_sxtb16_ror8(w0), ones, c0));
            c1 = mcud_smlad(mcud_sxtb16(w1), ones, mcud_smlad(mcud_sxtb16_ror8(w1), ones, c1));
            c2 = mcud_smlad(mcud_sxtb16(w2), ones, mcud_smlad(mcud_sxtb16_ror8(w2), ones, c2));
            c3 = mcud_smlad(mcud_sxtb16(w3), ones, mcud_smlad(mcud_sxtb16_ror8(w3), ones, c3));
            wp += 16;
        }
        for (int32_t k = 4 * quads; k < kk; k++) {
            c0 += wp[0];
            c1 += wp[1];
            c2 += wp[2];
            c3 += wp[3];
            wp += 4;
        }
        col[4 * j] = base - a_zero * c0;
        col[4 * j + 1] = base - a_zero * c1;
        col[4 * j + 2] = base - a_zero * c2;
        col[4 * j + 3] = base - a_zero * c3;
    }
    for (int32_t n = 4 * blocks; n < nn; n++) {
        int32_t sum = 0;
        for (int32_t k = 0; k < k4; k += 4) {
            uint32_t w0 = mcud_load32(wp + k);
            sum = mcud_smlad(mcud_sxtb16(w0), ones, mcud_smlad(mcud_sxtb16_ror8(w0), ones, sum));
        }
        wp += k4;
        col[n] = base - a_zero * sum;
    }
}

/* a[k] - a_zero (|.| < 2^8, so a 16-bit half) times four columns of B's row k, into s0..s3 */
#define MATMUL_S8_BN1_K(pa, pb)                                                  \
    do {                                                                         \
        const uint32_t av_ = (uint32_t)(*(pa) - a_zero);                         \
        const uint32_t w_ = mcud_load32(pb);                                     \
        const uint32_t we_ = mcud_sxtb16(w_), wo_ = mcud_sxtb16_ror8(w_);        \
        s0 = mcud_smlabb(we_, av_, s0);                                          \
        s1 = mcud_smlabb(wo_, av_, s1);                                          \
        s2 = mcud_smlatb(we_, av_, s2);                                          \
        s3 = mcud_smlatb(wo_, av_, s3);                                          \
    } while (0)

/* Without scratch (or with A's rows strided), where B's rows hold N contiguous (attention's K^T and V
 * as a Transpose leaves them): four columns of one row of A at a time, each 32-bit load of B's row k
 * giving four columns' b, each times a[k] - a_zero in a 16 x 16 multiply-accumulate (SMLABB, SMLATB);
 * -b_zero sum_k (a[k] - a_zero) once per row makes the sum that of (a - a_zero)(b - b_zero). */
static void matmul_s8_rows_bn1(const int8_t *a, int32_t a_m, int32_t a_k, const int8_t *b, int32_t b_k, int8_t *y,
                               int32_t y_m, int32_t y_n, int32_t mm, int32_t kk, int32_t nn, int32_t a_zero,
                               int32_t b_zero, const gemm_requant *p)
{
    for (int32_t m = 0; m < mm; m++, a += a_m, y += y_m) {
        int32_t sum_a = 0;
        for (int32_t k = 0; k < kk; k++) {
            sum_a += a[k * a_k] - a_zero;
        }
        const int32_t row = -b_zero * sum_a;
        int32_t n = 0;
        for (; n + 4 <= nn; n += 4) {
            int32_t s0 = row, s1 = row, s2 = row, s3 = row;
            const int8_t *pa = a, *pb = b + n;
            for (int32_t k = kk >> 1; k > 0; k--) {
                MATMUL_S8_BN1_K(pa, pb);
                MATMUL_S8_BN1_K(pa + a_k, pb + b_k);
                pa += 2 * a_k;
                pb += 2 * b_k;
            }
            if (kk & 1) {
                MATMUL_S8_BN1_K(pa, pb);
            }
            int8_t *py = y + n * y_n;
            if (p->r > 0) {
                GEMM_S8_OUT4_R(py, y_n, s0, s1, s2, s3, p);
                continue;
            }
            py[0] = (int8_t)gemm_s8_out(s0, n, p);
            py[y_n] = (int8_t)gemm_s8_out(s1, n + 1, p);
            py[2 * y_n] = (int8_t)gemm_s8_out(s2, n + 2, p);
            py[3 * y_n] = (int8_t)gemm_s8_out(s3, n + 3, p);
        }
        for (; n < nn; n++) {
            int32_t acc = row;
            for (int32_t k = 0; k < kk; k++) {
                acc += (a[k * a_k] - a_zero) * (int32_t)b[k * b_k + n];
            }
            y[n * y_n] = (int8_t)gemm_s8_out(acc, n, p);
        }
    }
}

void mcud_matmul_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p,
                    void *scratch)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    const int32_t one_mult[1] = {p->mult}, one_shift[1] = {p->shift};
    const int32_t r = p->shift >= 33 && p->shift <= 62 ? p->shift - 32 : 0;
    const gemm_requant rq = {1, one_mult, one_shift, p->y_zero, p->act_min, p->act_max, r,
                             r > 0 ? (int32_t)1 << (r - 1) : 0, p->mult, 0, NULL, 0};
    /* the packed rows need A's rows contiguous; otherwise (or without scratch) B's contiguous rows or the plain loop */
    const int32_t packs = scratch != NULL && s.a_k == 1;
    int8_t *packed = (int8_t *)scratch;
    int32_t *col = NULL;
    if (packs) { /* the packed B (K rounded up to 4, times N: a multiple of 4 bytes), then N int32 */
        col = (int32_t *)(void *)(packed + ((s.k + 3) & ~3) * s.n);
    }
    for (int32_t t = 0; t < s.batches; t++) {
        const int8_t *ad = (const int8_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const int8_t *bd = (const int8_t *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        int8_t *yd = (int8_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        if (packs) {
            matmul_s8_pack(bd, s.b_k, s.b_n, s.k, s.n, p->a_zero, p->b_zero, packed, col);
            gemm_s8_rows(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, packed, col, p->b_zero, &rq, NULL);
            continue;
        }
        if (s.b_n == 1 && s.n > 1) {
            matmul_s8_rows_bn1(ad, s.a_m, s.a_k, bd, s.b_k, yd, s.y_m, s.y_n, s.m, s.k, s.n, p->a_zero, p->b_zero, &rq);
            continue;
        }
        for (int32_t m = 0; m < s.m; m++) {
            const int8_t *pa = ad + m * s.a_m;
            int8_t *py = yd + m * s.y_m;
            for (int32_t n = 0; n < s.n; n++) {
                const int8_t *pb = bd + n * s.b_n;
                int32_t acc = 0;
                for (int32_t k = 0; k < s.k; k++) {
                    acc += ((int32_t)pa[k * s.a_k] - p->a_zero) * ((int32_t)pb[k * s.b_k] - p->b_zero);
                }
                py[n * s.y_n] = (int8_t)gemm_s8_out(acc, n, &rq);
            }
        }
    }
}

/* The same without working memory (offload.fit_scratch chose it where the scratch would raise the peak). */
void mcud_matmul_s8_direct(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p)
{
    mcud_matmul_s8(a, b, y, p, NULL);
}

/* TFLite's BATCH_MATMUL of two int8 activations: mcud_matmul_s8's arithmetic with TFLite's rounding (no
 * single-multiplier shortcut: r = 0); with scratch the same packed rows, else the plain loop. */
void mcud_matmul_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p,
                        void *scratch)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    const int32_t one_mult[1] = {p->mult}, one_shift[1] = {p->shift};
    const gemm_requant rq = {1, one_mult, one_shift, p->y_zero, p->act_min, p->act_max, 0, 0, p->mult,
                             gemm_tfl_k(one_shift, 1), NULL, 0};
    const int32_t packs = scratch != NULL && s.a_k == 1;
    int8_t *packed = (int8_t *)scratch;
    int32_t *col = NULL;
    if (packs) {
        col = (int32_t *)(void *)(packed + ((s.k + 3) & ~3) * s.n);
    }
    for (int32_t t = 0; t < s.batches; t++) {
        const int8_t *ad = (const int8_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const int8_t *bd = (const int8_t *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        int8_t *yd = (int8_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        if (packs) {
            matmul_s8_pack(bd, s.b_k, s.b_n, s.k, s.n, p->a_zero, p->b_zero, packed, col);
            gemm_s8_rows_tfl(ad, s.a_m, yd, s.y_m, s.y_n, s.m, s.k, s.n, packed, col, p->b_zero, &rq, NULL);
            continue;
        }
        for (int32_t m = 0; m < s.m; m++) {
            const int8_t *pa = ad + m * s.a_m;
            int8_t *py = yd + m * s.y_m;
            for (int32_t n = 0; n < s.n; n++) {
                const int8_t *pb = bd + n * s.b_n;
                int32_t acc = 0;
                for (int32_t k = 0; k < s.k; k++) {
                    acc += ((int32_t)pa[k * s.a_k] - p->a_zero) * ((int32_t)pb[k * s.b_k] - p->b_zero);
                }
                py[n * s.y_n] = (int8_t)gemm_s8_out_tfl(acc, n, &rq);
            }
        }
    }
}

void mcud_matmul_s8_direct_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                               const mcud_matmul_s8_params *p)
{
    mcud_matmul_s8_tfl(a, b, y, p, NULL);
}

/* ---- 16x8 and int16 (TFLite) ---- */

/* Element (n, k) of the packed weights: row n of kpad bytes, each four as (k0, k2, k1, k3). */
static inline int32_t gemm_s16_w(const mcud_gemm_s16_params *p, int32_t n, int32_t k)
{
    static const uint8_t at[4] = {0, 2, 1, 3};
    return p->w[n * p->kpad + (k & ~3) + at[k & 3]];
}

/* Row a (k contiguous) against packed columns n0 and n1 (the same one when n1 is absent): the quads of A's
 * int16 pairs meet SXTB16's pairs of weights in dual multiply-accumulates (SMLALD, or SMLAD for an int32
 * sum that wraps), the K % 4 last taps one by one. */
#define GEMM_S16_DOT2(MAC, ACC_T)                                                                        \
    do {                                                                                                 \
        const int8_t *w0 = p->w + n * p->kpad, *w1 = p->w + n1 * p->kpad;                                \
        int32_t k = 0;                                                                                   \
        for (; k + 4 <= s.k; k += 4) {                                                                   \
            const uint32_t a01 = mcud_load32(pa + k), a23 = mcud_load32(pa + k + 2);                     \
            const uint32_t u = mcud_load32(w0 + k), v = mcud_load32(w1 + k);                             \
            s0 = MAC(mcud_sxtb16(u), a01, s0);                                                           \
            s0 = MAC(mcud_sxtb16_ror8(u), a23, s0);                                                      \
            s1 = MAC(mcud_sxtb16(v), a01, s1);                                                           \
            s1 = MAC(mcud_sxtb16_ror8(v), a23, s1);                                                      \
        }                                                                                                \
        for (; k < s.k; k++) {                                                                           \
            s0 = (ACC_T)((ACC_T)s0 + (ACC_T)((int32_t)pa[k] * gemm_s16_w(p, n, k)));                    \
            s1 = (ACC_T)((ACC_T)s1 + (ACC_T)((int32_t)pa[k] * gemm_s16_w(p, n1, k)));                   \
        }                                                                                                \
    } while (0)

/* acc64: a constant in each instantiation; the int32 sum wraps (unsigned), as TFLite Micro's does */
static inline __attribute__((always_inline)) void gemm_s16(const mcud_view *a, const mcud_view *y,
                                                           const mcud_gemm_s16_params *p, const int acc64)
{
    /* B is packed: K comes from A, N from Y (a (K, N) view of them stands in for b in the shapes) */
    mcud_gemm_shape s;
    mcud_view kn;
    const int32_t na = a->ndim;
    kn.data = NULL;
    kn.ndim = 2;
    kn.shape[0] = na == 1 ? a->shape[0] : a->shape[p->trans_a ? na - 2 : na - 1];
    kn.shape[1] = y->shape[y->ndim - 1];
    kn.stride[0] = kn.shape[1];
    kn.stride[1] = 1;
    gemm_shape(a, &kn, y, p->trans_a, 0, &s);
    for (int32_t t = 0; t < s.batches; t++) {
        const int16_t *ad = (const int16_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        int16_t *yd = (int16_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        for (int32_t m = 0; m < s.m; m++) {
            const int16_t *pa = ad + m * s.a_m;
            int16_t *py = yd + m * s.y_m;
            for (int32_t n = 0; n < s.n; n += 2) {
                const int32_t two = n + 1 < s.n, n1 = two ? n + 1 : n;
                const int64_t b0 = p->bias != NULL ? p->bias[n] : 0, b1 = p->bias != NULL ? p->bias[n1] : 0;
                const int32_t c0 = p->channels == 1 ? 0 : n, c1 = p->channels == 1 ? 0 : n1;
                int32_t q0, q1;
                if (acc64) {
                    int64_t s0 = b0, s1 = b1;
                    if (s.a_k == 1) {
                        GEMM_S16_DOT2(mcud_smlald, int64_t);
                    } else {
                        for (int32_t k = 0; k < s.k; k++) {
                            s0 += (int32_t)pa[k * s.a_k] * gemm_s16_w(p, n, k);
                            s1 += (int32_t)pa[k * s.a_k] * gemm_s16_w(p, n1, k);
                        }
                    }
                    q0 = mcud_requant_tfl64(s0, p->mult[c0], p->shift[c0]);
                    q1 = mcud_requant_tfl64(s1, p->mult[c1], p->shift[c1]);
                } else {
                    int32_t s0 = (int32_t)b0, s1 = (int32_t)b1;
                    if (s.a_k == 1) {
                        GEMM_S16_DOT2(mcud_smlad, uint32_t);
                    } else {
                        for (int32_t k = 0; k < s.k; k++) {
                            s0 = (int32_t)((uint32_t)s0 + (uint32_t)((int32_t)pa[k * s.a_k] * gemm_s16_w(p, n, k)));
                            s1 = (int32_t)((uint32_t)s1 + (uint32_t)((int32_t)pa[k * s.a_k] * gemm_s16_w(p, n1, k)));
                        }
                    }
                    q0 = mcud_requant_tfl(s0, p->mult[c0], p->shift[c0]);
                    q1 = mcud_requant_tfl(s1, p->mult[c1], p->shift[c1]);
                }
                py[n * s.y_n] = (int16_t)mcud_clamp(q0, p->act_min, p->act_max);
                if (two) {
                    py[n1 * s.y_n] = (int16_t)mcud_clamp(q1, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcud_gemm_s16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s16_params *p)
{
    (void)b; /* packed in p->w */
    if (p->acc64) {
        gemm_s16(a, y, p, 1);
    } else {
        gemm_s16(a, y, p, 0);
    }
}

void mcud_matmul_s16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s16_params *p)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    for (int32_t t = 0; t < s.batches; t++) {
        const int16_t *ad = (const int16_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const int16_t *bd = (const int16_t *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        int16_t *yd = (int16_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        for (int32_t m = 0; m < s.m; m++) {
            const int16_t *pa = ad + m * s.a_m;
            for (int32_t n = 0; n < s.n; n++) {
                const int16_t *pb = bd + n * s.b_n;
                int64_t acc = 0;
                for (int32_t k = 0; k < s.k; k++) {
                    acc += (int32_t)pa[k * s.a_k] * (int32_t)pb[k * s.b_k];
                }
                const int32_t q = mcud_requant_tfl64(acc, p->mult, p->shift);
                yd[m * s.y_m + n * s.y_n] = (int16_t)mcud_clamp(q, p->act_min, p->act_max);
            }
        }
    }
}
