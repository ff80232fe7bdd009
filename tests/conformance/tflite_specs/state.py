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


SPECS = [
    Spec("VAR_HANDLE", "ring", _ring, (In((1, 1, 3)),), resource_variables=True, steps=6),
    Spec("WHILE", "loop", lambda tf: (lambda x: tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + 1.0),
                                                              (tf.constant(0), x))[1]), (In((2, 3)),), ("float32",)),
    Spec("IF", "cond", lambda tf: (lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)),
         (In((2, 3)),), ("float32",)),
]
