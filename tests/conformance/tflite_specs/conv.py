"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, BATCH_MATMUL: the options the converter emits
(strides, SAME and VALID padding, dilation, fused RELU and RELU6, per-channel and per-tensor weights)."""
from conformance.tflite_specs import In, Spec

ALL = ("float32", "int8", "int16", "float16w")
# dynamic-range quantization leaves weights of fewer than 1024 elements float: the hybrid cases are bigger
WIDE = In((1, 6, 7, 8))
RND = {"bias_initializer": "random_normal"}


def _conv(**kw):
    return lambda tf: tf.keras.layers.Conv2D(**{**RND, **kw})


def _dw(**kw):
    return lambda tf: tf.keras.layers.DepthwiseConv2D(**{**RND, **kw})


def _dense(**kw):
    return lambda tf: tf.keras.layers.Dense(**{**RND, **kw})


def _tconv(**kw):
    return lambda tf: tf.keras.layers.Conv2DTranspose(**{**RND, **kw})


def _conv1d(**kw):
    return lambda tf: tf.keras.layers.Conv1D(**{**RND, **kw})


X = In((1, 9, 10, 4))
SPECS = [
    Spec("CONV_2D", "3x3-valid", _conv(filters=6, kernel_size=3), (X,), ALL),
    Spec("CONV_2D", "3x3-same-stride2-relu", _conv(filters=5, kernel_size=3, strides=2, padding="same",
                                                   activation="relu"), (X,)),
    Spec("CONV_2D", "1x1-relu6", _conv(filters=8, kernel_size=1, activation="relu6"), (X,)),
    Spec("CONV_2D", "5x3-dilated", _conv(filters=3, kernel_size=(5, 3), dilation_rate=2, padding="same"), (X,)),
    Spec("CONV_2D", "3x3-per-tensor", _conv(filters=4, kernel_size=3, padding="same"), (X,), ("int8",),
         converter={"_experimental_disable_per_channel": True}),
    Spec("CONV_2D", "float-io", _conv(filters=4, kernel_size=3), (X,), ("int8",), io="float"),
    Spec("CONV_2D", "conv1d-same", _conv1d(filters=6, kernel_size=5, padding="same", activation="relu"),
         (In((1, 20, 3)),)),
    Spec("CONV_2D", "conv1d-causal-dilated", _conv1d(filters=4, kernel_size=3, padding="causal", dilation_rate=2),
         (In((1, 16, 4)),)),
    Spec("DEPTHWISE_CONV_2D", "3x3-same", _dw(kernel_size=3, padding="same"), (X,), ALL),
    Spec("DEPTHWISE_CONV_2D", "3x3-stride2-relu6", _dw(kernel_size=3, strides=2, activation="relu6"), (X,)),
    Spec("DEPTHWISE_CONV_2D", "multiplier2", _dw(kernel_size=(3, 1), depth_multiplier=2), (X,)),
    Spec("DEPTHWISE_CONV_2D", "dilated", _dw(kernel_size=3, dilation_rate=2, padding="same"), (X,)),
    Spec("FULLY_CONNECTED", "2d", _dense(units=7), (In((1, 12)),), ALL),
    Spec("FULLY_CONNECTED", "relu", _dense(units=5, activation="relu"), (In((3, 12)),)),
    Spec("FULLY_CONNECTED", "keep-num-dims", _dense(units=6), (In((1, 4, 10)),), static_batch=True),
    Spec("FULLY_CONNECTED", "per-tensor", _dense(units=6), (In((1, 16)),), ("int8",),
         converter={"_experimental_disable_per_channel": True}),
    Spec("FULLY_CONNECTED", "no-bias", _dense(units=6, use_bias=False), (In((2, 8)),)),
    Spec("TRANSPOSE_CONV", "3x3-stride2-same", _tconv(filters=4, kernel_size=3, strides=2, padding="same"), (X,), ALL),
    Spec("TRANSPOSE_CONV", "2x2-stride2-valid", _tconv(filters=3, kernel_size=2, strides=2), (X,)),
    Spec("TRANSPOSE_CONV", "conv1d-transpose", lambda tf: tf.keras.layers.Conv1DTranspose(
        4, 5, strides=2, padding="same", bias_initializer="random_normal"), (In((1, 12, 3)),)),
    Spec("BATCH_MATMUL", "activations", lambda tf: lambda a, b: tf.matmul(a, b), (In((1, 4, 6)), In((1, 6, 5)))),
    Spec("BATCH_MATMUL", "adj-y", lambda tf: lambda a, b: tf.matmul(a, b, transpose_b=True),
         (In((2, 4, 6)), In((2, 5, 6)))),
    Spec("CONV_2D", "hybrid-3x3", _conv(filters=32, kernel_size=3), (WIDE,), ("hybrid",)),
    Spec("DEPTHWISE_CONV_2D", "hybrid-5x5", _dw(kernel_size=5, depth_multiplier=8, padding="same"), (WIDE,),
         ("hybrid",)),
    Spec("FULLY_CONNECTED", "hybrid", _dense(units=64), (In((1, 32)),), ("hybrid",)),
    Spec("TRANSPOSE_CONV", "hybrid", _tconv(filters=32, kernel_size=3, strides=2, padding="same"), (WIDE,),
         ("hybrid",)),
]
