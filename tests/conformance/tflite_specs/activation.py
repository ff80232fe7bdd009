"""Activations and functions of one input: LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU,
ELU, SOFTMAX, LOG_SOFTMAX, and the math functions (ABS, NEG, EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR,
CEIL, ROUND), L2_NORMALIZATION."""
from conformance.tflite_specs import In, Spec

X = In((1, 4, 8, 8), low=-6.0, high=6.0)  # 256 elements: every int8 code appears in a test sample often
POS = In((1, 4, 8, 8), low=0.05, high=8.0)
ROWS = In((3, 40), low=-4.0, high=4.0)


def _fn(expr):
    return lambda tf: (lambda x: expr(tf, x))


SPECS = [
    Spec("LOGISTIC", "plain", _fn(lambda tf, x: tf.sigmoid(x)), (X,)),
    Spec("LOGISTIC", "narrow", _fn(lambda tf, x: tf.sigmoid(x)), (In((2, 64), low=-0.5, high=0.7),)),
    Spec("LOGISTIC", "wide", _fn(lambda tf, x: tf.sigmoid(x)), (In((2, 64), low=-20.0, high=15.0),)),
    Spec("TANH", "plain", _fn(lambda tf, x: tf.tanh(x)), (X,)),
    Spec("TANH", "wide", _fn(lambda tf, x: tf.tanh(x)), (In((2, 64), low=-20.0, high=15.0),)),
    Spec("HARD_SWISH", "plain", _fn(lambda tf, x: x * tf.nn.relu6(x + 3.0) / 6.0), (X,)),
    Spec("HARD_SWISH", "wide", _fn(lambda tf, x: x * tf.nn.relu6(x + 3.0) / 6.0), (In((2, 64), low=-20.0, high=40.0),)),
    Spec("RELU", "plain", _fn(lambda tf, x: tf.nn.relu(x)), (X,)),
    Spec("RELU6", "plain", _fn(lambda tf, x: tf.nn.relu6(x)), (X,)),
    Spec("RELU6", "wide", _fn(lambda tf, x: tf.nn.relu6(x)), (In((2, 64), low=-10.0, high=10.0),)),
    Spec("RELU_N1_TO_1", "plain", _fn(lambda tf, x: tf.clip_by_value(x, -1.0, 1.0)), (X,)),
    Spec("LEAKY_RELU", "alpha0.2", _fn(lambda tf, x: tf.nn.leaky_relu(x, 0.2)), (X,)),
    Spec("LEAKY_RELU", "alpha1.5", _fn(lambda tf, x: tf.nn.leaky_relu(x, 1.5)), (X,)),
    Spec("LEAKY_RELU", "alpha-0.3", _fn(lambda tf, x: tf.nn.leaky_relu(x, -0.3)), (X,)),
    Spec("ELU", "plain", _fn(lambda tf, x: tf.nn.elu(x)), (X,)),
    Spec("SOFTMAX", "rows", _fn(lambda tf, x: tf.nn.softmax(x)), (ROWS,)),
    Spec("SOFTMAX", "4d-channels", _fn(lambda tf, x: tf.nn.softmax(x)), (In((1, 3, 2, 10)),)),
    Spec("SOFTMAX", "beta", lambda tf: tf.keras.layers.Lambda(lambda x: tf.nn.softmax(x * 0.5)), (ROWS,)),
    Spec("LOG_SOFTMAX", "rows", _fn(lambda tf, x: tf.nn.log_softmax(x)), (ROWS,)),
    Spec("LOG_SOFTMAX", "4d-channels", _fn(lambda tf, x: tf.nn.log_softmax(x)), (In((1, 3, 2, 10)),)),
    Spec("ABS", "plain", _fn(lambda tf, x: tf.abs(x)), (X,)),
    Spec("NEG", "plain", _fn(lambda tf, x: -x), (X,)),
    Spec("EXP", "plain", _fn(lambda tf, x: tf.exp(x)), (In((1, 4, 8, 8), low=-4.0, high=2.0),)),
    Spec("LOG", "plain", _fn(lambda tf, x: tf.math.log(x)), (POS,)),
    Spec("SQRT", "plain", _fn(lambda tf, x: tf.sqrt(x)), (POS,)),
    Spec("RSQRT", "plain", _fn(lambda tf, x: tf.math.rsqrt(x)), (POS,)),
    Spec("SQUARE", "plain", _fn(lambda tf, x: tf.square(x)), (X,)),
    Spec("SIN", "plain", _fn(lambda tf, x: tf.sin(x)), (X,)),
    Spec("COS", "plain", _fn(lambda tf, x: tf.cos(x)), (X,)),
    Spec("FLOOR", "plain", _fn(lambda tf, x: tf.floor(x)), (X,)),
    Spec("CEIL", "plain", _fn(lambda tf, x: tf.math.ceil(x)), (X,)),
    Spec("ROUND", "plain", _fn(lambda tf, x: tf.round(x)), (X,)),
    Spec("L2_NORMALIZATION", "last-axis", _fn(lambda tf, x: tf.math.l2_normalize(x, axis=-1)), (ROWS,)),
    Spec("L2_NORMALIZATION", "4d-channels", _fn(lambda tf, x: tf.math.l2_normalize(x, axis=-1)), (X,)),
    Spec("ABS", "int32", _fn(lambda tf, x: tf.abs(x)), (In((2, 6), "int32", -50, 50),), ("int32",)),
    Spec("NEG", "int32", _fn(lambda tf, x: -x), (In((2, 6), "int32", -50, 50),), ("int32",)),
]
