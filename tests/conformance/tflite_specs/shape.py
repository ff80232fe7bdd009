"""Operators that move data: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V,
STRIDED_SLICE, SLICE, TRANSPOSE, PAD, PADV2, MIRROR_PAD, GATHER, GATHER_ND, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, REVERSE_V2, BROADCAST_TO, CAST, EMBEDDING_LOOKUP."""
from conformance.tflite_specs import In, Spec

X = In((1, 6, 8, 4))
Y = In((2, 6, 5))


def _fn(expr):
    return lambda tf: (lambda *x: expr(tf, *x))


def _xla():
    from tensorflow.compiler.tf2xla.python import xla  # XLA's DynamicUpdateSlice: the converter's DYNAMIC_UPDATE_SLICE
    return xla


def _after_conv(expr, filters=4):
    """expr of a Conv2D's output (a tensor mcudeploy holds NCHW)."""
    def build(tf):
        conv = tf.keras.layers.Conv2D(filters, 3, padding="same", bias_initializer="random_normal")
        return lambda x: expr(tf, conv(x))
    return build



def _causal_stack(tf):
    """A small TCN of a fixed batch: the converter pads each causal (dilated) Conv1D with a PAD."""
    k = tf.keras.layers
    return tf.keras.Sequential([
        k.Conv1D(8, 3, padding="causal", dilation_rate=2, activation="relu", bias_initializer="random_normal"),
        k.Conv1D(6, 3, padding="causal", dilation_rate=4, bias_initializer="random_normal")])


def _conv1d_stack(tf):
    k = tf.keras.layers
    return tf.keras.Sequential([k.Conv1D(8, 3, padding="same", activation="relu", bias_initializer="random_normal"),
                                k.Conv1D(8, 3, activation="relu", bias_initializer="random_normal"),
                                k.MaxPooling1D(2), k.Conv1D(6, 3, padding="same", bias_initializer="random_normal"),
                                k.Flatten()])


SPECS = [
    Spec("RESHAPE", "4d-to-2d", _fn(lambda tf, x: tf.reshape(x, (1, -1)) * 1.0), (X,), static_batch=True),
    Spec("RESHAPE", "keras-flatten", lambda tf: tf.keras.layers.Flatten(), (X,)),
    Spec("RESHAPE", "3d", _fn(lambda tf, x: tf.reshape(tf.nn.relu(x), (3, 4, 5))), (Y,)),
    Spec("SQUEEZE", "axis", _fn(lambda tf, x: tf.squeeze(tf.nn.relu(x), axis=2)), (In((1, 6, 1, 4)),)),
    Spec("SQUEEZE", "conv1d-keras", lambda tf: tf.keras.layers.Conv1D(3, 1), (In((1, 6, 4)),)),
    Spec("EXPAND_DIMS", "axis1", _fn(lambda tf, x: tf.expand_dims(tf.nn.relu(x), 1)), (In((1, 6, 5)),)),
    Spec("EXPAND_DIMS", "last", _fn(lambda tf, x: tf.nn.relu(tf.expand_dims(x, -1))), (In((1, 6, 5)),)),
    Spec("EXPAND_DIMS", "conv1d-stack", _conv1d_stack, (In((1, 24, 4)),)),
    Spec("CONCATENATION", "channels", _fn(lambda tf, a, b: tf.concat([a, b], axis=-1)), (X, In((1, 6, 8, 3)))),
    Spec("CONCATENATION", "width", _fn(lambda tf, a, b: tf.concat([a, b], axis=2)), (X, In((1, 6, 2, 4)))),
    Spec("CONCATENATION", "scales-differ", _fn(lambda tf, a, b: tf.concat([a, b], axis=-1)),
         (X, In((1, 6, 8, 2), low=-20.0, high=10.0))),
    Spec("CONCATENATION", "3d-axis1", _fn(lambda tf, a, b: tf.concat([a, b], axis=1)), (Y, In((2, 3, 5)))),
    Spec("PACK", "axis0", _fn(lambda tf, a, b: tf.stack([a, b], axis=0)), (Y, Y)),
    Spec("PACK", "axis-last", _fn(lambda tf, a, b, c: tf.stack([a, b, c], axis=-1)), (Y, Y, Y)),
    Spec("UNPACK", "axis1", _fn(lambda tf, x: tuple(t * 1.0 for t in tf.unstack(x, axis=1))[:3]), (In((2, 3, 5)),)),
    Spec("SPLIT", "channels", _fn(lambda tf, x: tuple(tf.split(x, 2, axis=-1))), (X,)),
    Spec("SPLIT", "rows", _fn(lambda tf, x: tuple(tf.split(x, 3, axis=1))), (X,)),
    Spec("SPLIT", "after-conv", _after_conv(lambda tf, y: tuple(tf.split(y, 2, axis=-1)), 6), (X,)),
    Spec("SPLIT_V", "sizes", _fn(lambda tf, x: tuple(tf.split(x, [1, 3, 2], axis=1))), (X,)),
    Spec("STRIDED_SLICE", "begin-end", _fn(lambda tf, x: x[:, 1:5, 2:7, :]), (X,)),
    Spec("STRIDED_SLICE", "strides", _fn(lambda tf, x: x[:, ::2, 1::3, :]), (X,)),
    Spec("STRIDED_SLICE", "shrink-axis", _fn(lambda tf, x: x[:, 2, :, 1:3]), (X,)),
    Spec("STRIDED_SLICE", "negative", _fn(lambda tf, x: x[:, -3:, :-2]), (Y,)),
    Spec("STRIDED_SLICE", "reverse-stride", _fn(lambda tf, x: x[:, ::-1, :]), (Y,)),
    Spec("STRIDED_SLICE", "new-axis", _fn(lambda tf, x: x[:, tf.newaxis, 1:4]), (Y,)),
    Spec("STRIDED_SLICE", "ellipsis", _fn(lambda tf, x: x[..., 1:3]), (Y,)),
    Spec("STRIDED_SLICE", "after-conv", _after_conv(lambda tf, y: y[:, 1:5, ::2, 1:3]), (X,)),
    Spec("STRIDED_SLICE", "after-conv-shrink", _after_conv(lambda tf, y: y[:, 3, :, :]), (X,)),
    Spec("SLICE", "begin-size", _fn(lambda tf, x: tf.slice(x, [0, 1, 1], [2, 3, 4])), (Y,)),
    Spec("TRANSPOSE", "0213", _fn(lambda tf, x: tf.transpose(x, (0, 2, 1, 3))), (X,)),
    Spec("TRANSPOSE", "3d", _fn(lambda tf, x: tf.transpose(x, (2, 0, 1))), (Y,)),
    Spec("TRANSPOSE", "5d", _fn(lambda tf, x: tf.transpose(tf.reshape(x, (1, 6, 2, 4, 4)), (0, 2, 1, 4, 3))), (X,),
         static_batch=True),
    Spec("PAD", "hw", _fn(lambda tf, x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]])), (X,)),
    Spec("PAD", "conv1d-causal-stack", _causal_stack, (In((1, 16, 4)),), static_batch=True),
    Spec("PAD", "channels", _fn(lambda tf, x: tf.pad(x, [[0, 0], [0, 0], [0, 0], [1, 3]])), (X,)),
    Spec("PADV2", "value", _fn(lambda tf, x: tf.pad(x, [[0, 0], [1, 1], [0, 2], [0, 0]], constant_values=1.5)), (X,)),
    Spec("MIRROR_PAD", "reflect", _fn(lambda tf, x: tf.pad(x, [[0, 0], [2, 1], [1, 2], [0, 0]], "REFLECT")), (X,)),
    Spec("MIRROR_PAD", "symmetric", _fn(lambda tf, x: tf.pad(x, [[0, 0], [1, 2], [2, 0]], "SYMMETRIC")), (Y,)),
    Spec("GATHER", "constant-indices", _fn(lambda tf, x: tf.gather(x, [4, 0, 2, 2], axis=1)), (Y,)),
    Spec("GATHER", "input-indices", _fn(lambda tf, i: tf.gather(tf.reshape(tf.range(40, dtype=tf.float32) * 0.1,
                                                                           (10, 4)), i)),
         (In((3,), "int32", 0, 9),), ("float32",)),
    Spec("GATHER", "activation-by-indices", _fn(lambda tf, x, i: tf.gather(x, i, axis=2)), (Y, In((3,), "int32", 0, 4))),
    Spec("GATHER", "after-conv", _after_conv(lambda tf, y: tf.gather(y, [5, 0, 2], axis=-1), 6), (X,)),
    Spec("GATHER", "batch-dims", _fn(lambda tf, x, i: tf.gather(x, i, axis=2, batch_dims=1)),
         (Y, In((2, 3), "int32", 0, 4)), ("float32", "int8")),
    Spec("GATHER_ND", "pairs", _fn(lambda tf, x, i: tf.gather_nd(x, i)), (Y, In((4, 2), "int32", 0, 1))),
    Spec("GATHER_ND", "constant-triples", _fn(lambda tf, x: tf.gather_nd(x, [[1, 2, 0], [0, 5, 4], [1, 0, 3]])), (Y,)),
    Spec("DEPTH_TO_SPACE", "block2", _fn(lambda tf, x: tf.nn.depth_to_space(x, 2)), (In((1, 3, 4, 8)),)),
    Spec("SPACE_TO_DEPTH", "block2", _fn(lambda tf, x: tf.nn.space_to_depth(x, 2)), (X,)),
    Spec("SPACE_TO_BATCH_ND", "block2", _fn(lambda tf, x: tf.space_to_batch(x, [2, 2], [[0, 0], [0, 0]])), (X,),
         static_batch=True),
    Spec("SPACE_TO_BATCH_ND", "3d", _fn(lambda tf, x: tf.space_to_batch(x, [2], [[0, 0]])), (In((1, 8, 3)),),
         static_batch=True),
    Spec("SPACE_TO_BATCH_ND", "dilated-conv-static", lambda tf: tf.keras.layers.Conv2D(
        3, 3, dilation_rate=2, padding="same", bias_initializer="random_normal"), (In((1, 9, 10, 4)),),
         static_batch=True),
    Spec("BATCH_TO_SPACE_ND", "block2", _fn(lambda tf, x: tf.batch_to_space(x, [2, 2], [[0, 0], [0, 0]])),
         (In((4, 3, 4, 2)),)),
    Spec("BATCH_TO_SPACE_ND", "crops", _fn(lambda tf, x: tf.batch_to_space(x, [2, 2], [[1, 0], [0, 1]])),
         (In((4, 3, 4, 2)),)),
    Spec("DYNAMIC_UPDATE_SLICE", "constant-start", _fn(lambda tf, x, u: _xla().dynamic_update_slice(
        x, u, tf.constant([0, 2, 1]))), (Y, In((2, 3, 4)))),
    Spec("DYNAMIC_UPDATE_SLICE", "input-start", _fn(lambda tf, x, u, i: _xla().dynamic_update_slice(x, u, i)),
         (Y, In((2, 3, 4)), In((3,), "int32", -1, 4)), ("float32",)),
    Spec("REVERSE_V2", "axis1", _fn(lambda tf, x: tf.reverse(x, [1])), (Y,)),
    Spec("REVERSE_V2", "after-conv", _after_conv(lambda tf, y: tf.reverse(y, [2, 3])), (X,)),
    Spec("BROADCAST_TO", "rows", _fn(lambda tf, x: tf.broadcast_to(x, (3, 6, 5))), (In((1, 6, 5)),)),
    Spec("TILE", "twice", _fn(lambda tf, x: tf.tile(x, (1, 2, 3))), (Y,)),
    Spec("CAST", "float-to-int32", _fn(lambda tf, x: tf.cast(x * 10.0, tf.int32)), (Y,), ("float32",)),
    Spec("CAST", "int32-to-float", _fn(lambda tf, x: tf.cast(x, tf.float32)), (In((2, 6), "int32", -100, 100),),
         ("int32",)),
    Spec("CAST", "float-to-int8", _fn(lambda tf, x: tf.cast(x * 30.0, tf.int8)), (Y,), ("float32",)),
    Spec("CAST", "bool-to-float", _fn(lambda tf, x: tf.cast(x, tf.float32)), (In((2, 6), "bool"),), ("bool",)),
    Spec("CAST", "int8-to-int32", _fn(lambda tf, x: tf.cast(x, tf.int32)), (In((2, 6), "int8", -100, 100),),
         ("int32",)),
    Spec("FILL", "scalar-input", _fn(lambda tf, v: tf.fill([2, 3], v)), (In(()),)),
    Spec("ZEROS_LIKE", "beside", _fn(lambda tf, x: tf.concat([x, tf.zeros_like(x)], -1)), (In((1, 6, 5)),)),
    Spec("BROADCAST_ARGS", "dynamic", _fn(lambda tf, x: tf.broadcast_to(
        x, tf.broadcast_dynamic_shape(tf.shape(x), tf.constant([3, 1, 5])))), (In((1, 6, 5)),)),
    Spec("EMBEDDING_LOOKUP", "ids", _fn(lambda tf, i: tf.nn.embedding_lookup(
        tf.reshape(tf.range(24, dtype=tf.float32) * 0.25, (6, 4)), i)), (In((3,), "int32", 0, 5),), ("float32",)),
]
