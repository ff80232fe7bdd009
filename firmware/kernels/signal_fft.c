/* TensorFlow Lite Micro's SignalRfft (its kiss_fft 1.3.0 in fixed point), bit for bit: see mcud_signal.h and
 * mcudeploy/ops/signal_rfft.py, whose numpy reference does the same arithmetic step by step. Written for the
 * arithmetic, not for speed: one recursive pass per stage, no DSP instructions yet. */
#include "mcud_signal.h"

typedef struct {
    int16_t r;
    int16_t i;
} cpx16;

typedef struct {
    const int16_t *x; /* the row */
    int32_t xs;       /* its stride in elements */
    int32_t len;      /* its length: elements past it are 0 (TFLite Micro's zero padding) */
    const cpx16 *tw;
} fft16;

/* x * 2^-15 rounded half up and kept to 16 bits, as kiss_fft's sround; right shifts of negative values are arithmetic
 * and conversions wrap on every compiler mcudeploy supports. */
static int16_t sround16(int32_t v)
{
    return (int16_t)((v + (1 << 14)) >> 15);
}

static cpx16 fixdiv16(cpx16 c, int32_t div)
{
    const int32_t k = 32767 / div;
    cpx16 o;
    o.r = sround16((int32_t)c.r * k);
    o.i = sround16((int32_t)c.i * k);
    return o;
}

static cpx16 cmul16(cpx16 a, cpx16 b)
{
    cpx16 o;
    o.r = sround16((int32_t)a.r * b.r - (int32_t)a.i * b.i);
    o.i = sround16((int32_t)a.r * b.i + (int32_t)a.i * b.r);
    return o;
}

static cpx16 cadd16(cpx16 a, cpx16 b)
{
    cpx16 o;
    o.r = (int16_t)(a.r + b.r);
    o.i = (int16_t)(a.i + b.i);
    return o;
}

static cpx16 csub16(cpx16 a, cpx16 b)
{
    cpx16 o;
    o.r = (int16_t)(a.r - b.r);
    o.i = (int16_t)(a.i - b.i);
    return o;
}

static cpx16 load16(const fft16 *s, int32_t k)
{
    cpx16 o;
    o.r = 2 * k < s->len ? s->x[2 * k * s->xs] : 0;
    o.i = 2 * k + 1 < s->len ? s->x[(2 * k + 1) * s->xs] : 0;
    return o;
}

static void radix2(cpx16 *out, const fft16 *s, int32_t fstride, int32_t m)
{
    for (int32_t u = 0; u < m; u++) {
        const cpx16 a = fixdiv16(out[u], 2), b = fixdiv16(out[u + m], 2);
        const cpx16 t = cmul16(b, s->tw[u * fstride]);
        out[u + m] = csub16(a, t);
        out[u] = cadd16(a, t);
    }
}

static void radix3(cpx16 *out, const fft16 *s, int32_t fstride, int32_t m)
{
    const int16_t e = s->tw[fstride * m].i;
    for (int32_t u = 0; u < m; u++) {
        const cpx16 a = fixdiv16(out[u], 3);
        const cpx16 b = cmul16(fixdiv16(out[u + m], 3), s->tw[u * fstride]);
        const cpx16 c = cmul16(fixdiv16(out[u + 2 * m], 3), s->tw[2 * u * fstride]);
        const cpx16 sum = cadd16(b, c);
        cpx16 dif = csub16(b, c), mid;
        mid.r = (int16_t)(a.r - (sum.r >> 1));
        mid.i = (int16_t)(a.i - (sum.i >> 1));
        dif.r = sround16((int32_t)dif.r * e);
        dif.i = sround16((int32_t)dif.i * e);
        out[u] = cadd16(a, sum);
        out[u + 2 * m].r = (int16_t)(mid.r + dif.i);
        out[u + 2 * m].i = (int16_t)(mid.i - dif.r);
        out[u + m].r = (int16_t)(mid.r - dif.i);
        out[u + m].i = (int16_t)(mid.i + dif.r);
    }
}

static void radix4(cpx16 *out, const fft16 *s, int32_t fstride, int32_t m)
{
    for (int32_t u = 0; u < m; u++) {
        const cpx16 a = fixdiv16(out[u], 4);
        const cpx16 b = cmul16(fixdiv16(out[u + m], 4), s->tw[u * fstride]);
        const cpx16 c = cmul16(fixdiv16(out[u + 2 * m], 4), s->tw[2 * u * fstride]);
        const cpx16 d = cmul16(fixdiv16(out[u + 3 * m], 4), s->tw[3 * u * fstride]);
        const cpx16 ac = csub16(a, c), a2 = cadd16(a, c);
        const cpx16 bd = cadd16(b, d), bmd = csub16(b, d);
        out[u + 2 * m] = csub16(a2, bd);
        out[u] = cadd16(a2, bd);
        out[u + m].r = (int16_t)(ac.r + bmd.i);
        out[u + m].i = (int16_t)(ac.i - bmd.r);
        out[u + 3 * m].r = (int16_t)(ac.r - bmd.i);
        out[u + 3 * m].i = (int16_t)(ac.i + bmd.r);
    }
}

static int16_t smul16(int16_t a, int16_t b)
{
    return sround16((int32_t)a * b);
}

static void radix5(cpx16 *out, const fft16 *s, int32_t fstride, int32_t m)
{
    const cpx16 ya = s->tw[fstride * m], yb = s->tw[2 * fstride * m];
    for (int32_t u = 0; u < m; u++) {
        const cpx16 a = fixdiv16(out[u], 5);
        const cpx16 b = cmul16(fixdiv16(out[u + m], 5), s->tw[u * fstride]);
        const cpx16 c = cmul16(fixdiv16(out[u + 2 * m], 5), s->tw[2 * u * fstride]);
        const cpx16 d = cmul16(fixdiv16(out[u + 3 * m], 5), s->tw[3 * u * fstride]);
        const cpx16 e = cmul16(fixdiv16(out[u + 4 * m], 5), s->tw[4 * u * fstride]);
        const cpx16 s7 = cadd16(b, e), s10 = csub16(b, e), s8 = cadd16(c, d), s9 = csub16(c, d);
        cpx16 s5, s6, s11, s12, o0;
        o0.r = (int16_t)(a.r + (s7.r + s8.r));
        o0.i = (int16_t)(a.i + (s7.i + s8.i));
        s5.r = (int16_t)(a.r + smul16(s7.r, ya.r) + smul16(s8.r, yb.r));
        s5.i = (int16_t)(a.i + smul16(s7.i, ya.r) + smul16(s8.i, yb.r));
        s6.r = (int16_t)(smul16(s10.i, ya.i) + smul16(s9.i, yb.i));
        s6.i = (int16_t)(-smul16(s10.r, ya.i) - smul16(s9.r, yb.i));
        s11.r = (int16_t)(a.r + smul16(s7.r, yb.r) + smul16(s8.r, ya.r));
        s11.i = (int16_t)(a.i + smul16(s7.i, yb.r) + smul16(s8.i, ya.r));
        s12.r = (int16_t)(-smul16(s10.i, yb.i) + smul16(s9.i, ya.i));
        s12.i = (int16_t)(smul16(s10.r, yb.i) - smul16(s9.r, ya.i));
        out[u] = o0;
        out[u + m] = csub16(s5, s6);
        out[u + 4 * m] = cadd16(s5, s6);
        out[u + 2 * m] = cadd16(s11, s12);
        out[u + 3 * m] = csub16(s11, s12);
    }
}

/* The DFT of the n / fstride inputs f, f + fstride, ... into out, by the stages from `factors` on. */
static void work16(cpx16 *out, const fft16 *s, int32_t f, int32_t fstride, const int32_t *factors)
{
    const int32_t radix = factors[0], m = factors[1];
    for (int32_t k = 0; k < radix; k++) {
        if (m == 1) {
            out[k] = load16(s, f + k * fstride);
        } else {
            work16(out + k * m, s, f + k * fstride, fstride * radix, factors + 2);
        }
    }
    switch (radix) {
    case 2:
        radix2(out, s, fstride, m);
        break;
    case 3:
        radix3(out, s, fstride, m);
        break;
    case 4:
        radix4(out, s, fstride, m);
        break;
    default:
        radix5(out, s, fstride, m);
        break;
    }
}

void mcud_signal_rfft_s16(const mcud_view *x, const mcud_view *y, const mcud_signal_rfft_s16_params *p)
{
    const int32_t last = x->ndim - 1, len = x->shape[last], n = p->fft_length / 2;
    int32_t rows = 1;
    for (int32_t d = 0; d < last; d++) {
        rows *= x->shape[d];
    }
    const cpx16 *super = (const cpx16 *)(const void *)p->super_twiddles;
    for (int32_t r = 0; r < rows; r++) {
        int32_t xo = 0, yo = 0, rest = r;
        for (int32_t d = last - 1; d >= 0; d--) {
            xo += (rest % x->shape[d]) * x->stride[d];
            yo += (rest % y->shape[d]) * y->stride[d];
            rest /= x->shape[d];
        }
        fft16 s;
        s.x = (const int16_t *)x->data + xo;
        s.xs = x->stride[last];
        s.len = len;
        s.tw = (const cpx16 *)(const void *)p->twiddles;
        cpx16 *out = (cpx16 *)(void *)((int16_t *)y->data + yo);
        work16(out, &s, 0, 1, p->factors);
        /* the two real halves apart: bins k and n - k from the complex bins k and n - k, in place */
        cpx16 dc = fixdiv16(out[0], 2);
        out[0].r = (int16_t)(dc.r + dc.i);
        out[n].r = (int16_t)(dc.r - dc.i);
        out[0].i = 0;
        out[n].i = 0;
        for (int32_t k = 1; k <= n / 2; k++) {
            cpx16 a = out[k], b;
            b.r = out[n - k].r;
            b.i = (int16_t)-out[n - k].i;
            a = fixdiv16(a, 2);
            b = fixdiv16(b, 2);
            const cpx16 f1 = cadd16(a, b), f2 = csub16(a, b);
            const cpx16 t = cmul16(f2, super[k - 1]);
            out[k].r = (int16_t)((f1.r + t.r) >> 1);
            out[k].i = (int16_t)((f1.i + t.i) >> 1);
            out[n - k].r = (int16_t)((f1.r - t.r) >> 1);
            out[n - k].i = (int16_t)((t.i - f1.i) >> 1);
        }
    }
}
