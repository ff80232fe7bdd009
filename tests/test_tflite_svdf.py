"""TFLite's SVDF from hand-built .tflite files (tests/conformance/tflite_svdf.py): the committed conformance cases
and more shapes and quantizations made here, each a sequence of calls whose state carries over, bit for bit
TensorFlow Lite Micro (the oracle), mcudeploy's numpy reference and the C, on the host and on qemu-m4; the
refusals in one sentence naming the operator."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite_build as tb

from mcudeploy import check
from mcudeploy.cli import main
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import InvalidModelError, UnsupportedError
from mcudeploy.frontend import import_model
from tests.conformance import tflite_cases as tc
from tests.conformance.tflite_svdf import svdf_model, svdf_options

CASES = [c for c in tc.cases() if c.builtin == "SVDF"]



@pytest.fixture(scope="module")
def expected(need_tflm):
    """TensorFlow Lite Micro's outputs on every SVDF case's samples, in one child process."""
    return tc.tflm_outputs(CASES)


def test_the_cases_cover_the_types_ranks_batches_and_activations():
    names = [c.name for c in CASES]
    assert {c.dtype for c in CASES} == {"int8", "float32"}
    for part in ("r1", "r2", "b1", "b2", "-relu", "-t8", "-tanh-float32", "-sign_bit", "-tanh-int8"):
        assert any(part in n for n in names), part


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance_case_on_the_host(case, expected, tmp_path):
    tc.check(case, expected[case.name], tmp_path)


def _samples(model: tb.Model, calls: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    x = model.tensors[model.index("x")]
    if x.dtype == "float32":
        return [{"x": rng.uniform(-2.0, 2.0, x.shape).astype(np.float32)} for _ in range(calls)]
    return [{"x": rng.integers(-128, 128, x.shape).astype(np.int8)} for _ in range(calls)]


def _run(tmp_path, model: tb.Model, samples: list[dict], board: str = "host"):
    """The model through TFLite Micro, the numpy reference and the C (host, or a board under QEMU): PASS."""
    path = tmp_path / "svdf.tflite"
    path.write_bytes(model.build())
    compiled = compile_model(path, board)
    assert compiled.graph.states, "the SVDF's state is a state of the model"
    if board == "host":
        outputs = run_compiled_on_host(compiled, samples, tmp_path / "c", sanitize=True)
    else:
        from mcudeploy.device.runner import run_on_board
        outputs = run_on_board(compiled, samples, workdir=tmp_path / "fw").outputs
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, verdict.lines()
    return outputs


@pytest.mark.parametrize("dtype, batch, features, units, rank, memory, activation, time_dtype, state_zero", [
    ("int8", 3, 5, 2, 3, 2, "none", "int16", 0),
    ("int8", 1, 12, 6, 1, 1, "none", "int16", 0),  # a memory of one column: no history
    ("int8", 2, 7, 4, 2, 6, "relu", "int8", 37),  # an int8 state off zero: z + v wraps past 127, as in TFLite Micro
    ("int8", 1, 9, 3, 2, 4, "none", "int8", -50),
    ("float32", 3, 5, 2, 3, 2, "relu_n1_to_1", "int16", 0),
    ("float32", 1, 12, 6, 1, 1, "none", "int16", 0),
])
def test_more_shapes_in_sequence(tmp_path, need_tflm, dtype, batch, features, units, rank, memory, activation,
                                 time_dtype, state_zero):
    model, _ = svdf_model(dtype, batch, features, units, rank, memory, True, activation, seed=batch * 7 + memory,
                          time_dtype=time_dtype, state_zero_point=state_zero)
    outputs = _run(tmp_path, model, _samples(model, 10, seed=memory))
    assert len({np.asarray(o[0]).tobytes() for o in outputs}) > 1


def test_the_state_carries_over(tmp_path, need_tflm):
    """The same input called again gives another output while the state still holds the earlier calls (a memory of
    4: the 5th call onwards only the repeated input is left, and the output stays)."""
    model, _ = svdf_model("int8", 1, 8, 4, 2, 4, True, "none", seed=5)
    x = np.random.default_rng(1).integers(-128, 128, (1, 8)).astype(np.int8)
    first = np.random.default_rng(2).integers(-128, 128, (1, 8)).astype(np.int8)
    outputs = _run(tmp_path, model, [{"x": first}] + [{"x": x}] * 6)
    ys = [np.asarray(o[0]).tobytes() for o in outputs]
    assert ys[1] != ys[4] and ys[4] == ys[5] == ys[6]


@pytest.mark.qemu
@pytest.mark.parametrize("dtype, time_dtype, activation", [("int8", "int16", "relu"), ("int8", "int8", "relu"),
                                                           ("float32", "int16", "relu"), ("float32", "int16", "tanh"),
                                                           ("float32", "int16", "sign_bit")])
def test_on_qemu_m4(tmp_path, need_qemu, need_tflm, dtype, time_dtype, activation):
    """The board's libm (tanhf) against TFLite Micro's on this computer: within the float tolerance."""
    model, _ = svdf_model(dtype, 2, 6, 3, 2, 5, True, activation, seed=11, time_dtype=time_dtype,
                          state_zero_point=9 if time_dtype == "int8" else 0)
    _run(tmp_path, model, _samples(model, 8, seed=3), board="qemu-m4")


# ---------------------------------------------------------------- refusals


def _svdf(**changes) -> tb.Model:
    """A float SVDF (1 x 6 input, 4 filters of memory 3, rank 2) with ``changes``: rank, input shape, state
    shape, whether the state is a variable, the inputs (a "" for one left out)."""
    model, _ = svdf_model("float32", 1, 6, 2, 2, 3, True, "none", seed=0,
                          input_shape=changes.get("input_shape"), state_shape=changes.get("state_shape"),
                          state_variable=changes.get("variable", True))
    op = model.ops[0]
    if "rank" in changes:
        op.options = svdf_options(changes["rank"])
    if "inputs" in changes:
        op.inputs = changes["inputs"]
    if "activation" in changes:
        op.options = svdf_options(2, changes["activation"])
    return model


@pytest.mark.parametrize("changes, error, words", [
    ({"rank": 3}, InvalidModelError, "rank 3, which does not divide its 4 filters"),
    ({"rank": 0}, InvalidModelError, "rank 0"),
    ({"input_shape": (1, 1, 6)}, InvalidModelError, "3-D input"),
    ({"state_shape": (1, 10)}, InvalidModelError, "state of shape \\[1, 10\\], not \\[1, 12\\]"),
    ({"variable": False}, InvalidModelError, "not a variable tensor"),
    ({"inputs": ("x", "wf", "wt", "b", "")}, InvalidModelError, "no activation state"),
    ({"inputs": ("x", "wf", "wt", "b")}, InvalidModelError, "takes 5"),
    ({"inputs": ("x", "wf", "wt", "", "state")}, UnsupportedError, "no bias"),
    ({"activation": 6}, InvalidModelError, "fused activation 6, which is none of TFLite's"),
])
def test_refusals_name_the_operator(tmp_path, changes, error, words):
    path = tmp_path / "bad.tflite"
    path.write_bytes(_svdf(**changes).build())
    with pytest.raises(error, match=words) as info:
        import_model(path)
    assert "operator 0 (SVDF)" in str(info.value) and "\n" not in str(info.value)


def test_a_bias_scale_tflite_micro_refuses_is_refused(tmp_path):
    model, _ = svdf_model("int8", 1, 8, 4, 1, 4, True, "none", seed=1, bias_scale=1e-3)
    path = tmp_path / "bad.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match="bias of scale state x time weights") as info:
        import_model(path)
    assert "operator 0 (SVDF)" in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- TensorFlow Lite Micro's keyword models

KEYWORD_MODELS = Path(__file__).resolve().parent / "svdf_models"


def _cut(source, last: int) -> tb.Model:
    """The model's operators 0 to ``last`` (QUANTIZE, SVDF, FULLY_CONNECTED, SOFTMAX), rebuilt with the tensors they
    use; its outputs every SVDF's and the last operator's."""
    import tflite

    from mcudeploy.frontend.tflite.reader import DTYPES, load_tflite

    m, _ = load_tflite(source)
    g = m.Subgraphs(0)
    tensors = []
    for i in range(g.TensorsLength()):
        t = g.Tensors(i)
        dtype, q, buf = DTYPES[t.Type()], t.Quantization(), m.Buffers(t.Buffer())
        scale = tuple(q.ScaleAsNumpy().tolist()) if q is not None and q.ScaleLength() else None
        data = np.frombuffer(buf.DataAsNumpy().tobytes(), np.dtype(dtype)).reshape(t.ShapeAsNumpy()) \
            if buf is not None and buf.DataLength() else None
        tensors.append(tb.T(f"t{i}", tuple(t.ShapeAsNumpy().tolist()), dtype, scale,
                            tuple(int(z) for z in q.ZeroPointAsNumpy()) if scale else None, data=data,
                            variable=t.IsVariable()))
    ops = []
    for k in range(last + 1):
        op = g.Operators(k)
        code = m.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        options, table = None, op.BuiltinOptions()
        if builtin == tflite.BuiltinOperator.SVDF:
            o = tflite.SVDFOptions()
            o.Init(table.Bytes, table.Pos)
            options = svdf_options(o.Rank(), o.FusedActivationFunction())
        elif builtin == tflite.BuiltinOperator.FULLY_CONNECTED:
            o = tflite.FullyConnectedOptions()
            o.Init(table.Bytes, table.Pos)
            options = tb._options("FullyConnectedOptions", FusedActivationFunction=o.FusedActivationFunction(),
                                  KeepNumDims=o.KeepNumDims())
        elif builtin == tflite.BuiltinOperator.SOFTMAX:
            o = tflite.SoftmaxOptions()
            o.Init(table.Bytes, table.Pos)
            options = tb.softmax_options(o.Beta())
        else:
            assert builtin == tflite.BuiltinOperator.QUANTIZE
        ops.append(tb.Op(builtin, tuple(f"t{i}" if i >= 0 else "" for i in op.InputsAsNumpy()),
                         tuple(f"t{i}" for i in op.OutputsAsNumpy()), options))
    used = {n for o in ops for n in o.inputs + o.outputs if n}
    outputs = tuple(o.outputs[0] for o in ops if o.code == tflite.BuiltinOperator.SVDF) + ops[-1].outputs
    return tb.Model([t for t in tensors if t.name in used], ops, (f"t{g.Inputs(0)}",), outputs)


# the whole model's output, a QUANTIZE to int32 of its SOFTMAX of int8 to int16 over 2 classes, is the same whatever
# the input: the last FULLY_CONNECTED's scrambled weights saturate its outputs (-128 and -128: one half each, 16384 at
# the int32's scale of 1/32767; the 8-bit model's -128 and 127: 0 and 1)
KEYWORD_OUTPUT = {"keyword_scrambled": (16384, 16384), "keyword_scrambled_8bit": (0, 32767)}


@pytest.mark.parametrize("name", list(KEYWORD_OUTPUT))
def test_tflite_micro_keyword_model(tmp_path, need_tflm, name):
    """A published model whole (tests/svdf_models/README.md: 7 SVDFs, 5 FULLY_CONNECTEDs, the SOFTMAX of int8 to
    int16, a QUANTIZE to int32), rebuilt with every SVDF's output as an output too: 12 calls in sequence, each output
    bit for bit TensorFlow Lite Micro's."""
    source = KEYWORD_MODELS / f"{name}.tflite"
    model = _cut(source, 14)
    assert [op.code for op in model.ops[-2:]] == [tb.OPS.SOFTMAX, tb.OPS.QUANTIZE]
    assert sum(op.code == tb.OPS.SVDF for op in model.ops) == 7
    rng = np.random.default_rng(len(name))
    samples = [{model.inputs[0]: rng.integers(-4000, 4000, (1, 96)).astype(np.int16)} for _ in range(12)]
    outputs = _run(tmp_path, model, samples)
    assert all(np.asarray(o[-1]).ravel().tolist() == list(KEYWORD_OUTPUT[name]) for o in outputs)
    if name == "keyword_scrambled":  # SVDFs 2 to 7 move from call to call; the 8-bit model's scrambled weights
        for k in range(1, 7):        # saturate every output, whatever the input: there only the saturation is checked
            assert len({np.asarray(o[k]).tobytes() for o in outputs}) > 1, k


def test_run_check_on_the_keyword_models(need_tflm, capsys):
    """`mcudeploy run FILE --check -b host` on the files as published: a sequence of 20 calls (run --check's least
    for a stateful model), PASS."""
    for name in KEYWORD_OUTPUT:
        assert main(["run", str(KEYWORD_MODELS / f"{name}.tflite"), "-b", "host", "--check"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert "a stateful model: 20 inputs in sequence" in out[0] and "bit for bit" in out[1], out
        assert out[-1].startswith("PASS on 20 input(s)"), out
