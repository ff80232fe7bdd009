#ifndef MCUD_GEMM_H
#define MCUD_GEMM_H
#include "mcud.h"

/* Gemm and MatMul: y = alpha * A' B' + beta * C, batched over leading dimensions with numpy
 * broadcasting. A 1-D A is one row, a 1-D B one column (that dimension is absent from y).
 * C (NULL when absent) has rank <= 2 and broadcasts to (M, N). */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    float alpha;
    float beta;
    float act_min;
    float act_max;
} mcud_gemm_f32_params;

/* int8: acc[n] = bias[n] + sum_k a * b (a with its zero point, folded into bias at compile
 * time), y = clamp(mcud_requant(acc, mult[c], shift[c]) + y_zero), c = n or 0.
 *
 * B is constant and 2-D, so it is packed at compile time (mcudeploy/ops/gemm.py, pack_weights)
 * for the dual-MAC loop: the kernel reads `packed` and ignores b (codegen passes NULL, so flash
 * holds the weights once); K comes from A and N from Y. The layout:
 * columns in blocks of four, each block 4K bytes, for every k-quad q the 16 bytes
 * B[4q..4q+3, n0], B[4q..4q+3, n0+1], B[.., n0+2], B[.., n0+3], then for each remaining k
 * the four bytes B[k, n0..n0+3]; the N % 4 last columns follow, each as K bytes padded to a
 * multiple of 4. The array must be word aligned (codegen aligns every constant to 4).
 * Paired (the _p and _a16p kernels, where pack_weights' pairs_fit): each k-quad's 16 bytes are instead four words, for the
 * columns (n0, n0+1) then (n0+2, n0+3), the k (4q, 4q+2) then (4q+1, 4q+3), each k the int16
 * 256 B[k, odd column] + B[k, even column]; the rest as above. */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    int32_t channels;      /* 1: one multiplier for every column; else N */
    const int32_t *bias;   /* N values, in accumulator units */
    const int32_t *mult;
    const int32_t *shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
    const int8_t *packed;  /* B packed as above */
    const int32_t *rq2;    /* or NULL: TFLite models, per column (c = n, or 0 when channels is 1) three values for
                              mcud_requant_tfl_2 on twice the sum {mult, c, rs} (mcud_dsp.h), or {0, mult, shift}
                              for a column off that route, which mcud_requant_tfl_any takes (mcudeploy/ops/gemm.py,
                              _rq2); mult and shift are then NULL */
    int32_t rq2_off;       /* 1 where some column of rq2 is off the doubled route */
} mcud_gemm_s8_params;

/* int8 with both operands activations (per tensor): acc = sum_k (a - a_zero)(b - b_zero),
 * y = clamp(mcud_requant(acc, mult, shift) + y_zero), B read through its strides (a transposed
 * view of K is fine). With scratch (K rounded up to 4, times N bytes, then N int32; word aligned)
 * each batch's B is packed there as above, with its zero-point terms per column, for the
 * dual-MAC row loop of mcud_gemm_s8; scratch NULL, or rows of A that are not contiguous, read B in
 * place: four columns per 32-bit load where B's rows hold N contiguous, else a plain loop
 * (mcud_matmul_s8_direct passes NULL). The int32 sums are exact for K <= 8192. */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    int32_t a_zero;
    int32_t b_zero;
    int32_t mult;
    int32_t shift;
    int32_t y_zero;
    int32_t act_min;
    int32_t act_max;
} mcud_matmul_s8_params;

/* 16x8 (TFLite): y = clamp(requant(sum_k a b + bias[n])) with int16 A and Y (zero points 0) and a constant
 * int8 B, packed (the kernel ignores b; codegen passes NULL): column n's K weights then zeros up to kpad (a
 * multiple of 4), each four bytes as (k0, k2, k1, k3), so that SXTB16 gives the pairs (k0, k1), (k2, k3)
 * that meet A's int16 pairs in dual multiply-accumulates. acc64: the sum is exact in int64 and takes
 * mcud_requant_tfl64 with the reduced (mult, shift) of column c (c = n, or 0 when channels is 1); else it
 * wraps in 32 bits, as TFLite Micro's int32 sum, and takes mcud_requant_tfl. bias: N values (NULL: none). */
typedef struct {
    int32_t trans_a;
    int32_t kpad;
    int32_t acc64;
    int32_t channels;
    const int64_t *bias;
    const int32_t *mult;
    const int32_t *shift;
    int32_t act_min;
    int32_t act_max;
    const int8_t *w;
} mcud_gemm_s16_params;

/* Two int16 activations (TFLite's BATCH_MATMUL, zero points 0): an int64 sum and mcud_requant_tfl64 with the
 * reduced (mult, shift). */
typedef struct {
    int32_t trans_a;
    int32_t trans_b;
    int32_t mult;
    int32_t shift;
    int32_t act_min;
    int32_t act_max;
} mcud_matmul_s16_params;

void mcud_gemm_f32(const mcud_view *a, const mcud_view *b, const mcud_view *c, const mcud_view *y,
                   const mcud_gemm_f32_params *p);
void mcud_gemm_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p);
void mcud_gemm_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p);
/* the same on paired weights (see the layout above), no scratch: not on an MVE core, whose VMLADAVs read the plain
 * packing (mcudeploy/offload/wide.py, dsp_packings) */
void mcud_gemm_s8_p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p);
void mcud_gemm_s8_tfl_p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p);
/* the same with A's rows widened into scratch first (2 (K - K % 4) bytes, word aligned): two SXTB16s fewer for every
 * four k of every four columns, one pass over the row */
void mcud_gemm_s8_a16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,
                      void *scratch);
void mcud_gemm_s8_tfl_a16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,
                          void *scratch);
/* the same on paired weights (see the layout above) */
void mcud_gemm_s8_a16p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,
                       void *scratch);
void mcud_gemm_s8_tfl_a16p(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p,
                           void *scratch);
void mcud_matmul_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p,
                    void *scratch);
void mcud_matmul_s8_direct(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p);
/* the same with TFLite's rounding (mcud_requant_tfl): a TFLite model's BATCH_MATMUL */
void mcud_matmul_s8_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s8_params *p,
                        void *scratch);
void mcud_matmul_s8_direct_tfl(const mcud_view *a, const mcud_view *b, const mcud_view *y,
                               const mcud_matmul_s8_params *p);
void mcud_gemm_s16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s16_params *p);
void mcud_matmul_s16(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_matmul_s16_params *p);

#endif
