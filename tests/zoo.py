"""A zoo of small models, float and int8 QDQ, that together use every operator mcudeploy supports.

Each builder takes a work directory (a pytest tmp_path: never the repository), builds a float
ONNX model with onnx.helper and deterministic seeded weights, quantizes it with onnxruntime's
``quantize_static`` (QDQ, per-channel int8 weights, int8 activations, a seeded calibration
reader) and returns ``(float_model, qdq_model, example_inputs)``.

Operators onnxruntime's quantizer leaves in float by default (Sub, Sum, Tanh, HardSwish, Gelu) are
added to ``op_types_to_quantize`` so the int8 path sees them too.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
CALIBRATION_SAMPLES = 16
EXTRA_QUANTIZED = ("Sub", "Sum", "Tanh", "HardSwish", "Gelu")

Built = tuple[onnx.ModelProto, onnx.ModelProto, dict[str, np.ndarray]]


class Net:
    """A tiny graph builder: each method appends a node and returns its output name."""

    def __init__(self, name: str, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def _name(self, op: str) -> str:
        self.count += 1
        return f"{op.lower()}{self.count}"

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        name = self._name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(values, dtype=np.int64), "i")

    def op(self, op_type: str, inputs, **attrs) -> str:
        out = self._name(op_type)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def weights(self, shape, fan_in: int) -> np.ndarray:
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(self, n: int) -> np.ndarray:
        return (self.rng.standard_normal(n) * 0.1).astype(np.float32)

    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, pad: int | None = None,
             dilation: int = 1, group: int = 1) -> str:
        pad = (k // 2) * dilation if pad is None else pad
        w = self.const(self.weights((cout, cin // group, k, k), cin // group * k * k), "w")
        b = self.const(self.bias(cout), "b")
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                       dilations=[dilation, dilation], group=group)

    def model(self, inputs: dict[str, tuple], outputs: dict[str, str], opset: int = OPSET) -> onnx.ModelProto:
        """Rename the chosen node outputs to the graph output names and check the model."""
        for new, old in outputs.items():
            for node in self.nodes:
                node.input[:] = [new if i == old else i for i in node.input]
                node.output[:] = [new if o == old else o for o in node.output]
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="mcudeploy-zoo")
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        onnx.checker.check_model(m, full_check=True)
        return m


def samples(inputs: dict[str, tuple], count: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()} for _ in range(count)]


def quantize(model: onnx.ModelProto, inputs: dict[str, tuple], workdir: Path, seed: int = 1,
             extra: tuple[str, ...] = ()) -> onnx.ModelProto:
    """The int8 QDQ version of a float model, calibrated on seeded random inputs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter(samples(inputs, CALIBRATION_SAMPLES, seed))

        def get_next(self):
            return next(self.data, None)

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src, dst = workdir / f"{model.graph.name}_float.onnx", workdir / f"{model.graph.name}_qdq.onnx"
    onnx.save(model, src)
    ops = sorted(set(QLinearOpsRegistry) | set(QDQRegistry) | set(EXTRA_QUANTIZED) | set(extra))
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, op_types_to_quantize=ops,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return onnx.load(dst)


def _finish(net: Net, inputs: dict[str, tuple], outputs: dict[str, str], workdir: Path, opset: int = OPSET) -> Built:
    m = net.model(inputs, outputs, opset)
    return m, quantize(m, inputs, workdir), samples(inputs, 1, seed=2)[0]


# --------------------------------------------------------------------------- the models


def convs(workdir: Path) -> Built:
    """Conv in every geometry: plain, strided, dilated, grouped, depthwise; Relu and Clip."""
    net = Net("convs", 10)
    x = net.conv("x", 3, 8, 3, stride=1)
    x = net.op("Relu", [x])
    x = net.conv(x, 8, 16, 3, stride=2)
    x = net.op("Clip", [x, net.const(np.float32(0.0)), net.const(np.float32(6.0))])
    x = net.conv(x, 16, 16, 3, group=16)  # depthwise
    x = net.op("Relu", [x])
    x = net.conv(x, 16, 16, 3, dilation=2)
    x = net.conv(x, 16, 8, 1, group=4)  # grouped pointwise
    x = net.conv(x, 8, 8, 5, stride=2, pad=1, group=2)  # grouped, strided, asymmetric extent
    return _finish(net, {"x": (1, 3, 16, 16)}, {"y": x}, workdir)


def mlp(workdir: Path) -> Built:
    """Flatten, Gemm (transB), LeakyRelu, MatMul with a bias Add, Softmax."""
    net = Net("mlp", 11)
    x = net.op("Flatten", ["x"], axis=1)
    x = net.op("Gemm", [x, net.const(net.weights((32, 48), 48), "w"), net.const(net.bias(32), "b")], transB=1)
    x = net.op("LeakyRelu", [x], alpha=0.1)
    x = net.op("MatMul", [x, net.const(net.weights((32, 10), 32), "w")])
    x = net.op("Add", [x, net.const(net.bias(10), "b")])
    x = net.op("Softmax", [x], axis=-1)
    return _finish(net, {"x": (1, 3, 4, 4)}, {"y": x}, workdir)


def branching(workdir: Path) -> Built:
    """A branching model with Concat and Sum: an inception-like block and a three-way residual."""
    net = Net("branching", 12)
    s = net.op("Relu", [net.conv("x", 3, 8, 3, stride=2)])
    a = net.op("Relu", [net.conv(s, 8, 4, 1)])
    b = net.op("Relu", [net.conv(s, 8, 6, 3)])
    c = net.op("MaxPool", [s], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    c = net.conv(c, 8, 2, 1)
    x = net.op("Concat", [a, b, c], axis=1)  # 4 + 6 + 2 channels
    p = net.conv(x, 12, 12, 3)
    q = net.conv(x, 12, 12, 3, group=12)
    x = net.op("Relu", [net.op("Sum", [x, p, q])])
    x = net.op("GlobalAveragePool", [x])
    x = net.op("Flatten", [x])
    x = net.op("Gemm", [x, net.const(net.weights((12, 5), 12), "w"), net.const(net.bias(5), "b")])
    return _finish(net, {"x": (1, 3, 16, 16)}, {"y": x}, workdir)


def unet(workdir: Path) -> Built:
    """An encoder-decoder (U-Net-like) with MaxPool down and Resize (nearest, bilinear) up, skips by Concat."""
    net = Net("unet", 13)
    e1 = net.op("Relu", [net.conv("x", 1, 4, 3)])  # 16x16
    d = net.op("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2])
    e2 = net.op("Relu", [net.conv(d, 4, 8, 3)])  # 8x8
    d = net.op("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2])
    m = net.op("Relu", [net.conv(d, 8, 8, 3)])  # 4x4
    scales = net.const(np.array([1, 1, 2, 2], np.float32), "scales")
    u = net.op("Resize", [m, "", scales], mode="nearest", coordinate_transformation_mode="asymmetric",
               nearest_mode="floor")  # 8x8
    u = net.op("Concat", [u, e2], axis=1)
    u = net.op("Relu", [net.conv(u, 16, 8, 3)])
    u = net.op("Resize", [u, "", scales], mode="linear", coordinate_transformation_mode="half_pixel")  # 16x16
    u = net.op("Concat", [u, e1], axis=1)
    u = net.op("Relu", [net.conv(u, 12, 4, 3)])
    y = net.conv(u, 4, 2, 1)
    return _finish(net, {"x": (1, 1, 16, 16)}, {"y": y}, workdir)


def activations(workdir: Path) -> Built:
    """Sigmoid, Tanh, HardSwish, LeakyRelu, Clip, and Add/Sub/Mul with broadcasting
    (squeeze-and-excitation gating, per-channel scale and shift, scalar operands). Opset 14 for HardSwish."""
    net = Net("activations", 14)
    x = net.conv("x", 4, 8, 3)
    x = net.op("HardSwish", [x])
    g = net.op("GlobalAveragePool", [x])  # [1, 8, 1, 1]
    g = net.op("Sigmoid", [net.conv(g, 8, 8, 1)])
    x = net.op("Mul", [x, g])  # broadcast over H, W
    x = net.op("Sub", [x, net.const(np.float32(0.25))])  # scalar
    x = net.op("Mul", [x, net.const((net.rng.random((1, 8, 1, 1)) + 0.5).astype(np.float32))])  # per channel
    t = net.op("Tanh", [net.conv(x, 8, 8, 3)])
    x = net.op("Add", [x, t])
    x = net.op("Add", [x, net.const(net.bias(8).reshape(8, 1, 1))])  # rank-3 constant against rank 4
    x = net.op("LeakyRelu", [x], alpha=0.2)
    x = net.op("Clip", [x, net.const(np.float32(-1.0)), net.const(np.float32(1.5))])
    row = net.op("Sub", [x, net.op("GlobalAveragePool", [x])])  # [1,8,8,8] - [1,8,1,1]
    return _finish(net, {"x": (1, 4, 8, 8)}, {"y": row}, workdir, opset=14)


def shapes(workdir: Path) -> Built:
    """AveragePool, Pad, Reshape, Transpose, Unsqueeze, Squeeze, GlobalAveragePool, MatMul."""
    net = Net("shapes", 15)
    x = net.op("Relu", [net.conv("x", 4, 8, 3)])  # [1, 8, 8, 8]
    x = net.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])  # [1, 8, 4, 4]
    x = net.op("Pad", [x, net.ints([0, 0, 1, 2, 0, 0, 1, 0])], mode="constant")  # [1, 8, 6, 6]
    x = net.conv(x, 8, 8, 3, pad=0)  # [1, 8, 4, 4]
    x = net.op("Reshape", [x, net.ints([0, 8, -1])])  # [1, 8, 16]
    x = net.op("Transpose", [x], perm=[0, 2, 1])  # [1, 16, 8]
    x = net.op("Unsqueeze", [x, net.ints([1])])  # [1, 1, 16, 8]
    x = net.op("Relu", [net.conv(x, 1, 4, 3)])  # [1, 4, 16, 8]
    x = net.op("Transpose", [x], perm=[0, 2, 3, 1])  # NHWC [1, 16, 8, 4]
    x = net.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])  # [1, 16, 4, 2]
    x = net.op("GlobalAveragePool", [x])  # [1, 16, 1, 1]
    x = net.op("Squeeze", [x, net.ints([2, 3])])  # [1, 16]
    x = net.op("MatMul", [x, net.const(net.weights((16, 6), 16), "w")])
    return _finish(net, {"x": (1, 4, 8, 8)}, {"y": x}, workdir)


def _encoder_layer(net: Net, x: str, seq: int, d: int, heads: int, ffn: int) -> str:
    """A pre-norm transformer encoder layer: LayerNorm, multi-head self-attention (MatMul projections
    with bias, heads split by Reshape/Transpose, scaled scores, Softmax over the keys), a residual Add,
    LayerNorm, a Gelu feed-forward network and a second residual Add."""
    dh = d // heads

    def linear(h: str, cin: int, cout: int) -> str:
        return net.op("Add", [net.op("MatMul", [h, net.const(net.weights((cin, cout), cin), "w")]),
                              net.const(net.bias(cout), "b")])

    def norm(h: str) -> str:
        scale = net.const((1 + 0.1 * net.rng.standard_normal(d)).astype(np.float32), "g")
        return net.op("LayerNormalization", [h, scale, net.const(net.bias(d), "b")], axis=-1, epsilon=1e-5)

    def split_heads(h: str, perm) -> str:  # [1, seq, d] -> [1, heads, seq, dh] (keys: [1, heads, dh, seq])
        return net.op("Transpose", [net.op("Reshape", [h, net.ints([1, seq, heads, dh])])], perm=perm)

    h = norm(x)
    q = split_heads(linear(h, d, d), [0, 2, 1, 3])
    k = split_heads(linear(h, d, d), [0, 2, 3, 1])
    v = split_heads(linear(h, d, d), [0, 2, 1, 3])
    scores = net.op("Mul", [net.op("MatMul", [q, k]), net.const(np.float32(1 / np.sqrt(dh)))])
    ctx = net.op("MatMul", [net.op("Softmax", [scores], axis=-1), v])  # [1, heads, seq, dh]
    ctx = net.op("Reshape", [net.op("Transpose", [ctx], perm=[0, 2, 1, 3]), net.ints([1, seq, d])])
    x = net.op("Add", [x, linear(ctx, d, d)])
    f = linear(net.op("Gelu", [linear(norm(x), d, ffn)]), ffn, d)
    return net.op("Add", [x, f])


def transformer(workdir: Path, seq: int = 32, d: int = 64, heads: int = 4, layers: int = 2) -> Built:
    """A 2-layer transformer encoder (d = 64, 4 heads, sequence 32, feed-forward 2d) with a final
    LayerNorm: LayerNormalization, batched MatMul of two activations, Softmax over the last axis,
    Gelu, Reshape/Transpose of 4-D heads. Opset 20 (Gelu)."""
    net = Net("transformer", 17)
    x = "x"
    for _ in range(layers):
        x = _encoder_layer(net, x, seq, d, heads, 2 * d)
    scale = net.const((1 + 0.1 * net.rng.standard_normal(d)).astype(np.float32), "g")
    y = net.op("LayerNormalization", [x, scale, net.const(net.bias(d), "b")], axis=-1)
    return _finish(net, {"x": (1, seq, d)}, {"y": y}, workdir, opset=20)


def _inverted_residual(net: Net, x: str, cin: int, cout: int, expand: int, stride: int) -> str:
    """MobileNetV2's block: 1x1 expand + ReLU6, 3x3 depthwise + ReLU6, 1x1 project; a residual Add when
    the shapes allow."""
    six = (net.const(np.float32(0.0)), net.const(np.float32(6.0)))
    hidden = cin * expand
    y = x
    if expand != 1:
        y = net.op("Clip", [net.conv(y, cin, hidden, 1), *six])
    y = net.op("Clip", [net.conv(y, hidden, hidden, 3, stride=stride, group=hidden), *six])
    y = net.conv(y, hidden, cout, 1)
    return net.op("Add", [x, y]) if stride == 1 and cin == cout else y


# (expansion, output channels, blocks, first stride) of MobileNetV2's first stages
MOBILENETV2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2))
# all of them (torchvision's inverted_residual_setting), with the 1x1 convolution to 1280 channels after
MOBILENETV2_ALL_STAGES = MOBILENETV2_STAGES[:3] + ((6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
MOBILENETV2_LAST = 1280


def mobilenetv2(workdir: Path, size: int = 128, stages=MOBILENETV2_STAGES, classes: int = 10,
                stem: int = 32, width: float = 1.0, last: int = 0) -> Built:
    """MobileNetV2's first stages (stem, inverted residual blocks), then global pooling and a classifier;
    ``last`` > 0 puts the 1x1 convolution (+ ReLU6) to that many channels before the pooling.

    The first stage dwarfs the rest: a 6x expansion at half the input resolution. Not in BUILDERS
    (its size makes it a benchmark and tuning model, not a per-operator zoo entry). ``width``
    scales every channel count (MobileNetV2-0.35: width=0.35, to multiples of 8).

    The MLPerf Tiny int8 models take an int8 image; compile this one with ``int8_input=True``
    (``--int8-input``, mcudeploy/passes/int8_input.py) for that: its float32 input would otherwise
    be 4x the int8 one (196,608 B at 128x128) and dominate every split plan."""
    net = Net(f"mobilenetv2_{size}", 16)
    six = (net.const(np.float32(0.0)), net.const(np.float32(6.0)))
    stem = _width(stem, width)
    x = net.op("Clip", [net.conv("x", 3, stem, 3, stride=2), *six])
    cin = stem
    for expand, cout, blocks, stride in stages:
        cout = _width(cout, width)
        for i in range(blocks):
            x = _inverted_residual(net, x, cin, cout, expand, stride if i == 0 else 1)
            cin = cout
    if last:
        x = net.op("Clip", [net.conv(x, cin, last, 1), *six])
        cin = last
    x = net.op("GlobalAveragePool", [x])
    x = net.op("Flatten", [x])
    x = net.op("Gemm", [x, net.const(net.weights((classes, cin), cin), "w"), net.const(net.bias(classes), "b")],
               transB=1)
    return _finish(net, {"x": (1, 3, size, size)}, {"y": x}, workdir)


def mobilenetv2_035(workdir: Path, size: int = 96) -> Built:
    """The whole MobileNetV2-0.35 (torchvision's widths: channels x 0.35 to multiples of 8, the last
    convolution kept at 1280) at size x size, ten classes: issue 17's --int8-input model, whose float32
    input is 4x the int8 one."""
    return mobilenetv2(workdir, size=size, stages=MOBILENETV2_ALL_STAGES, width=0.35, last=MOBILENETV2_LAST)


def _width(channels: int, width: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: channels * width to a multiple of divisor, not 10% below it."""
    if width == 1.0:
        return channels
    v = max(divisor, int(channels * width + divisor / 2) // divisor * divisor)
    return v + divisor if v < 0.9 * channels * width else v


def drift(workdir: Path, gain: float = 4.0) -> Built:
    """Conv, a 2x2 AveragePool, a gain and a Sigmoid: the int8 model drifts from onnxruntime end to end
    (several steps at the output) although every operator agrees with it given the same inputs.

    The average of four integers is often a tie (.5), which onnxruntime's float arithmetic and
    mcudeploy's integer arithmetic may round either way; the gain and the steep middle of the
    sigmoid (input steps much coarser than output steps) turn that one step into many. Not in
    BUILDERS (it adds no operator)."""
    net = Net("drift", 5)
    x = net.conv("x", 4, 8, 3)
    x = net.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = net.op("Mul", [x, net.const(np.float32(gain))])
    return _finish(net, {"x": (1, 4, 16, 16)}, {"y": net.op("Sigmoid", [x])}, workdir)


BUILDERS: dict[str, Callable[[Path], Built]] = {
    "convs": convs,
    "mlp": mlp,
    "branching": branching,
    "unet": unet,
    "activations": activations,
    "shapes": shapes,
    "transformer": transformer,
}

# Every operator the zoo must use (the list mcudeploy supports on real models).
REQUIRED_OPS = ("Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Sum", "Concat", "Relu", "Clip", "LeakyRelu",
                "Sigmoid", "Tanh", "HardSwish", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Flatten",
                "Squeeze", "Unsqueeze", "Transpose", "Softmax", "Pad", "Resize", "LayerNormalization", "Gelu")


# --------------------------------------------------------------------------- mobile architectures (issue 17)
#
# Reduced-size but structurally faithful versions of the mobile networks people export with
# torch.onnx.export: every kind of block of the original, fewer repeats, small inputs. Operators
# as torch writes them: BatchNorm folded into the Conv, the channel shuffle as
# Reshape -> Transpose -> Reshape, torch.chunk as Split, x.mean([2, 3]) as ReduceMean, SiLU as
# x * Sigmoid(x), Hardsigmoid as HardSigmoid(alpha=1/6), squeeze-excite scales as a broadcast Mul.

MOBILE_QUANTIZED = ("HardSigmoid", "HardSwish", "ReduceMean", "Sum")


def _finish_mobile(net: Net, inputs: dict[str, tuple], outputs: dict[str, str], workdir: Path,
                   opset: int = OPSET) -> Built:
    m = net.model(inputs, outputs, opset)
    return m, quantize(m, inputs, workdir, extra=MOBILE_QUANTIZED), samples(inputs, 1, seed=2)[0]


def _classifier(net: Net, x: str, cin: int, classes: int) -> str:
    w = net.const(net.weights((classes, cin), cin), "w")
    return net.op("Gemm", [x, w, net.const(net.bias(classes), "b")], transB=1)


def _channel_shuffle(net: Net, x: str, channels: int, size: int, groups: int = 2) -> str:
    """torchvision's channel_shuffle as exported: view(n, g, c/g, h, w), transpose(1, 2), view(n, c, h, w)."""
    x = net.op("Reshape", [x, net.ints([1, groups, channels // groups, size, size])])
    x = net.op("Transpose", [x], perm=[0, 2, 1, 3, 4])
    return net.op("Reshape", [x, net.ints([1, channels, size, size])])


def _shuffle_unit(net: Net, x: str, cin: int, cout: int, stride: int, size: int) -> tuple[str, int]:
    """ShuffleNetV2's InvertedResidual: stride 1 splits the channels in halves (torch.chunk -> Split) and
    transforms one; stride 2 transforms the whole input on two branches. Concat, then the shuffle."""
    half = cout // 2
    if stride == 1:
        name = net._name("Split")
        a, b, bin_ = f"{name}_a", f"{name}_b", cin // 2
        net.nodes.append(helper.make_node("Split", [x, net.ints([bin_, bin_])], [a, b], axis=1, name=name))
    else:
        a = net.conv(x, cin, cin, 3, stride=2, group=cin)
        a = net.op("Relu", [net.conv(a, cin, half, 1)])
        b, bin_ = x, cin
    b = net.op("Relu", [net.conv(b, bin_, half, 1)])
    b = net.conv(b, half, half, 3, stride=stride, group=half)
    b = net.op("Relu", [net.conv(b, half, half, 1)])
    size = size // stride
    y = net.op("Concat", [a, b], axis=1)
    return _channel_shuffle(net, y, cout, size), size


def shufflenetv2(workdir: Path, size: int = 64, repeats=(2, 2, 2), classes: int = 10) -> Built:
    """ShuffleNetV2-0.5 (channels 24, 48, 96, 192, 1024), stages of ``repeats`` units instead of 4, 8, 4."""
    net = Net("shufflenetv2", 30)
    x = net.op("Relu", [net.conv("x", 3, 24, 3, stride=2)])
    x = net.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    s, cin = size // 4, 24
    for cout, n in zip((48, 96, 192), repeats):
        for i in range(n):
            x, s = _shuffle_unit(net, x, cin, cout, 2 if i == 0 else 1, s)
            cin = cout
    x = net.op("Relu", [net.conv(x, cin, 1024, 1)])
    x = net.op("ReduceMean", [x], axes=[2, 3], keepdims=0)
    return _finish_mobile(net, {"x": (1, 3, size, size)}, {"y": _classifier(net, x, 1024, classes)}, workdir)


def _mnas_block(net: Net, x: str, cin: int, cout: int, k: int, stride: int, expand: int) -> str:
    hidden = cin * expand
    y = net.op("Relu", [net.conv(x, cin, hidden, 1)])
    y = net.op("Relu", [net.conv(y, hidden, hidden, k, stride=stride, group=hidden)])
    y = net.conv(y, hidden, cout, 1)
    return net.op("Add", [y, x]) if stride == 1 and cin == cout else y


# (output channels at width 0.5, kernel, first stride, expansion, repeats: torchvision's 3, 3, 3, 2, 4, 1)
MNASNET_05_STACKS = ((16, 3, 2, 3, 2), (24, 5, 2, 3, 2), (40, 5, 2, 6, 1), (48, 3, 1, 6, 2), (96, 5, 2, 6, 1),
                     (160, 3, 1, 6, 1))


def mnasnet(workdir: Path, size: int = 64, stacks=MNASNET_05_STACKS, classes: int = 10) -> Built:
    """MnasNet-0.5: stem, a depthwise-separable layer, inverted residual stacks with 3x3 and 5x5 kernels and
    expansions 3 and 6, a 1x1 head to 1280, x.mean([2, 3]) (ReduceMean) and the classifier."""
    net = Net("mnasnet", 31)
    x = net.op("Relu", [net.conv("x", 3, 16, 3, stride=2)])
    x = net.op("Relu", [net.conv(x, 16, 16, 3, group=16)])
    x = net.conv(x, 16, 8, 1)
    cin = 8
    for cout, k, stride, expand, n in stacks:
        for i in range(n):
            x = _mnas_block(net, x, cin, cout, k, stride if i == 0 else 1, expand)
            cin = cout
    x = net.op("Relu", [net.conv(x, cin, 1280, 1)])
    x = net.op("ReduceMean", [x], axes=[2, 3], keepdims=0)
    return _finish_mobile(net, {"x": (1, 3, size, size)}, {"y": _classifier(net, x, 1280, classes)}, workdir)


def _squeeze_excite(net: Net, x: str, channels: int, squeeze: int, act: str, gate: str) -> str:
    """GlobalAveragePool -> 1x1 Conv -> act -> 1x1 Conv -> gate, the per-channel scale Mul'd onto x."""
    s = net.op("GlobalAveragePool", [x])
    s = _act(net, net.conv(s, channels, squeeze, 1), act)
    s = _act(net, net.conv(s, squeeze, channels, 1), gate)
    return net.op("Mul", [x, s])


def _divisible(channels: int, divisor: int = 8) -> int:
    """torchvision's _make_divisible at width 1: to the nearest multiple of divisor, not 10% below."""
    v = max(divisor, (channels + divisor // 2) // divisor * divisor)
    return v + divisor if v < 0.9 * channels else v


def _act(net: Net, x: str, act: str) -> str:
    if act == "silu":
        return net.op("Mul", [x, net.op("Sigmoid", [x])])
    if act == "hardsigmoid":
        return net.op("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)
    return net.op(act, [x])


# MobileNetV3-Small's blocks: (kernel, expanded, out, squeeze-excite, activation, stride); torchvision's
# eleven with one of each repeated pair left out
MOBILENETV3_SMALL_BLOCKS = ((3, 16, 16, True, "Relu", 2), (3, 72, 24, False, "Relu", 2),
                            (3, 88, 24, False, "Relu", 1), (5, 96, 40, True, "HardSwish", 2),
                            (5, 240, 40, True, "HardSwish", 1), (5, 120, 48, True, "HardSwish", 1),
                            (5, 288, 96, True, "HardSwish", 2), (5, 576, 96, True, "HardSwish", 1))


def mobilenetv3_small(workdir: Path, size: int = 64, blocks=MOBILENETV3_SMALL_BLOCKS, classes: int = 10) -> Built:
    """MobileNetV3-Small: HardSwish stem, inverted residuals with ReLU or HardSwish and squeeze-excite
    (HardSigmoid gate), a 1x1 head, GlobalAveragePool and a HardSwish classifier. Opset 14 (HardSwish)."""
    net = Net("mobilenetv3_small", 32)
    x = net.op("HardSwish", [net.conv("x", 3, 16, 3, stride=2)])
    cin = 16
    for k, hidden, cout, se, act, stride in blocks:
        y = x
        if hidden != cin:
            y = _act(net, net.conv(y, cin, hidden, 1), act)
        y = _act(net, net.conv(y, hidden, hidden, k, stride=stride, group=hidden), act)
        if se:
            y = _squeeze_excite(net, y, hidden, _divisible(hidden // 4), "Relu", "hardsigmoid")
        y = net.conv(y, hidden, cout, 1)
        x = net.op("Add", [y, x]) if stride == 1 and cin == cout else y
        cin = cout
    x = net.op("HardSwish", [net.conv(x, cin, 576, 1)])
    x = net.op("Flatten", [net.op("GlobalAveragePool", [x])])
    x = net.op("HardSwish", [_classifier(net, x, 576, 1024)])
    return _finish_mobile(net, {"x": (1, 3, size, size)}, {"y": _classifier(net, x, 1024, classes)}, workdir,
                          opset=14)


# EfficientNet-B0's stages: (expansion, kernel, stride, out, repeats: torchvision's 1, 2, 2, 3, 3, 4, 1)
EFFICIENTNET_B0_STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 1), (6, 3, 2, 80, 1),
                          (6, 5, 1, 112, 1), (6, 5, 2, 192, 2), (6, 3, 1, 320, 1))


def efficientnet_b0(workdir: Path, size: int = 64, stages=EFFICIENTNET_B0_STAGES, classes: int = 10) -> Built:
    """EfficientNet-B0: MBConv blocks with SiLU (x * Sigmoid(x)) and squeeze-excite (SiLU, Sigmoid gate,
    squeeze to a quarter of the block's input channels), a 1x1 head to 1280, pooling and the classifier."""
    net = Net("efficientnet_b0", 33)
    x = _act(net, net.conv("x", 3, 32, 3, stride=2), "silu")
    cin = 32
    for expand, k, stride, cout, n in stages:
        for i in range(n):
            s = stride if i == 0 else 1
            hidden = cin * expand
            y = _act(net, net.conv(x, cin, hidden, 1), "silu") if expand != 1 else x
            y = _act(net, net.conv(y, hidden, hidden, k, stride=s, group=hidden), "silu")
            y = _squeeze_excite(net, y, hidden, max(1, cin // 4), "silu", "Sigmoid")
            y = net.conv(y, hidden, cout, 1)
            x = net.op("Add", [y, x]) if s == 1 and cin == cout else y
            cin = cout
    x = _act(net, net.conv(x, cin, 1280, 1), "silu")
    x = net.op("Flatten", [net.op("GlobalAveragePool", [x])])
    return _finish_mobile(net, {"x": (1, 3, size, size)}, {"y": _classifier(net, x, 1280, classes)}, workdir)


def randwire(workdir: Path, size: int = 32, nodes: int = 16, channels: int = 16, fan_in: int = 11,
             classes: int = 10) -> Built:
    """A randomly wired network (Xie et al. 2019): a seeded random DAG of nodes, each the Sum of its
    predecessors, ReLU and a separable convolution (3x3 depthwise, 1x1); the last node sums every node
    no other node reads, and the first node with at least ``fan_in`` predecessors gets all earlier ones
    (so Sum has fan_in or more inputs)."""
    net = Net("randwire", 34)
    rng = np.random.default_rng(35)
    stem = net.op("Relu", [net.conv("x", 3, channels, 3, stride=2)])
    outs, read = [], set()
    for i in range(nodes):
        if i == 0:
            preds = []
        elif i == fan_in:
            preds = list(range(i))
        else:
            preds = sorted(set(rng.choice(i, size=min(i, int(rng.integers(1, 4))), replace=False).tolist()))
        srcs = [outs[p] for p in preds] or [stem]
        read |= set(preds)
        y = srcs[0] if len(srcs) == 1 else net.op("Sum", srcs)
        y = net.op("Relu", [y])
        y = net.conv(y, channels, channels, 3, group=channels)
        outs.append(net.conv(y, channels, channels, 1))
    sinks = [outs[i] for i in range(nodes) if i not in read]
    y = sinks[0] if len(sinks) == 1 else net.op("Sum", sinks)
    y = net.op("Flatten", [net.op("GlobalAveragePool", [net.op("Relu", [y])])])
    return _finish_mobile(net, {"x": (1, 3, size, size)}, {"y": _classifier(net, y, channels, classes)}, workdir)


MOBILE_BUILDERS: dict[str, Callable[[Path], Built]] = {
    "shufflenetv2": shufflenetv2,
    "mnasnet": mnasnet,
    "mobilenetv3_small": mobilenetv3_small,
    "efficientnet_b0": efficientnet_b0,
    "randwire": randwire,
}
