"""benchmarks/memory_bench.py on the smallest reference model, the AD autoencoder (int8).

Its widest step is the first MatMul: a 1x640 int8 input and a 1x128 int8 output live together,
640 + 128 = 768 bytes, so mcudeploy's arena and bound are both 768. TFLite Micro's arena holds
its own bookkeeping besides the activations, so when tflite-micro is installed its whole arena
is larger than the part it gives to activations, which holds at least those same 768 bytes.
"""
from __future__ import annotations

import importlib.util
import json

import pytest

from shared_models import MODELS, ROOT, need_models


def bench():
    spec = importlib.util.spec_from_file_location("memory_bench", ROOT / "benchmarks" / "memory_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_autoencoder_row(tmp_path, capsys):
    need_models()
    if not (MODELS / "onnx" / "ad_autoencoder_int8.onnx").exists():
        pytest.skip("ad_autoencoder_int8.onnx is not among the shared models")
    b = bench()
    assert b.main(["--models", str(MODELS), "--only", "ad_autoencoder_int8", "--json", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "ad_autoencoder_int8" in out and "placement methods" in out
    [row] = json.loads((tmp_path / "b.json").read_text())["rows"]
    m = row["mcudeploy"]
    assert m["arena"] == m["bound"] == 768
    for method, p in m["methods"].items():
        assert p["arena"] >= m["bound"], method
    t = row["tflm"]
    if b.tflm_status() is not None:
        assert "tflite-micro" in t["error"]  # says why, and the mcudeploy side still ran
    else:
        assert t["arena"] > t["activations"] >= 768
