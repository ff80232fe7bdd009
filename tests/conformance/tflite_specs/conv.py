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


def _int32_bias(tf):
    return tf.int32


def _tconv_nn(out_shape, kernel, strides, padding):
    """tf.nn.conv2d_transpose with its output shape a constant (an odd size SAME padding leaves a pixel
    over), weights and bias from fixed seeds."""
    def build(tf):
        import numpy as np
        rng = np.random.default_rng(7)
        w = tf.constant(rng.normal(0, 0.3, kernel).astype(np.float32))  # (KH, KW, OC, IC)
        b = tf.constant(rng.normal(0, 0.5, kernel[2]).astype(np.float32))
        return lambda x: tf.nn.conv2d_transpose(x, w, out_shape, strides, padding) + b
    return build


def _matmul_const(shape, transpose_b=False):
    def build(tf):
        import numpy as np
        b = tf.constant(np.random.default_rng(3).normal(0, 0.5, shape).astype(np.float32))
        return lambda a: tf.matmul(a, b, transpose_b=transpose_b)
    return build


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
    # with a batch of 1 fixed the converter writes a dilated convolution as one (with an unknown batch it writes
    # SPACE_TO_BATCH_ND, CONV_2D, BATCH_TO_SPACE_ND, which TFLite Micro computes only in part: refused)
    Spec("CONV_2D", "5x3-dilated-static", _conv(filters=3, kernel_size=(5, 3), dilation_rate=2, padding="same"), (X,),
         static_batch=True),
    Spec("CONV_2D", "conv1d-causal-dilated-static", _conv1d(filters=4, kernel_size=3, padding="causal",
                                                           dilation_rate=2), (In((1, 16, 4)),), static_batch=True),
    Spec("DEPTHWISE_CONV_2D", "dilated-static", _dw(kernel_size=3, dilation_rate=2, padding="same"), (X,),
         static_batch=True),
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
    Spec("CONV_2D", "no-bias", _conv(filters=5, kernel_size=3, use_bias=False), (X,)),
    Spec("CONV_2D", "int32-bias", _conv(filters=6, kernel_size=3, padding="same"), (X,), ("int16",),
         converter={"_experimental_full_integer_quantization_bias_type": _int32_bias}),
    Spec("DEPTHWISE_CONV_2D", "no-bias", _dw(kernel_size=3, padding="same", use_bias=False), (X,)),
    Spec("FULLY_CONNECTED", "int32-bias", _dense(units=7), (In((2, 12)),), ("int16",),
         converter={"_experimental_full_integer_quantization_bias_type": _int32_bias}),
    Spec("FULLY_CONNECTED", "keep-num-dims-4d", _dense(units=5, activation="relu"), (In((1, 3, 4, 10)),),
         static_batch=True),
    Spec("TRANSPOSE_CONV", "static-3x3-stride2-same", _tconv(filters=4, kernel_size=3, strides=2, padding="same"),
         (X,), static_batch=True),
    Spec("TRANSPOSE_CONV", "static-2x2-stride2-valid", _tconv(filters=3, kernel_size=2, strides=2), (X,),
         static_batch=True),
    Spec("TRANSPOSE_CONV", "static-5x5-relu", _tconv(filters=5, kernel_size=5, activation="relu"), (X,),
         static_batch=True),
    Spec("TRANSPOSE_CONV", "static-no-bias", _tconv(filters=4, kernel_size=(3, 2), strides=(2, 1), padding="same",
                                                    use_bias=False), (X,), static_batch=True),
    Spec("TRANSPOSE_CONV", "odd-output-same", _tconv_nn((1, 17, 19, 3), (3, 3, 3, 4), 2, "SAME"), (X,),
         static_batch=True),
    Spec("TRANSPOSE_CONV", "static-conv1d", lambda tf: tf.keras.layers.Conv1DTranspose(
        4, 5, strides=2, padding="same", bias_initializer="random_normal"), (In((1, 12, 3)),), static_batch=True),
    Spec("BATCH_MATMUL", "adj-x", lambda tf: lambda a, b: tf.matmul(a, b, transpose_a=True),
         (In((2, 6, 4)), In((2, 6, 5)))),
    Spec("BATCH_MATMUL", "broadcast", lambda tf: lambda a, b: tf.matmul(a, b), (In((2, 1, 4, 6)), In((3, 6, 5)))),
    Spec("BATCH_MATMUL", "rank2", lambda tf: lambda a, b: tf.matmul(a, b), (In((4, 6)), In((6, 5)))),
    Spec("BATCH_MATMUL", "constant-rhs", _matmul_const((2, 6, 5)), (In((2, 4, 6)),)),
    Spec("CONV_2D", "hybrid-3x3", _conv(filters=32, kernel_size=3), (WIDE,), ("hybrid",)),
    Spec("DEPTHWISE_CONV_2D", "hybrid-5x5", _dw(kernel_size=5, depth_multiplier=8, padding="same"), (WIDE,),
         ("hybrid",)),
    Spec("FULLY_CONNECTED", "hybrid", _dense(units=64), (In((1, 32)),), ("hybrid",)),
    Spec("TRANSPOSE_CONV", "hybrid", _tconv(filters=32, kernel_size=3, strides=2, padding="same"), (WIDE,),
         ("hybrid",)),
]
