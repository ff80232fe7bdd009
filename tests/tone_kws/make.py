"""Train the tone keyword spotter on the synthetic set of features.py and export it as TFLite: a float model
and a full-integer int8 one (int8 input and output, calibrated on training samples), the fixtures of
`run --dataset`'s tests, with a few samples of the test set.

    python -m tests.tone_kws.make

Like tests/keras_corpus/make.py it needs TensorFlow, and runs in tests/conformance/tflite_gen.py's environment
(made when missing). It writes tests/tone_kws/tone_kws-float32.tflite, tone_kws-int8.tflite and samples.npz
(SAMPLES samples of the test set, seed features.TEST_SEED, as x and y), and prints the float model's accuracy.
The full test set is made without TensorFlow: python -m tests.tone_kws.features -n 200 -o kws200.npz
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEED = 20261125
TRAIN = 4000
CALIBRATION = 100
SAMPLES = 16
EPOCHS = 12


def model(keras, classes: int):
    from tone_kws.features import BANDS, FRAMES

    layers = keras.layers
    x = inputs = keras.Input((FRAMES, BANDS, 1), batch_size=1, name="features")
    x = layers.Conv2D(16, (5, 3), strides=(2, 1), padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    for width in (24, 24):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.Conv2D(width, 1, use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(classes)(x)
    return keras.Model(inputs, layers.Softmax()(x), name="tone_kws")


def convert(tf, net, calibration=None) -> bytes:
    fn = tf.function(lambda x: net(x), input_signature=[tf.TensorSpec((1,) + tuple(net.input.shape[1:]),
                                                                      tf.float32, name="features")])
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()])
    if calibration is not None:
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([c[None]] for c in calibration)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


def main() -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from conformance import tflite_gen

    tflite_gen.ensure_tensorflow("tests.tone_kws.make")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    import keras

    from tone_kws.features import CLASSES, TEST_SEED, make_set

    keras.utils.set_random_seed(SEED)
    x, y = make_set(TRAIN, seed=0)
    xt, yt = make_set(200, seed=TEST_SEED)
    net = model(keras, len(CLASSES))
    net.compile(optimizer=keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    net.fit(x, y, batch_size=64, epochs=EPOCHS, validation_split=0.1, verbose=2)
    # batch_size=1 in the model; Keras evaluates it in batches of one
    accuracy = float(np.mean(np.argmax(net.predict(xt, batch_size=1, verbose=0), -1) == yt))
    (HERE / "tone_kws-float32.tflite").write_bytes(convert(tf, net))
    (HERE / "tone_kws-int8.tflite").write_bytes(convert(tf, net, x[:CALIBRATION]))
    np.savez_compressed(HERE / "samples.npz", x=xt[:SAMPLES], y=yt[:SAMPLES])
    print(f"Keras float accuracy on the 200 test samples (seed {TEST_SEED}): {accuracy:.1%}")
    for name in ("tone_kws-float32.tflite", "tone_kws-int8.tflite", "samples.npz"):
        print(f"wrote {HERE / name}: {(HERE / name).stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
