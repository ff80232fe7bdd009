#ifndef MCUD_RECURRENT_H
#define MCUD_RECURRENT_H
#include "mcud.h"

/* LSTM, one direction, batch-major, as TensorFlow Lite Micro computes UNIDIRECTIONAL_SEQUENCE_LSTM
 * (mcudeploy/ops/recurrent.py gives the arithmetic, which its numpy reference mirrors).
 *
 * Views: x [B, T, I]; w [4, H, I], r [4, H, H] and bias [4, H], dense constants, gates in the order input,
 * forget, cell, output; h0 and c0 [B, H], the state before the first step; y [B, T, H], the hidden state after
 * each step; h_last and c_last [B, H] (may be NULL), the state after the last step. scratch holds one batch
 * row's cell state (H floats, or H int16). */
typedef struct {
    float cell_clip; /* the cell state is clipped to [-cell_clip, cell_clip] when > 0 */
} mcud_lstm_f32_params;

/* int8 activations and weights, int32 bias, int16 cell state (mcud_lstm_s8), or int16 activations, int8 weights,
 * int64 bias (mcud_lstm_s16, TFLite's 16x8); (mult, shift) pairs are mcud_requant_tfl's. */
typedef struct {
    int32_t x_zero, h_zero; /* zero points of x and of the hidden state */
    int32_t cell_clip;      /* quantized; 0: none */
    int32_t x_mult[4], x_shift[4]; /* per gate: W x + bias -> Q3.12 */
    int32_t h_mult[4], h_shift[4]; /* per gate: R h -> Q3.12 */
    int32_t forget_mult, forget_shift; /* forget gate (Q0.15) x cell state -> cell state */
    int32_t update_mult, update_shift; /* input gate (Q0.15) x cell gate (Q0.15) -> cell state */
    int32_t output_mult, output_shift; /* tanh(cell) (Q0.15) x output gate (Q0.15) -> hidden state */
    int32_t tanh_mult, tanh_shift;     /* the cell state into mcud_tanh_s16 */
} mcud_lstm_q_params;

void mcud_lstm_f32(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                   const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                   const mcud_view *c_last, const mcud_lstm_f32_params *p, void *scratch);
void mcud_lstm_s8(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                  const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                  const mcud_view *c_last, const mcud_lstm_q_params *p, void *scratch);
void mcud_lstm_s16(const mcud_view *x, const mcud_view *w, const mcud_view *r, const mcud_view *bias,
                   const mcud_view *h0, const mcud_view *c0, const mcud_view *y, const mcud_view *h_last,
                   const mcud_view *c_last, const mcud_lstm_q_params *p, void *scratch);

/* TFLite's int16 logistic of a Q3.12 value, in Q0.15 (reference_integer_ops::Logistic, multiplier 3). */
int16_t mcud_sigmoid_s16(int16_t x);
/* TFLite's int16 tanh, in Q0.15, of x brought to Q3.12 as (x * mult + round) >> shift
 * (reference_integer_ops::Tanh; mult 3 and shift 0 for a Q3.12 input). */
int16_t mcud_tanh_s16(int16_t x, int32_t mult, int32_t shift);

#endif
