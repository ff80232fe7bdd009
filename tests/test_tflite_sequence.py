"""UNIDIRECTIONAL_SEQUENCE_LSTM from .tflite files made in the test (tflite_build): what the converter never writes
(a cell clip that bites, a cell state of scale 2^-11, an asymmetric hidden state, two batch rows, the 16x8 form,
which the converter refuses) bit for bit with TensorFlow Lite Micro through run --check's comparison (which resets
TFLite Micro before each sample, as the graph starts each call from the reset state); an LSTM cut along its batch;
the one-sentence refusals."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
import tflite_build as tb

from mcudeploy import check
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ir import Node
from mcudeploy.partition import Cut
from mcudeploy.compile import compile_model, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

LSTM = tflite.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
CONFORMANCE = Path(__file__).parent / "conformance" / "tflite"



def lstm_options(clip: float = 0.0, activation: int = 4, time_major: bool = False):
    return tb._options("UnidirectionalSequenceLSTMOptions", FusedActivationFunction=activation, CellClip=clip,
                       ProjClip=0.0, TimeMajor=time_major)


def lstm_model(dtype: str, batch=2, steps=5, features=3, units=4, clip=0.0, cell_power=-11, seed=0, activation=4,
               per_channel=False, projection=False) -> bytes:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM with its 24 inputs as TFLite writes them (absent ones -1)."""
    rng = np.random.default_rng(seed)
    m = tb.Model()
    quant, wide = dtype != "float32", dtype == "int16"
    s_x, z_x, s_h, z_h = (1e-4, 0, 4e-5, 0) if wide else (0.03, 5, 0.008, -9)
    m.tensors.append(tb.T("x", (batch, steps, features), dtype, (s_x,) if quant else None, (z_x,) if quant else None))
    names = []
    for k, (gate, rows_in) in enumerate([(g, features) for g in "ifco"] + [(g, units) for g in "ifco"]):
        name = f"{'w' if k < 4 else 'r'}_{gate}"
        if quant:
            s = float(rng.uniform(0.003, 0.01))
            scale = (s,) * units if per_channel else (s,)
            m.tensors.append(tb.T(name, (units, rows_in), "int8", scale, (0,) * len(scale), 0,
                                  rng.integers(-127, 128, (units, rows_in)).astype(np.int8)))
        else:
            m.tensors.append(tb.T(name, (units, rows_in), "float32",
                                  data=(rng.standard_normal((units, rows_in)) * 0.7).astype(np.float32)))
        names.append(name)
    for gate in "ifco":
        if quant:
            scale = m.tensors[m.index(f"w_{gate}")].scale[0] * s_x
            bound = 10 ** 6 if wide else 4000
            m.tensors.append(tb.T(f"b_{gate}", (units,), "int64" if wide else "int32", (scale,), (0,),
                                  data=rng.integers(-bound, bound, units).astype(np.int64 if wide else np.int32)))
        else:
            m.tensors.append(tb.T(f"b_{gate}", (units,), "float32",
                                  data=rng.standard_normal(units).astype(np.float32)))
    m.tensors.append(tb.T("h", (batch, units), dtype, (s_h,) if quant else None, (z_h,) if quant else None,
                          variable=True))
    m.tensors.append(tb.T("c", (batch, units), "int16" if quant else "float32", (2.0 ** cell_power,) if quant else None,
                          (0,) if quant else None, variable=True))
    m.tensors.append(tb.T("y", (batch, steps, units), dtype, (s_h,) if quant else None, (z_h,) if quant else None))
    proj = ""
    if projection:
        proj = "p"
        m.tensors.append(tb.T("p", (units, units), dtype, (0.01,) if quant else None, (0,) if quant else None,
                              data=np.ones((units, units), np.int8 if quant else np.float32)))
    inputs = ("x", *names, "", "", "", "b_i", "b_f", "b_c", "b_o", proj, "", "h", "c", "", "", "", "")
    m.ops.append(tb.Op(LSTM, inputs, ("y",), lstm_options(clip, activation)))
    m.inputs, m.outputs = ("x",), ("y",)
    return m.build()


def _write(tmp_path, data: bytes, name="lstm"):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
@pytest.mark.parametrize("clip", [0.0, 0.6])
def test_lstm_bit_for_bit_with_tflite_micro(tmp_path, need_tflm, dtype, clip):
    path = _write(tmp_path, lstm_model(dtype, clip=clip, seed=1 if clip else 2))
    compiled = compile_model(path, "host")
    inputs = check.random_inputs(compiled.graph, 6)
    outputs = run_compiled_on_host(compiled, inputs, tmp_path / "c")
    verdict = check.check_tflite_outputs(path, compiled, outputs, inputs)
    assert verdict.ok, verdict.lines()
    if clip:  # the clip bites: without it the outputs differ
        graph = lower(import_model(path))
        node = next(n for n in graph.nodes if n.op == "LSTM")
        unclipped = graph.replace(nodes=tuple(Node(n.name, n.op, n.inputs, n.outputs, {"cell_clip": 0.0})
                                              if n is node else n for n in graph.nodes))
        assert any(not np.array_equal(a, b) for s in inputs
                   for a, b in zip(run_reference(graph, s), run_reference(unclipped, s)))


def test_a_cut_along_the_batch_computes_the_same(tmp_path, need_tflm):
    path = CONFORMANCE / "unidirectional_sequence_lstm-batch2-int8.tflite"
    graph = lower(import_model(path))
    lstm = next(n for n in graph.nodes if n.op == "LSTM")
    compiled = compile_model(path, "host", options=CompileOptions(scheme=(Cut(((lstm.name, "b"),), 2),)))
    assert sum(n.op == "LSTM" for n in compiled.graph.nodes) == 2
    inputs = check.random_inputs(compiled.graph, 3)
    outputs = run_compiled_on_host(compiled, inputs, tmp_path)
    verdict = check.check_tflite_outputs(path, compiled, outputs, inputs, reference=graph)
    assert verdict.ok, verdict.lines()


def test_the_state_starts_from_the_reset_value():
    graph = import_model(CONFORMANCE / "unidirectional_sequence_lstm-sequences-int8.tflite")
    lstm = next(n for n in graph.nodes if n.op == "LSTM")
    h0, c0 = graph[lstm.inputs[4]], graph[lstm.inputs[5]]
    assert h0.dtype == "int8" and np.all(h0.data == h0.quant.zero_point[0]) and h0.quant.zero_point[0] != 0
    assert c0.dtype == "int16" and not np.any(c0.data)
    assert graph[lstm.inputs[1]].shape[0] == 4 and graph[lstm.inputs[1]].quant.axis == 0


def test_time_major_is_reshaped_around_a_batch_major_lstm():
    graph = import_model(CONFORMANCE / "unidirectional_sequence_lstm-time-major-float32.tflite")
    assert [n.op for n in graph.nodes] == ["Reshape", "LSTM", "Reshape"]
    assert graph[graph.nodes[1].inputs[0]].shape == (1, 4, 2)


@pytest.mark.parametrize("kw, reason", [
    ({"projection": True}, "peepholes, a projection or layer normalisation"),
    ({"activation": 1}, "cell activation other than TANH"),
    ({"per_channel": True}, "quantized per channel"),
])
def test_refusals_are_one_sentence(tmp_path, kw, reason):
    path = _write(tmp_path, lstm_model("int8", **kw))
    with pytest.raises(UnsupportedError, match=reason) as info:
        import_model(path)
    assert "operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM)" in str(info.value) and "\n" not in str(info.value)

