"""Element-wise operators of two or more inputs, with broadcasting and fused activations; comparisons and
logic."""
from conformance.tflite_specs import In, Spec

A, B = In((1, 5, 6, 4)), In((1, 5, 6, 4), low=-2.0, high=4.0)
ROW = In((4,), low=-1.0, high=2.0)
POS = In((1, 5, 6, 4), low=0.25, high=4.0)
F_I32 = ("float32", "int32")


def _int(shape, low=-20, high=20):
    return In(shape, "int32", low, high)


def _bin(fn):
    return lambda tf: fn(tf)


SPECS = [
    Spec("ADD", "same-shape", lambda tf: lambda a, b: a + b, (A, B)),
    Spec("ADD", "broadcast-row-relu", lambda tf: lambda a, b: tf.nn.relu(a + b), (A, ROW)),
    Spec("ADD", "broadcast-4d", lambda tf: lambda a, b: a + b, (In((1, 5, 1, 4)), In((1, 1, 6, 1)))),
    Spec("ADD", "constant", lambda tf: lambda a: a + tf.constant([0.5, -1.0, 2.0, 0.25]), (A,)),
    Spec("ADD", "int32", lambda tf: lambda a, b: a + b, (_int((2, 5)), _int((2, 5))), ("int32",)),
    Spec("ADD", "broadcast-5d", lambda tf: lambda a, b: a + b, (In((1, 2, 3, 4, 5)), In((1, 1, 3, 1, 5), low=-1.0))),
    Spec("ADD", "broadcast-6d-relu6", lambda tf: lambda a, b: tf.nn.relu6(a + b),
         (In((1, 2, 1, 3, 2, 4)), In((1, 1, 2, 1, 2, 1), low=-1.0, high=2.0))),
    Spec("SUB", "same-shape", lambda tf: lambda a, b: a - b, (A, B)),
    Spec("SUB", "broadcast-relu6", lambda tf: lambda a, b: tf.nn.relu6(a - b), (A, ROW)),
    Spec("SUB", "int32", lambda tf: lambda a, b: a - b, (_int((2, 5)), _int((2, 5))), ("int32",)),
    Spec("SUB", "constant-first", lambda tf: lambda a: tf.constant([0.5, -1.0, 2.0, 0.25]) - a, (A,)),
    Spec("SUB", "broadcast-2d", lambda tf: lambda a, b: a - b, (In((3, 8)), In((3, 1), low=-1.0, high=2.0)),
         static_batch=True),
    Spec("MUL", "same-shape", lambda tf: lambda a, b: a * b, (A, B)),
    Spec("MUL", "broadcast-channel", lambda tf: lambda a, b: a * b, (A, In((1, 1, 1, 4), low=0.0, high=1.0))),
    Spec("MUL", "int32", lambda tf: lambda a, b: a * b, (_int((2, 5)), _int((2, 5))), ("int32",)),
    Spec("MUL", "broadcast-relu", lambda tf: lambda a, b: tf.nn.relu(a * b), (A, ROW)),
    Spec("MUL", "constant", lambda tf: lambda a: a * tf.constant([0.5, -1.5, 2.0, 0.25]), (A,)),
    Spec("MUL", "broadcast-5d", lambda tf: lambda a, b: a * b, (In((1, 2, 3, 1, 5)), In((1, 1, 3, 4, 1), low=-1.0))),
    Spec("DIV", "same-shape", lambda tf: lambda a, b: a / b, (A, POS)),
    Spec("DIV", "broadcast", lambda tf: lambda a, b: a / b, (A, In((4,), low=0.5, high=2.0))),
    Spec("DIV", "relu", lambda tf: lambda a, b: tf.nn.relu(a / b), (A, POS)),
    Spec("DIV", "negative-divisor", lambda tf: lambda a, b: a / b, (A, In((1, 5, 6, 4), low=-4.0, high=-0.25))),
    Spec("MAXIMUM", "same-shape", lambda tf: lambda a, b: tf.maximum(a, b), (A, B)),
    Spec("MAXIMUM", "broadcast-constant", lambda tf: lambda a: tf.maximum(a, tf.constant(0.5)), (A,)),
    Spec("MINIMUM", "same-shape", lambda tf: lambda a, b: tf.minimum(a, b), (A, B)),
    Spec("MINIMUM", "broadcast", lambda tf: lambda a, b: tf.minimum(a, b), (A, ROW)),
    Spec("MINIMUM", "constant", lambda tf: lambda a: tf.minimum(a, tf.constant([0.5, -1.0, 2.0, 0.25])), (A,)),
    Spec("MAXIMUM", "int32", lambda tf: lambda a, b: tf.maximum(a, b), (_int((2, 5)), _int((1, 5))), ("int32",)),
    Spec("SQUARED_DIFFERENCE", "same-shape", lambda tf: lambda a, b: tf.math.squared_difference(a, b), (A, B)),
    Spec("SQUARED_DIFFERENCE", "broadcast", lambda tf: lambda a, b: tf.math.squared_difference(a, b), (A, ROW)),
    Spec("SQUARED_DIFFERENCE", "constant", lambda tf: lambda a: tf.math.squared_difference(
        a, tf.constant([0.5, -1.0, 2.0, 0.25])), (A,)),
    Spec("SQUARED_DIFFERENCE", "int32", lambda tf: lambda a, b: tf.math.squared_difference(a, b),
         (_int((2, 5)), _int((2, 5))), ("int32",)),
    Spec("ADD_N", "three", lambda tf: lambda a, b, c: tf.add_n([a, b, c]), (A, B, A)),
    Spec("FLOOR_DIV", "float", lambda tf: lambda a, b: tf.math.floordiv(a, b), (A, POS), ("float32",)),
    Spec("FLOOR_DIV", "int32", lambda tf: lambda a, b: tf.math.floordiv(a, b), (_int((2, 5)), _int((2, 5), 1, 7)),
         ("int32",)),
    Spec("FLOOR_MOD", "float", lambda tf: lambda a, b: tf.math.floormod(a, b), (A, POS), ("float32",)),
    Spec("FLOOR_DIV", "broadcast-negative", lambda tf: lambda a, b: tf.math.floordiv(a, b),
         (A, In((4,), low=-4.0, high=-0.25)), ("float32",)),
    Spec("FLOOR_MOD", "broadcast-negative", lambda tf: lambda a, b: tf.math.floormod(a, b),
         (A, In((4,), low=-4.0, high=-0.25)), ("float32",)),
    Spec("FLOOR_MOD", "int32", lambda tf: lambda a, b: tf.math.floormod(a, b), (_int((2, 5)), _int((2, 5), 1, 7)),
         ("int32",)),
    Spec("PRELU", "shared-hw", lambda tf: tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.RandomUniform(
        -0.5, 0.5), shared_axes=[1, 2]), (A,)),
    Spec("PRELU", "per-element", lambda tf: tf.keras.layers.PReLU(
        alpha_initializer=tf.keras.initializers.RandomUniform(-0.5, 0.5)), (In((1, 3, 4, 2)),)),
    Spec("PRELU", "dense", lambda tf: tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.RandomUniform(
        -0.5, 0.5)), (In((1, 12)),)),
    Spec("PRELU", "shared-all", lambda tf: tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(
        0.25), shared_axes=[1, 2, 3]), (A,)),
]
for builtin, fn in (("EQUAL", "equal"), ("NOT_EQUAL", "not_equal"), ("GREATER", "greater"),
                    ("GREATER_EQUAL", "greater_equal"), ("LESS", "less"), ("LESS_EQUAL", "less_equal")):
    SPECS += [
        Spec(builtin, "same-shape", (lambda f: lambda tf: lambda a, b: getattr(tf.math, f)(a, b))(fn),
             (In((2, 6), low=-2, high=2), In((2, 6), low=-2, high=2))),
        Spec(builtin, "int32", (lambda f: lambda tf: lambda a, b: getattr(tf.math, f)(a, b))(fn),
             (_int((2, 6), -3, 3), _int((1, 6), -3, 3)), ("int32",)),
        Spec(builtin, "constant-4d", (lambda f: lambda tf: lambda a: getattr(tf.math, f)(
            a, tf.constant([0.5, -1.0, 0.0, 0.25])))(fn), (A,), ("float32", "int8")),
    ]
BOOL = In((2, 6), "bool", 0, 1)
SPECS += [
    Spec("LOGICAL_AND", "bool", lambda tf: lambda a, b: tf.logical_and(a, b), (BOOL, BOOL), ("bool",)),
    Spec("LOGICAL_OR", "bool", lambda tf: lambda a, b: tf.logical_or(a, b), (BOOL, BOOL), ("bool",)),
    Spec("LOGICAL_NOT", "bool", lambda tf: lambda a: tf.logical_not(a), (BOOL,), ("bool",)),
    Spec("LOGICAL_AND", "broadcast", lambda tf: lambda a, b: tf.logical_and(a, b), (BOOL, In((1, 6), "bool", 0, 1)),
         ("bool",)),
    Spec("LOGICAL_OR", "of-comparisons", lambda tf: lambda a, b: tf.logical_or(a > 0.5, b < -0.5), (A, B),
         ("float32", "int8")),
    Spec("EQUAL", "bool", lambda tf: lambda a, b: tf.equal(a, b), (BOOL, BOOL), ("bool",)),
    Spec("SELECT_V2", "broadcast", lambda tf: lambda c, a, b: tf.where(c, a, b),
         (In((1, 6), "bool", 0, 1), In((2, 6)), In((2, 6)))),
    Spec("SELECT_V2", "of-a-comparison", lambda tf: lambda a, b: tf.where(a > b, a, b * 0.5), (A, B)),
    Spec("SELECT_V2", "scalar-else", lambda tf: lambda a: tf.where(a > 0.0, a, tf.constant(0.25)), (A,)),
]
