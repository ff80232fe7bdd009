#ifndef MCUD_SIGNAL_H
#define MCUD_SIGNAL_H
#include "mcud.h"

/* TensorFlow Lite Micro's Signal library (its audio front end), bit for bit: the arithmetic of each kernel is
 * written beside its numpy reference in mcudeploy/ops/signal_*.py. Unsigned intermediates are kept unsigned (or
 * computed in unsigned types) where TFLite Micro's own sums wrap, so no kernel relies on signed overflow. */

/* SignalWindow: y = clamp16((x * w) >> shift), the window w repeated over x's elements in row-major order. */
typedef struct {
    int32_t shift;
} mcud_signal_window_params;
void mcud_signal_window(const mcud_view *x, const mcud_view *w, const mcud_view *y,
                        const mcud_signal_window_params *p);

/* SignalFftAutoScale: y = x << s, s = 15 - bit length of max |x| (TFLite Micro's MaxAbs16), at least 0. */
void mcud_signal_fft_auto_scale(const mcud_view *x, const mcud_view *y, const mcud_view *scale);

/* SignalEnergy: y[i] = re^2 + im^2 (mod 2^32) of complex bin i of x (int16 pairs) for i in [start, end); the other
 * elements of y are 0. */
typedef struct {
    int32_t start;
    int32_t end;
} mcud_signal_energy_params;
void mcud_signal_energy(const mcud_view *x, const mcud_view *y, const mcud_signal_energy_params *p);

/* SignalFilterBank: per channel c (of channels + 1, the first a scratch TFLite Micro drops), the weighted sum of
 * spectrum bins [starts[c], starts[c] + widths[c]), the weights at weight_starts[c], plus the previous channel's
 * unweighted sum; uint64 arithmetic mod 2^64 (the int16 weights sign-extended). */
typedef struct {
    int32_t channels;
} mcud_signal_filter_bank_params;
void mcud_signal_filter_bank(const mcud_view *x, const mcud_view *weights, const mcud_view *unweights,
                             const mcud_view *starts, const mcud_view *weight_starts, const mcud_view *widths,
                             const mcud_view *y, const mcud_signal_filter_bank_params *p);

/* SignalFilterBankSquareRoot: y = rounded integer square root of x >> scale_bits (TFLite Micro's Sqrt64). */
void mcud_signal_filter_bank_square_root(const mcud_view *x, const mcud_view *scale_bits, const mcud_view *y);

/* SignalFilterBankLog: y = min(Log32(x << correction_bits, output_scale), INT16_MAX), or 0 where the shifted
 * value is at most 1; lut: the 129 + 1 entries of log2's correction per segment (mcudeploy/ops/signal_arith.py). */
typedef struct {
    int32_t correction_bits;
    int32_t output_scale;
    const uint16_t *lut;
} mcud_signal_log_params;
void mcud_signal_filter_bank_log(const mcud_view *x, const mcud_view *y, const mcud_signal_log_params *p);

/* SignalPCAN: y = shrink((x * gain(noise)) >> snr_shift), gain from lut by the noise's bit length. */
typedef struct {
    int32_t snr_shift;
} mcud_signal_pcan_params;
void mcud_signal_pcan(const mcud_view *x, const mcud_view *noise, const mcud_view *lut, const mcud_view *y,
                      const mcud_signal_pcan_params *p);

/* SignalFilterBankSpectralSubtraction: the noise estimate (a state: noise in, noise_next out, which may be the same
 * buffer) smoothed towards the signal, and the signal less it, at least floor. */
typedef struct {
    int32_t channels;
    uint32_t smoothing;
    uint32_t one_minus_smoothing;
    uint32_t alternate_smoothing;
    uint32_t alternate_one_minus_smoothing;
    uint32_t min_signal_remaining;
    int32_t smoothing_bits;
    int32_t spectral_subtraction_bits;
    int32_t clamping;
} mcud_signal_spectral_subtraction_params;
void mcud_signal_spectral_subtraction(const mcud_view *x, const mcud_view *noise, const mcud_view *y,
                                      const mcud_view *noise_next, const mcud_signal_spectral_subtraction_params *p);

/* SignalRfft: per row of x (its last dimension, zero-padded to fft_length), the fft_length / 2 + 1 complex bins of its
 * real FFT as (re, im) pairs, as TFLite Micro's kiss_fft (version 1.3.0) computes them: a complex FFT of
 * n = fft_length / 2 points, mixed radix over `factors` ((radix, remaining length) pairs, radices 2 to 5), then the
 * split of the two interleaved real halves with `super_twiddles`. In fixed point (int16: `bits` 16; int32: 32) each
 * stage's inputs are first divided by its radix (the result is the DFT / n), every product is rounded half up and every
 * stored value wraps to the type; the twiddles are (re, im) pairs rounded at compile time (int32_t arrays for both
 * fixed-point types, float for float32). The output row (contiguous) is the complex FFT's working buffer. */
typedef struct {
    int32_t fft_length;
    int32_t bits;
    const int32_t *factors;
    const int32_t *twiddles;
    const int32_t *super_twiddles;
} mcud_signal_rfft_fixed_params;
void mcud_signal_rfft_fixed(const mcud_view *x, const mcud_view *y, const mcud_signal_rfft_fixed_params *p);

typedef struct {
    int32_t fft_length;
    const int32_t *factors;
    const float *twiddles;
    const float *super_twiddles;
} mcud_signal_rfft_f32_params;
void mcud_signal_rfft_f32(const mcud_view *x, const mcud_view *y, const mcud_signal_rfft_f32_params *p);

/* SignalDelay and SignalFramer (with prefill), per row of x (all dimensions but the last): the row read after the
 * `keep` samples the state holds (TFLite Micro's circular buffer, zeros at reset), as one sequence c. Delay: y is c's
 * first n samples (n the row's length). Framer: frame k of y is c[k * step .. k * step + frame_size), for every k the row
 * fills. Both: the next state is c's last `keep` samples (it may be the state's own buffer: each is read before the
 * write of any smaller index). state and next are NULL when keep is 0; valid (Framer's bool, always 1 with prefill)
 * NULL for Delay. */
typedef struct {
    int32_t keep;
    int32_t frames; /* Framer: frames per row; Delay: 1 frame of the row's length, step 0 */
    int32_t frame_size;
    int32_t step;
} mcud_signal_stream_params;
void mcud_signal_stream_s16(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *valid,
                            const mcud_view *next, const mcud_signal_stream_params *p);

/* SignalOverlapAdd: per row (all dimensions but the last two), each of its frames (of frame_size) added onto the state
 * (frame_size values, zeros at reset; int16 saturating, float plain), whose first `step` values are then output and
 * which shifts by `step`, zeros coming in. next may be state's own buffer. */
typedef struct {
    int32_t frames;
    int32_t frame_size;
    int32_t step;
} mcud_signal_overlap_add_params;
void mcud_signal_overlap_add_s16(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *next,
                                 const mcud_signal_overlap_add_params *p);
void mcud_signal_overlap_add_f32(const mcud_view *x, const mcud_view *state, const mcud_view *y, const mcud_view *next,
                                 const mcud_signal_overlap_add_params *p);

/* SignalIrfft: per row of x (complex bins as (re, im) pairs, the first fft_length / 2 + 1 read), the fft_length real
 * samples of the inverse real FFT, as TFLite Micro's kiss_fftri (version 1.3.0) computes them: the bins folded into
 * n = fft_length / 2 complex values (with `super_twiddles` of the inverse), then the inverse complex FFT (the inverse's
 * twiddles; fixed point divides by the radix at each stage as the forward does; float32's result is divided by
 * fft_length, as TFLite Micro's float IRFFT does). Done in place in the output row: the
 * folded values are put in kiss_fft's input order by following each cycle of `perm` (perm[i]: the position whose value
 * goes to i) from its leader, then the stages run from the last to the first. */
typedef struct {
    int32_t fft_length;
    int32_t bits;
    const int32_t *factors;
    const int32_t *twiddles;
    const int32_t *super_twiddles;
    const int32_t *perm;
    const int32_t *leaders;
    int32_t nleaders;
} mcud_signal_irfft_fixed_params;
void mcud_signal_irfft_fixed(const mcud_view *x, const mcud_view *y, const mcud_signal_irfft_fixed_params *p);

typedef struct {
    int32_t fft_length;
    const int32_t *factors;
    const float *twiddles;
    const float *super_twiddles;
    const int32_t *perm;
    const int32_t *leaders;
    int32_t nleaders;
} mcud_signal_irfft_f32_params;
void mcud_signal_irfft_f32(const mcud_view *x, const mcud_view *y, const mcud_signal_irfft_f32_params *p);

/* SignalStacker: frames of `channels` int16 kept across calls (TFLite Micro's circular buffer) as three states: up to
 * `context` = left + right + 1 frames (buf, in order), [frames held, first frame seen] (meta, int32) and the last output
 * (last). A call appends x (and, at the first call, x `left` more times); when `context` frames are held they are the
 * output (valid) and the first `step` go; otherwise valid is 0 and the output keeps its last value, as TFLite Micro's
 * unwritten output tensor does. The next states may be the states' own buffers. */
typedef struct {
    int32_t channels;
    int32_t left;
    int32_t context;
    int32_t step;
} mcud_signal_stacker_params;
void mcud_signal_stacker_s16(const mcud_view *x, const mcud_view *buf, const mcud_view *meta, const mcud_view *last,
                             const mcud_view *y, const mcud_view *valid, const mcud_view *buf_next,
                             const mcud_view *meta_next, const mcud_view *last_next,
                             const mcud_signal_stacker_params *p);

#endif
