"""`mcudeploy ops`: the operators mcudeploy runs per format and type. Its data (mcudeploy/data/ops.json) is what
the conformance suites show, exactly (tests/conformance/ops_table.py rewrites it), and names only operators the
code takes."""
from __future__ import annotations

import json

import pytest

from mcudeploy.cli import main
from mcudeploy.frontend.tflite import HANDLERS
from mcudeploy.ops import registry
from mcudeploy.frontend.catalog import OPS_JSON, supported
from tests.conformance import ops_table


def test_the_data_is_what_the_conformance_suites_show():
    assert OPS_JSON.read_text() == ops_table.text(ops_table.table()), \
        "mcudeploy/data/ops.json is stale: python -m tests.conformance.ops_table --write"


def test_every_operator_that_runs_is_one_the_code_takes():
    data = json.loads(OPS_JSON.read_text())
    assert {n for n, e in data["tflite"].items() if e["types"]} <= set(HANDLERS)
    assert {n for n, e in data["onnx"].items() if e["types"]} <= set(registry.onnx_types())


def test_ops_lists_the_int16_builtins(capsys):
    assert main(["ops", "--format", "tflite", "--type", "int16"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    # issue 43's kernels, each bit for bit with TensorFlow Lite Micro in the conformance suite
    for builtin in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "ADD", "SUB", "MUL", "PAD",
                    "AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "LEAKY_RELU", "RELU", "RELU6", "TANH", "LOGISTIC",
                    "SOFTMAX", "QUANTIZE", "DEQUANTIZE"):
        assert builtin in rows and "int16" in rows[builtin], builtin
    assert "HARD_SWISH" not in rows and "DIV" not in rows  # TensorFlow Lite Micro runs them on float32 and int8


def test_ops_lists_both_formats_with_onnx_qdq(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    tflite, onnx = out.split("\nONNX op types\n")
    assert tflite.startswith("TFLite builtins\n")
    conv = next(line for line in onnx.splitlines() if line.split()[0] == "Conv")
    assert "float32" in conv and "int8 (QDQ)" in conv
    assert [r.name for r in supported("onnx", "int8") if r.name == "Conv"] == ["Conv"]  # "int8" finds the QDQ ones


def test_an_unknown_format_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ops", "--format", "caffe"])
    assert exc.value.code == 2 and "invalid choice: 'caffe'" in capsys.readouterr().err
