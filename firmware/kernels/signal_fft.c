/* TensorFlow Lite Micro's SignalRfft (its kiss_fft 1.3.0), bit for bit: see mcud_signal.h and
 * mcudeploy/ops/signal_rfft.py, whose numpy reference does the same arithmetic step by step. One pass per stage
 * (kf_work's recursion as loops, so the stack has a bound). int16 and int32 share one fixed-point path whose values
 * are held in int32_t and products in int64_t; int16's radix-2 and radix-4 butterflies and the real FFT's last
 * pass also have a path of their own (the *16 functions) in 32-bit arithmetic, as kiss_fft's int16 build computes
 * them: a product of two int16 is exact in 32 bits, and where a sum of two wraps there, the result kept to 16 bits
 * is the same (the wrap moves the sum by 2^32, its rounded quotient by 2^17). On a core with the DSP extension the
 * complex product is one SMUSD and one SMUADX. */
#include "mcud_signal.h"

typedef struct {
    int32_t r;
    int32_t i;
} cpxw;

typedef struct {
    const void *x; /* the row */
    int32_t xs;    /* its stride in elements */
    int32_t len;   /* its length: elements past it are 0 (TFLite Micro's zero padding) */
    void *buf;     /* the output row: the complex FFT's working buffer */
    const cpxw *tw;
    int32_t bits; /* 16 or 32 */
    int32_t frac; /* bits - 1 */
    int32_t max;  /* 2^frac - 1 */
    int32_t inverse;
} fftw;

/* v kept to the type's width, as C's conversions wrap on every compiler mcudeploy supports */
static int32_t wrap(const fftw *s, int64_t v)
{
    return s->bits == 16 ? (int32_t)(int16_t)(uint16_t)(uint64_t)v : (int32_t)(uint32_t)(uint64_t)v;
}

/* kiss_fft's sround: v * 2^-frac rounded half up (arithmetic shift), kept to the type */
static int32_t sround(const fftw *s, int64_t v)
{
    return wrap(s, (v + ((int64_t)1 << (s->frac - 1))) >> s->frac);
}

static cpxw fixdiv(const fftw *s, cpxw c, int32_t div)
{
    const int64_t k = s->max / div;
    cpxw o;
    o.r = sround(s, c.r * k);
    o.i = sround(s, c.i * k);
    return o;
}

static cpxw cmul(const fftw *s, cpxw a, cpxw b)
{
    cpxw o;
    o.r = sround(s, (int64_t)a.r * b.r - (int64_t)a.i * b.i);
    o.i = sround(s, (int64_t)a.r * b.i + (int64_t)a.i * b.r);
    return o;
}

static int32_t smul(const fftw *s, int32_t a, int32_t b)
{
    return sround(s, (int64_t)a * b);
}

static cpxw cadd(const fftw *s, cpxw a, cpxw b)
{
    cpxw o;
    o.r = wrap(s, (int64_t)a.r + b.r);
    o.i = wrap(s, (int64_t)a.i + b.i);
    return o;
}

static cpxw csub(const fftw *s, cpxw a, cpxw b)
{
    cpxw o;
    o.r = wrap(s, (int64_t)a.r - b.r);
    o.i = wrap(s, (int64_t)a.i - b.i);
    return o;
}

static cpxw get(const fftw *s, int32_t k)
{
    cpxw o;
    if (s->bits == 16) {
        o.r = ((const int16_t *)s->buf)[2 * k];
        o.i = ((const int16_t *)s->buf)[2 * k + 1];
    } else {
        o.r = ((const int32_t *)s->buf)[2 * k];
        o.i = ((const int32_t *)s->buf)[2 * k + 1];
    }
    return o;
}

static void put(const fftw *s, int32_t k, cpxw v)
{
    if (s->bits == 16) {
        ((int16_t *)s->buf)[2 * k] = (int16_t)v.r;
        ((int16_t *)s->buf)[2 * k + 1] = (int16_t)v.i;
    } else {
        ((int32_t *)s->buf)[2 * k] = v.r;
        ((int32_t *)s->buf)[2 * k + 1] = v.i;
    }
}

static int32_t input(const fftw *s, int32_t e)
{
    if (e >= s->len) {
        return 0;
    }
    return s->bits == 16 ? ((const int16_t *)s->x)[e * s->xs] : ((const int32_t *)s->x)[e * s->xs];
}

/* the butterflies of kiss_fft's kf_bfly2..5 on buf[o .. o + radix * m) */
static void radix2(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    for (int32_t u = 0; u < m; u++) {
        const cpxw a = fixdiv(s, get(s, o + u), 2), b = fixdiv(s, get(s, o + u + m), 2);
        const cpxw t = cmul(s, b, s->tw[u * fstride]);
        put(s, o + u + m, csub(s, a, t));
        put(s, o + u, cadd(s, a, t));
    }
}

static void radix3(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    const int32_t e = s->tw[fstride * m].i;
    for (int32_t u = 0; u < m; u++) {
        const cpxw a = fixdiv(s, get(s, o + u), 3);
        const cpxw b = cmul(s, fixdiv(s, get(s, o + u + m), 3), s->tw[u * fstride]);
        const cpxw c = cmul(s, fixdiv(s, get(s, o + u + 2 * m), 3), s->tw[2 * u * fstride]);
        const cpxw sum = cadd(s, b, c);
        cpxw dif = csub(s, b, c), mid, v;
        mid.r = wrap(s, (int64_t)a.r - (sum.r >> 1));
        mid.i = wrap(s, (int64_t)a.i - (sum.i >> 1));
        dif.r = smul(s, dif.r, e);
        dif.i = smul(s, dif.i, e);
        put(s, o + u, cadd(s, a, sum));
        v.r = wrap(s, (int64_t)mid.r + dif.i);
        v.i = wrap(s, (int64_t)mid.i - dif.r);
        put(s, o + u + 2 * m, v);
        v.r = wrap(s, (int64_t)mid.r - dif.i);
        v.i = wrap(s, (int64_t)mid.i + dif.r);
        put(s, o + u + m, v);
    }
}

static void radix4(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    for (int32_t u = 0; u < m; u++) {
        const cpxw a = fixdiv(s, get(s, o + u), 4);
        const cpxw b = cmul(s, fixdiv(s, get(s, o + u + m), 4), s->tw[u * fstride]);
        const cpxw c = cmul(s, fixdiv(s, get(s, o + u + 2 * m), 4), s->tw[2 * u * fstride]);
        const cpxw d = cmul(s, fixdiv(s, get(s, o + u + 3 * m), 4), s->tw[3 * u * fstride]);
        const cpxw ac = csub(s, a, c), a2 = cadd(s, a, c);
        const cpxw bd = cadd(s, b, d), bmd = csub(s, b, d);
        cpxw v;
        put(s, o + u + 2 * m, csub(s, a2, bd));
        put(s, o + u, cadd(s, a2, bd));
        const int32_t sign = s->inverse ? -1 : 1; /* the inverse FFT turns the other way */
        v.r = wrap(s, (int64_t)ac.r + (int64_t)sign * bmd.i);
        v.i = wrap(s, (int64_t)ac.i - (int64_t)sign * bmd.r);
        put(s, o + u + m, v);
        v.r = wrap(s, (int64_t)ac.r - (int64_t)sign * bmd.i);
        v.i = wrap(s, (int64_t)ac.i + (int64_t)sign * bmd.r);
        put(s, o + u + 3 * m, v);
    }
}

static void radix5(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    const cpxw ya = s->tw[fstride * m], yb = s->tw[2 * fstride * m];
    for (int32_t u = 0; u < m; u++) {
        const cpxw a = fixdiv(s, get(s, o + u), 5);
        const cpxw b = cmul(s, fixdiv(s, get(s, o + u + m), 5), s->tw[u * fstride]);
        const cpxw c = cmul(s, fixdiv(s, get(s, o + u + 2 * m), 5), s->tw[2 * u * fstride]);
        const cpxw d = cmul(s, fixdiv(s, get(s, o + u + 3 * m), 5), s->tw[3 * u * fstride]);
        const cpxw e = cmul(s, fixdiv(s, get(s, o + u + 4 * m), 5), s->tw[4 * u * fstride]);
        const cpxw s7 = cadd(s, b, e), s10 = csub(s, b, e), s8 = cadd(s, c, d), s9 = csub(s, c, d);
        cpxw s5, s6, s11, s12, o0;
        o0.r = wrap(s, (int64_t)a.r + s7.r + s8.r);
        o0.i = wrap(s, (int64_t)a.i + s7.i + s8.i);
        s5.r = wrap(s, (int64_t)a.r + smul(s, s7.r, ya.r) + smul(s, s8.r, yb.r));
        s5.i = wrap(s, (int64_t)a.i + smul(s, s7.i, ya.r) + smul(s, s8.i, yb.r));
        s6.r = wrap(s, (int64_t)smul(s, s10.i, ya.i) + smul(s, s9.i, yb.i));
        s6.i = wrap(s, -(int64_t)smul(s, s10.r, ya.i) - smul(s, s9.r, yb.i));
        s11.r = wrap(s, (int64_t)a.r + smul(s, s7.r, yb.r) + smul(s, s8.r, ya.r));
        s11.i = wrap(s, (int64_t)a.i + smul(s, s7.i, yb.r) + smul(s, s8.i, ya.r));
        s12.r = wrap(s, -(int64_t)smul(s, s10.i, yb.i) + smul(s, s9.i, ya.i));
        s12.i = wrap(s, (int64_t)smul(s, s10.r, yb.i) - smul(s, s9.r, ya.i));
        put(s, o + u, o0);
        put(s, o + u + m, csub(s, s5, s6));
        put(s, o + u + 4 * m, cadd(s, s5, s6));
        put(s, o + u + 2 * m, cadd(s, s11, s12));
        put(s, o + u + 3 * m, csub(s, s11, s12));
    }
}

/* ---- int16 at its own width ---- */

/* kiss_fft's sround at 16 bits: (v + 2^14) >> 15 kept to int16 (v's additions wrap in 32 bits: the same bits) */
static inline int16_t sr16(uint32_t v)
{
    return (int16_t)(uint16_t)(uint32_t)((int32_t)(v + (1u << 14)) >> 15);
}

static inline int16_t add16(int32_t a, int32_t b)
{
    return (int16_t)(uint16_t)(uint32_t)(a + b);
}

static inline int16_t sub16(int32_t a, int32_t b)
{
    return (int16_t)(uint16_t)(uint32_t)(a - b);
}

/* c * (32767 / div), rounded: kiss_fft's C_FIXDIV of one part */
static inline int16_t div16(int32_t c, int32_t k)
{
    return sr16((uint32_t)(c * k));
}

/* (ar + i ai)(br + i bi), each part rounded: kiss_fft's C_MUL */
static inline void cmul16(int16_t ar, int16_t ai, int32_t br, int32_t bi, int16_t *r, int16_t *i)
{
#if defined(__ARM_FEATURE_DSP)
    const uint32_t a = (uint32_t)(uint16_t)ar | ((uint32_t)(uint16_t)ai << 16);
    const uint32_t b = (uint32_t)(uint16_t)br | ((uint32_t)(uint16_t)bi << 16);
    int32_t re, im;
    __asm__("smusd %0, %1, %2" : "=r"(re) : "r"(a), "r"(b));
    __asm__("smuadx %0, %1, %2" : "=r"(im) : "r"(a), "r"(b));
    *r = sr16((uint32_t)re);
    *i = sr16((uint32_t)im);
#else
    *r = sr16((uint32_t)(ar * br) - (uint32_t)(ai * bi));
    *i = sr16((uint32_t)(ar * bi) + (uint32_t)(ai * br));
#endif
}

static void radix2_16(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    int16_t *b0 = (int16_t *)s->buf + 2 * o, *b1 = b0 + 2 * m;
    const int32_t k = s->max / 2;
    for (int32_t u = 0; u < m; u++) {
        const int16_t ar = div16(b0[2 * u], k), ai = div16(b0[2 * u + 1], k);
        int16_t tr, ti;
        cmul16(div16(b1[2 * u], k), div16(b1[2 * u + 1], k), s->tw[u * fstride].r, s->tw[u * fstride].i, &tr, &ti);
        b1[2 * u] = sub16(ar, tr);
        b1[2 * u + 1] = sub16(ai, ti);
        b0[2 * u] = add16(ar, tr);
        b0[2 * u + 1] = add16(ai, ti);
    }
}

static void radix4_16(const fftw *s, int32_t o, int32_t fstride, int32_t m)
{
    int16_t *b0 = (int16_t *)s->buf + 2 * o, *b1 = b0 + 2 * m, *b2 = b1 + 2 * m, *b3 = b2 + 2 * m;
    const int32_t k = s->max / 4;
    const cpxw *tw = s->tw;
    for (int32_t u = 0; u < m; u++) {
        const int16_t ar = div16(b0[2 * u], k), ai = div16(b0[2 * u + 1], k);
        int16_t br, bi, cr, ci, dr, di;
        const cpxw t1 = tw[u * fstride], t2 = tw[2 * u * fstride], t3 = tw[3 * u * fstride];
        cmul16(div16(b1[2 * u], k), div16(b1[2 * u + 1], k), t1.r, t1.i, &br, &bi);
        cmul16(div16(b2[2 * u], k), div16(b2[2 * u + 1], k), t2.r, t2.i, &cr, &ci);
        cmul16(div16(b3[2 * u], k), div16(b3[2 * u + 1], k), t3.r, t3.i, &dr, &di);
        const int16_t acr = sub16(ar, cr), aci = sub16(ai, ci), a2r = add16(ar, cr), a2i = add16(ai, ci);
        const int16_t bdr = add16(br, dr), bdi = add16(bi, di), bmr = sub16(br, dr), bmi = sub16(bi, di);
        b2[2 * u] = sub16(a2r, bdr);
        b2[2 * u + 1] = sub16(a2i, bdi);
        b0[2 * u] = add16(a2r, bdr);
        b0[2 * u + 1] = add16(a2i, bdi);
        if (!s->inverse) {
            b1[2 * u] = add16(acr, bmi);
            b1[2 * u + 1] = sub16(aci, bmr);
            b3[2 * u] = sub16(acr, bmi);
            b3[2 * u + 1] = add16(aci, bmr);
        } else { /* the inverse FFT turns the other way */
            b1[2 * u] = sub16(acr, bmi);
            b1[2 * u + 1] = add16(aci, bmr);
            b3[2 * u] = add16(acr, bmi);
            b3[2 * u + 1] = sub16(aci, bmr);
        }
    }
}

static void butterfly(const fftw *s, int32_t o, int32_t radix, int32_t fstride, int32_t m)
{
    if (s->bits == 16 && radix == 4) {
        radix4_16(s, o, fstride, m);
        return;
    }
    if (s->bits == 16 && radix == 2) {
        radix2_16(s, o, fstride, m);
        return;
    }
    switch (radix) {
    case 2:
        radix2(s, o, fstride, m);
        break;
    case 3:
        radix3(s, o, fstride, m);
        break;
    case 4:
        radix4(s, o, fstride, m);
        break;
    default:
        radix5(s, o, fstride, m);
        break;
    }
}

/* Where kiss_fft's kf_work puts input (complex index) f: its recursion sends output position o = sum k_i m_i (k_i
 * the mixed-radix digit of stage i, m_i that stage's remaining length) the input sum k_i fstride_i (fstride_i the
 * product of the radices before stage i), the digits reversed. The leaves of o = 0, 1, 2, ... in turn: f counted
 * up digit by digit as o goes up, with no division. */
typedef struct {
    const int32_t *factors;
    int32_t count;       /* stages */
    int32_t digit[32];   /* o's digit of each stage (at most 31 stages: n < 2^31) */
    int32_t fstride[32]; /* the product of the radices before each stage */
    int32_t f;           /* the leaf of o */
} leaves;

static void leaves_start(leaves *w, const int32_t *factors)
{
    w->factors = factors;
    w->count = 0;
    w->f = 0;
    for (int32_t f = 1;; w->count++) {
        w->digit[w->count] = 0;
        w->fstride[w->count] = f;
        f *= factors[2 * w->count];
        if (factors[2 * w->count + 1] == 1) {
            w->count++;
            return;
        }
    }
}

/* o + 1: its last digit up, carried leftwards */
static void leaves_next(leaves *w)
{
    for (int32_t i = w->count - 1; i >= 0; i--) {
        w->f += w->fstride[i];
        if (++w->digit[i] < w->factors[2 * i]) {
            return;
        }
        w->digit[i] = 0;
        w->f -= w->factors[2 * i] * w->fstride[i];
    }
}

/* kf_work's butterflies without its recursion (a firmware's stack must have a bound): every stage from the last to
 * the first, over each segment of its length. A butterfly reads and writes its own segment alone, so taking the
 * segments in this order rather than depth first leaves every bit the same. */
static void stages(const fftw *s, const int32_t *factors)
{
    int32_t count = 0;
    while (factors[2 * count + 1] > 1) {
        count++;
    }
    count++; /* the stage whose remaining length is 1 */
    for (int32_t st = count - 1; st >= 0; st--) {
        const int32_t radix = factors[2 * st], m = factors[2 * st + 1];
        int32_t fstride = 1;
        for (int32_t k = 0; k < st; k++) {
            fstride *= factors[2 * k];
        }
        for (int32_t j = 0; j < fstride; j++) {
            butterfly(s, j * radix * m, radix, fstride, m);
        }
    }
}

/* The complex DFT of the n inputs into buf[0 .. n): each input put where kf_work's leaves put it, then the stages. */
static void work(const fftw *s, int32_t n, const int32_t *factors)
{
    leaves w;
    leaves_start(&w, factors);
    for (int32_t o = 0; o < n; o++, leaves_next(&w)) {
        const int32_t f = w.f;
        if (s->bits == 16) {
            int16_t *b = (int16_t *)s->buf + 2 * o;
            const int16_t *x = (const int16_t *)s->x;
            b[0] = 2 * f < s->len ? x[2 * f * s->xs] : 0;
            b[1] = 2 * f + 1 < s->len ? x[(2 * f + 1) * s->xs] : 0;
        } else {
            cpxw v;
            v.r = input(s, 2 * f);
            v.i = input(s, 2 * f + 1);
            put(s, o, v);
        }
    }
    stages(s, factors);
}

/* kiss_fft's HALF_OF on a C int: the sum wrapped to 32 bits, halved */
static int32_t half(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v >> 1;
}

/* Offsets of row r of x and y (all dimensions but the last). */
static void row(const mcud_view *x, const mcud_view *y, int32_t r, int32_t *xo, int32_t *yo)
{
    *xo = 0;
    *yo = 0;
    for (int32_t d = x->ndim - 2; d >= 0; d--) {
        *xo += (r % x->shape[d]) * x->stride[d];
        *yo += (r % y->shape[d]) * y->stride[d];
        r /= x->shape[d];
    }
}

static int32_t rows_of(const mcud_view *x)
{
    int32_t rows = 1;
    for (int32_t d = 0; d < x->ndim - 1; d++) {
        rows *= x->shape[d];
    }
    return rows;
}

/* int16's last pass of the real FFT (mcud_signal_rfft_fixed's loop below, at its own width): the two real halves
 * apart, bins k and n - k from the complex bins k and n - k, in place */
static void split16(const fftw *s, int32_t n, const cpxw *super)
{
    int16_t *b = (int16_t *)s->buf;
    const int32_t k2 = s->max / 2;
    const int16_t dcr = div16(b[0], k2), dci = div16(b[1], k2);
    b[0] = add16(dcr, dci);
    b[1] = 0;
    b[2 * n] = sub16(dcr, dci);
    b[2 * n + 1] = 0;
    for (int32_t k = 1; k <= n / 2; k++) {
        int16_t *lo = b + 2 * k, *hi = b + 2 * (n - k);
        const int16_t ar = div16(lo[0], k2), ai = div16(lo[1], k2);
        const int16_t br = div16(hi[0], k2), bi = div16((int16_t)(uint16_t)(uint32_t)(-(int32_t)hi[1]), k2);
        const int16_t f1r = add16(ar, br), f1i = add16(ai, bi), f2r = sub16(ar, br), f2i = sub16(ai, bi);
        int16_t tr, ti;
        cmul16(f2r, f2i, super[k - 1].r, super[k - 1].i, &tr, &ti);
        lo[0] = (int16_t)(uint16_t)(uint32_t)((f1r + tr) >> 1);
        lo[1] = (int16_t)(uint16_t)(uint32_t)((f1i + ti) >> 1);
        hi[0] = (int16_t)(uint16_t)(uint32_t)((f1r - tr) >> 1);
        hi[1] = (int16_t)(uint16_t)(uint32_t)((ti - f1i) >> 1);
    }
}

void mcud_signal_rfft_fixed(const mcud_view *x, const mcud_view *y, const mcud_signal_rfft_fixed_params *p)
{
    const int32_t n = p->fft_length / 2, size = p->bits == 16 ? 2 : 4;
    const cpxw *super = (const cpxw *)(const void *)p->super_twiddles;
    fftw s;
    s.xs = x->stride[x->ndim - 1];
    s.len = x->shape[x->ndim - 1];
    s.tw = (const cpxw *)(const void *)p->twiddles;
    s.bits = p->bits;
    s.frac = p->bits - 1;
    s.max = (int32_t)(((int64_t)1 << s.frac) - 1);
    s.inverse = 0;
    for (int32_t r = 0, rows = rows_of(x); r < rows; r++) {
        int32_t xo, yo;
        row(x, y, r, &xo, &yo);
        s.x = (const char *)x->data + (ptrdiff_t)xo * size;
        s.buf = (char *)y->data + (ptrdiff_t)yo * size;
        work(&s, n, p->factors);
        if (s.bits == 16) {
            split16(&s, n, super);
            continue;
        }
        /* the two real halves apart: bins k and n - k from the complex bins k and n - k, in place */
        const cpxw dc = fixdiv(&s, get(&s, 0), 2);
        cpxw v;
        v.r = wrap(&s, (int64_t)dc.r + dc.i);
        v.i = 0;
        put(&s, 0, v);
        v.r = wrap(&s, (int64_t)dc.r - dc.i);
        put(&s, n, v);
        for (int32_t k = 1; k <= n / 2; k++) {
            cpxw a = get(&s, k), b = get(&s, n - k);
            b.i = wrap(&s, -(int64_t)b.i);
            a = fixdiv(&s, a, 2);
            b = fixdiv(&s, b, 2);
            const cpxw f1 = cadd(&s, a, b), f2 = csub(&s, a, b);
            const cpxw t = cmul(&s, f2, super[k - 1]);
            v.r = wrap(&s, half((int64_t)f1.r + t.r));
            v.i = wrap(&s, half((int64_t)f1.i + t.i));
            put(&s, k, v);
            v.r = wrap(&s, half((int64_t)f1.r - t.r));
            v.i = wrap(&s, half((int64_t)t.i - f1.i));
            put(&s, n - k, v);
        }
    }
}

/* float32: kiss_fft's float macros (no division by the radix; HALF_OF times 0.5f), in float, in its order */
typedef struct {
    float r;
    float i;
} cpxf;

typedef struct {
    const float *x;
    int32_t xs;
    int32_t len;
    cpxf *buf;
    const cpxf *tw;
    float sign; /* 1, or -1 for the inverse */
} fftf;

static cpxf fmul(cpxf a, cpxf b)
{
    cpxf o;
    o.r = a.r * b.r - a.i * b.i;
    o.i = a.r * b.i + a.i * b.r;
    return o;
}

static cpxf fadd(cpxf a, cpxf b)
{
    cpxf o;
    o.r = a.r + b.r;
    o.i = a.i + b.i;
    return o;
}

static cpxf fsub(cpxf a, cpxf b)
{
    cpxf o;
    o.r = a.r - b.r;
    o.i = a.i - b.i;
    return o;
}

static void fbutterfly(const fftf *s, cpxf *out, int32_t radix, int32_t fstride, int32_t m)
{
    const cpxf *tw = s->tw;
    for (int32_t u = 0; u < m; u++) {
        const cpxf a = out[u];
        if (radix == 2) {
            const cpxf t = fmul(out[u + m], tw[u * fstride]);
            out[u + m] = fsub(a, t);
            out[u] = fadd(a, t);
        } else if (radix == 3) {
            const float e = tw[fstride * m].i;
            const cpxf b = fmul(out[u + m], tw[u * fstride]), c = fmul(out[u + 2 * m], tw[2 * u * fstride]);
            const cpxf sum = fadd(b, c);
            cpxf dif = fsub(b, c), mid;
            mid.r = a.r - sum.r * 0.5f;
            mid.i = a.i - sum.i * 0.5f;
            dif.r *= e;
            dif.i *= e;
            out[u] = fadd(a, sum);
            out[u + 2 * m].r = mid.r + dif.i;
            out[u + 2 * m].i = mid.i - dif.r;
            out[u + m].r = mid.r - dif.i;
            out[u + m].i = mid.i + dif.r;
        } else if (radix == 4) {
            const cpxf b = fmul(out[u + m], tw[u * fstride]), c = fmul(out[u + 2 * m], tw[2 * u * fstride]);
            const cpxf d = fmul(out[u + 3 * m], tw[3 * u * fstride]);
            const cpxf ac = fsub(a, c), a2 = fadd(a, c), bd = fadd(b, d), bmd = fsub(b, d);
            out[u + 2 * m] = fsub(a2, bd);
            out[u] = fadd(a2, bd);
            if (s->sign > 0.0f) {
                out[u + m].r = ac.r + bmd.i;
                out[u + m].i = ac.i - bmd.r;
                out[u + 3 * m].r = ac.r - bmd.i;
                out[u + 3 * m].i = ac.i + bmd.r;
            } else {
                out[u + m].r = ac.r - bmd.i;
                out[u + m].i = ac.i + bmd.r;
                out[u + 3 * m].r = ac.r + bmd.i;
                out[u + 3 * m].i = ac.i - bmd.r;
            }
        } else {
            const cpxf ya = tw[fstride * m], yb = tw[2 * fstride * m];
            const cpxf b = fmul(out[u + m], tw[u * fstride]), c = fmul(out[u + 2 * m], tw[2 * u * fstride]);
            const cpxf d = fmul(out[u + 3 * m], tw[3 * u * fstride]), e = fmul(out[u + 4 * m], tw[4 * u * fstride]);
            const cpxf s7 = fadd(b, e), s10 = fsub(b, e), s8 = fadd(c, d), s9 = fsub(c, d);
            cpxf s5, s6, s11, s12;
            out[u].r = a.r + (s7.r + s8.r);
            out[u].i = a.i + (s7.i + s8.i);
            s5.r = a.r + s7.r * ya.r + s8.r * yb.r;
            s5.i = a.i + s7.i * ya.r + s8.i * yb.r;
            s6.r = s10.i * ya.i + s9.i * yb.i;
            s6.i = -(s10.r * ya.i) - s9.r * yb.i;
            s11.r = a.r + s7.r * yb.r + s8.r * ya.r;
            s11.i = a.i + s7.i * yb.r + s8.i * ya.r;
            s12.r = -(s10.i * yb.i) + s9.i * ya.i;
            s12.i = s10.r * yb.i - s9.r * ya.i;
            out[u + m] = fsub(s5, s6);
            out[u + 4 * m] = fadd(s5, s6);
            out[u + 2 * m] = fadd(s11, s12);
            out[u + 3 * m] = fsub(s11, s12);
        }
    }
}

/* stages' float twin, on out[0 .. n) */
static void fstages(const fftf *s, cpxf *out, const int32_t *factors)
{
    int32_t count = 0;
    while (factors[2 * count + 1] > 1) {
        count++;
    }
    count++;
    for (int32_t st = count - 1; st >= 0; st--) {
        const int32_t radix = factors[2 * st], m = factors[2 * st + 1];
        int32_t fstride = 1;
        for (int32_t k = 0; k < st; k++) {
            fstride *= factors[2 * k];
        }
        for (int32_t j = 0; j < fstride; j++) {
            fbutterfly(s, out + j * radix * m, radix, fstride, m);
        }
    }
}

/* work's float twin */
static void fwork(const fftf *s, cpxf *out, int32_t n, const int32_t *factors)
{
    leaves w;
    leaves_start(&w, factors);
    for (int32_t o = 0; o < n; o++, leaves_next(&w)) {
        const int32_t e = 2 * w.f;
        out[o].r = e < s->len ? s->x[e * s->xs] : 0.0f;
        out[o].i = e + 1 < s->len ? s->x[(e + 1) * s->xs] : 0.0f;
    }
    fstages(s, out, factors);
}

void mcud_signal_rfft_f32(const mcud_view *x, const mcud_view *y, const mcud_signal_rfft_f32_params *p)
{
    const int32_t n = p->fft_length / 2;
    const cpxf *super = (const cpxf *)(const void *)p->super_twiddles;
    fftf s;
    s.xs = x->stride[x->ndim - 1];
    s.len = x->shape[x->ndim - 1];
    s.tw = (const cpxf *)(const void *)p->twiddles;
    s.sign = 1.0f;
    for (int32_t r = 0, rows = rows_of(x); r < rows; r++) {
        int32_t xo, yo;
        row(x, y, r, &xo, &yo);
        s.x = (const float *)x->data + xo;
        cpxf *out = (cpxf *)(void *)((float *)y->data + yo);
        fwork(&s, out, n, p->factors);
        const cpxf dc = out[0];
        out[0].r = dc.r + dc.i;
        out[n].r = dc.r - dc.i;
        out[0].i = 0.0f;
        out[n].i = 0.0f;
        for (int32_t k = 1; k <= n / 2; k++) {
            const cpxf a = out[k];
            cpxf b = out[n - k];
            b.i = -b.i;
            const cpxf f1 = fadd(a, b), f2 = fsub(a, b);
            const cpxf t = fmul(f2, super[k - 1]);
            out[k].r = (f1.r + t.r) * 0.5f;
            out[k].i = (f1.i + t.i) * 0.5f;
            out[n - k].r = (f1.r - t.r) * 0.5f;
            out[n - k].i = (t.i - f1.i) * 0.5f;
        }
    }
}

static cpxw bin(const fftw *in, int32_t xs, int32_t k)
{
    cpxw o;
    if (in->bits == 16) {
        o.r = ((const int16_t *)in->buf)[2 * k * xs];
        o.i = ((const int16_t *)in->buf)[(2 * k + 1) * xs];
    } else {
        o.r = ((const int32_t *)in->buf)[2 * k * xs];
        o.i = ((const int32_t *)in->buf)[(2 * k + 1) * xs];
    }
    return o;
}

/* The inverse, in place in the output row: kiss_fft's leaf order (the mixed-radix digit reversal kf_work reads its
 * input in) applied by following each cycle of `perm` from its leader, then the stages from the last to the first,
 * each over the segments of its length, as kf_work's recursion runs them. */
static void permute(const fftw *s, const int32_t *perm, const int32_t *leaders, int32_t nleaders)
{
    for (int32_t l = 0; l < nleaders; l++) {
        const int32_t lead = leaders[l];
        const cpxw first = get(s, lead);
        int32_t pos = lead;
        for (;;) {
            const int32_t src = perm[pos];
            if (src == lead) {
                put(s, pos, first);
                break;
            }
            put(s, pos, get(s, src));
            pos = src;
        }
    }
}

void mcud_signal_irfft_fixed(const mcud_view *x, const mcud_view *y, const mcud_signal_irfft_fixed_params *p)
{
    const int32_t n = p->fft_length / 2, size = p->bits == 16 ? 2 : 4;
    const cpxw *super = (const cpxw *)(const void *)p->super_twiddles;
    const int32_t xs = x->stride[x->ndim - 1];
    fftw s;
    s.xs = 1;
    s.len = 0;
    s.tw = (const cpxw *)(const void *)p->twiddles;
    s.bits = p->bits;
    s.frac = p->bits - 1;
    s.max = (int32_t)(((int64_t)1 << s.frac) - 1);
    s.inverse = 1;
    for (int32_t r = 0, rows = rows_of(x); r < rows; r++) {
        int32_t xo, yo;
        row(x, y, r, &xo, &yo);
        fftw in = s;
        in.buf = (void *)((const char *)x->data + (ptrdiff_t)xo * size);
        s.buf = (char *)y->data + (ptrdiff_t)yo * size;
        /* the input's bins (stride xs in elements: read one pair at a time) */
#define BIN(k) bin(&in, xs, (k))
        cpxw a = BIN(0), b = BIN(n), v;
        v.r = wrap(&s, (int64_t)a.r + b.r);
        v.i = wrap(&s, (int64_t)a.r - b.r);
        put(&s, 0, fixdiv(&s, v, 2));
        for (int32_t k = 1; k <= n / 2; k++) {
            cpxw fk = BIN(k), fn = BIN(n - k);
            fn.i = wrap(&s, -(int64_t)fn.i);
            fk = fixdiv(&s, fk, 2);
            fn = fixdiv(&s, fn, 2);
            const cpxw even = cadd(&s, fk, fn), odd = cmul(&s, csub(&s, fk, fn), super[k - 1]);
            put(&s, k, cadd(&s, even, odd));
            v = csub(&s, even, odd);
            v.i = wrap(&s, -(int64_t)v.i);
            put(&s, n - k, v);
        }
#undef BIN
        permute(&s, p->perm, p->leaders, p->nleaders);
        stages(&s, p->factors);
    }
}

void mcud_signal_irfft_f32(const mcud_view *x, const mcud_view *y, const mcud_signal_irfft_f32_params *p)
{
    const int32_t n = p->fft_length / 2, xs = x->stride[x->ndim - 1];
    const cpxf *super = (const cpxf *)(const void *)p->super_twiddles;
    fftf s;
    s.x = NULL;
    s.xs = 1;
    s.len = 0;
    s.buf = NULL;
    s.tw = (const cpxf *)(const void *)p->twiddles;
    s.sign = -1.0f;
    for (int32_t r = 0, rows = rows_of(x); r < rows; r++) {
        int32_t xo, yo;
        row(x, y, r, &xo, &yo);
        const float *in = (const float *)x->data + xo;
        cpxf *out = (cpxf *)(void *)((float *)y->data + yo);
        out[0].r = in[0] + in[2 * n * xs];
        out[0].i = in[0] - in[2 * n * xs];
        for (int32_t k = 1; k <= n / 2; k++) {
            cpxf fk, fn;
            fk.r = in[2 * k * xs];
            fk.i = in[(2 * k + 1) * xs];
            fn.r = in[2 * (n - k) * xs];
            fn.i = -in[(2 * (n - k) + 1) * xs];
            const cpxf even = fadd(fk, fn), odd = fmul(fsub(fk, fn), super[k - 1]);
            out[k] = fadd(even, odd);
            out[n - k] = fsub(even, odd);
            out[n - k].i *= -1.0f;
        }
        for (int32_t l = 0; l < p->nleaders; l++) { /* kiss_fft's input order, cycle by cycle */
            const int32_t lead = p->leaders[l];
            const cpxf first = out[lead];
            int32_t pos = lead;
            for (;;) {
                const int32_t src = p->perm[pos];
                if (src == lead) {
                    out[pos] = first;
                    break;
                }
                out[pos] = out[src];
                pos = src;
            }
        }
        fstages(&s, out, p->factors);
        for (int32_t i = 0; i < n; i++) { /* TFLite Micro's float IRFFT divides by the real length */
            out[i].r /= (float)p->fft_length;
            out[i].i /= (float)p->fft_length;
        }
    }
}
