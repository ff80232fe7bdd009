"""DetectionPostProcess: TFLite's custom operator TFLite_Detection_PostProcess (the end of an SSD detector), as
TensorFlow Lite Micro computes it (kernels/detection_postprocess.cc); firmware/kernels/detection.c.

Inputs: box encodings [1, N, B] (B >= 4: y, x, h, w first, the rest unread), class scores [1, N, C] (C = classes,
or classes + 1 with the background class first, which is never detected), anchors [N, 4] (y, x, h, w; rows past N,
if any, unread), all float32.
Outputs, all float32: boxes [1, D, 4] (ymin, xmin, ymax, xmax), classes [1, D], scores [1, D], count [1].
Attributes: num_classes, max_detections (D), detections_per_class, regular (0: fast NMS, 1: regular NMS),
score_threshold, iou_threshold, and the four scales y_scale, x_scale, h_scale, w_scale (float32 values).

Decoding, per anchor, in double and rounded once to float32 (as TFLite Micro does):

    yc = y / y_scale * ah + ay      half_h = 0.5 exp(h / h_scale) ah      (x, w alike)
    box = (yc - half_h, xc - half_w, yc + half_h, xc + half_w)           (float32 differences)

Non-maximum suppression over one column of scores s, keeping at most L boxes: the anchors with s >= the score
threshold, in decreasing score, ties in increasing anchor index (a stable sort of the kept anchors); greedily, the
first still in play is selected and every later one whose IoU with it is above the IoU threshold leaves play
(IoU in float32: areas (ymax - ymin)(xmax - xmin), 0 where either area is <= 0, the intersection's sides clamped
at 0, intersection / (area_i + area_j - intersection)); it stops at L selected.

- fast (class-agnostic): each anchor's score is its best class's (the first of the highest), suppression runs once
  over those with L = D, and the i-th selected anchor is detection i (its best class, that score). Rows past the
  count are zeros (TensorFlow Lite Micro leaves them as they were).
- regular: suppression runs per class with L = detections_per_class; after each class, the detections so far
  followed by the class's selections are ordered by decreasing score, ties by that position (earlier classes
  first), and the first D kept. Rows past the count are zeros, as in TensorFlow Lite Micro.

The count is a float. Where a decoded box has ymin >= ymax or xmin >= xmax (an anchor of no height, an exp that
underflows), TensorFlow Lite Micro fails the call; mcudeploy's kernel then writes no detection (zeros, a count of 0).
With a NaN score the order TensorFlow Lite Micro's sorts give is not defined, and is not reproduced.

The kernel's working memory (``scratch``, always given: the node has no kernel without it): the decoded boxes, the
kept anchors and a merge buffer, the anchors selected, the fast NMS's best scores and classes or the regular NMS's
running detections, and the in-play flags (scratch_bytes).
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ops.base import Call, Op, Struct, require, require_valid
from mcudeploy.ops.registry import register

F32 = np.float32


def attrs_of(node) -> dict:
    return {k: node.attr(k) for k in ("num_classes", "max_detections", "detections_per_class", "regular",
                                      "score_threshold", "iou_threshold", "y_scale", "x_scale", "h_scale",
                                      "w_scale")}


def _exp(v: float) -> float:
    """libm's exp of a double: inf where it overflows (Python raises)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def decode(boxes: np.ndarray, anchors: np.ndarray, scales) -> np.ndarray:
    """[N, 4] float32 corners of box encodings [N, B] against anchors [N or more, 4]: every step in float64 as
    TFLite Micro's doubles (exp libm's, as the C's), rounded once to float32, the corners float32 differences."""
    sy, sx, sh, sw = (float(F32(s)) for s in scales)
    n = boxes.shape[0]
    e = boxes[:, :4].astype(np.float64)
    an = anchors[:n, :4].astype(np.float64)
    with np.errstate(all="ignore"):
        yc = (e[:, 0] / sy * an[:, 2] + an[:, 0]).astype(F32)
        xc = (e[:, 1] / sx * an[:, 3] + an[:, 1]).astype(F32)
        eh = np.array([_exp(v) for v in (e[:, 2] / sh).tolist()], np.float64)
        ew = np.array([_exp(v) for v in (e[:, 3] / sw).tolist()], np.float64)
        hh = (0.5 * eh * an[:, 2]).astype(F32)
        hw = (0.5 * ew * an[:, 3]).astype(F32)
        return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1).astype(F32)


def valid(corners: np.ndarray) -> bool:
    """TFLite Micro's ValidateBoxes: no box with ymin >= ymax or xmin >= xmax (a NaN passes)."""
    return not bool(np.any((corners[:, 0] >= corners[:, 2]) | (corners[:, 1] >= corners[:, 3])))


def ious(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU in float32 of box ``a`` (the one selected) with each of boxes ``b`` [M, 4], as TFLite Micro's
    ComputeIntersectionOverUnion(a, b): std::max(p, q) is q where p < q, else p; std::min(p, q) q where q < p."""
    zero = F32(0.0)
    with np.errstate(all="ignore"):
        area_a = F32((a[2] - a[0]) * (a[3] - a[1]))
        area_b = ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])).astype(F32)
        y0 = np.where(a[0] < b[:, 0], b[:, 0], a[0])
        x0 = np.where(a[1] < b[:, 1], b[:, 1], a[1])
        y1 = np.where(b[:, 2] < a[2], b[:, 2], a[2])
        x1 = np.where(b[:, 3] < a[3], b[:, 3], a[3])
        h, w = (y1 - y0).astype(F32), (x1 - x0).astype(F32)
        inter = (np.where(h < zero, zero, h) * np.where(w < zero, zero, w)).astype(F32)
        out = (inter / ((area_a + area_b).astype(F32) - inter)).astype(F32)
        return np.where((area_a <= zero) | (area_b <= zero), zero, out).astype(F32)


def nms(corners: np.ndarray, scores: np.ndarray, limit: int, score_threshold, iou_threshold) -> list[int]:
    """The anchors selected over one column of scores, in the order selected."""
    thr, iou_thr = F32(score_threshold), F32(iou_threshold)
    kept = np.flatnonzero(scores >= thr)
    order = kept[np.argsort(-scores[kept], kind="stable")]  # ties keep the anchors' order
    out_size = min(len(kept), limit)
    live = np.ones(len(order), bool)
    selected: list[int] = []
    for a in range(len(order)):
        if len(selected) >= out_size:
            break
        if not live[a]:
            continue
        selected.append(int(order[a]))
        live[a] = False
        live[a + 1:] &= ~(ious(corners[order[a]], corners[order[a + 1:]]) > iou_thr)
    return selected


def reference(boxes: np.ndarray, scores: np.ndarray, anchors: np.ndarray, a: dict) -> list[np.ndarray]:
    n, columns = scores.shape[1], scores.shape[2]
    k, d = int(a["num_classes"]), int(a["max_detections"])
    offset = columns - k
    out_boxes, out_classes = np.zeros((1, d, 4), F32), np.zeros((1, d), F32)
    out_scores, count = np.zeros((1, d), F32), np.zeros((1,), F32)
    corners = decode(boxes[0], anchors, (a["y_scale"], a["x_scale"], a["h_scale"], a["w_scale"]))
    if not valid(corners):
        return [out_boxes, out_classes, out_scores, count]
    s = scores[0].astype(F32)
    rows: list[tuple[int, int, np.float32]] = []  # (anchor, class, score) per detection
    if int(a["regular"]):
        found: list[tuple[np.float32, int]] = []  # (score, flat index anchor x columns + column)
        for c in range(k):
            column = s[:, c + offset]
            picked = nms(corners, column, int(a["detections_per_class"]), a["score_threshold"], a["iou_threshold"])
            both = found + [(column[i], i * columns + c + offset) for i in picked]
            ranked = sorted(range(len(both)), key=lambda p: (-float(both[p][0]), p))[:min(len(both), d)]
            found = [both[p] for p in ranked]
        rows = [(flat // columns, flat % columns - offset, score) for score, flat in found]
    else:
        best = np.argmax(s[:, offset:offset + k], axis=1)  # the first of the highest
        top = s[np.arange(n), best + offset]
        picked = nms(corners, top, d, a["score_threshold"], a["iou_threshold"])
        rows = [(i, int(best[i]), top[i]) for i in picked]
    for r, (anchor, cls, score) in enumerate(rows):
        out_boxes[0, r] = corners[anchor]
        out_classes[0, r] = F32(cls)
        out_scores[0, r] = score
    count[0] = F32(len(rows))
    return [out_boxes, out_classes, out_scores, count]


def scratch_bytes(n: int, d: int, per_class: int, regular: bool) -> int:
    """mcud_detection_postprocess_f32's working memory (firmware/kernels/detection.c, in this order): the decoded
    corners, 4N floats; the kept anchors and a merge buffer, 2N ints; the anchors selected, L ints (L = min(D, N) for
    the fast NMS, min(detections_per_class, N) for the regular); fast: each anchor's best score and class, N floats
    and N ints; regular: the detections so far and their merge with a class's, (anchor, score) pairs, 4D words; then
    N in-play flags, a byte each, rounded up to a word."""
    limit = min(per_class if regular else d, n)
    words = 4 * n + 2 * n + limit + (4 * d if regular else 2 * n)
    return 4 * words + ((n + 3) // 4) * 4


@register
class DetectionPostProcess(Op):
    name = "DetectionPostProcess"

    def infer(self, graph, node):
        require_valid(len(node.inputs) == 3 and len(node.outputs) == 4 and all(node.inputs),
                      "a DetectionPostProcess takes box encodings, class scores and anchors, and gives boxes, "
                      "classes, scores and a count")
        boxes, scores, anchors = (graph[n] for n in node.inputs)
        for t, what in ((boxes, "box encodings"), (scores, "class scores"), (anchors, "anchors")):
            require(t.dtype == "float32", f"a DetectionPostProcess of {t.dtype} {what} is not supported (TensorFlow "
                                          f"Lite Micro's takes float32 only)")
        require_valid(len(boxes.shape) == 3 and boxes.shape[0] == 1 and boxes.shape[2] >= 4,
                      f"a DetectionPostProcess takes box encodings [1, anchors, 4 or more], not {list(boxes.shape)}")
        n = boxes.shape[1]
        k, d = int(node.attr("num_classes", 0)), int(node.attr("max_detections", 0))
        require_valid(k >= 1, f"a DetectionPostProcess needs num_classes of at least 1, not {k}")
        require_valid(d >= 1, f"a DetectionPostProcess needs max_detections of at least 1, not {d}")
        require_valid(len(scores.shape) == 3 and scores.shape[:2] == (1, n) and scores.shape[2] in (k, k + 1),
                      f"a DetectionPostProcess of {k} classes over {n} anchors takes class scores [1, {n}, {k}] or "
                      f"[1, {n}, {k + 1}] (a background class first), not {list(scores.shape)}")
        require_valid(len(anchors.shape) == 2 and anchors.shape[0] >= n and anchors.shape[1] == 4,
                      f"a DetectionPostProcess over {n} anchors takes anchors [{n}, 4] (or more rows, the first "
                      f"{n} read), not {list(anchors.shape)}")
        require_valid(not int(node.attr("regular", 0)) or int(node.attr("detections_per_class", 0)) >= 1,
                      "a regular DetectionPostProcess needs detections_per_class of at least 1")
        return [((1, d, 4), "float32"), ((1, d), "float32"), ((1, d), "float32"), ((1,), "float32")]

    def macs(self, graph, node):
        n = graph[node.inputs[0]].shape[1]
        passes = int(node.attr("num_classes")) if int(node.attr("regular", 0)) else 1
        return 8 * n + passes * n * n

    def scratch(self, graph, node):
        scores = graph[node.inputs[1]]
        return scratch_bytes(scores.shape[1], int(node.attr("max_detections")),
                             int(node.attr("detections_per_class", 1)), bool(int(node.attr("regular", 0))))

    def reference(self, graph, node, inputs):
        boxes, scores, anchors = inputs
        return reference(boxes, scores, anchors, attrs_of(node))

    def kernel(self, graph, node):
        a = attrs_of(node)
        return Call("mcud_detection_postprocess_f32", tuple(node.inputs) + tuple(node.outputs), Struct.of(
            "mcud_detection_params", num_classes=int(a["num_classes"]), max_detections=int(a["max_detections"]),
            per_class=int(a["detections_per_class"]), regular=int(a["regular"]),
            score_threshold=float(F32(a["score_threshold"])), iou_threshold=float(F32(a["iou_threshold"])),
            y_scale=float(F32(a["y_scale"])), x_scale=float(F32(a["x_scale"])), h_scale=float(F32(a["h_scale"])),
            w_scale=float(F32(a["w_scale"]))), scratch=self.scratch(graph, node))
