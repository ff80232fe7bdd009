"""TFLite's custom operator TFLite_Detection_PostProcess from hand-built .tflite files
(tests/conformance/tflite_detection.py): the committed conformance cases and more made here (ties in the scores,
several classes, detection counts and thresholds, extra box coordinates, anchors given at run time), each bit for
bit TensorFlow Lite Micro (the oracle), mcudeploy's numpy reference and the C, on the host and on qemu-m4; the
refusals in one sentence naming the operator.

Bit for bit means the float32 outputs' bits, except the rows past the count of the fast NMS, which TensorFlow Lite
Micro leaves as they were (mcudeploy writes zeros there, as TensorFlow Lite Micro's regular NMS does)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.check.tflm import run_tflm
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.errors import InvalidModelError, MCUDeployError, UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ops.detection import scratch_bytes
from mcudeploy.reference import run_sequence
from tests.conformance import tflite_cases as tc
from tests.conformance.tflite_detection import CUSTOM, anchors, detection_model, options

CASES = [c for c in tc.cases() if c.home == "detection"]
LABEL = f"operator 0 (CUSTOM {CUSTOM})"



def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, np.float32)).view(np.uint32)


def _same(c_out, ref_out, want, fast: bool, where: str) -> None:
    """One call's four outputs: the C's bits are the reference's, and TFLite Micro's (for the fast NMS up to its
    count; the C's rows past it are zeros)."""
    count = int(np.asarray(want[3]).ravel()[0])
    for j, (c, r, w) in enumerate(zip(c_out, ref_out, want)):
        w = np.asarray(w)
        c, r = np.asarray(c).reshape(w.shape), np.asarray(r).reshape(w.shape)
        assert np.array_equal(_bits(c), _bits(r)), f"{where}, output {j}: the C is not the numpy reference"
        if fast and j < 3:
            assert not np.any(_bits(c[:, count:])), f"{where}, output {j}: rows past the count are not zeros"
            c, w = c[:, :count], w[:, :count]
        assert np.array_equal(_bits(c), _bits(w)), \
            f"{where}, output {j}: the C {c.tolist()} is not TensorFlow Lite Micro's {w.tolist()}"


def _run(tmp_path, path, samples: list[dict], fast, board: str = "host") -> list:
    """The file through TFLite Micro (one interpreter, the calls in order), the numpy reference and the C (the host,
    sanitized, or a board under QEMU): every call bit for bit. ``fast``: whether the operator's NMS is the fast one,
    or a tuple of that per operator (four outputs each, in order). Returns TFLite Micro's outputs."""
    fast = (fast,) if isinstance(fast, bool) else tuple(fast)
    names = list(samples[0])
    want = run_tflm(path, names, samples)
    compiled = compile_model(path, board)
    named = [{n: s[n] for n in compiled.graph.model_inputs()} for s in samples]
    if board == "host":
        got = run_compiled_on_host(compiled, named, tmp_path / "c", sanitize=True)
    else:
        from mcudeploy.device.runner import run_on_board
        got = run_on_board(compiled, named, workdir=tmp_path / "fw").outputs
    ref = run_sequence(compiled.graph, named)
    assert len(got) == len(want) == len(samples)
    for k, (c, r, w) in enumerate(zip(got, ref, want)):
        assert len(c) == len(r) == len(w) == 4 * len(fast)
        for j, f in enumerate(fast):
            _same(c[4 * j:4 * j + 4], r[4 * j:4 * j + 4], w[4 * j:4 * j + 4], f, f"call {k}, operator {j}")
    return want


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance_case_bit_for_bit_on_the_host(case, need_tflm, tmp_path):
    samples = tc.samples(case)
    fast = "-fast-" in case.name
    want = _run(tmp_path, case.path, [{"box_encodings": s[0], "class_predictions": s[1]} for s in samples], fast)
    assert all(int(w[3][0]) > 0 for w in want)


def test_the_cases_cover_both_nms_and_the_background_column():
    names = [c.name for c in CASES]
    assert any("-fast-" in n for n in names) and any("-regular-" in n for n in names)
    assert any("-nobg-" in n for n in names) and any("-nobg-" not in n for n in names)


def _samples(n: int, columns: int, calls: int, seed: int, coords: int = 4, levels: int = 0,
             anchor_values=None) -> list[dict]:
    """Box encodings over [-1, 1], scores over [0, 1]; ``levels``: scores of levels + 1 values only (k / levels),
    so that many tie."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(calls):
        scores = rng.uniform(0.0, 1.0, (1, n, columns))
        if levels:
            scores = rng.integers(0, levels + 1, (1, n, columns)) / levels
        sample = {"box_encodings": rng.uniform(-1.0, 1.0, (1, n, coords)).astype(np.float32),
                  "class_predictions": scores.astype(np.float32)}
        if anchor_values is not None:
            sample["anchors"] = anchor_values
        out.append(sample)
    return out


@pytest.mark.parametrize("n, classes, background, regular, d, kw, levels", [
    (20, 3, True, False, 6, {}, 4),  # ties: scores in quarters
    (20, 3, True, True, 6, {}, 4),
    (30, 4, False, True, 10, {"detections_per_class": 2, "score_threshold": 0.25}, 4),
    (30, 2, True, True, 4, {"detections_per_class": 100, "iou_threshold": 0.3}, 2),  # halves: ties across classes
    (9, 1, True, False, 3, {"score_threshold": 0.5, "iou_threshold": 0.2}, 0),
    (25, 6, True, False, 7, {"score_threshold": 0.7}, 8),
    (25, 6, True, True, 12, {"detections_per_class": 4, "score_threshold": 0.0, "iou_threshold": 0.9}, 8),
    (15, 2, True, True, 40, {"score_threshold": 0.6}, 0),  # fewer detections than max_detections
    (15, 2, False, False, 40, {"score_threshold": 0.6}, 0),
    (12, 3, True, True, 5, {"score_threshold": 1.5}, 0),  # no score above the threshold: no detection
    (40, 5, True, False, 8, {"scales": (3.0, 7.0, 1.5, 2.5)}, 0),
    (16, 3, True, True, 5, {"score_threshold": 0.5}, 1),  # scores 0 or 1: every kept one ties
])
def test_more_cases_in_sequence(tmp_path, need_tflm, n, classes, background, regular, d, kw, levels):
    opts = options(d, classes, regular, **kw)
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(n, classes, opts, background).build())
    samples = _samples(n, classes + background, 4, seed=n * 31 + classes + d, levels=levels)
    want = _run(tmp_path, path, samples, not regular)
    counts = [int(w[3][0]) for w in want]
    if kw.get("score_threshold", 0.3) > 1:
        assert counts == [0] * 4
    else:
        assert all(0 < c <= d for c in counts), counts


# TensorFlow Lite Micro's own example (its detection_postprocess_test.cc): six boxes in centre-size encoding over
# anchors at x = 0.5, 10.5 and 100.5, two classes after the background, 3 detections, 1 per class
SIX_BOXES = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]], np.float32)
SIX_SCORES = np.array([0, .9, .8, 0, .75, .72, 0, .6, .5, 0, .93, .95, 0, .5, .4, 0, .3, .2], np.float32)
SIX_ANCHORS = np.array([[0.5, x, 1.0, 1.0] for x in (0.5, 0.5, 0.5, 10.5, 10.5, 100.5)], np.float32)


@pytest.mark.parametrize("regular, scores", [(False, (0.95, 0.9, 0.3)), (True, (0.95, 0.93))])
def test_tflite_micro_example(tmp_path, need_tflm, regular, scores):
    """Its goldens (within the 0.1 its regular test allows: the second detection is class 0's 0.93 of the box at
    x = 10, as TensorFlow Lite Micro computes it), and bit for bit."""
    opts = options(3, 2, regular, score_threshold=0.0, iou_threshold=0.5, detections_per_class=1)
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(6, 2, opts, anchor_data=SIX_ANCHORS).build())
    samples = [{"box_encodings": SIX_BOXES.reshape(1, 6, 4), "class_predictions": SIX_SCORES.reshape(1, 6, 3)}]
    want = _run(tmp_path, path, samples, not regular)[0]
    assert int(want[3][0]) == len(scores)
    assert want[2][0, :len(scores)].tolist() == np.array(scores, np.float32).tolist()


def test_more_box_coordinates_and_anchors_at_run_time(tmp_path, need_tflm):
    """Box encodings of 6 coordinates (the last two unread, as keypoints are) and the anchors a model input."""
    n = 18
    opts = options(5, 3, True)
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(n, 3, opts, coords=6, anchor_input=True).build())
    compiled_inputs = import_model(path).model_inputs()
    assert "anchors" in compiled_inputs
    _run(tmp_path, path, _samples(n, 4, 3, seed=5, coords=6, anchor_values=anchors(n, seed=3)), False)


def test_more_anchors_than_boxes(tmp_path, need_tflm):
    """Anchors [N + 6, 4]: TensorFlow Lite Micro reads the first N, and so does mcudeploy."""
    n = 14
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(n, 2, options(4, 2, True), anchor_data=anchors(n + 6, seed=9)).build())
    _run(tmp_path, path, _samples(n, 3, 2, seed=6), False)


def test_options_without_the_defaulted_keys(tmp_path, need_tflm):
    """No detections_per_class (100) nor use_regular_nms (false: the fast NMS), as TensorFlow Lite Micro reads them;
    keys it does not read (the exporter's _output_quantized and _support_output_type_float_in_quantized_op) ignored,
    an integer option written as a float truncated, a float one written as an integer converted."""
    opts = options(4, 2, False, drop=("detections_per_class", "use_regular_nms"))
    opts.update({"_output_quantized": True, "_support_output_type_float_in_quantized_op": True,
                 "num_classes": 2.7, "y_scale": 10})
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(14, 2, opts).build())
    attrs = import_model(path).nodes[0].attrs
    assert (attrs["detections_per_class"], attrs["num_classes"], attrs["y_scale"]) == (100, 2, 10.0)
    _run(tmp_path, path, _samples(14, 3, 2, seed=8), True)


def test_a_box_of_no_height_gives_no_detection(tmp_path, need_tflm):
    """An anchor of height 0 makes a box TensorFlow Lite Micro's ValidateBoxes refuses: it fails the call, and
    mcudeploy's C and reference write no detection (zeros, a count of 0)."""
    a = anchors(10)
    a[4, 2] = 0.0
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(10, 2, options(3, 2, True), anchor_data=a).build())
    samples = _samples(10, 3, 1, seed=2)
    with pytest.raises(MCUDeployError, match="could not run"):
        run_tflm(path, list(samples[0]), samples)
    compiled = compile_model(path, "host")
    got = run_compiled_on_host(compiled, samples, tmp_path / "c", sanitize=True)[0]
    ref = run_sequence(compiled.graph, samples)[0]
    for c, r in zip(got, ref):
        assert not np.any(_bits(c)) and not np.any(_bits(r))


def test_the_scratch_is_planned():
    """The kernel's working memory is the node's scratch, in the arena (no allocation in the C)."""
    source = (Path(__file__).resolve().parents[1] / "firmware" / "kernels" / "detection.c").read_text()
    assert not re.search(r"\b(malloc|calloc|realloc|alloca)\s*\(", source)
    assert scratch_bytes(24, 5, 100, True) == 4 * (4 * 24 + 2 * 24 + 24 + 4 * 5) + 24
    assert scratch_bytes(24, 5, 100, False) == 4 * (4 * 24 + 2 * 24 + 5 + 2 * 24) + 24


def _ssd_tail(n: int, classes: int, regular: bool):
    """The end of a converted int8 SSD: int8 box encodings and class logits (the model's inputs), each through a
    DEQUANTIZE, the logits through a LOGISTIC, then TFLite_Detection_PostProcess."""
    import tflite

    from tests import tflite_build as tb

    model = detection_model(n, classes, options(5, classes, regular, score_threshold=0.4, detections_per_class=4))
    T = tb.T
    model.tensors += [T("boxes_q", (1, n, 4), "int8", (0.01,), (2,)),
                      T("logits_q", (1, n, classes + 1), "int8", (0.05,), (-10,)),
                      T("logits", (1, n, classes + 1), "float32")]
    model.ops = [tb.Op(tflite.BuiltinOperator.DEQUANTIZE, ("boxes_q",), ("box_encodings",)),
                 tb.Op(tflite.BuiltinOperator.DEQUANTIZE, ("logits_q",), ("logits",)),
                 tb.Op(tflite.BuiltinOperator.LOGISTIC, ("logits",), ("class_predictions",))] + model.ops
    model.inputs = ("boxes_q", "logits_q")
    return model


@pytest.mark.parametrize("regular", [False, True])
def test_the_end_of_an_int8_ssd(tmp_path, need_tflm, regular):
    """DEQUANTIZE, LOGISTIC and the post-processing in one model (planned together: the scratch among the other
    buffers), bit for bit on the host, and `mcudeploy run --check` PASSes on it."""
    from mcudeploy.cli import main

    n, classes = 24, 3
    path = tmp_path / "ssd_tail.tflite"
    path.write_bytes(_ssd_tail(n, classes, regular).build())
    rng = np.random.default_rng(4)
    samples = [{"boxes_q": rng.integers(-128, 128, (1, n, 4)).astype(np.int8),
                "logits_q": rng.integers(-128, 128, (1, n, classes + 1)).astype(np.int8)} for _ in range(3)]
    want = _run(tmp_path, path, samples, not regular)
    assert all(int(w[3][0]) > 0 for w in want)
    assert main(["run", str(path), "-b", "host", "--check"]) == 0


def test_run_check_passes_over_the_rows_the_fast_nms_leaves(tmp_path, need_tflm):
    """run --check's verdict (check_tflite_outputs) on a call with 6 detections, then calls with fewer: TensorFlow Lite
    Micro leaves the earlier call's detections in the rows past its count, mcudeploy writes zeros there; PASS, the
    rows up to the count bit for bit."""
    from mcudeploy import check

    n = 20
    path = tmp_path / "detection.tflite"
    path.write_bytes(detection_model(n, 3, options(6, 3, False, score_threshold=0.5)).build())
    samples = _samples(n, 4, 3, seed=21)
    samples[0]["class_predictions"] = (0.5 + samples[0]["class_predictions"] / 2).astype(np.float32)
    for s in samples[1:]:
        s["class_predictions"] = (s["class_predictions"] * 0.52).astype(np.float32)
    want = run_tflm(path, list(samples[0]), samples)
    counts = [int(w[3][0]) for w in want]
    assert counts[0] == 6 and counts[1] < 6, counts
    assert np.any(_bits(want[1][2][:, counts[1]:])), "TensorFlow Lite Micro left the rows past its count as they were"
    compiled = compile_model(path, "host")
    outputs = run_compiled_on_host(compiled, samples, tmp_path / "c")
    verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
    assert verdict.ok, verdict.lines()
    for c, w in zip(outputs, want):
        _same(c, c, w, True, "run --check")


def _fast_and_regular(n: int, classes: int):
    """Two TFLite_Detection_PostProcess on the same box encodings, scores and anchors: the fast NMS's outputs, then
    the regular NMS's (each its own scratch, planned in one arena)."""
    from tests import tflite_build as tb

    model = detection_model(n, classes, options(6, classes, False))
    regular = detection_model(n, classes, options(5, classes, True, detections_per_class=3))
    op = regular.ops[0]
    outs = tuple(f"{o}_regular" for o in op.outputs)
    model.tensors += [tb.T(f"{t.name}_regular", t.shape, t.dtype) for t in regular.tensors if t.name in op.outputs]
    model.ops.append(tb.Op(op.code, op.inputs, outs, custom=op.custom, custom_options=op.custom_options))
    model.outputs = model.outputs + outs
    return model


def test_fast_and_regular_in_one_model(tmp_path, need_tflm):
    n, classes = 20, 3
    path = tmp_path / "detection.tflite"
    path.write_bytes(_fast_and_regular(n, classes).build())
    _run(tmp_path, path, _samples(n, classes + 1, 3, seed=12, levels=4), (True, False))


@pytest.mark.qemu
def test_on_qemu_m4(tmp_path, need_qemu, need_tflm):
    """The fast and the regular NMS in one firmware, under QEMU's Cortex-M4 (newlib's exp, the FPU's float32
    arithmetic, double in software): bit for bit TensorFlow Lite Micro, ties in the scores (quarters)."""
    n, classes = 20, 3
    path = tmp_path / "detection.tflite"
    path.write_bytes(_fast_and_regular(n, classes).build())
    _run(tmp_path, path, _samples(n, classes + 1, 3, seed=13, levels=4), (True, False), board="qemu-m4")


# ---------------------------------------------------------------- refusals


def _refused(tmp_path, model, error, words) -> None:
    path = tmp_path / "bad.tflite"
    path.write_bytes(model.build())
    with pytest.raises(error, match=words) as info:
        import_model(path)
    assert LABEL in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize("opts, kw, error, words", [
    (options(5, 0, True), {}, InvalidModelError, "num_classes 0"),
    (options(5, 3, True), {"outputs": ((1, 6, 4), (1, 6), (1, 6), (1,))}, InvalidModelError,
     "max_detections 5 and outputs of shapes \\[1, 6, 4\\]"),
    (options(0, 3, True), {}, InvalidModelError, "max_detections 0"),
    (options(5, 3, True, iou_threshold=0.0), {}, InvalidModelError, "nms_iou_threshold 0"),
    (options(5, 3, True, iou_threshold=1.5), {}, InvalidModelError, "nms_iou_threshold 1.5"),
    (options(5, 3, True, detections_per_class=0), {}, InvalidModelError, "detections_per_class 0"),
    (options(5, 3, False, max_classes_per_detection=0), {}, InvalidModelError, "max_classes_per_detection 0"),
    (options(5, 3, False, max_classes_per_detection=2), {}, UnsupportedError,
     "max_classes_per_detection 2 with the fast NMS"),
    (options(5, 3, True, scales=(10.0, 0.0, 5.0, 5.0)), {}, InvalidModelError, "x_scale 0"),
    (options(5, 3, True, drop=("num_classes",)), {}, InvalidModelError, "no option num_classes"),
    (options(5, 3, True), {"box_dtype": "int8"}, UnsupportedError, "int8 box encodings"),
    (options(5, 3, True), {"score_dtype": "uint8"}, UnsupportedError, "uint8 class scores"),
    (options(5, 3, True), {"anchor_data": (anchors(12) * 100).astype(np.uint8)}, UnsupportedError,
     "uint8 anchors"),
    (options(5, 2, True), {}, InvalidModelError, "2 classes over 12 anchors takes class scores"),
])
def test_refusals_name_the_operator(tmp_path, opts, kw, error, words):
    _refused(tmp_path, detection_model(12, 3, opts, **kw), error, words)


def test_missing_anchors_are_refused(tmp_path):
    model = detection_model(12, 3, options(5, 3, True))
    model.ops[0].inputs = ("box_encodings", "class_predictions", "")
    _refused(tmp_path, model, InvalidModelError, "leaves out its anchors")
    model.ops[0].inputs = ("box_encodings", "class_predictions")
    _refused(tmp_path, model, InvalidModelError, "has 2 inputs and 4 outputs, where TensorFlow Lite Micro's takes 3")


@pytest.mark.parametrize("box_dtype, score_dtype", [("uint8", "uint8"), ("int8", "int8")])
def test_tflite_micro_fails_quantized_inputs_too(tmp_path, need_tflm, box_dtype, score_dtype):
    """The refusal follows TensorFlow Lite Micro, whose Eval fails on box encodings and scores that are not float."""
    path = tmp_path / "q.tflite"
    path.write_bytes(detection_model(8, 2, options(3, 2, True), box_dtype=box_dtype, score_dtype=score_dtype).build())
    rng = np.random.default_rng(0)
    sample = {"box_encodings": rng.integers(0, 100, (1, 8, 4)).astype(box_dtype),
              "class_predictions": rng.integers(0, 100, (1, 8, 3)).astype(score_dtype)}
    with pytest.raises(MCUDeployError, match="could not run"):
        run_tflm(path, list(sample), [sample])
    with pytest.raises(UnsupportedError, match=f"{box_dtype} box encodings"):
        import_model(path)
