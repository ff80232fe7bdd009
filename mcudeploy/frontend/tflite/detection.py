"""TFLite_Detection_PostProcess: the custom operator that ends the SSD detectors of TensorFlow's object detection
API, as the IR DetectionPostProcess (mcudeploy/ops/detection.py) after TensorFlow Lite Micro's
kernels/detection_postprocess.cc.

Its options are a flexbuffer map, which TensorFlow Lite Micro reads by key (keys it does not read are ignored):
max_detections, max_classes_per_detection, nms_score_threshold, nms_iou_threshold, num_classes and the four scales
are needed; detections_per_class (100) and use_regular_nms (false) have defaults. An integer option written as a
float is truncated, a float one written as an integer converted, as flexbuffers' AsInt32 and AsFloat do.

Refused, in one sentence naming the operator: box encodings or scores that are not float32 (TensorFlow Lite Micro's
Eval fails on them), anchors that are not float32 (it would read their bytes as floats), a missing input or output,
num_classes below 1, an IoU threshold outside (0, 1] or a detections_per_class or max_classes_per_detection below 1
(TensorFlow Lite Micro fails the call), a scale of 0, outputs not of the shapes max_detections gives, and the fast
NMS with more than one class per detection (TensorFlow Lite Micro writes those detections out of place, past its
outputs' end).
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.ops import registry

NEEDED = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold", "num_classes",
          "y_scale", "x_scale", "h_scale", "w_scale")


def _options(imp, op) -> dict:
    from flatbuffers import flexbuffers

    raw = op.CustomOptionsAsNumpy() if op.CustomOptionsLength() else None
    if raw is None or not len(raw):
        imp.fail(f"has no options (TensorFlow Lite Micro reads {', '.join(NEEDED)})", True)
    try:
        found = flexbuffers.Loads(bytes(raw.tobytes()))
    except Exception as exc:  # noqa: BLE001  (the flexbuffers reader raises what a damaged buffer makes it)
        imp.fail(f"has options that are not a readable flexbuffer ({type(exc).__name__})", True)
    if not isinstance(found, dict):
        imp.fail("has options that are not a flexbuffer map", True)
    missing = [k for k in NEEDED if k not in found]
    if missing:
        imp.fail(f"has no option {', '.join(missing)} (TensorFlow Lite Micro would read "
                 f"{'it' if len(missing) == 1 else 'them'} as 0)", True)
    return found


def _int(imp, opts: dict, key: str, default=None) -> int:
    """flexbuffers' AsInt32: a bool as 0 or 1, a float truncated."""
    value = opts.get(key, default)
    if isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        if abs(value) < 2 ** 31:
            return int(value)
    imp.fail(f"has option {key} = {value!r}, which is not an integer TensorFlow Lite Micro reads", True)


def _float(imp, opts: dict, key: str) -> float:
    """flexbuffers' AsFloat: the value rounded to float32."""
    value = opts[key]
    if isinstance(value, (bool, int, float)):
        f = float(np.float32(float(value)))
        if math.isfinite(f):
            return f
    imp.fail(f"has option {key} = {value!r}, which is not a finite number", True)


@handles("CUSTOM TFLite_Detection_PostProcess")
def detection_postprocess(imp, op, ins, outs):
    if len(ins) != 3 or len(outs) != 4 or any(i < 0 for i in ins):
        what = "leaves out its anchors (input 2)" if len(ins) == 3 and ins[2] < 0 else \
            f"has {len(ins)} inputs and {len(outs)} outputs"
        imp.fail(f"{what}, where TensorFlow Lite Micro's takes 3 (box encodings, class scores, anchors) and gives 4 "
                 f"(boxes, classes, scores, count)", True)
    opts = _options(imp, op)
    k, d = _int(imp, opts, "num_classes"), _int(imp, opts, "max_detections")
    regular = bool(opts.get("use_regular_nms", False))
    per_class = _int(imp, opts, "detections_per_class", 100)
    per_detection = _int(imp, opts, "max_classes_per_detection")
    attrs = {"num_classes": k, "max_detections": d, "detections_per_class": per_class, "regular": int(regular),
             "score_threshold": _float(imp, opts, "nms_score_threshold"),
             "iou_threshold": _float(imp, opts, "nms_iou_threshold")}
    for axis in "yxhw":
        attrs[f"{axis}_scale"] = _float(imp, opts, f"{axis}_scale")
        if attrs[f"{axis}_scale"] == 0.0:
            imp.fail(f"has {axis}_scale 0, which divides the box encodings by zero", True)
    if k < 1:
        imp.fail(f"has num_classes {k}, where a detection needs at least 1 class", True)
    if not 0.0 < attrs["iou_threshold"] <= 1.0:
        imp.fail(f"has nms_iou_threshold {attrs['iou_threshold']:g}, outside (0, 1] where TensorFlow Lite Micro "
                 f"requires it", True)
    if regular and per_class < 1:
        imp.fail(f"has detections_per_class {per_class}, where the regular NMS of TensorFlow Lite Micro needs at "
                 f"least 1", True)
    if not regular and per_detection < 1:
        imp.fail(f"has max_classes_per_detection {per_detection}, where the fast NMS of TensorFlow Lite Micro needs "
                 f"at least 1", True)
    if not regular and min(per_detection, k) > 1:
        imp.fail(f"has max_classes_per_detection {per_detection} with the fast NMS, which is not supported "
                 f"(TensorFlow Lite Micro writes such detections out of place, past the end of its outputs)")
    for i, what in zip(ins, ("box encodings", "class scores", "anchors")):
        if imp.dtype(i) != "float32":
            imp.fail(f"takes {imp.dtype(i)} {what}, which is not supported (TensorFlow Lite Micro's "
                     f"{'fails the call' if what != 'anchors' else 'reads their bytes as floats'}: it takes float32 "
                     f"only)")
    shapes = [imp.shape(o) for o in outs]
    if d < 1 or shapes[0] != (1, d, 4) or shapes[1] != (1, d) or shapes[2] != (1, d) or shapes[3] != (1,):
        imp.fail(f"has max_detections {d} and outputs of shapes {', '.join(str(list(s)) for s in shapes)}, where "
                 f"TensorFlow Lite Micro writes [1, {d}, 4], [1, {d}], [1, {d}] and [1]", True)
    names = []
    for o in outs:
        if imp.dtype(o) != "float32":
            imp.fail(f"has a {imp.dtype(o)} output {imp.tname(o)}, where TensorFlow Lite Micro writes float32", True)
        name = imp.tname(o)
        imp.tensors[name] = Tensor(name, imp.shape(o), "float32")
        names.append(name)
    inputs = tuple(imp.value(i, "plain") for i in ins)
    node = Node(f"{imp.label.split(' (')[0].replace(' ', '_')}:{names[0]}", "DetectionPostProcess", inputs,
                tuple(names), attrs)
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    for (shape, dtype), name in zip(registry.get(node.op).infer(scope, node), names):
        t = imp.tensors[name]
        if (tuple(shape), dtype) != (t.shape, t.dtype):
            imp.fail(f"makes {t.dtype}{list(t.shape)} where mcudeploy's DetectionPostProcess gives "
                     f"{dtype}{list(shape)}", True)
    imp.nodes.append(node)
