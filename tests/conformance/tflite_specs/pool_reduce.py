"""Pooling and reductions: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D, MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD,
ARG_MAX, ARG_MIN, CUMSUM (keep_dims, axes, padding; after a pool, whose output mcudeploy keeps NCHW inside)."""
from conformance.tflite_specs import In, Spec

X = In((1, 7, 9, 6))
Y = In((2, 5, 8))


def _fn(expr):
    return lambda tf: (lambda x: expr(tf, x))


def _after_pool(expr):
    """expr of a 2x2 average pool's output: a tensor mcudeploy keeps NCHW inside (a graph input is not)."""
    return lambda tf: (lambda x: expr(tf, tf.nn.avg_pool2d(x, 2, 1, "VALID")))


def _pool(cls, **kw):
    return lambda tf: getattr(tf.keras.layers, cls)(**kw)


SPECS = [
    Spec("AVERAGE_POOL_2D", "2x2", _pool("AveragePooling2D", pool_size=2), (X,)),
    Spec("AVERAGE_POOL_2D", "3x3-same-stride2", _pool("AveragePooling2D", pool_size=3, strides=2, padding="same"), (X,)),
    Spec("AVERAGE_POOL_2D", "pool1d", _pool("AveragePooling1D", pool_size=3, strides=2), (In((1, 15, 4)),)),
    Spec("MAX_POOL_2D", "2x2", _pool("MaxPooling2D", pool_size=2), (X,)),
    Spec("MAX_POOL_2D", "3x3-same-stride2", _pool("MaxPooling2D", pool_size=3, strides=2, padding="same"), (X,)),
    Spec("MAX_POOL_2D", "pool1d", _pool("MaxPooling1D", pool_size=2), (In((1, 15, 4)),)),
    Spec("MEAN", "hw-keepdims", _fn(lambda tf, x: tf.reduce_mean(x, axis=[1, 2], keepdims=True)), (X,)),
    Spec("MEAN", "global-average-pooling2d", _pool("GlobalAveragePooling2D"), (X,)),
    Spec("MEAN", "global-average-pooling1d", _pool("GlobalAveragePooling1D"), (Y,)),
    Spec("MEAN", "last-axis", _fn(lambda tf, x: tf.reduce_mean(x, axis=-1)), (Y,)),
    Spec("MEAN", "channels-keepdims", _fn(lambda tf, x: tf.reduce_mean(x, axis=3, keepdims=True)), (X,)),
    Spec("MEAN", "all", _fn(lambda tf, x: tf.reduce_mean(x, axis=[0, 1, 2])), (Y,)),
    Spec("MEAN", "height", _fn(lambda tf, x: tf.reduce_mean(x, axis=1)), (X,)),
    Spec("MEAN", "width-channels-negative", _fn(lambda tf, x: tf.reduce_mean(x, axis=[-1, -2])), (X,)),
    Spec("MEAN", "after-pool-hw", _after_pool(lambda tf, x: tf.reduce_mean(x, axis=[1, 2])), (X,)),
    Spec("MEAN", "after-pool-height", _after_pool(lambda tf, x: tf.reduce_mean(x, axis=1)), (X,)),
    Spec("MEAN", "after-pool-channels-keepdims",
         _after_pool(lambda tf, x: tf.reduce_mean(x, axis=3, keepdims=True)), (X,)),
    Spec("MEAN", "long-row", _fn(lambda tf, x: tf.reduce_mean(x, axis=-1)), (In((2, 1500)),)),
    Spec("SUM", "hw-keepdims", _fn(lambda tf, x: tf.reduce_sum(x, axis=[1, 2], keepdims=True)), (X,)),
    Spec("SUM", "last-axis", _fn(lambda tf, x: tf.reduce_sum(x, axis=-1)), (Y,)),
    Spec("SUM", "all", _fn(lambda tf, x: tf.reduce_sum(x, axis=[0, 1, 2])), (Y,)),
    Spec("SUM", "after-pool-channels", _after_pool(lambda tf, x: tf.reduce_sum(x, axis=3)), (X,)),
    Spec("REDUCE_MAX", "hw", _fn(lambda tf, x: tf.reduce_max(x, axis=[1, 2])), (X,)),
    Spec("REDUCE_MAX", "last-axis-keepdims", _fn(lambda tf, x: tf.reduce_max(x, axis=-1, keepdims=True)), (Y,)),
    Spec("REDUCE_MIN", "first-axis", _fn(lambda tf, x: tf.reduce_min(x, axis=1)), (Y,)),
    Spec("REDUCE_MIN", "hw-keepdims", _fn(lambda tf, x: tf.reduce_min(x, axis=[1, 2], keepdims=True)), (X,)),
    Spec("REDUCE_MAX", "after-pool-width", _after_pool(lambda tf, x: tf.reduce_max(x, axis=2)), (X,)),
    Spec("REDUCE_PROD", "last-axis", _fn(lambda tf, x: tf.reduce_prod(x, axis=-1)), (In((2, 5, 4), low=0.5, high=1.5),)),
    Spec("ARG_MAX", "last-axis", _fn(lambda tf, x: tf.argmax(x, axis=-1, output_type=tf.int32)), (Y,)),
    Spec("ARG_MAX", "int64-index", _fn(lambda tf, x: tf.argmax(x, axis=1)), (Y,)),
    Spec("ARG_MIN", "last-axis", _fn(lambda tf, x: tf.argmin(x, axis=-1, output_type=tf.int32)), (Y,)),
    Spec("ARG_MIN", "first-axis", _fn(lambda tf, x: tf.argmin(x, axis=1, output_type=tf.int32)), (Y,)),
    Spec("ARG_MAX", "after-pool-channels",
         _after_pool(lambda tf, x: tf.argmax(x, axis=3, output_type=tf.int32)), (X,)),
    Spec("CUMSUM", "axis1", _fn(lambda tf, x: tf.cumsum(x, axis=1)), (Y,)),
    Spec("CUMSUM", "exclusive-reverse", _fn(lambda tf, x: tf.cumsum(x, axis=2, exclusive=True, reverse=True)), (Y,)),
    Spec("CUMSUM", "after-pool-channels", _after_pool(lambda tf, x: tf.cumsum(x, axis=3)), (X,)),
]
