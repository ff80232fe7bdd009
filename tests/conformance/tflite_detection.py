"""The conformance cases of TFLite's custom operator TFLite_Detection_PostProcess (the end of the SSD detectors that
TensorFlow's object detection API exports: box decoding against anchors, then non-maximum suppression), built by
hand (tests/tflite_build.py): one CUSTOM operator with its flexbuffer options as the exporter writes them (ints,
floats, a bool), box encodings [1, N, 4] and class scores [1, N, classes (+ background)] the model's inputs, the
anchors [N, 4] a constant; four float32 outputs (boxes [1, D, 4], classes [1, D], scores [1, D], count [1]).
They live in tests/conformance/tflite/detection/ with a cases.json of the same form as the converter's;
tflite_cases.cases() reads it, and the suite runs them against TensorFlow Lite Micro like any other case.

    python -m tests.conformance.tflite_detection      (rewrites tests/conformance/tflite/detection/)

TensorFlow Lite Micro runs float32 box encodings and scores only (its Eval fails on any other type), so every
case is float32; the anchors are a grid of overlapping boxes of a few sizes, so that suppression happens.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from tests import tflite_build as tb

OUT = Path(__file__).resolve().parent / "tflite" / "detection"
MANIFEST = OUT / "cases.json"
CUSTOM = "TFLite_Detection_PostProcess"
BOXES = {"dtype": "float32", "low": -1.0, "high": 1.0}
SCORES = {"dtype": "float32", "low": 0.0, "high": 1.0}


def anchors(n: int, seed: int = 0) -> np.ndarray:
    """``n`` anchors [y, x, h, w]: centres on a grid over [0, 1]^2 (several anchors per cell), sizes 0.15 to 0.4,
    so that neighbours overlap."""
    rng = np.random.default_rng(seed)
    side = max(int(np.ceil(np.sqrt(n / 2))), 1)
    cells = [(i, j) for i in range(side) for j in range(side)]
    out = []
    for k in range(n):
        i, j = cells[k % len(cells)]
        out.append(((i + 0.5) / side, (j + 0.5) / side, rng.uniform(0.15, 0.4), rng.uniform(0.15, 0.4)))
    return np.array(out, np.float32)


def options(max_detections: int, num_classes: int, regular: bool, score_threshold: float = 0.3,
            iou_threshold: float = 0.5, max_classes_per_detection: int = 1, detections_per_class=100,
            scales=(10.0, 10.0, 5.0, 5.0), drop=()) -> dict:
    """The options as TensorFlow's exporter writes them (``drop``: keys left out)."""
    y, x, h, w = scales
    opts = {"max_detections": max_detections, "max_classes_per_detection": max_classes_per_detection,
            "detections_per_class": detections_per_class, "use_regular_nms": bool(regular),
            "nms_score_threshold": float(score_threshold), "nms_iou_threshold": float(iou_threshold),
            "num_classes": num_classes, "y_scale": float(y), "x_scale": float(x), "h_scale": float(h),
            "w_scale": float(w)}
    return {k: v for k, v in opts.items() if k not in drop}


def detection_model(boxes: int, num_classes: int, opts: dict, background: bool = True, box_dtype: str = "float32",
                    score_dtype: str = "float32", anchor_data=None, outputs=None, coords: int = 4,
                    anchor_input: bool = False) -> tb.Model:
    """One TFLite_Detection_PostProcess over ``boxes`` anchors and ``num_classes`` classes (one more column of scores
    for the background class unless ``background`` is False); ``outputs``: the output shapes, by default those of
    the options' max_detections."""
    from flatbuffers import flexbuffers

    T = tb.T
    columns = num_classes + (1 if background else 0)
    d = int(opts.get("max_detections", 0))
    shapes = outputs or ((1, d, 4), (1, d), (1, d), (1,))
    q = {"int8": ((0.02,), (3,)), "uint8": ((0.02,), (128,)), "float32": (None, None)}
    a = anchors(boxes) if anchor_data is None else anchor_data
    tensors = [T("box_encodings", (1, boxes, coords), box_dtype, *q[box_dtype]),
               T("class_predictions", (1, boxes, columns), score_dtype,
                 *({"int8": ((1 / 256,), (-128,)), "uint8": ((1 / 256,), (0,))}.get(score_dtype, (None, None)))),
               T("anchors", a.shape, str(a.dtype), data=None if anchor_input else a),
               T("detection_boxes", shapes[0], "float32"), T("detection_classes", shapes[1], "float32"),
               T("detection_scores", shapes[2], "float32"), T("num_detections", shapes[3], "float32")]
    ins = ("box_encodings", "class_predictions", "anchors")
    outs = ("detection_boxes", "detection_classes", "detection_scores", "num_detections")
    op = tb.Op(tb.OPS.CUSTOM, ins, outs, custom=CUSTOM, custom_options=bytes(flexbuffers.Dumps(opts)))
    return tb.Model(tensors, [op], ins if anchor_input else ins[:2], outs)


def _case(name: str, boxes: int, num_classes: int, regular: bool, max_detections: int, **kw):
    background = kw.pop("background", True)
    opts = options(max_detections, num_classes, regular, **kw)
    return name, lambda: detection_model(boxes, num_classes, opts, background)


# (name, builder): each runs SAMPLES (3) random calls, box encodings uniform over [-1, 1], scores over [0, 1]
CASES = (
    _case("detection-fast-n24c3d5-float32", 24, 3, False, 5),
    _case("detection-fast-n40c1d10-nobg-float32", 40, 1, False, 10, background=False, score_threshold=0.1,
          iou_threshold=0.3),
    _case("detection-fast-n16c5d10-float32", 16, 5, False, 10, score_threshold=0.0, iou_threshold=0.6),
    _case("detection-regular-n24c3d5-float32", 24, 3, True, 5),
    _case("detection-regular-n32c4d8-p3-float32", 32, 4, True, 8, detections_per_class=3, score_threshold=0.5,
          iou_threshold=0.4),
    _case("detection-regular-n12c2d30-nobg-float32", 12, 2, True, 30, background=False, score_threshold=0.05,
          iou_threshold=1.0, scales=(5.0, 4.0, 2.0, 3.0)),
)


def main(argv=None) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, build in CASES:
        data = build().build()
        (OUT / f"{name}.tflite").write_bytes(data)
        entries.append({"case": name, "builtin": f"CUSTOM {CUSTOM}", "type": "float32",
                        "operators": [f"CUSTOM {CUSTOM}"], "bytes": len(data), "reference": "tflm", "steps": 1,
                        "quantized_io": False, "inputs": [BOXES, SCORES]})
    for stale in OUT.glob("*.tflite"):
        if stale.stem not in {e["case"] for e in entries}:
            stale.unlink()
    MANIFEST.write_text(json.dumps({"made_by": "python -m tests.conformance.tflite_detection", "cases": entries},
                                   indent=1) + "\n")
    print(f"tflite_detection: {len(entries)} cases; {MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
