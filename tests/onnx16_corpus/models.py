"""The models of the int16 QDQ ONNX corpus (issue 43), as float ONNX before quantization.

The corpus's 16x8 architectures (tests/keras_corpus/models.py: dscnn_gap, denoiser, lstm_kws) rebuilt in PyTorch, as
a PyTorch user writes them (the LSTM unrolled as Keras' unroll=True exports it), and one model per operator of the
issue that ONNX has, written with onnx.helper. Weights come from fixed seeds; batch-normalisation statistics are drawn
too, so that folding them is not a no-op. Needs torch (make.py runs this in its own environment).
"""
from __future__ import annotations

import numpy as np

SEED = 20261143


# ---------------------------------------------------------------------------------------------- PyTorch models

def _randomize_batchnorm(torch, model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.weight.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, n).astype(np.float32)))
                m.bias.copy_(torch.from_numpy(rng.normal(0, 0.2, n).astype(np.float32)))
                m.running_mean.copy_(torch.from_numpy(rng.normal(0, 0.2, n).astype(np.float32)))
                m.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, n).astype(np.float32)))


def dscnn_gap(torch):
    """A DS-CNN keyword spotter (49 x 10 MFCC), global average pooling, 12 classes."""
    nn = torch.nn

    def block(cin, cout, **conv):
        return [nn.Conv2d(cin, cout, bias=False, **conv), nn.BatchNorm2d(cout), nn.ReLU()]

    layers = block(1, 48, kernel_size=(10, 4), stride=2, padding=(4, 1))
    for _ in range(4):
        layers += block(48, 48, kernel_size=3, padding=1, groups=48) + block(48, 48, kernel_size=1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(48, 12), nn.Softmax(dim=1)]
    return nn.Sequential(*layers), (1, 1, 49, 10)


def denoiser(torch):
    """A 1-D convolutional denoiser: strided Conv1d with LeakyReLU down, ConvTranspose1d up, a skip connection."""
    nn = torch.nn

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1 = nn.Conv1d(1, 16, 9, stride=2, padding=4)
            self.e2 = nn.Conv1d(16, 24, 9, stride=2, padding=4)
            self.d1 = nn.ConvTranspose1d(24, 16, 9, stride=2, padding=4, output_padding=1)
            self.out = nn.ConvTranspose1d(16, 1, 9, stride=2, padding=4, output_padding=1)
            self.act = nn.LeakyReLU(0.1)

        def forward(self, x):
            e1 = self.act(self.e1(x))
            e2 = self.act(self.e2(e1))
            d1 = self.act(self.d1(e2)) + e1
            return torch.tanh(self.out(d1))

    return Denoiser(), (1, 1, 256)


def lstm_kws(torch):
    """A recurrent keyword spotter: 25 frames of 10 MFCC, an LSTM of 24 unrolled, 12 classes."""
    nn = torch.nn

    class LstmKws(nn.Module):
        def __init__(self):
            super().__init__()
            self.x = nn.Linear(10, 96)
            self.h = nn.Linear(24, 96, bias=False)
            self.head = nn.Linear(24, 12)

        def forward(self, x):
            h = torch.zeros(1, 24)
            c = torch.zeros(1, 24)
            for t in range(25):
                gates = self.x(x[:, t, :]) + self.h(h)
                i, f, g, o = torch.split(gates, 24, dim=1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            return torch.softmax(self.head(h), dim=1)

    return LstmKws(), (1, 25, 10)


TORCH = {f.__name__: f for f in (dscnn_gap, denoiser, lstm_kws)}


# ---------------------------------------------------------------------------------------------- one operator each

def _op_models():
    """name -> (inputs {name: shape}, nodes, constants {name: array}, outputs {name: shape or None}). Nodes are
    (op_type, inputs, outputs, attributes)."""
    rng = np.random.default_rng(SEED)

    def w(*shape, scale=0.3):
        return rng.normal(0, scale, shape).astype(np.float32)

    x4 = {"x": (1, 8, 10, 10)}
    m = {}
    m["conv"] = (x4, [("Conv", ["x", "w", "b"], ["y"], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))],
                 {"w": w(12, 8, 3, 3, scale=0.15), "b": w(12)})
    m["conv_relu"] = (x4, [("Conv", ["x", "w", "b"], ["c"], dict(kernel_shape=[3, 3], strides=[2, 2])),
                           ("Relu", ["c"], ["y"], {})], {"w": w(16, 8, 3, 3, scale=0.15), "b": w(16)})
    m["conv1d"] = ({"x": (1, 4, 64)}, [("Conv", ["x", "w", "b"], ["y"], dict(kernel_shape=[5], strides=[2],
                                                                           pads=[2, 2]))],
                   {"w": w(8, 4, 5, scale=0.2), "b": w(8)})
    m["depthwise"] = (x4, [("Conv", ["x", "w", "b"], ["y"], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8))],
                      {"w": w(8, 1, 3, 3, scale=0.4), "b": w(8)})
    m["gemm"] = ({"x": (1, 32)}, [("Gemm", ["x", "w", "b"], ["y"], dict(transB=1))], {"w": w(16, 32, scale=0.2),
                                                                                      "b": w(16)})
    m["matmul"] = ({"x": (1, 32)}, [("MatMul", ["x", "w"], ["y"], {})], {"w": w(32, 16, scale=0.2)})
    m["conv_transpose"] = ({"x": (1, 8, 6, 6)}, [("ConvTranspose", ["x", "w", "b"], ["y"],
                                                  dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                       output_padding=[1, 1]))],
                           {"w": w(8, 4, 3, 3, scale=0.2), "b": w(4)})
    pair = {"a": (1, 8, 6, 6), "b": (1, 8, 6, 6)}
    m["add"] = (pair, [("Add", ["a", "b"], ["y"], {})], {})
    m["sub"] = (pair, [("Sub", ["a", "b"], ["y"], {})], {})
    m["mul"] = (pair, [("Mul", ["a", "b"], ["y"], {})], {})
    m["pad"] = (x4, [("Pad", ["x", "pads"], ["y"], dict(mode="constant"))],
                {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)})
    m["maxpool"] = (x4, [("MaxPool", ["x"], ["y"], dict(kernel_shape=[2, 2], strides=[2, 2]))], {})
    m["avgpool"] = (x4, [("AveragePool", ["x"], ["y"], dict(kernel_shape=[3, 3], strides=[1, 1]))], {})
    m["global_avgpool"] = (x4, [("GlobalAveragePool", ["x"], ["y"], {})], {})
    m["reduce_mean"] = (x4, [("ReduceMean", ["x", "axes"], ["y"], dict(keepdims=1))],
                        {"axes": np.array([2, 3], np.int64)})
    m["reshape"] = (x4, [("Reshape", ["x", "shape"], ["y"], {})], {"shape": np.array([1, 8, 100], np.int64)})
    m["slice"] = (x4, [("Slice", ["x", "starts", "ends", "axes"], ["y"], {})],
                  {"starts": np.array([1, 2], np.int64), "ends": np.array([7, 9], np.int64),
                   "axes": np.array([1, 3], np.int64)})
    m["concat"] = ({"a": (1, 8, 6, 6), "b": (1, 4, 6, 6)}, [("Concat", ["a", "b"], ["y"], dict(axis=1))], {})
    m["leaky_relu"] = (x4, [("LeakyRelu", ["x"], ["y"], dict(alpha=0.1))], {})
    # onnxruntime keeps a Relu or Clip only after an operator it quantizes (here an Add)
    m["relu"] = (pair, [("Add", ["a", "b"], ["s"], {}), ("Relu", ["s"], ["y"], {})], {})
    m["clip"] = (pair, [("Add", ["a", "b"], ["s"], {}), ("Clip", ["s", "lo", "hi"], ["y"], {})],
                 {"lo": np.array(-0.5, np.float32), "hi": np.array(1.5, np.float32)})
    m["tanh"] = (x4, [("Tanh", ["x"], ["y"], {})], {})
    m["sigmoid"] = (x4, [("Sigmoid", ["x"], ["y"], {})], {})
    m["softmax"] = ({"x": (1, 10)}, [("Softmax", ["x"], ["y"], dict(axis=-1))], {})
    return m


OPS = _op_models()
