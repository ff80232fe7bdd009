"""The Keras 3 architectures of the corpus (issue 35): ordinary models as users build them for a microcontroller,
each a function returning a Keras model (or, for the streaming one, a tf.Module with state variables). Weights come
from fixed seeds; batch-normalisation statistics are drawn too, so that folding them is not a no-op. Needs TensorFlow
(make.py runs these in its own environment)."""
from __future__ import annotations

import numpy as np


def _randomize_batchnorm(model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.__class__.__name__ == "BatchNormalization":
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
                               rng.normal(0, 0.2, beta.shape).astype(np.float32),
                               rng.normal(0, 0.2, mean.shape).astype(np.float32),
                               rng.uniform(0.5, 2.0, var.shape).astype(np.float32)])


def conv1d_classifier(keras):
    """A time-series (activity) classifier: 128 steps of 3 accelerometer axes, Conv1D + pooling, 6 classes."""
    L = keras.layers
    x = inp = keras.Input((128, 3))
    x = L.Conv1D(16, 5, activation="relu")(x)
    x = L.MaxPooling1D(2)(x)
    x = L.Conv1D(32, 3, padding="same")(x)
    x = L.BatchNormalization()(x)
    x = L.ReLU()(x)
    x = L.MaxPooling1D(2)(x)
    x = L.Conv1D(32, 3, activation="relu")(x)
    x = L.GlobalAveragePooling1D()(x)
    x = L.Dense(6, activation="softmax")(x)
    return keras.Model(inp, x, name="conv1d_classifier")


def dscnn_gap(keras):
    """A DS-CNN keyword spotter (49 x 10 MFCC) ending in GlobalAveragePooling2D, as Keras users write it."""
    L = keras.layers
    x = inp = keras.Input((49, 10, 1))
    x = L.Conv2D(48, (10, 4), strides=(2, 2), padding="same", use_bias=False)(x)
    x = L.BatchNormalization()(x)
    x = L.ReLU()(x)
    for _ in range(4):
        x = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = L.BatchNormalization()(x)
        x = L.ReLU()(x)
        x = L.Conv2D(48, 1, use_bias=False)(x)
        x = L.BatchNormalization()(x)
        x = L.ReLU()(x)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(12, activation="softmax")(x)
    return keras.Model(inp, x, name="dscnn_gap")


def mobilenetv2(keras):
    """keras.applications' MobileNetV2, alpha 0.35, 96 x 96 RGB, 2 classes (a visual wake word)."""
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=2)


def se_resnet(keras):
    """A small ResNet of squeeze-and-excitation blocks on 32 x 32 RGB, 10 classes."""
    L = keras.layers

    def block(x, filters, stride):
        shortcut = x
        y = L.Conv2D(filters, 3, strides=stride, padding="same")(x)
        y = L.BatchNormalization()(y)
        y = L.ReLU()(y)
        y = L.Conv2D(filters, 3, padding="same")(y)
        y = L.BatchNormalization()(y)
        s = L.GlobalAveragePooling2D()(y)
        s = L.Dense(max(filters // 4, 4), activation="relu")(s)
        s = L.Dense(filters, activation="sigmoid")(s)
        s = L.Reshape((1, 1, filters))(s)
        y = L.Multiply()([y, s])
        if stride != 1 or shortcut.shape[-1] != filters:
            shortcut = L.Conv2D(filters, 1, strides=stride)(shortcut)
        return L.ReLU()(L.Add()([y, shortcut]))

    x = inp = keras.Input((32, 32, 3))
    x = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = block(x, 16, 1)
    x = block(x, 32, 2)
    x = block(x, 48, 2)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(10)(x)
    return keras.Model(inp, x, name="se_resnet")


def _unet(keras, interpolation: str, name: str):
    L = keras.layers
    x = inp = keras.Input((32, 32, 1))
    e1 = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    e2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D()(e1))
    b = L.Conv2D(24, 3, padding="same", activation="relu")(L.MaxPooling2D()(e2))
    d2 = L.Concatenate()([L.UpSampling2D(interpolation=interpolation)(b), e2])
    d2 = L.Conv2D(16, 3, padding="same", activation="relu")(d2)
    d1 = L.Concatenate()([L.UpSampling2D(interpolation=interpolation)(d2), e1])
    d1 = L.Conv2D(8, 3, padding="same", activation="relu")(d1)
    y = L.Conv2D(1, 1, activation="sigmoid")(d1)
    return keras.Model(inp, y, name=name)


def unet_nearest(keras):
    """A small U-Net (32 x 32 mask) with UpSampling2D(nearest): Keras 3 writes it as TILE, which TFLite Micro does
    not register (LiteRT is its reference)."""
    return _unet(keras, "nearest", "unet_nearest")


def unet_bilinear(keras):
    """The same U-Net with UpSampling2D(bilinear): RESIZE_BILINEAR."""
    return _unet(keras, "bilinear", "unet_bilinear")


def lstm_kws(keras):
    """A recurrent keyword spotter: 25 frames of 10 MFCC, LSTM(24) unrolled (Keras 3 exports a recurrent layer
    the converter can fuse only this way), 12 classes."""
    L = keras.layers
    x = inp = keras.Input((25, 10))
    x = L.LSTM(24, unroll=True)(x)
    x = L.Dense(12, activation="softmax")(x)
    return keras.Model(inp, x, name="lstm_kws")


def gru_kws(keras):
    """The same with GRU(24), unrolled."""
    L = keras.layers
    x = inp = keras.Input((25, 10))
    x = L.GRU(24, unroll=True)(x)
    x = L.Dense(12, activation="softmax")(x)
    return keras.Model(inp, x, name="gru_kws")


def denoiser(keras):
    """A 1-D convolutional denoiser (speech enhancement's shape): 256 samples in, strided Conv1D with LeakyReLU down,
    Conv1DTranspose up, a skip connection, 256 samples out. Made as 16x8 as well (int16 activations)."""
    L = keras.layers
    x = inp = keras.Input((256, 1))
    e1 = L.LeakyReLU(0.1)(L.Conv1D(16, 9, strides=2, padding="same")(x))
    e2 = L.LeakyReLU(0.1)(L.Conv1D(24, 9, strides=2, padding="same")(e1))
    d1 = L.LeakyReLU(0.1)(L.Conv1DTranspose(16, 9, strides=2, padding="same")(e2))
    d1 = L.Add()([d1, e1])
    y = L.Conv1DTranspose(1, 9, strides=2, padding="same", activation="tanh")(d1)
    return keras.Model(inp, y, name="denoiser")


def streaming_kws(tf, keras):
    """A streaming keyword spotter as microWakeWord builds them: one 40-feature frame per call; each Conv1D layer
    keeps the last frames it needs in a state variable (a ring buffer: the old frames but the first, then the new
    one, assigned back) and computes one output frame; a Dense + sigmoid gives the probability. The weights are
    constants (drawn from the seed) and only the rings are variables, as in an exported streaming model."""
    rng = np.random.default_rng(7)
    widths = [40, 24, 24, 24]
    kernels = [tf.constant(rng.normal(0, (1.0 / (3 * w)) ** 0.5, (3, w, 24)).astype(np.float32)) for w in widths[:3]]
    biases = [tf.constant(rng.normal(0, 0.1, 24).astype(np.float32)) for _ in range(3)]
    dense = tf.constant(rng.normal(0, 0.2, (24, 1)).astype(np.float32))

    class Streaming(tf.Module):
        def __init__(self):
            super().__init__()
            self.states = [tf.Variable(tf.zeros((1, 2, w)), trainable=False, name=f"ring{k}")
                           for k, w in enumerate(widths[:3])]

        def __call__(self, frame):
            x = frame  # (1, 1, 40)
            for kernel, bias, state in zip(kernels, biases, self.states):
                window = tf.concat([state, x], axis=1)  # (1, 3, width)
                state.assign(window[:, 1:, :])
                x = tf.nn.relu(tf.nn.conv1d(window, kernel, 1, "VALID") + bias)  # (1, 1, 24)
            return tf.sigmoid(tf.matmul(tf.reshape(x, (1, 24)), dense))

    return Streaming()


KERAS = {f.__name__: f for f in (conv1d_classifier, dscnn_gap, mobilenetv2, se_resnet, unet_nearest, unet_bilinear,
                                 lstm_kws, gru_kws, denoiser)}
# the types each is exported at: float and int8 all; 16x8 (int16 activations, int8 weights) the audio models
TYPES = {name: ("float32", "int8", "int16") if name in ("dscnn_gap", "denoiser", "lstm_kws") else ("float32", "int8")
         for name in list(KERAS) + ["streaming_kws"]}
STREAMING = {"streaming_kws": (streaming_kws, (1, 1, 40))}
