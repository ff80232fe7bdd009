"""UNIDIRECTIONAL_SEQUENCE_LSTM (Keras' LSTM, fused by the converter), SVDF."""
from conformance.tflite_specs import In, Spec


def _lstm(**kw):
    return lambda tf: tf.keras.layers.LSTM(bias_initializer="random_normal", **kw)


SPECS = [
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "sequences", _lstm(units=6, return_sequences=True), (In((1, 5, 4)),), static_batch=True),
    Spec("UNIDIRECTIONAL_SEQUENCE_LSTM", "last", _lstm(units=8), (In((1, 7, 3)),), static_batch=True),
]
