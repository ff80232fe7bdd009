"""Join a feature extractor and a classifier into one .tflite: a frame in, the features kept in a rolling window
(a resource variable), the classifier run on the window, its scores (and the frame's features) out.

    python examples/micro_speech/join.py                         # writes models/micro_speech_stream.tflite
    python examples/micro_speech/join.py PRE.tflite CLS.tflite -o OUT.tflite

The joined file is an ordinary TFLite model, so everything mcudeploy does to a model it does to the pair:
`mcudeploy run OUT -b qemu-m4 --check` runs it call after call against TensorFlow Lite Micro (which runs the same
file), `measure` times each operator of both models and the window's, `compile` gives one plan and one arena. Both
models' operators, tensors and buffers are copied unchanged; what is added, in the same subgraph, between them:

    window = READ_VARIABLE("window")                     [1, rows * features], the classifier's input quantization
    kept   = STRIDED_SLICE(window, [0, features], [1, rows * features])
    row    = RESHAPE(features, [1, features])
    window = CONCATENATION(kept, row, axis 1)            the oldest row out, the new row in
    ASSIGN_VARIABLE("window", window)                    then the classifier reads the window

and a CALL_ONCE subgraph that assigns zeros to the window on the first call, as the micro_speech example starts
its feature buffer. The feature extractor's output must have as many int8 values as a row (the classifier's
input is rows x features of them); its bytes go into the window unchanged, as the example copies them.

This needs the TFLite schema's object API, which ai-edge-litert (a test dependency of mcudeploy) ships.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import flatbuffers
import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
PREPROCESSOR = MODELS / "audio_preprocessor_int8.tflite"
CLASSIFIER = MODELS / "micro_speech_quantized.tflite"
JOINED = MODELS / "micro_speech_stream.tflite"
VARIABLE = "window"


class JoinError(Exception):
    pass


def _schema():
    try:
        from ai_edge_litert import schema_py_generated as s
    except ImportError as exc:
        raise JoinError("join.py needs ai-edge-litert (pip install ai-edge-litert) for the TFLite schema's "
                        "object API") from exc
    return s


def _load(s, path: Path):
    try:
        data = path.read_bytes()
        model = s.ModelT.InitFromObj(s.Model.GetRootAsModel(data, 0))
    except OSError as exc:
        raise JoinError(f"{path} could not be read: {exc.strerror}") from exc
    except Exception as exc:  # a file that is not a flatbuffer fails anywhere inside the generated code
        raise JoinError(f"{path} is not a TFLite model") from exc
    if len(model.subgraphs or []) != 1:
        raise JoinError(f"{path} has {len(model.subgraphs or [])} subgraphs; join.py takes models of one")
    g = model.subgraphs[0]
    if len(g.inputs) != 1 or len(g.outputs) != 1:
        raise JoinError(f"{path} has {len(g.inputs)} inputs and {len(g.outputs)} outputs; join.py takes one of each")
    return model


class Joined:
    """The model being written: the first model's tables, to which the second's and the window's are added."""

    def __init__(self, s, first):
        self.s, self.model = s, first
        self.graph = first.subgraphs[0]
        self.model.buffers = list(first.buffers or [])
        self.model.operatorCodes = list(first.operatorCodes or [])
        self.graph.tensors = list(self.graph.tensors)
        self.graph.operators = list(self.graph.operators)

    def buffer(self, data: bytes | None = None) -> int:
        b = self.s.BufferT()
        b.data = np.frombuffer(data, np.uint8) if data else None
        self.model.buffers.append(b)
        return len(self.model.buffers) - 1

    def opcode(self, code) -> int:
        """The index of an operator code like ``code``, added if none is."""
        key = (max(code.builtinCode, code.deprecatedBuiltinCode), code.customCode, code.version)
        for k, c in enumerate(self.model.operatorCodes):
            if (max(c.builtinCode, c.deprecatedBuiltinCode), c.customCode, c.version) == key:
                return k
        self.model.operatorCodes.append(code)
        return len(self.model.operatorCodes) - 1

    def builtin(self, op: int, version: int = 1) -> int:
        c = self.s.OperatorCodeT()
        c.builtinCode, c.deprecatedBuiltinCode, c.version = op, min(op, 127), version
        return self.opcode(c)

    def tensor(self, name: str, shape, dtype: int, quant=None, data: bytes | None = None, graph=None) -> int:
        t = self.s.TensorT()
        t.name, t.shape, t.type, t.quantization = name.encode(), np.array(shape, np.int32), dtype, quant
        t.buffer = self.buffer(data)
        g = graph or self.graph
        g.tensors.append(t)
        return len(g.tensors) - 1

    def op(self, code: int, inputs, outputs, options_type: int = 0, options=None):
        o = self.s.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = code, np.array(inputs, np.int32), np.array(outputs, np.int32)
        o.builtinOptionsType, o.builtinOptions = options_type, options
        return o

    def append(self, other) -> dict[int, int]:
        """The other model's tensors, buffers and operators added to the graph; its tensor indices -> ours."""
        buffers = {0: 0}  # buffer 0 is every model's empty one
        for k, b in enumerate(other.buffers[1:], 1):
            self.model.buffers.append(b)
            buffers[k] = len(self.model.buffers) - 1
        tensors = {}
        for k, t in enumerate(other.subgraphs[0].tensors):
            t.buffer = buffers[t.buffer]
            self.graph.tensors.append(t)
            tensors[k] = len(self.graph.tensors) - 1
        for o in other.subgraphs[0].operators:
            o.opcodeIndex = self.opcode(other.operatorCodes[o.opcodeIndex])
            o.inputs = np.array([tensors[i] if i >= 0 else i for i in o.inputs], np.int32)
            o.outputs = np.array([tensors[i] for i in o.outputs], np.int32)
            if o.intermediates is not None:
                o.intermediates = np.array([tensors[i] for i in o.intermediates], np.int32)
            self.graph.operators.append(o)
        return tensors


def join(preprocessor: Path, classifier: Path) -> bytes:
    """The bytes of the joined model (see the module's docstring)."""
    s = _schema()
    pre, cls = _load(s, preprocessor), _load(s, classifier)
    P, C = pre.subgraphs[0], cls.subgraphs[0]
    features_t, window_t = P.tensors[P.outputs[0]], C.tensors[C.inputs[0]]
    if features_t.type != s.TensorType.INT8 or window_t.type != s.TensorType.INT8:
        raise JoinError(f"the feature extractor's output and the classifier's input must be int8 (they are "
                        f"tensor types {features_t.type} and {window_t.type})")
    row, size = int(np.prod(features_t.shape)), int(np.prod(window_t.shape))
    if row == 0 or size % row:
        raise JoinError(f"the classifier's input ({size} values) is not a whole number of the feature extractor's "
                        f"rows ({row} values)")
    first = len(P.operators)  # P is the joined graph from here on
    j = Joined(s, pre)
    features = P.outputs[0]
    tensors = j.append(cls)
    classifier_input, scores = tensors[C.inputs[0]], tensors[C.outputs[0]]

    I32, I8 = s.TensorType.INT32, s.TensorType.INT8
    quant = window_t.quantization
    handle = j.tensor("window_handle", (), s.TensorType.RESOURCE)
    window = j.tensor("window_read", (1, size), I8, quant)
    kept = j.tensor("window_kept", (1, size - row), I8, quant)
    new_row = j.tensor("window_row", (1, row), I8, quant)
    begin = j.tensor("window_begin", (2,), I32, data=np.array([0, row], np.int32).tobytes())
    end = j.tensor("window_end", (2,), I32, data=np.array([1, size], np.int32).tobytes())
    strides = j.tensor("window_strides", (2,), I32, data=np.array([1, 1], np.int32).tobytes())
    shape = j.tensor("window_row_shape", (2,), I32, data=np.array([1, row], np.int32).tobytes())

    B = s.BuiltinOperator
    init = s.SubGraphT()
    init.name, init.tensors, init.operators, init.inputs, init.outputs = b"window_init", [], [], [], []
    init_handle = j.tensor("window_handle", (), s.TensorType.RESOURCE, graph=init)
    zeros = j.tensor("window_zeros", (1, size), I8, quant, data=bytes(size), graph=init)
    var = s.VarHandleOptionsT()
    var.sharedName = VARIABLE.encode()
    init.operators = [j.op(j.builtin(B.VAR_HANDLE), [], [init_handle], s.BuiltinOptions.VarHandleOptions, var),
                      j.op(j.builtin(B.ASSIGN_VARIABLE), [init_handle, zeros], [])]

    once = s.CallOnceOptionsT()
    once.initSubgraphIndex = 1
    reshape = s.ReshapeOptionsT()
    reshape.newShape = np.array([1, row], np.int32)
    concat = s.ConcatenationOptionsT()
    concat.axis = 1
    ops = j.graph.operators
    j.graph.operators = [  # the variable's handle first, as TFLite's converter puts it; then the window between
        j.op(j.builtin(B.CALL_ONCE), [], [], s.BuiltinOptions.CallOnceOptions, once),
        j.op(j.builtin(B.VAR_HANDLE), [], [handle], s.BuiltinOptions.VarHandleOptions, var),
        *ops[:first],
        j.op(j.builtin(B.READ_VARIABLE), [handle], [window]),
        j.op(j.builtin(B.STRIDED_SLICE, 1), [window, begin, end, strides], [kept],
             s.BuiltinOptions.StridedSliceOptions, s.StridedSliceOptionsT()),
        j.op(j.builtin(B.RESHAPE), [features, shape], [new_row], s.BuiltinOptions.ReshapeOptions, reshape),
        j.op(j.builtin(B.CONCATENATION), [kept, new_row], [classifier_input], s.BuiltinOptions.ConcatenationOptions,
             concat),
        j.op(j.builtin(B.ASSIGN_VARIABLE), [handle, classifier_input], []),
        *ops[first:]]
    j.graph.outputs = np.array([scores, features], np.int32)
    j.graph.name = b"stream"

    model = j.model
    model.subgraphs = [j.graph, init]
    model.signatureDefs = None  # the first model's signature names its own output only
    model.metadata = [m for m in (model.metadata or []) if m.name == b"min_runtime_version"]
    model.description = b"mcudeploy examples/micro_speech/join.py: " + preprocessor.name.encode() + b" -> " + \
        VARIABLE.encode() + b" -> " + classifier.name.encode()
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preprocessor", nargs="?", type=Path, default=PREPROCESSOR)
    parser.add_argument("classifier", nargs="?", type=Path, default=CLASSIFIER)
    parser.add_argument("-o", "--output", type=Path, default=JOINED)
    args = parser.parse_args(argv)
    try:
        data = join(args.preprocessor, args.classifier)
        args.output.write_bytes(data)
    except JoinError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {args.output} could not be written: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"{args.output}: {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
