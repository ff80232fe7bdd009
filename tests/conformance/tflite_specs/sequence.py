"""Recurrent layers: UNIDIRECTIONAL_SEQUENCE_LSTM, and the keyword models a Keras 3 user converts.

The fused operator comes from Keras 2's LSTM (tf_keras), which the converter recognises (Keras 3's LSTM becomes a
WHILE loop). Its hidden and cell state are variable tensors, which TensorFlow Lite Micro keeps from one call to the
next until the interpreter is reset; the conformance check resets it before each call (tflite_cases.tflm_outputs),
as an application that classifies independent windows does (TFLite Micro's own LSTM example), and as mcudeploy
computes it: every call starts from the initial state.

Keras 3's LSTM and GRU with ``unroll=True`` convert to plain operators (FULLY_CONNECTED, LOGISTIC, TANH, MUL, ADD,
SPLIT, STRIDED_SLICE, UNPACK, ...): the small keyword models below (10 frames of 8 features, 16 units, a softmax
over 4 words) are named after UNPACK, the unstacking of the frames, which every one of them holds.
"""
from conformance.tflite_specs import In, Spec


def _lstm(**kw):
    def build(tf):
        import tf_keras

        return tf_keras.layers.LSTM(bias_initializer="random_normal", **kw)

    return build


def _keyword(layer: str):
    def build(tf):
        return tf.keras.Sequential([getattr(tf.keras.layers, layer)(16, unroll=True),
                                    tf.keras.layers.Dense(4, activation="softmax")])

    return build


SPECS = [
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "sequences", _lstm(units=6, return_sequences=True), (In((1, 5, 4)),),
         static_batch=True, trackable=True),
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "last", _lstm(units=8), (In((1, 7, 3)),), static_batch=True, trackable=True),
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "batch2", _lstm(units=5, return_sequences=True), (In((2, 6, 3)),),
         trackable=True),
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "time-major", _lstm(units=4, time_major=True, return_sequences=True),
         (In((4, 1, 2)),), trackable=True),
    Spec("UNPACK", "keras3-lstm-keyword", _keyword("LSTM"), (In((1, 10, 8)),), ("float32", "int8"),
         static_batch=True),
    Spec("UNPACK", "keras3-gru-keyword", _keyword("GRU"), (In((1, 10, 8)),), ("float32", "int8"),
         static_batch=True),
]
