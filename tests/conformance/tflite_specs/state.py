"""Resource variables and control flow: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE (a streaming model
keeps its state between calls), WHILE and IF."""
from conformance.tflite_specs import In, Spec


def _ring(tf):
    """A ring buffer of the last 4 frames, as streaming keyword models keep it: state = concat(state[1:], x)."""

    class Ring(tf.Module):
        def __init__(self):
            super().__init__()
            self.state = tf.Variable(tf.zeros((1, 4, 3)), trainable=False)

        def __call__(self, x):
            new = tf.concat([self.state[:, 1:, :], x], axis=1)
            self.state.assign(new)
            return tf.reduce_sum(new, axis=1) * 0.5

    return Ring()


FEATURES, CHANNELS, CLASSES = 8, 6, 3


def _kws(tf, first=3, second=5):
    """A streaming keyword spotter as microWakeWord makes one: a frame of features comes in per call; each layer
    keeps the last frames it needs in a ring buffer (memory = concat(state, frame); state = memory[:, 1:]) and
    convolves over time across the whole memory (a convolution, then a depthwise one), and a dense layer
    scores the newest frame. The states start at non-zero values (what CALL_ONCE assigns)."""
    import numpy as np

    rng = np.random.default_rng(35)

    def weights(*shape):
        return tf.constant(rng.normal(0.0, 0.5, shape).astype(np.float32))

    class KWS(tf.Module):
        def __init__(self):
            super().__init__()
            self.s1 = tf.Variable(rng.uniform(-1, 1, (1, first - 1, 1, FEATURES)).astype(np.float32), trainable=False)
            self.s2 = tf.Variable(rng.uniform(0, 1, (1, second - 1, 1, CHANNELS)).astype(np.float32), trainable=False)
            self.w1, self.b1 = weights(first, 1, FEATURES, CHANNELS), weights(CHANNELS)
            self.w2, self.b2 = weights(second, 1, CHANNELS, 1), weights(CHANNELS)
            self.w3, self.b3 = weights(CHANNELS, CLASSES), weights(CLASSES)

        def __call__(self, x):
            frame = tf.reshape(x, (1, 1, 1, FEATURES))
            memory = tf.concat([self.s1, frame], axis=1)
            self.s1.assign(memory[:, 1:])
            y = tf.nn.relu(tf.nn.conv2d(memory, self.w1, 1, "VALID") + self.b1)
            memory = tf.concat([self.s2, y], axis=1)
            self.s2.assign(memory[:, 1:])
            y = tf.nn.relu(tf.nn.depthwise_conv2d(memory, self.w2, (1, 1, 1, 1), "VALID") + self.b2)
            return tf.matmul(tf.reshape(y, (1, CHANNELS)), self.w3) + self.b3

    return KWS()


STREAM = dict(resource_variables=True, steps=8, static_batch=True)
SPECS = [
    Spec("VAR_HANDLE", "ring", _ring, (In((1, 1, 3)),), resource_variables=True, steps=6),
    Spec("VAR_HANDLE", "kws", _kws, (In((1, 1, FEATURES)),), **STREAM),
    # int8 variables (the converter's variable quantization): no QUANTIZE/DEQUANTIZE around the state
    Spec("READ_VARIABLE", "kws-int8-state", _kws, (In((1, 1, FEATURES)),), ("int8",),
         converter={"_experimental_variable_quantization": True}, **STREAM),
    Spec("WHILE", "loop", lambda tf: (lambda x: tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + 1.0),
                                                              (tf.constant(0), x))[1]), (In((2, 3)),), ("float32",)),
    Spec("IF", "cond", lambda tf: (lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)),
         (In((2, 3)),), ("float32",)),
]
