/* TensorFlow Lite Micro's Signal operators but the FFTs (signal_fft.c): see mcud_signal.h and, for each kernel's
 * arithmetic, mcudeploy/ops/signal_*.py. */
#include "mcud_signal.h"

/* The offset in elements of element `flat` (row-major order) of view v. */
static int32_t at(const mcud_view *v, int32_t flat)
{
    int32_t off = 0;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        off += (flat % v->shape[d]) * v->stride[d];
        flat /= v->shape[d];
    }
    return off;
}

static int32_t count(const mcud_view *v)
{
    int32_t n = 1;
    for (int32_t d = 0; d < v->ndim; d++) {
        n *= v->shape[d];
    }
    return n;
}

/* 1 + the index of the highest set bit; 32 for 0, as GCC's __builtin_clz path of TFLite Micro's
 * MostSignificantBit32 gives. */
static uint32_t msb32(uint32_t x)
{
    uint32_t n = 0;
    if (x == 0u) {
        return 32u;
    }
    while (x) {
        x >>= 1;
        n++;
    }
    return n;
}

static uint32_t msb64(uint64_t x)
{
    uint32_t n = 0;
    if (x == 0u) {
        return 64u;
    }
    while (x) {
        x >>= 1;
        n++;
    }
    return n;
}

void mcud_signal_window(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                        const mcud_signal_window_params *p)
{
    const int16_t *xd = (const int16_t *)x->data;
    const int16_t *wd = (const int16_t *)w->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t n = count(x), m = w->shape[0];
    for (int32_t i = 0; i < n; i++) {
        int32_t v = ((int32_t)xd[at(x, i)] * (int32_t)wd[(i % m) * w->stride[0]]) >> p->shift;
        yd[at(y, i)] = (int16_t)(v < INT16_MIN ? INT16_MIN : (v > INT16_MAX ? INT16_MAX : v));
    }
}

void mcud_signal_fft_auto_scale(const mcud_view *x, const mcud_view *y, const mcud_view *scale)
{
    const int16_t *xd = (const int16_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    const int32_t n = x->shape[0];
    int16_t max = 0;
    for (int32_t i = 0; i < n; i++) { /* TFLite Micro's MaxAbs16, -(-32768) stored back into int16 included */
        const int16_t v = xd[i * x->stride[0]];
        if (v > max) {
            max = v;
        } else if (-(int32_t)v > max) {
            max = (int16_t)(uint16_t)(-(int32_t)v);
        }
    }
    int32_t bits = 16 - (int32_t)msb32((uint32_t)(int32_t)max) - 1;
    if (bits < 0) {
        bits = 0;
    }
    for (int32_t i = 0; i < n; i++) {
        yd[i * y->stride[0]] = (int16_t)(uint16_t)((uint32_t)(int32_t)xd[i * x->stride[0]] << bits);
    }
    *(int32_t *)scale->data = bits;
}

void mcud_signal_energy(const mcud_view *x, const mcud_view *y, const mcud_signal_energy_params *p)
{
    const int16_t *xd = (const int16_t *)x->data;
    uint32_t *yd = (uint32_t *)y->data;
    for (int32_t i = 0; i < y->shape[0]; i++) {
        uint32_t e = 0;
        if (i >= p->start && i < p->end) {
            const int32_t re = xd[2 * i * x->stride[0]], im = xd[(2 * i + 1) * x->stride[0]];
            e = (uint32_t)(re * re) + (uint32_t)(im * im);
        }
        yd[i * y->stride[0]] = e;
    }
}

void mcud_signal_filter_bank(const mcud_view *x, const mcud_view *weights, const mcud_view *unweights,
                             const mcud_view *starts, const mcud_view *weight_starts, const mcud_view *widths,
                             const mcud_view *y, const mcud_signal_filter_bank_params *p)
{
    const uint32_t *xd = (const uint32_t *)x->data;
    const int16_t *wd = (const int16_t *)weights->data, *ud = (const int16_t *)unweights->data;
    const int16_t *sd = (const int16_t *)starts->data, *wsd = (const int16_t *)weight_starts->data;
    const int16_t *nd = (const int16_t *)widths->data;
    uint64_t *yd = (uint64_t *)y->data;
    uint64_t weighted = 0, unweighted = 0;
    for (int32_t c = 0; c <= p->channels; c++) {
        const int32_t f0 = sd[c * starts->stride[0]], w0 = wsd[c * weight_starts->stride[0]];
        const int32_t width = nd[c * widths->stride[0]];
        for (int32_t j = 0; j < width; j++) {
            const uint64_t v = xd[(f0 + j) * x->stride[0]];
            weighted += (uint64_t)(int64_t)wd[(w0 + j) * weights->stride[0]] * v;
            unweighted += (uint64_t)(int64_t)ud[(w0 + j) * unweights->stride[0]] * v;
        }
        if (c > 0) {
            yd[(c - 1) * y->stride[0]] = weighted;
        }
        weighted = unweighted;
        unweighted = 0;
    }
}

/* TFLite Micro's Sqrt32: the integer square root bit by bit, then + 1 where the remainder exceeds the root
 * (but not past 0xFFFF). */
static uint32_t sqrt32(uint32_t num)
{
    if (num == 0u) {
        return 0u;
    }
    uint32_t res = 0;
    const int32_t top = (int32_t)((32u - msb32(num)) | 1u);
    uint32_t bit = 1u << (31 - top);
    for (int32_t k = (31 - top) / 2 + 1; k > 0; k--) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    if (num > res && res != 0xFFFFu) {
        res++;
    }
    return (uint16_t)res;
}

static uint32_t sqrt64(uint64_t num)
{
    if ((num >> 32) == 0u) {
        return sqrt32((uint32_t)num);
    }
    uint64_t res = 0;
    const int32_t top = (int32_t)((64u - msb64(num)) | 1u);
    uint64_t bit = (uint64_t)1 << (63 - top);
    for (int32_t k = (63 - top) / 2 + 1; k > 0; k--) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    if (num > res && res != 0xFFFFFFFFu) {
        res++;
    }
    return (uint32_t)res;
}

void mcud_signal_filter_bank_square_root(const mcud_view *x, const mcud_view *scale_bits, const mcud_view *y)
{
    const uint64_t *xd = (const uint64_t *)x->data;
    uint32_t *yd = (uint32_t *)y->data;
    const int32_t shift = *(const int32_t *)scale_bits->data;
    for (int32_t i = 0; i < x->shape[0]; i++) {
        yd[i * y->stride[0]] = sqrt64(xd[i * x->stride[0]]) >> shift;
    }
}

/* TFLite Micro's Log32: log2 as integer part and a fraction corrected by the table, times ln 2 (45426 / 2^16),
 * scaled by out_scale / 2^16, each step rounded; unsigned 32-bit wrapping as there. */
static uint32_t log32(uint32_t x, uint32_t out_scale, const uint16_t *lut)
{
    const uint32_t integer = msb32(x) - 1u;
    int32_t frac = (int32_t)(uint32_t)((uint64_t)x - ((uint64_t)1 << integer));
    if (integer < 16u) {
        frac = (int32_t)((uint32_t)frac << (16u - integer));
    } else {
        frac >>= integer - 16u;
    }
    const uint32_t seg = (uint32_t)frac >> 9;
    const int32_t c0 = lut[seg], c1 = lut[seg + 1];
    const int32_t rel = ((c1 - c0) * (frac - (int32_t)(512u * seg))) >> 16;
    const uint32_t fraction = (uint32_t)(frac + c0 + rel);
    const uint32_t log2 = (integer << 16) + fraction;
    const uint32_t loge = (uint32_t)(((uint64_t)45426u * log2 + 32768u) >> 16);
    return (out_scale * loge + 32768u) >> 16;
}

void mcud_signal_filter_bank_log(const mcud_view *x, const mcud_view *y, const mcud_signal_log_params *p)
{
    const uint32_t *xd = (const uint32_t *)x->data;
    int16_t *yd = (int16_t *)y->data;
    for (int32_t i = 0; i < x->shape[0]; i++) {
        const uint32_t scaled = xd[i * x->stride[0]] << p->correction_bits;
        int16_t out = 0;
        if (scaled > 1u) {
            const uint32_t v = log32(scaled, (uint32_t)p->output_scale, p->lut);
            out = (int16_t)(v < (uint32_t)INT16_MAX ? v : (uint32_t)INT16_MAX);
        }
        yd[i * y->stride[0]] = out;
    }
}

/* TFLite Micro's WideDynamicFunction: the gain of a noise level, a quadratic per octave from the table. */
static int16_t pcan_gain(uint32_t x, const int16_t *lut, int32_t ls)
{
    if (x <= 2u) {
        return lut[x * (uint32_t)ls];
    }
    const int32_t interval = (int32_t)msb32(x);
    const int32_t base = 4 * interval - 6;
    const int32_t frac = (int32_t)(int16_t)(((interval < 11) ? (x << (11 - interval)) : (x >> (interval - 11))) &
                                            0x3FFu);
    int32_t r = ((int32_t)lut[(base + 2) * ls] * frac) >> 5;
    r += (int32_t)((uint32_t)(int32_t)lut[(base + 1) * ls] << 5);
    r = (int32_t)((uint32_t)r * (uint32_t)frac);
    r = (r + (1 << 14)) >> 15;
    r += lut[base * ls];
    return (int16_t)r;
}

void mcud_signal_pcan(const mcud_view *x, const mcud_view *noise, const mcud_view *lut, const mcud_view *y,
                      const mcud_signal_pcan_params *p)
{
    const uint32_t *xd = (const uint32_t *)x->data, *nd = (const uint32_t *)noise->data;
    uint32_t *yd = (uint32_t *)y->data;
    for (int32_t i = 0; i < x->shape[0]; i++) {
        const uint32_t gain = (uint32_t)(int32_t)pcan_gain(nd[i * noise->stride[0]], (const int16_t *)lut->data,
                                                           lut->stride[0]);
        const uint32_t snr = (uint32_t)(((uint64_t)xd[i * x->stride[0]] * gain) >> p->snr_shift);
        yd[i * y->stride[0]] = snr < (2u << 12) ? (snr * snr) >> 20 : (snr >> 6) - (1u << 6);
    }
}

void mcud_signal_spectral_subtraction(const mcud_view *x, const mcud_view *noise, const mcud_view *y,
                                      const mcud_view *noise_next, const mcud_signal_spectral_subtraction_params *p)
{
    const uint32_t *xd = (const uint32_t *)x->data, *nd = (const uint32_t *)noise->data;
    uint32_t *yd = (uint32_t *)y->data, *od = (uint32_t *)noise_next->data;
    for (int32_t i = 0; i < p->channels; i++) {
        const int odd = i & 1;
        const uint32_t s = odd ? p->alternate_smoothing : p->smoothing;
        const uint32_t oms = odd ? p->alternate_one_minus_smoothing : p->one_minus_smoothing;
        const uint32_t in = xd[i * x->stride[0]];
        const uint32_t up = in << p->smoothing_bits;
        uint32_t est = (uint32_t)(((uint64_t)up * s + (uint64_t)nd[i * noise->stride[0]] * oms) >>
                                  p->spectral_subtraction_bits);
        uint32_t kept = est;
        if (est > up) {
            est = up;
            if (p->clamping) {
                kept = up;
            }
        }
        const uint32_t floor = (uint32_t)(((uint64_t)in * p->min_signal_remaining) >> p->spectral_subtraction_bits);
        const uint32_t sub = (up - est) >> p->smoothing_bits;
        od[i * noise_next->stride[0]] = kept;
        yd[i * y->stride[0]] = sub > floor ? sub : floor;
    }
}

void mcud_signal_stream_s16(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *valid,
                            const mcud_view *next, const mcud_signal_stream_params *p)
{
    const int16_t *xd = (const int16_t *)x->data;
    const int16_t *sd = state ? (const int16_t *)state->data : NULL;
    int16_t *yd = (int16_t *)y->data, *nd = next ? (int16_t *)next->data : NULL;
    if (valid) {
        *(uint8_t *)valid->data = 1;
    }
    const int32_t n = x->shape[x->ndim - 1], rows = count(x) / n;
    const int32_t k = p->keep; /* state and next are NULL when it is 0 (the tests below say so to an analyser) */
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t f = 0; f < p->frames; f++) {
            for (int32_t i = 0; i < p->frame_size; i++) {
                const int32_t c = f * p->step + i;
                const int16_t v = c < k && state != NULL ? sd[at(state, r * k + c)] : xd[at(x, r * n + c - k)];
                yd[at(y, (r * p->frames + f) * p->frame_size + i)] = v;
            }
        }
        for (int32_t j = 0; j < k && next != NULL; j++) {
            const int32_t c = n + j;
            const int16_t v = c < k && state != NULL ? sd[at(state, r * k + c)] : xd[at(x, r * n + c - k)];
            nd[at(next, r * k + j)] = v;
        }
    }
}

/* Overlap-add of one row on a buffer of frame_size values (the state's, copied first into next's buffer, which may be
 * the same): per frame add, output the first step values, shift. */
#define MCUD_OVERLAP_ADD(T, ADD)                                                                                      \
    const T *xd = (const T *)x->data, *sd = (const T *)state->data;                                                  \
    T *yd = (T *)y->data, *nd = (T *)next->data;                                                                     \
    const int32_t size = p->frame_size, step = p->step, rows = count(x) / (p->frames * size);                         \
    for (int32_t r = 0; r < rows; r++) {                                                                             \
        for (int32_t i = 0; i < size; i++) {                                                                         \
            nd[at(next, r * size + i)] = sd[at(state, r * size + i)];                                                \
        }                                                                                                            \
        for (int32_t f = 0; f < p->frames; f++) {                                                                    \
            for (int32_t i = 0; i < size; i++) {                                                                     \
                T *b = &nd[at(next, r * size + i)];                                                                  \
                *b = ADD(*b, xd[at(x, (r * p->frames + f) * size + i)]);                                             \
            }                                                                                                        \
            for (int32_t i = 0; i < step; i++) {                                                                     \
                yd[at(y, (r * p->frames + f) * step + i)] = nd[at(next, r * size + i)];                              \
            }                                                                                                        \
            for (int32_t i = 0; i < size; i++) {                                                                     \
                nd[at(next, r * size + i)] = i + step < size ? nd[at(next, r * size + i + step)] : (T)0;             \
            }                                                                                                        \
        }                                                                                                            \
    }

static int16_t add_sat16(int16_t a, int16_t b)
{
    const int32_t v = (int32_t)a + b;
    return (int16_t)(v < INT16_MIN ? INT16_MIN : (v > INT16_MAX ? INT16_MAX : v));
}

static float add_f32(float a, float b)
{
    return a + b;
}

void mcud_signal_overlap_add_s16(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *next,
                                 const mcud_signal_overlap_add_params *p)
{
    MCUD_OVERLAP_ADD(int16_t, add_sat16)
}

void mcud_signal_overlap_add_f32(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *next,
                                 const mcud_signal_overlap_add_params *p)
{
    MCUD_OVERLAP_ADD(float, add_f32)
}

void mcud_signal_stacker_s16(const mcud_view *x, const mcud_view *buf, const mcud_view *meta, const mcud_view *last,
                             const mcud_view *y, const mcud_view *valid, const mcud_view *buf_next,
                             const mcud_view *meta_next, const mcud_view *last_next,
                             const mcud_signal_stacker_params *p)
{
    const int16_t *xd = (const int16_t *)x->data, *bd = (const int16_t *)buf->data;
    const int16_t *ld = (const int16_t *)last->data;
    const int32_t *md = (const int32_t *)meta->data;
    int16_t *yd = (int16_t *)y->data, *nd = (int16_t *)buf_next->data, *lnd = (int16_t *)last_next->data;
    int32_t *mnd = (int32_t *)meta_next->data;
    const int32_t c = p->channels, held = md[0], first = md[1] == 0;
    const int32_t total = held + 1 + (first ? p->left : 0); /* frames after this call's writes */
    const int32_t size = p->context * c;
    /* frame f of the sequence: the held ones, then x (repeated at the first call) */
#define STACKED(f, i) ((f) < held ? bd[at(buf, (f) * c + (i))] : xd[at(x, (i))])
    if (total >= p->context) {
        for (int32_t e = 0; e < size; e++) {
            const int16_t v = STACKED(e / c, e % c);
            yd[at(y, e)] = v;
        }
        for (int32_t e = 0; e < size; e++) {
            lnd[at(last_next, e)] = yd[at(y, e)];
        }
        *(uint8_t *)valid->data = 1;
        const int32_t kept = total - p->step;
        for (int32_t e = 0; e < size; e++) { /* the frames after the first step, in order (reads ahead of writes) */
            const int32_t f = e / c + p->step;
            nd[at(buf_next, e)] = e / c < kept ? STACKED(f, e % c) : 0;
        }
        mnd[0] = kept;
    } else {
        for (int32_t e = 0; e < size; e++) {
            const int16_t v = ld[at(last, e)];
            yd[at(y, e)] = v;
            lnd[at(last_next, e)] = v;
        }
        *(uint8_t *)valid->data = 0;
        for (int32_t f = held; f < total; f++) { /* frames before held are where they were */
            for (int32_t i = 0; i < c; i++) {
                nd[at(buf_next, f * c + i)] = xd[at(x, i)];
            }
        }
        if (buf_next->data != buf->data) {
            for (int32_t e = 0; e < held * c; e++) {
                nd[at(buf_next, e)] = bd[at(buf, e)];
            }
        }
        for (int32_t e = total * c; e < size; e++) {
            nd[at(buf_next, e)] = 0;
        }
        mnd[0] = total;
    }
#undef STACKED
    mnd[1] = 1;
}
