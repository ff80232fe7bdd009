"""TFLite's SOFTMAX from int8 to int16 (TensorFlow Lite Micro's Softmax<int8_t, int16_t>, as its keyword models end):
its conformance cases (tests/conformance/tflite_softmax.py, 8 shapes, betas and output scales) run in the TFLite
conformance suite (tests/conformance/test_tflite_cases.py); here the output quantizations TFLite Micro's Prepare
refuses are refused in one sentence naming the operator (and TFLite Micro refuses the first beyond its 0.1%), and
one case runs on qemu-m4. The same folder holds float SOFTMAX cases with beta other than 1; one runs on qemu-m4 here,
and a beta that is not finite is refused."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy import check
from mcudeploy.check.tflm import available, run_tflm_many
from mcudeploy.compile import compile_model
from mcudeploy.errors import MCUDeployError, UnsupportedError
from mcudeploy.frontend import import_model
from tests.conformance import tflite_cases as tc
from tests.conformance.tflite_softmax import UNIT, float_softmax_model, softmax_model

CASES = [c for c in tc.cases() if c.home == "softmax" and c.dtype == "int8"]
FLOAT_CASES = [c for c in tc.cases() if c.home == "softmax" and c.dtype == "float32"]


def test_the_cases_cover_shapes_betas_and_both_ends_of_the_output_scale():
    names = " ".join(c.name for c in CASES)
    assert len(CASES) >= 6 and all(c.builtin == "SOFTMAX" and c.dtype == "int8" for c in CASES)
    for part in ("1x2x3x6", "2x3x4", "beta0.5", "beta2", "scale_high", "scale_low"):
        assert part in names, part


REFUSED = [
    # (what, model, words of the sentence)
    ("an output scale 0.11% above 1/65536", softmax_model((1, 8), 1.0, 0.1, s_y=UNIT * 1.0011),
     "of int8 to int16 needs an output of scale 1/65536 within 0.1% and zero point -32768"),
    ("an output scale 0.11% below 1/65536", softmax_model((1, 8), 1.0, 0.1, s_y=UNIT * 0.9989),
     "got 1.5242e-05 and -32768"),
    ("an output zero point 0", softmax_model((1, 8), 1.0, 0.1, z_y=0), "got 1.52588e-05 and 0"),
    ("an int32 output", softmax_model((1, 8), 1.0, 0.1, s_y=UNIT, z_y=0, out_dtype="int32"),
     "with a int32 output from int8 is not supported"),
    ("an int8 output of scale 1/128", softmax_model((1, 8), 1.0, 0.1, s_y=1 / 128, z_y=-128, out_dtype="int8"),
     "of int8 needs an output of scale 1/256 and zero point -128"),
]


@pytest.mark.parametrize("what, model, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_the_output_quantizations_tflite_micro_refuses_are_refused(tmp_path, what, model, words):
    path = tmp_path / "softmax.tflite"
    path.write_bytes(model.build())
    with pytest.raises(UnsupportedError, match="operator 0 \\(SOFTMAX\\)") as info:
        import_model(path)
    assert words in str(info.value) and "\n" not in str(info.value) and "TensorFlow Lite Micro" in str(info.value)


def test_float_cases_vary_beta_and_a_beta_not_finite_is_refused(tmp_path):
    from mcudeploy.errors import InvalidModelError

    assert {"beta0.5", "beta2", "beta0.1"} <= {part for c in FLOAT_CASES for part in c.name.split("-")}
    path = tmp_path / "nan.tflite"
    path.write_bytes(float_softmax_model((1, 8), float("nan")).build())
    with pytest.raises(InvalidModelError, match="operator 0 \\(SOFTMAX\\)") as info:
        import_model(path)
    assert "beta of nan, which is not finite" in str(info.value) and "\n" not in str(info.value)


def test_tflite_micro_refuses_the_scale_beyond_its_edge_and_runs_the_one_within(tmp_path):
    why = available()
    if why is not None:
        pytest.skip(f"TensorFlow Lite Micro is not installed: {why}")
    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 8)
    jobs = []
    for k, factor in enumerate((1.0011, 1.00099)):
        path = tmp_path / f"edge{k}.tflite"
        path.write_bytes(softmax_model((1, 8), 1.0, 0.1, s_y=UNIT * factor).build())
        jobs.append((path, ["x"], [{"x": x}]))
    beyond, within = run_tflm_many(jobs)
    assert isinstance(beyond, MCUDeployError)
    assert not isinstance(within, Exception) and np.asarray(within[0][0]).dtype == np.int16


@pytest.mark.qemu
def test_on_qemu_m4(tmp_path, need_qemu):
    """The C kernel on a Cortex-M4 under QEMU, against TensorFlow Lite Micro and the numpy reference."""
    from mcudeploy.device.runner import run_on_board

    why = available()
    if why is not None:
        pytest.skip(f"TensorFlow Lite Micro is not installed: {why}")
    for case in (next(c for c in CASES if "1x2x3x6" in c.name), next(c for c in FLOAT_CASES if "beta2" in c.name)):
        _check_on_qemu_m4(case, tmp_path / case.name)


def _check_on_qemu_m4(case, tmp_path):
    from mcudeploy.device.runner import run_on_board

    compiled = compile_model(case.path, "qemu-m4")
    samples = [dict(zip(compiled.graph.model_inputs(), s)) for s in tc.samples(case)]
    outputs = run_on_board(compiled, samples, workdir=tmp_path / "fw").outputs
    verdict = check.check_tflite_outputs(case.path, compiled, outputs, samples)
    assert verdict.ok, verdict.lines()
