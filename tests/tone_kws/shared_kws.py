"""A 200-sample set for the MLPerf Tiny KWS model of ../shared/models (kws_dscnn_int8), labelled by the only
model there with float activations, kws_dscnn_hybrid.onnx (int8 weights behind DequantizeLinear, float
activations; no float KWS model is there): so its labels are that model's top-1 answers, not ground truth, and
an accuracy against them is agreement with the hybrid model.

    python -m tests.tone_kws.shared_kws -o kws_shared200.npz [-n 200] [--seed 1]

The inputs are the tone set of features.py, rescaled linearly from its range onto the middle of the int8 input's
real range (the features are log band energies, not the MFCCs the model was trained on) and quantized with the
input's scale and zero point: x (int8[N, 49, 10, 1]) and y (int64[N]).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    from mcudeploy.check.inputs import quantize
    from mcudeploy.analysis.io import quantization
    from mcudeploy.check.onnxrt import run_onnxruntime
    from mcudeploy.frontend import import_model
    from mcudeploy.compile import lower

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
    from shared_models import MODELS
    from tone_kws.features import TEST_SEED, make_set

    p = argparse.ArgumentParser(prog="python -m tests.tone_kws.shared_kws", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=TEST_SEED)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    model, hybrid = MODELS / "onnx" / "kws_dscnn_int8.onnx", MODELS / "onnx" / "kws_dscnn_hybrid.onnx"
    if not model.is_file() or not hybrid.is_file():
        raise SystemExit(f"the shared KWS models are not at {MODELS / 'onnx'} (set MCUDEPLOY_MODELS)")
    graph = lower(import_model(model))
    t = graph[graph.model_inputs()[0]]
    q = quantization(graph, t.name)  # the int8 input's, on the layout operator that reads it
    (scale, zero), t = q.single(), dataclasses.replace(t, quant=q)
    lo, hi = scale * (-128 - zero), scale * (127 - zero)
    x, _ = make_set(args.samples, args.seed)
    span = (float(x.min()), float(x.max()))
    real = lo + 0.1 * (hi - lo) + (x - span[0]) / (span[1] - span[0]) * 0.8 * (hi - lo)
    codes = np.stack([quantize(r, t) for r in real.astype(np.float32)])
    dequantized = ((codes.astype(np.int64) - zero) * scale).astype(np.float32)
    y = np.array([int(np.argmax(o[0])) for o in run_onnxruntime(hybrid, [{"input_1": d} for d in dequantized])])
    np.savez_compressed(args.output, x=codes, y=y)
    print(f"wrote {args.output}: x {codes.dtype}{list(codes.shape)} (input scale {scale:.6g}, zero point {zero}), "
          f"y from {hybrid.name}'s top-1: {np.bincount(y, minlength=12).tolist()} per class")
    return 0


if __name__ == "__main__":
    sys.exit(main())
