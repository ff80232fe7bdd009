/* Softmax and LogSoftmax on views. The dimensions split into outer ones (one softmax each) and the
 * reduced range [axis, axis_end); both are walked with an odometer over the views' strides. */
#include <math.h>

#include "mcud_fixedpoint.h"
#include "mcud_softmax.h"
#include "mcud_walk.h"

/* Every kernel is one skeleton. Per softmax (each position of the outer dimensions): max, the
 * row's largest x (of type M); the sum (of type S) of TERM over the row, each term also stored in y
 * when KEEP (f32's exponentials, which OUT reads back); the statements ROW, once; then each
 * y = OUT. TERM and OUT are expressions of the element at r (xd[r.xo], yd[r.yo]), of max, sum and
 * what ROW declares; p is the kernel's parameters. */
#define SOFTMAX(NAME, PARAMS, T, M, S, TERM, KEEP, ROW, OUT) SOFTMAX_TO(NAME, PARAMS, T, T, M, S, TERM, KEEP, ROW, OUT)

/* The same with an output of type U (TFLite's int8 to int16) */
#define SOFTMAX_TO(NAME, PARAMS, T, U, M, S, TERM, KEEP, ROW, OUT)                             \
    void NAME(const mcud_view *x, const mcud_view *y, const PARAMS *p)                         \
    {                                                                                          \
        const T *xd = (const T *)x->data;                                                      \
        U *yd = (U *)y->data;                                                                  \
        mcud_walk outer, inner;                                                                \
        mcud_walk_pos o, r;                                                                    \
        mcud_walk_split(x, y, p->axis, p->axis_end, &outer, &inner);                                \
        mcud_walk_start(&o, 0, 0);                                                             \
        for (int32_t row = 0; row < outer.count; row++, mcud_walk_step(&outer, &o)) {          \
            M max = xd[o.xo];                                                                  \
            mcud_walk_start(&r, o.xo, o.yo);                                                   \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                max = xd[r.xo] > max ? xd[r.xo] : max;                                         \
            }                                                                                  \
            S sum = 0;                                                                         \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                const S e = TERM;                                                              \
                if (KEEP) {                                                                    \
                    yd[r.yo] = (U)e;                                                           \
                }                                                                              \
                sum += e;                                                                      \
            }                                                                                  \
            ROW                                                                                \
            for (int32_t i = 0; i < inner.count; i++, mcud_walk_step(&inner, &r)) {            \
                yd[r.yo] = (U)(OUT);                                                           \
            }                                                                                  \
        }                                                                                      \
    }

SOFTMAX(mcud_softmax_f32, mcud_softmax_params, float, float, float, expf((xd[r.xo] - max) * p->beta), 1, ,
        yd[r.yo] / sum)

/* TFLite's float LogSoftmax: x - max - log(sum of exp(x - max)) */
SOFTMAX(mcud_log_softmax_f32, mcud_softmax_params, float, float, float, expf(xd[r.xo] - max), 0,
        const float log_sum = logf(sum);, xd[r.xo] - max - log_sum)

/* ---- ONNX models: exp from a table of 256, the share rounded half to even ---- */

/* round(e * inv_out_scale / denom) half to even, + the zero point, clamped; denom = the row's sum * 2^16 */
static int32_t q_out(const mcud_softmax_q_params *p, int64_t e, int64_t denom)
{
    int64_t num = e * p->inv_out_scale;
    int64_t q = num / denom, rem2 = 2 * (num - q * denom);
    q += (rem2 > denom || (rem2 == denom && (q & 1))) ? 1 : 0; /* half even */
    return mcud_clamp((int32_t)q + p->out_zero_point, p->out_min, p->out_max);
}

#define SOFTMAX_Q(NAME, T)                                                                     \
    SOFTMAX(NAME, mcud_softmax_q_params, T, int32_t, int64_t, p->exp_table[max - (int32_t)xd[r.xo]], 0, \
            const int64_t denom = sum << 16;, q_out(p, p->exp_table[max - (int32_t)xd[r.xo]], denom))

SOFTMAX_Q(mcud_softmax_s8, int8_t)
SOFTMAX_Q(mcud_softmax_u8, uint8_t)

/* ---- TFLite models: gemmlowp's fixed point ---- */

/* 1 / sum of a Q12.19 sum, as a Q0.31 scale and the bits above one (TFLite's GetReciprocal:
 * gemmlowp's one_over_one_plus_x_for_x_in_0_1, three Newton-Raphson steps) */
static int32_t fx_reciprocal(int32_t sum, int32_t *over)
{
    int32_t headroom = mcud_fx_clz((uint32_t)sum);
    *over = 12 - headroom;
    return mcud_fx_one_over_one_plus_x((int32_t)(((uint32_t)sum << headroom) - ((uint32_t)1 << 31)));
}

SOFTMAX(mcud_softmax_s8_tfl, mcud_softmax_tfl_params, int8_t, int32_t, int32_t,
        p->exp_q19[max - (int32_t)xd[r.xo]], 0, int32_t over; const int32_t scale = fx_reciprocal(sum, &over);,
        mcud_clamp(mcud_fx_div_pot(mcud_fx_mul(scale, p->exp_q31[max - (int32_t)xd[r.xo]]), over + 23) - 128, -128,
                   127))

/* TFLite's Softmax of int8 to int16 (output scale 1/65536, zero point -32768): the same with 16 output bits */
SOFTMAX_TO(mcud_softmax_s8_s16_tfl, mcud_softmax_tfl_params, int8_t, int16_t, int32_t, int32_t,
           p->exp_q19[max - (int32_t)xd[r.xo]], 0, int32_t over; const int32_t scale = fx_reciprocal(sum, &over);,
           mcud_clamp(mcud_fx_div_pot(mcud_fx_mul(scale, p->exp_q31[max - (int32_t)xd[r.xo]]), over + 15) - 32768,
                      -32768, 32767))

/* TFLite's int8 LogSoftmax: the Q12.19 exps of the differences from the max add up (wrapping, as TFLite's
 * int32 does); log of the sum in Q5.26; each rescaled difference less the log, in steps of 16/256 from
 * 127; a difference at or below the floor (the smallest a Q5.26 result holds) gives -128 */
SOFTMAX(mcud_log_softmax_s8_tfl, mcud_log_softmax_tfl_params, int8_t, int32_t, uint32_t,
        (uint32_t)p->exp_q12[max - (int32_t)xd[r.xo]], 0,
        const int32_t log_sum = mcud_fx_log_x((int32_t)sum, 12, 5);
        int32_t floor_diff = mcud_requant_tfl(mcud_fx_add(log_sum, INT32_MIN), p->reverse_mult, p->reverse_shift);
        floor_diff = floor_diff > p->diff_min - 1 ? floor_diff : p->diff_min - 1;,
        (int32_t)xd[r.xo] - max > floor_diff
            ? mcud_clamp(mcud_fx_div_pot(mcud_fx_sub(p->q5[max - (int32_t)xd[r.xo]], log_sum), 22) + 127, -128, 127)
            : -128)

/* ---- TFLite models' int16 softmax: two interpolated tables of 513 ---- */

/* exp(x) on [-10, 0] and 1 / (1 + x) on [0, 1], both in Q0.15, sampled as TFLite's LUTPopulate<int16_t>
 * samples them (mcudeploy/ops/softmax.py S16_EXP and S16_RECIPROCAL compute these numbers; a test keeps
 * them equal) */
static const int16_t s16_exp[513] = {
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6,
    6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 8,
    8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 10, 10, 10,
    10, 10, 11, 11, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13,
    13, 14, 14, 14, 14, 15, 15, 15, 16, 16, 16, 17, 17, 17,
    18, 18, 18, 19, 19, 19, 20, 20, 21, 21, 21, 22, 22, 23,
    23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30,
    30, 31, 32, 32, 33, 34, 34, 35, 36, 36, 37, 37, 38, 39,
    40, 40, 42, 42, 43, 44, 45, 45, 46, 47, 48, 49, 50, 51,
    52, 53, 54, 55, 56, 57, 59, 60, 60, 62, 63, 65, 65, 67,
    68, 69, 71, 73, 74, 75, 77, 78, 80, 81, 83, 85, 86, 88,
    90, 92, 93, 95, 97, 99, 101, 103, 105, 107, 109, 112, 114, 116,
    118, 121, 123, 126, 128, 131, 133, 135, 139, 141, 144, 147, 149, 152,
    155, 158, 162, 165, 168, 171, 174, 178, 181, 185, 189, 192, 196, 200,
    204, 208, 212, 217, 221, 225, 230, 234, 239, 243, 248, 253, 258, 263,
    268, 273, 279, 284, 290, 296, 302, 308, 314, 320, 327, 333, 340, 346,
    353, 360, 366, 374, 381, 389, 397, 404, 413, 421, 429, 437, 446, 455,
    464, 473, 482, 492, 501, 511, 522, 532, 543, 553, 564, 575, 586, 598,
    610, 622, 634, 646, 659, 672, 685, 699, 713, 727, 741, 756, 771, 786,
    801, 817, 833, 850, 866, 884, 901, 919, 937, 955, 974, 993, 1013, 1033,
    1053, 1074, 1095, 1117, 1139, 1161, 1184, 1207, 1232, 1256, 1281, 1306, 1332, 1358,
    1385, 1412, 1440, 1468, 1497, 1527, 1557, 1587, 1619, 1651, 1683, 1716, 1750, 1785,
    1820, 1856, 1892, 1930, 1968, 2006, 2046, 2087, 2128, 2170, 2212, 2256, 2300, 2346,
    2392, 2439, 2488, 2537, 2587, 2638, 2690, 2743, 2796, 2852, 2908, 2966, 3024, 3084,
    3145, 3207, 3270, 3334, 3400, 3467, 3535, 3605, 3677, 3749, 3822, 3898, 3975, 4053,
    4133, 4214, 4297, 4383, 4469, 4557, 4647, 4739, 4833, 4927, 5024, 5124, 5225, 5328,
    5433, 5541, 5649, 5761, 5875, 5991, 6109, 6230, 6352, 6477, 6605, 6736, 6868, 7004,
    7141, 7282, 7427, 7572, 7722, 7874, 8030, 8188, 8350, 8514, 8683, 8854, 9028, 9206,
    9387, 9572, 9762, 9954, 10151, 10351, 10555, 10763, 10976, 11191, 11412, 11637, 11867, 12102,
    12341, 12583, 12831, 13085, 13342, 13606, 13874, 14148, 14427, 14711, 15002, 15297, 15599, 15907,
    16221, 16541, 16867, 17199, 17539, 17884, 18237, 18597, 18964, 19338, 19719, 20108, 20505, 20909,
    21322, 21742, 22171, 22608, 23054, 23509, 23973, 24445, 24928, 25419, 25921, 26432, 26953, 27485,
    28027, 28580, 29143, 29718, 30304, 30902, 31512, 32133, 32767
};

static const int16_t s16_reciprocal[513] = {
    32767, 32704, 32640, 32578, 32514, 32451, 32388, 32326, 32264, 32202, 32141, 32079, 32018, 31957,
    31896, 31835, 31775, 31715, 31655, 31596, 31537, 31476, 31418, 31359, 31301, 31242, 31184, 31127,
    31069, 31011, 30954, 30897, 30840, 30784, 30727, 30671, 30615, 30560, 30504, 30449, 30394, 30339,
    30283, 30229, 30175, 30121, 30067, 30013, 29960, 29906, 29853, 29800, 29746, 29694, 29642, 29589,
    29537, 29486, 29434, 29382, 29331, 29280, 29229, 29177, 29127, 29076, 29026, 28976, 28926, 28877,
    28827, 28777, 28728, 28679, 28630, 28581, 28532, 28484, 28436, 28388, 28340, 28292, 28244, 28197,
    28150, 28103, 28056, 28008, 27962, 27915, 27869, 27823, 27777, 27731, 27685, 27640, 27594, 27549,
    27504, 27459, 27413, 27369, 27324, 27280, 27236, 27192, 27148, 27104, 27060, 27016, 26973, 26930,
    26887, 26844, 26801, 26758, 26715, 26673, 26630, 26588, 26546, 26504, 26463, 26421, 26380, 26338,
    26297, 26255, 26214, 26174, 26132, 26092, 26051, 26011, 25971, 25931, 25891, 25851, 25811, 25772,
    25732, 25693, 25653, 25614, 25575, 25536, 25497, 25458, 25420, 25381, 25343, 25305, 25267, 25229,
    25191, 25153, 25116, 25078, 25041, 25003, 24966, 24928, 24892, 24855, 24818, 24781, 24745, 24709,
    24672, 24636, 24600, 24564, 24528, 24492, 24457, 24421, 24385, 24350, 24315, 24280, 24245, 24210,
    24175, 24140, 24105, 24070, 24036, 24002, 23967, 23933, 23899, 23865, 23831, 23798, 23764, 23730,
    23697, 23664, 23630, 23597, 23564, 23530, 23498, 23465, 23432, 23399, 23366, 23334, 23302, 23269,
    23237, 23205, 23173, 23141, 23109, 23077, 23046, 23014, 22982, 22951, 22920, 22888, 22857, 22826,
    22795, 22764, 22733, 22703, 22672, 22641, 22611, 22580, 22550, 22520, 22490, 22459, 22429, 22400,
    22370, 22340, 22310, 22281, 22251, 22221, 22192, 22163, 22134, 22104, 22075, 22046, 22017, 21988,
    21959, 21931, 21902, 21874, 21845, 21817, 21788, 21760, 21732, 21704, 21676, 21648, 21620, 21592,
    21565, 21537, 21509, 21482, 21455, 21427, 21400, 21372, 21345, 21318, 21291, 21264, 21237, 21210,
    21183, 21157, 21130, 21103, 21077, 21050, 21024, 20998, 20971, 20945, 20919, 20893, 20867, 20841,
    20816, 20790, 20764, 20738, 20713, 20687, 20662, 20636, 20611, 20586, 20560, 20535, 20510, 20485,
    20460, 20435, 20410, 20385, 20360, 20336, 20311, 20287, 20262, 20238, 20213, 20189, 20165, 20141,
    20117, 20092, 20068, 20044, 20021, 19997, 19973, 19949, 19926, 19902, 19878, 19855, 19832, 19808,
    19784, 19762, 19738, 19715, 19692, 19668, 19645, 19622, 19600, 19577, 19553, 19531, 19508, 19485,
    19463, 19440, 19418, 19395, 19373, 19351, 19328, 19306, 19284, 19262, 19240, 19218, 19196, 19174,
    19152, 19130, 19109, 19087, 19065, 19044, 19022, 19000, 18979, 18958, 18936, 18915, 18893, 18872,
    18851, 18830, 18809, 18787, 18766, 18745, 18725, 18704, 18682, 18662, 18641, 18620, 18600, 18579,
    18559, 18538, 18518, 18497, 18477, 18457, 18436, 18416, 18396, 18376, 18356, 18336, 18316, 18296,
    18276, 18256, 18236, 18216, 18197, 18177, 18157, 18138, 18118, 18099, 18079, 18059, 18040, 18021,
    18001, 17982, 17963, 17944, 17924, 17905, 17886, 17867, 17848, 17829, 17810, 17791, 17772, 17754,
    17735, 17716, 17697, 17679, 17660, 17641, 17623, 17604, 17586, 17568, 17549, 17531, 17513, 17494,
    17476, 17458, 17440, 17422, 17404, 17386, 17368, 17350, 17332, 17314, 17296, 17278, 17261, 17243,
    17225, 17208, 17190, 17172, 17155, 17137, 17120, 17102, 17085, 17067, 17050, 17033, 17015, 16999,
    16981, 16964, 16947, 16930, 16913, 16895, 16878, 16862, 16845, 16828, 16810, 16794, 16777, 16760,
    16743, 16727, 16710, 16693, 16677, 16660, 16644, 16627, 16611, 16594, 16578, 16562, 16545, 16529,
    16513, 16497, 16480, 16464, 16448, 16432, 16416, 16400, 16384
};

/* TFLite's LUTLookup: the upper 9 bits of v index, the lower 7 interpolate */
static int32_t lut_s16(int32_t v, const int16_t *lut)
{
    const int32_t index = 256 + (v >> 7);
    const int32_t base = lut[index];
    return (int16_t)(base + (((lut[index + 1] - base) * (v & 0x7f) + 64) >> 7));
}

/* exp(x - max) as TFLite's SoftMaxCalculateExp: the difference rescaled to [-65535, 0] ~ [-10, 0], centred */
static int32_t s16_exp_of(int32_t diff, const mcud_softmax_s16_params *p)
{
    return lut_s16(mcud_clamp(mcud_requant_tfl(diff, p->mult, p->shift) + 32767, -32768, 32767), s16_exp);
}

SOFTMAX(mcud_softmax_s16_tfl, mcud_softmax_s16_params, int16_t, int32_t, int32_t,
        s16_exp_of((int32_t)xd[r.xo] - max, p), 1,
        const int32_t head = mcud_fx_clz((uint32_t)sum);
        const int32_t shifted = (int32_t)((((int64_t)sum << (head - 1)) + (1 << 13)) >> 14);
        const int64_t reciprocal = lut_s16(mcud_clamp(shifted - (1 << 15) - (1 << 16), -32768, 32767), s16_reciprocal);
        const int32_t right = 31 - head;,
        mcud_clamp((int32_t)(((int64_t)yd[r.yo] * reciprocal + ((int64_t)1 << (right - 1))) >> right), 0, 32767))
