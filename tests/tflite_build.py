"""Small .tflite models made in the test, one operator or a few, with the flatbuffers builder and the
``tflite`` package's generated schema functions: cases the MLPerf Tiny models do not hold (broadcast
ADD, MUL, MAX_POOL_2D, SAME pooling, CONCATENATION, PAD, QUANTIZE, a depth multiplier, ...), and
damaged or unsupported files."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import flatbuffers
import numpy as np
import tflite

TYPES = {"float32": tflite.TensorType.FLOAT32, "int8": tflite.TensorType.INT8, "int16": tflite.TensorType.INT16,
         "int32": tflite.TensorType.INT32, "int64": tflite.TensorType.INT64, "bool": tflite.TensorType.BOOL,
         "resource": tflite.TensorType.RESOURCE, "uint8": tflite.TensorType.UINT8,
         "uint16": tflite.TensorType.UINT16, "uint32": tflite.TensorType.UINT32, "uint64": tflite.TensorType.UINT64}


@dataclass
class T:
    """A tensor: its shape and type, an optional quantization (scales, zero points, axis) and data."""

    name: str
    shape: tuple
    dtype: str = "int8"
    scale: Optional[tuple] = None
    zero_point: Optional[tuple] = None
    axis: int = 0
    data: Optional[np.ndarray] = None
    sparse: bool = False  # written with (dense) sparsity metadata
    variable: bool = False  # a variable tensor (an LSTM's state)


@dataclass
class Op:
    code: int  # tflite.BuiltinOperator.*
    inputs: tuple
    outputs: tuple
    options: Optional[Callable] = None  # builder -> (options type, offset)
    custom: str = ""  # the custom code of a CUSTOM operator
    custom_options: Optional[bytes] = None  # its options, a flexbuffer (signal_op)


@dataclass
class Model:
    tensors: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    inputs: tuple = ()
    outputs: tuple = ()
    subgraphs: list = field(default_factory=list)  # more subgraphs (Models of their own), numbered from 1

    def index(self, name: str) -> int:
        return next(i for i, t in enumerate(self.tensors) if t.name == name)

    def build(self) -> bytes:
        b = flatbuffers.Builder(1024)
        graphs = [self, *self.subgraphs]
        # buffers: 0 is the empty one; each constant tensor (of any subgraph) gets its own
        buffer_of, buffers = {}, [None]
        for k, g in enumerate(graphs):
            for i, t in enumerate(g.tensors):
                if t.data is not None:
                    buffer_of[k, i] = len(buffers)
                    buffers.append(np.ascontiguousarray(t.data).tobytes())
        buf_offsets = []
        for raw in buffers:
            data = b.CreateNumpyVector(np.frombuffer(raw, np.uint8)) if raw else None
            tflite.BufferStart(b)
            if data is not None:
                tflite.BufferAddData(b, data)
            buf_offsets.append(tflite.BufferEnd(b))
        codes = sorted({(op.code, op.custom) for g in graphs for op in g.ops})

        def vector(start, items):
            start(b, len(items))
            for item in reversed(items):
                b.PrependUOffsetTRelative(item)
            return b.EndVector()

        subgraphs = [g._subgraph(b, k, buffer_of, codes, vector) for k, g in enumerate(graphs)]
        code_offsets = []
        for code, custom in codes:
            name = b.CreateString(custom) if custom else None
            tflite.OperatorCodeStart(b)
            if name is not None:
                tflite.OperatorCodeAddCustomCode(b, name)
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddVersion(b, 1)
            code_offsets.append(tflite.OperatorCodeEnd(b))
        gvec = vector(tflite.ModelStartSubgraphsVector, subgraphs)
        cvec = vector(tflite.ModelStartOperatorCodesVector, code_offsets)
        bvec = vector(tflite.ModelStartBuffersVector, buf_offsets)
        desc = b.CreateString("mcudeploy test")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, cvec)
        tflite.ModelAddSubgraphs(b, gvec)
        tflite.ModelAddDescription(b, desc)
        tflite.ModelAddBuffers(b, bvec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b, k: int, buffer_of: dict, codes: list, vector) -> int:
        """This model's tensors and operators as subgraph ``k`` of the file being built."""
        tensors = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t.name)
            shape = b.CreateNumpyVector(np.array(t.shape, np.int32))
            quant = None
            if t.scale is not None:
                scale = b.CreateNumpyVector(np.array(t.scale, np.float32))
                zp = b.CreateNumpyVector(np.array(t.zero_point or (0,) * len(t.scale), np.int64))
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, scale)
                tflite.QuantizationParametersAddZeroPoint(b, zp)
                tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
                quant = tflite.QuantizationParametersEnd(b)
            sparsity = None
            if t.sparse:  # every dimension dense: the simplest sparsity table
                order = b.CreateNumpyVector(np.arange(len(t.shape), dtype=np.int32))
                tflite.SparsityParametersStart(b)
                tflite.SparsityParametersAddTraversalOrder(b, order)
                sparsity = tflite.SparsityParametersEnd(b)
            tflite.TensorStart(b)
            if sparsity is not None:
                tflite.TensorAddSparsity(b, sparsity)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, TYPES[t.dtype])
            tflite.TensorAddBuffer(b, buffer_of.get((k, i), 0))
            tflite.TensorAddName(b, name)
            if quant is not None:
                tflite.TensorAddQuantization(b, quant)
            if t.variable:
                tflite.TensorAddIsVariable(b, True)
            tensors.append(tflite.TensorEnd(b))
        ops = []
        for op in self.ops:
            ins = b.CreateNumpyVector(np.array([self.index(n) if n else -1 for n in op.inputs], np.int32))
            outs = b.CreateNumpyVector(np.array([self.index(n) for n in op.outputs], np.int32))
            opts = op.options(b) if op.options else None
            custom = b.CreateNumpyVector(np.frombuffer(op.custom_options, np.uint8)) \
                if op.custom_options is not None else None
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, codes.index((op.code, op.custom)))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, opts[0])
                tflite.OperatorAddBuiltinOptions(b, opts[1])
            if custom is not None:
                tflite.OperatorAddCustomOptions(b, custom)
                tflite.OperatorAddCustomOptionsFormat(b, tflite.CustomOptionsFormat.FLEXBUFFERS)
            ops.append(tflite.OperatorEnd(b))
        tvec = vector(tflite.SubGraphStartTensorsVector, tensors)
        ovec = vector(tflite.SubGraphStartOperatorsVector, ops)
        gin = b.CreateNumpyVector(np.array([self.index(n) for n in self.inputs], np.int32))
        gout = b.CreateNumpyVector(np.array([self.index(n) for n in self.outputs], np.int32))
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tvec)
        tflite.SubGraphAddInputs(b, gin)
        tflite.SubGraphAddOutputs(b, gout)
        tflite.SubGraphAddOperators(b, ovec)
        return tflite.SubGraphEnd(b)


# ---------------------------------------------------------------- options


def _options(table: str, **fields):
    """The options table ``table`` (tflite.{table}: AddOptions, Pool2DOptions, ...) with its fields
    set in the order given (tflite.{table}Add{field}), as an Op's ``options``."""
    def make(b):
        getattr(tflite, f"{table}Start")(b)
        for name, value in fields.items():
            getattr(tflite, f"{table}Add{name}")(b, value)
        return getattr(tflite.BuiltinOptions, table), getattr(tflite, f"{table}End")(b)
    return make


def add_options(activation: int = 0):
    return _options("AddOptions", FusedActivationFunction=activation)


def mul_options(activation: int = 0):
    return _options("MulOptions", FusedActivationFunction=activation)


def pool_options(k, s, padding, activation: int = 0):
    return _options("Pool2DOptions", Padding=padding, StrideH=s[0], StrideW=s[1], FilterHeight=k[0],
                    FilterWidth=k[1], FusedActivationFunction=activation)


def conv_options(s, padding, activation: int = 0):
    return _options("Conv2DOptions", Padding=padding, StrideH=s[0], StrideW=s[1], DilationHFactor=1,
                    DilationWFactor=1, FusedActivationFunction=activation)


def depthwise_options(s, padding, multiplier: int, activation: int = 0):
    return _options("DepthwiseConv2DOptions", Padding=padding, StrideH=s[0], StrideW=s[1],
                    DepthMultiplier=multiplier, DilationHFactor=1, DilationWFactor=1,
                    FusedActivationFunction=activation)


def concat_options(axis: int):
    return _options("ConcatenationOptions", Axis=axis)


def softmax_options(beta: float):
    return _options("SoftmaxOptions", Beta=beta)


def var_handle_options(shared_name: str):
    def make(b):
        name = b.CreateString(shared_name)
        tflite.VarHandleOptionsStart(b)
        tflite.VarHandleOptionsAddSharedName(b, name)
        return tflite.BuiltinOptions.VarHandleOptions, tflite.VarHandleOptionsEnd(b)
    return make


def call_once_options(subgraph: int):
    return _options("CallOnceOptions", InitSubgraphIndex=subgraph)


def fc_options(activation: int = 0):
    return _options("FullyConnectedOptions", FusedActivationFunction=activation)


# ---------------------------------------------------------------- cases

OPS = tflite.BuiltinOperator
SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
RELU, RELU6 = 1, 3


def _rng(seed: int):
    return np.random.default_rng(seed)


def _weights(rng, shape, channels_axis=0):
    w = rng.integers(-127, 128, size=shape).astype(np.int8)
    scales = tuple(float(s) for s in rng.uniform(0.002, 0.02, size=shape[channels_axis]))
    return w, scales


def _one(code, ins, outs, options, tensors, inputs=None):
    names = [t.name for t in tensors]
    return Model(tensors, [Op(code, ins, outs, options)],
                 tuple(inputs or [n for n in ins if n in names and next(t for t in tensors if t.name == n).data is None]),
                 tuple(outs))


def case_add_broadcast():
    c = np.array([5, -7, 100], np.int8)
    return _one(OPS.ADD, ("x", "c"), ("y",), add_options(RELU), [
        T("x", (1, 4, 4, 3), scale=(0.05,), zero_point=(3,)), T("c", (3,), scale=(0.02,), zero_point=(-1,), data=c),
        T("y", (1, 4, 4, 3), scale=(0.06,), zero_point=(-5,))])


def case_sub():
    return _one(OPS.SUB, ("a", "b"), ("y",), None, [
        T("a", (1, 3, 3, 4), scale=(0.04,), zero_point=(1,)), T("b", (1, 3, 3, 4), scale=(0.03,), zero_point=(-2,)),
        T("y", (1, 3, 3, 4), scale=(0.05,), zero_point=(0,))])


def case_mul():
    return _one(OPS.MUL, ("a", "b"), ("y",), mul_options(), [
        T("a", (1, 4, 4, 3), scale=(0.05,), zero_point=(3,)), T("b", (1, 4, 4, 3), scale=(0.04,), zero_point=(-9,)),
        T("y", (1, 4, 4, 3), scale=(0.07,), zero_point=(2,))])


def case_max_pool():
    q = dict(scale=(0.05,), zero_point=(-3,))
    return _one(OPS.MAX_POOL_2D, ("x",), ("y",), pool_options((2, 2), (2, 2), VALID), [
        T("x", (1, 6, 6, 4), **q), T("y", (1, 3, 3, 4), **q)])


def case_average_pool_same():
    q = dict(scale=(0.05,), zero_point=(-3,))
    return _one(OPS.AVERAGE_POOL_2D, ("x",), ("y",), pool_options((3, 3), (2, 2), SAME, RELU), [
        T("x", (1, 7, 6, 4), **q), T("y", (1, 4, 3, 4), **q)])


def case_concat():
    q = dict(scale=(0.05,), zero_point=(-3,))
    return _one(OPS.CONCATENATION, ("a", "b"), ("y",), concat_options(3), [
        T("a", (1, 3, 3, 2), **q), T("b", (1, 3, 3, 5), **q), T("y", (1, 3, 3, 7), **q)])


def case_pad():
    q = dict(scale=(0.05,), zero_point=(-3,))
    pads = np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32)
    return _one(OPS.PAD, ("x", "p"), ("y",), None, [
        T("x", (1, 3, 3, 2), **q), T("p", (4, 2), "int32", data=pads), T("y", (1, 5, 5, 2), **q)])


def case_quantize():
    return _one(OPS.QUANTIZE, ("x",), ("y",), None, [
        T("x", (1, 64), "float32"), T("y", (1, 64), scale=(0.025,), zero_point=(4,))])


def case_softmax_4d_beta():
    return _one(OPS.SOFTMAX, ("x",), ("y",), softmax_options(0.5), [
        T("x", (1, 2, 3, 5), scale=(0.1,), zero_point=(2,)), T("y", (1, 2, 3, 5), scale=(1 / 256,), zero_point=(-128,))])


def case_conv_same_relu6():
    rng = _rng(1)
    w, sw = _weights(rng, (6, 3, 3, 4))
    sx = 0.05
    bias = rng.integers(-500, 500, size=6).astype(np.int32)
    return _one(OPS.CONV_2D, ("x", "w", "b"), ("y",), conv_options((2, 2), SAME, RELU6), [
        T("x", (1, 7, 7, 4), scale=(sx,), zero_point=(-2,)), T("w", (6, 3, 3, 4), scale=sw, zero_point=(0,) * 6, data=w),
        T("b", (6,), "int32", scale=tuple(sx * s for s in sw), zero_point=(0,) * 6, data=bias),
        T("y", (1, 4, 4, 6), scale=(0.03,), zero_point=(-128,))])


def case_depthwise_multiplier():
    rng = _rng(2)
    w, sw = _weights(rng, (1, 3, 3, 6), channels_axis=3)
    sx = 0.04
    bias = rng.integers(-300, 300, size=6).astype(np.int32)
    return _one(OPS.DEPTHWISE_CONV_2D, ("x", "w", "b"), ("y",), depthwise_options((1, 1), SAME, 2, RELU), [
        T("x", (1, 5, 5, 3), scale=(sx,), zero_point=(5,)), T("w", (1, 3, 3, 6), scale=sw, zero_point=(0,) * 6, axis=3,
                                                               data=w),
        T("b", (6,), "int32", scale=tuple(sx * s for s in sw), zero_point=(0,) * 6, data=bias),
        T("y", (1, 5, 5, 6), scale=(0.02,), zero_point=(-128,))])


def case_fully_connected_4d():
    rng = _rng(3)
    w = rng.integers(-127, 128, size=(5, 12)).astype(np.int8)
    bias = rng.integers(-1000, 1000, size=5).astype(np.int32)
    return _one(OPS.FULLY_CONNECTED, ("x", "w", "b"), ("y",), fc_options(), [
        T("x", (1, 2, 2, 3), scale=(0.05,), zero_point=(-1,)), T("w", (5, 12), scale=(0.01,), data=w),
        T("b", (5,), "int32", scale=(0.0005,), data=bias), T("y", (1, 5), scale=(0.08,), zero_point=(3,))])


def case_float_conv_pool():
    rng = _rng(4)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    m = Model([T("x", (1, 6, 6, 2), "float32"), T("w", (4, 3, 3, 2), "float32", data=w),
               T("b", (4,), "float32", data=b), T("h", (1, 6, 6, 4), "float32"), T("y", (1, 3, 3, 4), "float32")],
              [Op(OPS.CONV_2D, ("x", "w", "b"), ("h",), conv_options((1, 1), SAME, RELU)),
               Op(OPS.AVERAGE_POOL_2D, ("h",), ("y",), pool_options((2, 2), (2, 2), VALID))], ("x",), ("y",))
    return m


CASES = {f.__name__[5:]: f for f in (case_add_broadcast, case_sub, case_mul, case_max_pool, case_average_pool_same,
                                     case_concat, case_pad, case_quantize, case_softmax_4d_beta, case_conv_same_relu6,
                                     case_depthwise_multiplier, case_fully_connected_4d, case_float_conv_pool)}


def signal_op(name: str, options: dict, ins, outs, tensors, inputs=None) -> Model:
    """One custom operator of TFLite Micro's Signal library (``name`` "SignalWindow", ...) with its options as
    the flexbuffer map the Signal library's Python ops write (keys sorted: TFLite Micro reads the values by
    position); the inputs without data are the model's inputs unless ``inputs`` names them."""
    from flatbuffers import flexbuffers

    model = _one(OPS.CUSTOM, ins, outs, None, tensors, inputs)
    model.ops[0].custom = name
    model.ops[0].custom_options = bytes(flexbuffers.Dumps(dict(sorted(options.items()))))
    return model


def case_unsupported():
    """A custom operator (code "Mystery"), which mcudeploy cannot know, as operator 1 (after an ADD)."""
    q = dict(scale=(0.05,), zero_point=(0,))
    return Model([T("a", (1, 8), **q), T("b", (1, 8), **q), T("s", (1, 8), **q), T("y", (1, 8), **q)],
                 [Op(OPS.ADD, ("a", "b"), ("s",), add_options()), Op(OPS.CUSTOM, ("s", "b"), ("y",), custom="Mystery")],
                 ("a", "b"), ("y",))


def case_sparse_weights():
    """A FULLY_CONNECTED whose weights carry sparsity metadata."""
    q = dict(scale=(0.05,), zero_point=(0,))
    w = T("w", (4, 8), scale=(0.02,), zero_point=(0,), data=np.ones((4, 8), np.int8), sparse=True)
    return Model([T("x", (1, 8), **q), w, T("y", (1, 4), **q)],
                 [Op(OPS.FULLY_CONNECTED, ("x", "w", ""), ("y",))], ("x",), ("y",))


def write_cases(out: "Path", made_by: str, built: "list[tuple[dict, bytes]]") -> "Path":
    """A folder of hand-built conformance cases: each (manifest entry, model bytes) written as ``<case>.tflite``, the
    files of cases no longer made removed, and ``cases.json`` listing the entries (``made_by``: the command that
    makes them); returns the manifest's path."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    entries = [entry for entry, _ in built]
    for entry, data in built:
        (out / f"{entry['case']}.tflite").write_bytes(data)
    for stale in out.glob("*.tflite"):
        if stale.stem not in {e["case"] for e in entries}:
            stale.unlink()
    manifest = out / "cases.json"
    manifest.write_text(json.dumps({"made_by": made_by, "cases": entries}, indent=1) + "\n")
    print(f"{made_by.rsplit('.', 1)[-1]}: {len(entries)} cases; {manifest}")
    return manifest
