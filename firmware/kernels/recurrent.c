/* LSTM on views (mcudeploy/ops/recurrent.py), as TensorFlow Lite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM computes it.
 *
 * Every batch row runs its own sequence. TFLite Micro computes each gate for all units in turn; every operation
 * after the two products is element-wise, so here each unit j is done at once: its four gates from x_t and the
 * previous hidden state, then its cell state (in scratch) and its new hidden state, written straight into y[b][t].
 * The previous hidden state is h0[b] at the first step and y[b][t - 1] after it, so nothing else is kept. */
#include <math.h>

#include "mcud_recurrent.h"

#define GATES 4 /* input, forget, cell, output */

/* TFLite's sigmoid(i / 24) in unsigned 0.16 fixed point (sigmoid_table_uint16), shared by its int16 logistic
 * and tanh; the same table is SIGMOID_    32768u, 33451u, 34133u, 34813u, 35493u, 36169u, 36843u, 37513u, 38180u, 38841u, 39498u, 40149u,
    40794u, 41432u, 42064u, 42688u, 43304u, 43912u, 44511u, 45102u, 45683u, 46255u, 46817u, 47369u,
    47911u, 48443u, 48964u, 49475u, 49975u, 50464u, 50942u, 51409u, 51865u, 52311u, 52745u, 53169u,
    53581u, 53983u, 54374u, 54755u, 55125u, 55485u, 55834u, 56174u, 56503u, 56823u, 57133u, 57433u,
    57724u, 58007u, 58280u, 58544u, 58800u, 59048u, 59288u, 59519u, 59743u, 59959u, 60168u, 60370u,
    60565u, 60753u, 60935u, 61110u, 61279u, 61441u, 61599u, 61750u, 61896u, 62036u, 62172u, 62302u,
    62428u, 62549u, 62666u, 62778u, 62886u, 62990u, 63090u, 63186u, 63279u, 63368u, 63454u, 63536u,
    63615u, 63691u, 63765u, 63835u, 63903u, 63968u, 64030u, 64090u, 64148u, 64204u, 64257u, 64308u,
    64357u, 64405u, 64450u, 64494u, 64536u, 64576u, 64614u, 64652u, 64687u, 64721u, 64754u, 64786u,
    64816u, 64845u, 64873u, 64900u, 64926u, 64950u, 64974u, 64997u, 65019u, 65039u, 65060u, 65079u,
    65097u, 65115u, 65132u, 65149u, 65164u, 65179u, 65194u, 65208u, 65221u, 65234u, 65246u, 65258u,
    65269u, 65280u, 65291u, 65301u, 65310u, 65319u, 65328u, 65337u, 65345u, 65352u, 65360u, 65367u,
    65374u, 65381u, 65387u, 65393u, 65399u, 65404u, 65410u, 65415u, 65420u, 65425u, 65429u, 65433u,
    65438u, 65442u, 65445u, 65449u, 65453u, 65456u, 65459u, 65462u, 65465u, 65468u, 65471u, 65474u,
    65476u, 65479u, 65481u, 65483u, 65485u, 65488u, 65489u, 65491u, 65493u, 65495u, 65497u, 65498u,
    65500u, 65501u, 65503u, 65504u, 65505u, 65507u, 65508u, 65509u, 65510u, 65511u, 65512u, 65513u,
    65514u, 65515u, 65516u, 65517u, 65517u, 65518u, 65519u, 65520u, 65520u, 65521u, 65522u, 65522u,
    65523u, 65523u, 65524u, 65524u, 65525u, 65525u, 65526u, 65526u, 65526u, 65527u, 65527u, 65528u,
    65528u, 65528u, 65529u, 65529u, 65529u, 65529u, 65530u, 65530u, 65530u, 65530u, 65531u, 65531u,
    65531u, 65531u, 65531u, 65532u, 65532u, 65532u, 65532u, 65532u, 65532u, 65533u, 65533u, 65533u,
    65533u, 65533u, 65533u, 65533u, 65533u, 65534u, 65534u, 65534u, 65534u, 65534u, 65534u, 65534u,
    65534u, 65534u, 65534u, 65535u, in mcudeploy/ops/recurrent.py. */
static const uint16_t sigmoid_table[256] = {
    32768u, 33451u, 34133u, 34813u, 35493u, 36169u, 36843u, 37513u, 38180u, 38841u, 39498u, 40149u,
    40794u, 41432u, 42064u, 42688u, 43304u, 43912u, 44511u, 45102u, 45683u, 46255u, 46817u, 47369u,
    47911u, 48443u, 48964u, 49475u, 49975u, 50464u, 50942u, 51409u, 51865u, 52311u, 52745u, 53169u,
    53581u, 53983u, 54374u, 54755u, 55125u, 55485u, 55834u, 56174u, 56503u, 56823u, 57133u, 57433u,
    57724u, 58007u, 58280u, 58544u, 58800u, 59048u, 59288u, 59519u, 59743u, 59959u, 60168u, 60370u,
    60565u, 60753u, 60935u, 61110u, 61279u, 61441u, 61599u, 61750u, 61896u, 62036u, 62172u, 62302u,
    62428u, 62549u, 62666u, 62778u, 62886u, 62990u, 63090u, 63186u, 63279u, 63368u, 63454u, 63536u,
    63615u, 63691u, 63765u, 63835u, 63903u, 63968u, 64030u, 64090u, 64148u, 64204u, 64257u, 64308u,
    64357u, 64405u, 64450u, 64494u, 64536u, 64576u, 64614u, 64652u, 64687u, 64721u, 64754u, 64786u,
    64816u, 64845u, 64873u, 64900u, 64926u, 64950u, 64974u, 64997u, 65019u, 65039u, 65060u, 65079u,
    65097u, 65115u, 65132u, 65149u, 65164u, 65179u, 65194u, 65208u, 65221u, 65234u, 65246u, 65258u,
    65269u, 65280u, 65291u, 65301u, 65310u, 65319u, 65328u, 65337u, 65345u, 65352u, 65360u, 65367u,
    65374u, 65381u, 65387u, 65393u, 65399u, 65404u, 65410u, 65415u, 65420u, 65425u, 65429u, 65433u,
    65438u, 65442u, 65445u, 65449u, 65453u, 65456u, 65459u, 65462u, 65465u, 65468u, 65471u, 65474u,
    65476u, 65479u, 65481u, 65483u, 65485u, 65488u, 65489u, 65491u, 65493u, 65495u, 65497u, 65498u,
    65500u, 65501u, 65503u, 65504u, 65505u, 65507u, 65508u, 65509u, 65510u, 65511u, 65512u, 65513u,
    65514u, 65515u, 65516u, 65517u, 65517u, 65518u, 65519u, 65520u, 65520u, 65521u, 65522u, 65522u,
    65523u, 65523u, 65524u, 65524u, 65525u, 65525u, 65526u, 65526u, 65526u, 65527u, 65527u, 65528u,
    65528u, 65528u, 65529u, 65529u, 65529u, 65529u, 65530u, 65530u, 65530u, 65530u, 65531u, 65531u,
    65531u, 65531u, 65531u, 65532u, 65532u, 65532u, 65532u, 65532u, 65532u, 65533u, 65533u, 65533u,
    65533u, 65533u, 65533u, 65533u, 65533u, 65534u, 65534u, 65534u, 65534u, 65534u, 65534u, 65534u,
    65534u, 65534u, 65534u, 65535u,
};

int16_t mcud_sigmoid_s16(int16_t x)
{
    const int32_t v = (int32_t)x * 3;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 9;
    uint32_t r;
    if (uh >= 255u) {
        r = 0x7FFFu << 10;
    } else {
        const uint32_t lo = sigmoid_table[uh], hi = sigmoid_table[uh + 1u];
        r = (lo << 9) + (a & 0x1FFu) * (hi - lo);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

int16_t mcud_tanh_s16(int16_t x, int32_t mult, int32_t shift)
{
    const int32_t rounding = shift > 0 ? (int32_t)1 << (shift - 1) : 0;
    const int32_t v = ((int32_t)x * mult + rounding) >> shift;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 8;
    int32_t r;
    if (uh >= 255u) {
        r = (int32_t)(0xFFFFu << 8);
    } else {
        const uint32_t lo = sigmoid_table[uh], hi = sigmoid_table[uh + 1u];
        r = (int32_t)((lo << 8) + (a & 0xFFu) * (hi - lo));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(r >> 8);
}

/* TFLite's reference logistic in float: 1 above 16.619..., exp(v) below -9. */
static float sigmoid_f32(float v)
{
    if (v > 16.619047164916992188f) {
        return 1.0f;
    }
    if (v < -9.0f) {
        return expf(v);
    }
    return 1.0f / (1.0f + expf(-v));
}

static int32_t sat16(int32_t v)
{
    return mcud_clamp(v, -32768, 32767);
}

/* Where row t of batch row b of a [B, T, n] view starts, and where row b of a [B, n] view starts. */
#define AT3(V, T, B, S) ((const T *)(V)->data + (B) * (V)->stride[0] + (S) * (V)->stride[1])
#define AT2(V, T, B) ((const T *)(V)->data + (B) * (V)->stride[0])

void mcud_lstm_f32(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                   const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                   const mcud_view *c_last, const mcud_lstm_f32_params *p, void *scratch)
{
    const int32_t batches = x->shape[0], steps = x->shape[1], features = x->shape[2], units = y->shape[2];
    const float *wd = (const float *)w->data, *rd = (const float *)r->data, *bd = (const float *)bias->data;
    float *cell = (float *)scratch;
    for (int32_t b = 0; b < batches; b++) {
        const float *c_in = AT2(c0, float, b);
        for (int32_t j = 0; j < units; j++) {
            cell[j] = c_in[j * c0->stride[1]];
        }
        for (int32_t t = 0; t < steps; t++) {
            const float *xt = AT3(x, float, b, t);
            const float *hp = t == 0 ? AT2(h0, float, b) : AT3(y, float, b, t - 1);
            const int32_t hs = t == 0 ? h0->stride[1] : y->stride[2];
            float *yt = (float *)AT3(y, float, b, t);
            for (int32_t j = 0; j < units; j++) {
                float pre[GATES];
                for (int32_t g = 0; g < GATES; g++) {
                    const float *wr = wd + (g * units + j) * features;
                    const float *rr = rd + (g * units + j) * units;
                    float in = 0.0f, rec = 0.0f;
                    for (int32_t k = 0; k < features; k++) {
                        in += xt[k * x->stride[2]] * wr[k];
                    }
                    for (int32_t k = 0; k < units; k++) {
                        rec += hp[k * hs] * rr[k];
                    }
                    pre[g] = (in + bd[g * units + j]) + rec;
                }
                float c = cell[j] * sigmoid_f32(pre[1]) + sigmoid_f32(pre[0]) * tanhf(pre[2]);
                if (p->cell_clip > 0.0f) {
                    c = mcud_clampf(c, -p->cell_clip, p->cell_clip);
                }
                cell[j] = c;
                yt[j * y->stride[2]] = tanhf(c) * sigmoid_f32(pre[3]);
            }
        }
        const float *last = AT3(y, float, b, steps - 1);
        for (int32_t j = 0; j < units; j++) {
            if (h_last) {
                ((float *)h_last->data)[b * h_last->stride[0] + j * h_last->stride[1]] = last[j * y->stride[2]];
            }
            if (c_last) {
                ((float *)c_last->data)[b * c_last->stride[0] + j * c_last->stride[1]] = cell[j];
            }
        }
    }
}

/* TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (16x8): the multiplier cut to 16 bits, one
 * rounding half up (shift as mcud_requant_tfl's, in [24, 62]). */
static int32_t requant64_tfl(int64_t acc, int32_t mult, int32_t shift)
{
    const int64_t reduced = mult < 0x7FFF0000 ? (mult + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total = shift - 16;
    return (int32_t)((acc * reduced + ((int64_t)1 << (total - 1))) >> total);
}

/* Activation element i of a row of int8 (or int16 when wide). */
MCUD_INLINE int32_t load(const void *row, int32_t i, int wide)
{
    return wide ? (int32_t)((const int16_t *)row)[i] : (int32_t)((const int8_t *)row)[i];
}

/* The gate's Q3.12 pre-activation: W x + bias and R h, each requantized to int16, summed with saturation. The
 * products sum in int32 (int8) or int64 (int16, with an int64 bias), as TFLite's FullyConnected does. */
MCUD_INLINE int16_t gate_q(const mcud_lstm_q_params *p, int wide, int32_t g, const int8_t *wr, const void *xt,
                           int32_t xs, int32_t features, const int8_t *rr, const void *hp, int32_t hs, int32_t units,
                           int64_t bias)
{
    int32_t in, rec;
    if (wide) {
        int64_t a = 0, b = 0;
        for (int32_t k = 0; k < features; k++) {
            a += (int32_t)wr[k] * (load(xt, k * xs, 1) - p->x_zero);
        }
        for (int32_t k = 0; k < units; k++) {
            b += (int32_t)rr[k] * (load(hp, k * hs, 1) - p->h_zero);
        }
        in = requant64_tfl(a + bias, p->x_mult[g], p->x_shift[g]);
        rec = requant64_tfl(b, p->h_mult[g], p->h_shift[g]);
    } else {
        int32_t a = 0, b = 0;
        for (int32_t k = 0; k < features; k++) {
            a += (int32_t)wr[k] * (load(xt, k * xs, 0) - p->x_zero);
        }
        for (int32_t k = 0; k < units; k++) {
            b += (int32_t)rr[k] * (load(hp, k * hs, 0) - p->h_zero);
        }
        in = mcud_requant_tfl(a + (int32_t)bias, p->x_mult[g], p->x_shift[g]);
        rec = mcud_requant_tfl(b, p->h_mult[g], p->h_shift[g]);
    }
    return (int16_t)sat16(sat16(in) + sat16(rec));
}

MCUD_INLINE void lstm_q(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                        const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                        const mcud_view *c_last, const mcud_lstm_q_params *p, void *scratch, int wide)
{
    const int32_t batches = x->shape[0], steps = x->shape[1], features = x->shape[2], units = y->shape[2];
    const int32_t size = wide ? 2 : 1, h_min = wide ? -32768 : -128, h_max = wide ? 32767 : 127;
    const int8_t *wd = (const int8_t *)w->data, *rd = (const int8_t *)r->data;
    int16_t *cell = (int16_t *)scratch;
    for (int32_t b = 0; b < batches; b++) {
        const int16_t *c_in = AT2(c0, int16_t, b);
        for (int32_t j = 0; j < units; j++) {
            cell[j] = c_in[j * c0->stride[1]];
        }
        for (int32_t t = 0; t < steps; t++) {
            const char *xt = (const char *)x->data + (b * x->stride[0] + t * x->stride[1]) * size;
            const char *hp = t == 0 ? (const char *)h0->data + b * h0->stride[0] * size
                                    : (const char *)y->data + (b * y->stride[0] + (t - 1) * y->stride[1]) * size;
            const int32_t hs = t == 0 ? h0->stride[1] : y->stride[2];
            char *yt = (char *)y->data + (b * y->stride[0] + t * y->stride[1]) * size;
            for (int32_t j = 0; j < units; j++) {
                int32_t act[GATES];
                for (int32_t g = 0; g < GATES; g++) {
                    const int64_t bv = wide ? ((const int64_t *)bias->data)[g * units + j]
                                            : ((const int32_t *)bias->data)[g * units + j];
                    const int16_t pre = gate_q(p, wide, g, wd + (g * units + j) * features, xt, x->stride[2],
                                               features, rd + (g * units + j) * units, hp, hs, units, bv);
                    act[g] = g == 2 ? mcud_tanh_s16(pre, 3, 0) : mcud_sigmoid_s16(pre);
                }
                int32_t c = sat16(mcud_requant_tfl(act[1] * (int32_t)cell[j], p->forget_mult, p->forget_shift));
                c = sat16(c + sat16(mcud_requant_tfl(act[0] * act[2], p->update_mult, p->update_shift)));
                if (p->cell_clip > 0) {
                    c = mcud_clamp(c, -p->cell_clip, p->cell_clip);
                }
                cell[j] = (int16_t)c;
                const int32_t tanh_c = mcud_tanh_s16((int16_t)c, p->tanh_mult, p->tanh_shift);
                const int32_t h = mcud_clamp(p->h_zero + mcud_requant_tfl(tanh_c * act[3], p->output_mult,
                                                                          p->output_shift), h_min, h_max);
                if (wide) {
                    ((int16_t *)yt)[j * y->stride[2]] = (int16_t)h;
                } else {
                    ((int8_t *)yt)[j * y->stride[2]] = (int8_t)h;
                }
            }
        }
        const char *last = (const char *)y->data + (b * y->stride[0] + (steps - 1) * y->stride[1]) * size;
        for (int32_t j = 0; j < units; j++) {
            if (h_last) {
                const int32_t at = b * h_last->stride[0] + j * h_last->stride[1];
                if (wide) {
                    ((int16_t *)h_last->data)[at] = (int16_t)load(last, j * y->stride[2], 1);
                } else {
                    ((int8_t *)h_last->data)[at] = (int8_t)load(last, j * y->stride[2], 0);
                }
            }
            if (c_last) {
                ((int16_t *)c_last->data)[b * c_last->stride[0] + j * c_last->stride[1]] = cell[j];
            }
        }
    }
}

void mcud_lstm_s8(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                  const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                  const mcud_view *c_last, const mcud_lstm_q_params *p, void *scratch)
{
    lstm_q(x, w, r, bias, h0, c0, y, h_last, c_last, p, scratch, 0);
}

void mcud_lstm_s16(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                   const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                   const mcud_view *c_last, const mcud_lstm_q_params *p, void *scratch)
{
    lstm_q(x, w, r, bias, h0, c0, y, h_last, c_last, p, scratch, 1);
}
