/* Max and average pooling over strided views. The window of output (oh, ow) reads input rows
 * oh * stride - pad_begin + kh * dilation; positions outside the input are skipped (max) or
 * counted in the divisor only when count_include_pad (average). The int8 average follows the
 * QDQ definition in float32 in the same order as ops/pool.py (dequantize, sum the taps row-major,
 * divide by the count, divide by the output scale, round half to even). A TFLite model's int8 and int16
 * take the max of the codes and their average rounded half away from zero (mcud_avgpool_*_tfl). */
#include <math.h>

#include "mcud_dsp.h" /* MCUD_HAVE_MVE, the DSP extension's SMLAD */
#include "mcud_pool.h"

#define MCUD_POOL_FLT_LOWEST (-3.402823466e+38f)

typedef struct {
    int32_t n, c, h, w;
    int32_t sn, sc, sh, sw;
} pool_dims;

static pool_dims dims_of(const mcud_view *v)
{
    pool_dims d;
    int32_t r = v->ndim;
    d.n = v->shape[0];
    d.c = v->shape[1];
    d.sn = v->stride[0];
    d.sc = v->stride[1];
    if (r == 3) {
        d.h = 1;
        d.sh = 0;
    } else {
        d.h = v->shape[2];
        d.sh = v->stride[2];
    }
    d.w = v->shape[r - 1];
    d.sw = v->stride[r - 1];
    return d;
}

/* Kernel taps [*lo, *hi) whose input index start + k * dil lies in [0, size). */
static void taps(int32_t start, int32_t dil, int32_t kernel, int32_t size, int32_t *lo, int32_t *hi)
{
    int32_t l = start < 0 ? (-start + dil - 1) / dil : 0;
    int32_t h = size - start <= 0 ? 0 : (size - start + dil - 1) / dil;
    if (h > kernel) {
        h = kernel;
    }
    *lo = l;
    *hi = h < l ? l : h;
}

/* Taps counted by the divisor: all those below size + pad_end (or only the inside ones). */
static int32_t counted(int32_t start, int32_t dil, int32_t kernel, int32_t size, int32_t pad_end, int32_t include,
                       int32_t lo, int32_t hi)
{
    if (!include) {
        return hi - lo;
    }
    int32_t lim = size + pad_end - start;
    int32_t n = lim <= 0 ? 0 : (lim + dil - 1) / dil;
    return n > kernel ? kernel : n;
}

/* Window by window, every channel of a window in turn: its taps inside the input are worked out once for all the
 * channels (taps() divides). */
#define POOL_LOOP_BEGIN(P)                                                                    \
    pool_dims xd = dims_of(x), yd = dims_of(y);                                               \
    for (int32_t n = 0; n < yd.n; n++) {                                                      \
        for (int32_t oh = 0; oh < yd.h; oh++) {                                               \
            int32_t h0 = oh * (P)->stride[0] - (P)->pad_begin[0], khl, khh;                   \
            taps(h0, (P)->dilation[0], (P)->kernel[0], xd.h, &khl, &khh);                     \
            for (int32_t ow = 0; ow < yd.w; ow++) {                                           \
                int32_t w0 = ow * (P)->stride[1] - (P)->pad_begin[1], kwl, kwh;               \
                taps(w0, (P)->dilation[1], (P)->kernel[1], xd.w, &kwl, &kwh);                 \
                for (int32_t c = 0; c < yd.c; c++) {                                          \
                    int32_t xbase = n * xd.sn + c * xd.sc;                                    \
                    int32_t yoff = n * yd.sn + c * yd.sc + oh * yd.sh + ow * yd.sw;

#define POOL_LOOP_END \
                }     \
            }         \
        }             \
    }

#define POOL_TAPS(P, BODY)                                                                    \
    for (int32_t kh = khl; kh < khh; kh++) {                                                  \
        int32_t row = xbase + (h0 + kh * (P)->dilation[0]) * xd.sh;                           \
        for (int32_t kw = kwl; kw < kwh; kw++) {                                              \
            int32_t at = row + (w0 + kw * (P)->dilation[1]) * xd.sw;                          \
            BODY                                                                              \
        }                                                                                     \
    }

#if MCUD_HAVE_MVE
/* On a core with Helium, the int8 window of an output whose rows are dense (unit stride and dilation
 * along W): n taps a row, rows rows step bytes apart from a; one run of n * rows taps when the rows
 * follow each other (a global pool of a plane). 16 taps a vector, the last one predicated (VCTP,
 * lanes past the window load as 0, or take no part in the max). Integer sums and maxima: the scalar
 * loop's values. */
static int32_t window_sum_s8_mve(const int8_t *a, int32_t rows, int32_t step, int32_t n)
{
    int32_t s = 0;
    if (step == n) {
        n *= rows;
        rows = rows > 0;
    }
    for (; rows > 0; rows--, a += step) {
        for (int32_t k = 0; k < n; k += 16) {
            s = vaddvaq_s8(s, vldrbq_z_s8(a + k, vctp8q((uint32_t)(n - k))));
        }
    }
    return s;
}

static int32_t window_max_s8_mve(const int8_t *a, int32_t rows, int32_t step, int32_t n)
{
    int8_t m = -128;
    if (step == n) {
        n *= rows;
        rows = rows > 0;
    }
    for (; rows > 0; rows--, a += step) {
        for (int32_t k = 0; k < n; k += 16) {
            const mve_pred16_t pr = vctp8q((uint32_t)(n - k));
            m = vmaxvq_p_s8(m, vldrbq_z_s8(a + k, pr), pr);
        }
    }
    return m;
}

/* The first tap of the window and its extents, for the helpers above (inside POOL_LOOP_BEGIN). */
#define POOL_WINDOW_MVE(P) (xbase + (h0 + khl * (P)->dilation[0]) * xd.sh + w0 + kwl), khh - khl, \
                           (P)->dilation[0] * xd.sh, kwh - kwl
#define POOL_DENSE_ROWS(x, P) ((x)->stride[(x)->ndim - 1] == 1 && (P)->dilation[1] == 1)
#endif

void mcud_maxpool_f32(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p)
{
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    POOL_LOOP_BEGIN(p)
    float m = MCUD_POOL_FLT_LOWEST;
    POOL_TAPS(p, { if (xp[at] > m) { m = xp[at]; } })
    yp[yoff] = mcud_clampf(m, p->clip_min, p->clip_max);
    POOL_LOOP_END
}

void mcud_maxpool_s8(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
#if MCUD_HAVE_MVE
    const int32_t dense = POOL_DENSE_ROWS(x, p);
#endif
    POOL_LOOP_BEGIN(p)
    int32_t m = -128;
#if MCUD_HAVE_MVE
    if (dense) {
        m = window_max_s8_mve(xp + POOL_WINDOW_MVE(p));
    } else
#endif
    POOL_TAPS(p, { if (xp[at] > m) { m = xp[at]; } })
    if (p->requant) {
        m = mcud_requant(m - p->in_zero_point, p->mult, p->shift) + p->out_zero_point;
    }
    yp[yoff] = (int8_t)mcud_clamp(m, p->act_min, p->act_max);
    POOL_LOOP_END
}

void mcud_maxpool_s16(const mcud_view *x, const mcud_view *y, const mcud_maxpool_params *p)
{
    const int16_t *xp = (const int16_t *)x->data;
    int16_t *yp = (int16_t *)y->data;
    POOL_LOOP_BEGIN(p)
    int32_t m = -32768;
    POOL_TAPS(p, { if (xp[at] > m) { m = xp[at]; } })
    yp[yoff] = (int16_t)mcud_clamp(m, p->act_min, p->act_max);
    POOL_LOOP_END
}

void mcud_avgpool_f32(const mcud_view *x, const mcud_view *y, const mcud_avgpool_params *p)
{
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    POOL_LOOP_BEGIN(p)
    float s = 0.0f;
    POOL_TAPS(p, { s += xp[at]; })
    int32_t cnt = counted(h0, p->dilation[0], p->kernel[0], xd.h, p->pad_end[0], p->count_include_pad, khl, khh) *
                  counted(w0, p->dilation[1], p->kernel[1], xd.w, p->pad_end[1], p->count_include_pad, kwl, kwh);
    yp[yoff] = mcud_clampf(s / (float)(cnt < 1 ? 1 : cnt), p->clip_min, p->clip_max);
    POOL_LOOP_END
}

/* Cores without the DSP extension or MVE (Cortex-M0/M3, RV32, the host) take each tap's dequantized value from a
 * table of the 256 codes' values, made once a call where the taps outnumber the codes: the same float product
 * (float)(x - zx) * scale, computed once a code instead of once a tap, so the same bits; on a core that emulates
 * float in software a tap then costs one addition (libgcc's __addsf3) where it cost a conversion and a
 * multiplication too (KWS's pool on qemu-rv32: 1,629,000 instructions -> 630,000; qemu-m3: 813,000 -> 429,000). An
 * addition in integer instructions inline, tried on RV32 in place of __addsf3, took 2% fewer on KWS and 12% more on
 * VWW: not kept. The DSP and MVE cores keep the product per tap (their figures unchanged). */
#if !MCUD_HAVE_DSP && !MCUD_HAVE_MVE
#define MCUD_AVG_TABLE 1
#else
#define MCUD_AVG_TABLE 0
#endif

void mcud_avgpool_s8(const mcud_view *x, const mcud_view *y, const mcud_avgpool_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
#if MCUD_AVG_TABLE
    float table[256]; /* table[(uint8_t)code]: (float)(code - zx) * in_scale; 1 KB of stack */
    int64_t taps_n = (int64_t)p->kernel[0] * p->kernel[1]; /* the windows' taps, padding included */
    for (int32_t i = 0; i < y->ndim; i++) {
        taps_n *= y->shape[i];
    }
    const int32_t tabled = taps_n > 256;
    if (tabled) {
        for (int32_t q = -128; q < 128; q++) {
            table[(uint8_t)q] = (float)(q - p->in_zero_point) * p->in_scale;
        }
    }
#endif
    POOL_LOOP_BEGIN(p)
    float s = 0.0f;
#if MCUD_AVG_TABLE
    if (tabled) {
        POOL_TAPS(p, { s += table[(uint8_t)xp[at]]; })
    } else
#endif
    POOL_TAPS(p, { s += (float)((int32_t)xp[at] - p->in_zero_point) * p->in_scale; })
    int32_t cnt = counted(h0, p->dilation[0], p->kernel[0], xd.h, p->pad_end[0], p->count_include_pad, khl, khh) *
                  counted(w0, p->dilation[1], p->kernel[1], xd.w, p->pad_end[1], p->count_include_pad, kwl, kwh);
    int32_t v = (int32_t)lrintf((s / (float)(cnt < 1 ? 1 : cnt)) / p->out_scale) + p->out_zero_point;
    yp[yoff] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
    POOL_LOOP_END
}

#if !MCUD_HAVE_MVE /* an MVE core sums its windows in vectors (mcud_avgpool_s8_tfl below) */
/* n consecutive int8 codes summed four at a time (two dual multiply-accumulates by (1, 1) a word): the same
 * int32 sum as one at a time. */
static int32_t sum_s8(const int8_t *p, int32_t n)
{
    int32_t s = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t v = mcud_load32(p + i);
        s = mcud_smlad(mcud_sxtb16(v), 0x00010001u, s);
        s = mcud_smlad(mcud_sxtb16_ror8(v), 0x00010001u, s);
    }
    for (; i < n; i++) {
        s += p[i];
    }
    return s;
}
#endif

static int32_t sum_s16(const int16_t *p, int32_t n)
{
    int32_t s = 0;
    for (int32_t i = 0; i < n; i++) {
        s += p[i];
    }
    return s;
}

/* The window's taps inside the input: runs of consecutive codes where rows are dense (the whole window as
 * one run where it spans whole rows that follow one another), else tap by tap. */
#define AVG_TFL(NAME, T, SUM)                                                                      \
    void NAME(const mcud_view *x, const mcud_view *y, const mcud_avgpool_tfl_params *p)            \
    {                                                                                              \
        const T *xp = (const T *)x->data;                                                          \
        T *yp = (T *)y->data;                                                                      \
        const int32_t runs = p->dilation[1] == 1 && x->stride[x->ndim - 1] == 1;                   \
        POOL_LOOP_BEGIN(p)                                                                         \
        int32_t s = 0;                                                                             \
        if (runs && w0 + kwl == 0 && w0 + kwh == xd.w && (khh - khl == 1 ||                        \
                                                          (p->dilation[0] == 1 && xd.sh == xd.w))) { \
            s = SUM(xp + xbase + (h0 + khl * p->dilation[0]) * xd.sh, (khh - khl) * xd.w);          \
        } else if (runs) {                                                                         \
            for (int32_t kh = khl; kh < khh; kh++) {                                               \
                s += SUM(xp + xbase + (h0 + kh * p->dilation[0]) * xd.sh + w0 + kwl, kwh - kwl);   \
            }                                                                                      \
        } else {                                                                                   \
            POOL_TAPS(p, { s += xp[at]; })                                                         \
        }                                                                                          \
        int32_t cnt = (khh - khl) * (kwh - kwl);                                                   \
        cnt = cnt < 1 ? 1 : cnt;                                                                   \
        int32_t v = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt;                             \
        yp[yoff] = (T)mcud_clamp(v, p->act_min, p->act_max);                                       \
        POOL_LOOP_END                                                                              \
    }

#if MCUD_HAVE_MVE
void mcud_avgpool_s8_tfl(const mcud_view *x, const mcud_view *y, const mcud_avgpool_tfl_params *p)
{
    const int8_t *xp = (const int8_t *)x->data;
    int8_t *yp = (int8_t *)y->data;
    const int32_t dense = POOL_DENSE_ROWS(x, p);
    POOL_LOOP_BEGIN(p)
    int32_t s = 0;
    if (dense) {
        s = window_sum_s8_mve(xp + POOL_WINDOW_MVE(p));
    } else {
        POOL_TAPS(p, { s += xp[at]; })
    }
    int32_t cnt = (khh - khl) * (kwh - kwl);
    cnt = cnt < 1 ? 1 : cnt;
    int32_t v = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt;
    yp[yoff] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
    POOL_LOOP_END
}
#else
AVG_TFL(mcud_avgpool_s8_tfl, int8_t, sum_s8)
#endif
AVG_TFL(mcud_avgpool_s16_tfl, int16_t, sum_s16)

/* The running sums of a cut average: one value per (n, c), read from before (0 for the first
 * piece) and written to sum, which may be the same bytes (in place). */
#define AVG_SUM(NAME, XT, ST, TERM)                                                                \
    void NAME(const mcud_view *x, const mcud_view *before, const mcud_view *sum,                    \
              const mcud_avgpool_sum_params *p)                                                      \
    {                                                                                              \
        const XT *xp = (const XT *)x->data;                                                        \
        ST *sp = (ST *)sum->data;                                                                  \
        const ST *bp = before != NULL ? (const ST *)before->data : NULL;                           \
        pool_dims xd = dims_of(x), sd = dims_of(sum);                                              \
        pool_dims bd = before != NULL ? dims_of(before) : sd;                                      \
        (void)p;                                                                                   \
        for (int32_t n = 0; n < xd.n; n++) {                                                       \
            for (int32_t c = 0; c < xd.c; c++) {                                                   \
                ST s = bp != NULL ? bp[n * bd.sn + c * bd.sc] : (ST)0;                             \
                int32_t base = n * xd.sn + c * xd.sc;                                              \
                for (int32_t h = 0; h < xd.h; h++) {                                               \
                    for (int32_t w = 0; w < xd.w; w++) {                                           \
                        int32_t at = base + h * xd.sh + w * xd.sw;                                 \
                        s += TERM;                                                                 \
                    }                                                                              \
                }                                                                                  \
                sp[n * sd.sn + c * sd.sc] = s;                                                     \
            }                                                                                      \
        }                                                                                          \
    }

AVG_SUM(mcud_avgpool_sum_f32, float, float, xp[at])
AVG_SUM(mcud_avgpool_sum_s8, int8_t, float, (float)((int32_t)xp[at] - p->in_zero_point) * p->in_scale)
AVG_SUM(mcud_avgpool_sum_s8_tfl, int8_t, int32_t, (int32_t)xp[at])
AVG_SUM(mcud_avgpool_sum_s16_tfl, int16_t, int32_t, (int32_t)xp[at])

#define AVG_FINISH_LOOP(ST, YT, VALUE)                                                             \
    const ST *sp = (const ST *)sum->data;                                                          \
    YT *yp = (YT *)y->data;                                                                        \
    pool_dims sd = dims_of(sum), yd = dims_of(y);                                                  \
    for (int32_t n = 0; n < yd.n; n++) {                                                           \
        for (int32_t c = 0; c < yd.c; c++) {                                                       \
            ST s = sp[n * sd.sn + c * sd.sc];                                                      \
            yp[n * yd.sn + c * yd.sc] = VALUE;                                                     \
        }                                                                                          \
    }

void mcud_avgpool_finish_f32(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p)
{
    AVG_FINISH_LOOP(float, float, mcud_clampf(s / (float)p->count, p->clip_min, p->clip_max))
}

static int8_t avg_quantize(float s, const mcud_avgpool_finish_params *p)
{
    int32_t v = (int32_t)lrintf((s / (float)p->count) / p->out_scale) + p->out_zero_point;
    return (int8_t)mcud_clamp(v, p->act_min, p->act_max);
}

static int32_t avg_round(int32_t s, const mcud_avgpool_finish_params *p)
{
    int32_t cnt = p->count;
    int32_t v = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt;
    return mcud_clamp(v, p->act_min, p->act_max);
}

void mcud_avgpool_finish_s8(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p)
{
    AVG_FINISH_LOOP(float, int8_t, avg_quantize(s, p))
}

void mcud_avgpool_finish_s8_tfl(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p)
{
    AVG_FINISH_LOOP(int32_t, int8_t, (int8_t)avg_round(s, p))
}

void mcud_avgpool_finish_s16_tfl(const mcud_view *sum, const mcud_view *y, const mcud_avgpool_finish_params *p)
{
    AVG_FINISH_LOOP(int32_t, int16_t, (int16_t)avg_round(s, p))
}
