"""``run --dataset``: the deployed model on a data set (check/dataset.py), beside its reference and a float model.

Every sample runs on the deployed model (the host build, in a few processes for the progress bar; a board, all
in one session), on the reference (onnxruntime for an ONNX model, TensorFlow Lite Micro for a .tflite, LiteRT's
reference kernels where TFLite Micro cannot run it: check/tflite.py) and, given, on the float model (onnxruntime
or TFLite Micro, its inputs the deployed model's dequantized). Reported per output: the samples bit for bit the
reference and the largest difference (quantization steps, or absolute for float outputs), top-1 agreement with
the reference and the float model, and the mean absolute error from the float model on dequantized values;
with labels, the top-1 accuracy of the deployed model, the reference and the float model on the first output
with one score per class; the C against mcudeploy's numpy reference on every sample (the one judged figure:
exit status 1 where it differs); and the per-layer error on the worst sample (check/layers.py).
"""
from __future__ import annotations

import dataclasses
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from mcudeploy.check.dataset import Dataset
from mcudeploy.check.figures import is_classifier, output_step, real
from mcudeploy.check.layers import LayerReport, layer_errors
from mcudeploy.check.first_difference import against_reference
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph
from mcudeploy.progress import Bar

HOST_CHUNKS = 20  # the host build runs the samples in this many processes at most (the bar moves between them)
REFERENCE_CHUNK = 100  # samples per TensorFlow Lite Micro child process (each costs about a second to start)


@dataclass(frozen=True)
class OutputReport:
    name: str
    dtype: str
    unit: str  # "steps" (quantized outputs, or float ones of a dequantize) or "abs"
    exact: int  # samples whose output is bit for bit the reference's
    max_diff: float  # from the reference, over every sample
    top1: Optional[float]  # arg max agreement with the reference (outputs of one score per class)
    float_top1: Optional[float] = None
    float_mae: Optional[float] = None  # mean |deployed - float| on dequantized values

    def lines(self, samples: int, oracle: str) -> list[str]:
        unit = "step" if self.unit == "steps" and self.max_diff == 1 else self.unit
        top1 = f", top-1 agreement {self.top1:.1%}" if self.top1 is not None else ""
        out = [f"{self.name} ({self.dtype}) vs {oracle}: {self.exact} of {samples} samples bit for bit, max "
               f"{self.max_diff:g} {unit}{top1}"]
        if self.float_mae is not None:
            top1 = f"top-1 agreement {self.float_top1:.1%}, " if self.float_top1 is not None else ""
            out.append(f"{self.name} ({self.dtype}) vs the float model: {top1}mean abs error {self.float_mae:.4g}"
                       + (" (dequantized)" if self.dtype != "float32" else ""))
        return out


@dataclass(frozen=True)
class Accuracy:
    output: str
    classes: int
    deployed: float
    reference: float
    float_model: Optional[float]


@dataclass(frozen=True)
class Validation:
    source: str
    samples: int
    board: str
    oracle: str  # the reference's name
    outputs: tuple[OutputReport, ...]
    accuracy: Optional[Accuracy]
    not_exact: dict  # output -> elements of the C that differ from mcudeploy's numpy reference, over all samples
    worst: int  # the sample the layers are shown for
    worst_name: str
    worst_why: str
    layers: LayerReport
    float_path: Optional[str] = None
    why_not_tflm: str = ""

    @property
    def ok(self) -> bool:
        return not any(self.not_exact.values())

    def lines(self) -> list[str]:
        labelled = "labelled" if self.accuracy is not None else "no labels"
        out = [f"data set {self.source}: {self.samples} sample(s), {labelled}; the model on {self.board}"]
        out += [f"the reference is {self.oracle}: {self.why_not_tflm}"] if self.why_not_tflm else []
        for o in self.outputs:
            out += o.lines(self.samples, self.oracle)
        a = self.accuracy
        if a is not None:
            text = (f"accuracy against the labels ({a.output}, top-1 of {a.classes} classes, {self.samples} samples): "
                    f"deployed on {self.board} {a.deployed:.1%}, {self.oracle} {a.reference:.1%}")
            out.append(text + (f", float model {a.float_model:.1%}" if a.float_model is not None else ""))
        if self.ok:
            out.append(f"the C vs mcudeploy's numpy reference: bit for bit on {self.samples} samples")
        else:
            bad = ", ".join(f"{n}: {k:,} element(s)" for n, k in self.not_exact.items() if k)
            out.append(f"the C vs mcudeploy's numpy reference: differs ({bad})")
        out.append(f"per-layer error on the worst sample, {self.worst} ({self.worst_name}: {self.worst_why}):")
        out += ["  " + line for line in self.layers.lines()]
        return out

    def as_dict(self) -> dict:
        def clean(value):
            if isinstance(value, float) and not math.isfinite(value):
                return None if math.isnan(value) else "inf"
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        return clean({"dataset": self.source, "samples": self.samples, "board": self.board, "reference": self.oracle,
                      "why_not_tflm": self.why_not_tflm or None, "float_model": self.float_path,
                      "outputs": [dataclasses.asdict(o) for o in self.outputs],
                      "accuracy": dataclasses.asdict(self.accuracy) if self.accuracy else None,
                      "c_vs_numpy_reference": {"bit_for_bit": self.ok, "differing_elements": self.not_exact},
                      "worst_sample": {"index": self.worst, "name": self.worst_name, "why": self.worst_why},
                      "layers": [dataclasses.asdict(layer) for layer in self.layers.layers],
                      "layers_float_source": self.layers.float_source, "layers_oracle": self.layers.oracle})


# ---------------------------------------------------------------------------------------------- running


def run_deployed(compiled, samples: Sequence[dict], bar: Bar, pool=None, sanitize: bool = False) -> tuple[list, object]:
    """(outputs per sample, the BoardRun or None) of the deployed model: the host build in up to HOST_CHUNKS
    processes (one for a stateful model, whose samples are one sequence), or a board, every sample in one
    session (its emulator or serial link opened once). ``sanitize``: the host build's sanitized one."""
    if compiled.board.kind != "host":
        from mcudeploy.device.runner import run_on_board

        board_run = run_on_board(compiled, samples, pool=pool, on_sample=bar.advance)
        return board_run.outputs, board_run
    from mcudeploy.codegen import write_project
    from mcudeploy.device import host
    from mcudeploy.device.labels import model_name, op_labels

    sanitized = (model_name(compiled), op_labels(compiled)) if sanitize else None
    size = len(samples) if compiled.graph.states else max(1, -(-len(samples) // HOST_CHUNKS))
    outputs = []
    with tempfile.TemporaryDirectory(prefix="mcud-dataset-") as tmp:
        exe = host.build(write_project(compiled, Path(tmp), sanitize=sanitize), compiled.board, sanitize=sanitize)
        for start in range(0, len(samples), size):
            outputs += host.run(exe, compiled.graph, samples[start:start + size], sanitized=sanitized)
            bar.advance(len(samples[start:start + size]))
    return outputs, None


def reference_outputs(model, graph: Graph, samples: Sequence[dict], bar: Bar) -> tuple[list, str, str]:
    """(the reference's outputs per sample in the order of ``graph``'s outputs, its name, why TFLite Micro was
    not it): onnxruntime for an ONNX model, one session; TFLite Micro (or LiteRT) for a .tflite, in child
    processes of REFERENCE_CHUNK samples (one for a stateful model)."""
    from mcudeploy.frontend import is_tflite_model

    if not is_tflite_model(model):
        from mcudeploy.check.onnxrt import session_of, model_proto, onnx_feeds

        proto = model_proto(model)
        session = session_of(proto)
        outputs = []
        for s in samples:
            outputs.append(session.run(list(graph.model_outputs()), onnx_feeds(proto, graph, s)))
            bar.advance()
        return outputs, "onnxruntime", ""
    from mcudeploy.check.tflite import reference_outputs as tflite_outputs

    size = len(samples) if graph.states else REFERENCE_CHUNK
    outputs, oracle, why = [], "", ""
    for start in range(0, len(samples), size):
        part, oracle, why = tflite_outputs(model, graph.model_inputs(), samples[start:start + size])
        outputs += part
        bar.advance(len(part))
    return outputs, oracle, why


@dataclass(frozen=True)
class FloatReference:
    """A float model matched with the deployed one by position (as many inputs and outputs, the same shapes):
    its lowered graph (for the per-layer error) and how to run it."""

    path: str
    graph: Graph
    run: Callable[[Graph, Sequence[dict]], list]  # (the deployed graph, its samples) -> outputs per sample


def float_reference(path: str, graph: Graph) -> FloatReference:
    """``path`` (ONNX, run by onnxruntime: check/figures.float_model; or .tflite, run by TFLite Micro) matched
    with ``graph``, the deployed model; MCUDeployError in one sentence where it does not match."""
    from mcudeploy.frontend import import_model, is_tflite_model
    from mcudeploy.compile import lower

    try:
        lowered = lower(import_model(path))
    except MCUDeployError as exc:
        raise MCUDeployError(f"--float-model: {exc}") from None
    if not is_tflite_model(path):
        from mcudeploy.check.figures import float_model

        model = float_model(path, graph)
        return FloatReference(path, lowered, model.run)
    ins, outs = lowered.model_inputs(), lowered.model_outputs()
    if len(ins) != len(graph.model_inputs()) or len(outs) != len(graph.model_outputs()):
        raise MCUDeployError(f"--float-model {path} has {len(ins)} input(s) and {len(outs)} output(s); the model has "
                             f"{len(graph.model_inputs())} and {len(graph.model_outputs())}")
    pairs = list(zip(ins, graph.model_inputs(), ["input"] * len(ins))) + \
        list(zip(outs, graph.model_outputs(), ["output"] * len(outs)))
    for mine, name, kind in pairs:
        if lowered[mine].shape != graph[name].shape:
            raise MCUDeployError(f"--float-model {path}: {kind} {mine} has shape {list(lowered[mine].shape)}; the "
                                 f"model's {kind} {name} is {list(graph[name].shape)}")
        if kind == "input" and lowered[mine].dtype != "float32":
            raise MCUDeployError(f"--float-model {path}: input {mine} is {lowered[mine].dtype}, not float32")

    def run(deployed: Graph, samples: Sequence[dict]) -> list:
        from mcudeploy.check.tflite import reference_outputs as tflite_outputs

        feeds = [{mine: real(deployed, name, s[name]).astype(np.float32)
                  for mine, name in zip(ins, deployed.model_inputs())} for s in samples]
        return tflite_outputs(path, ins, feeds)[0]

    return FloatReference(path, lowered, run)


# ---------------------------------------------------------------------------------------------- figures


def _stack(graph: Graph, name: str, k: int, outputs) -> np.ndarray:
    return np.stack([np.asarray(o[k]).reshape(graph[name].shape) for o in outputs]).astype(np.float64)


def _argmax(x: np.ndarray) -> np.ndarray:
    return np.argmax(x.reshape(len(x), -1), -1)


def output_reports(graph: Graph, outputs, ref, floats=None) -> tuple[list[OutputReport], np.ndarray]:
    """Per output, its report; and per sample the error that picks the worst one (mean abs error from the float
    model of the first output where given, else its largest difference from the reference)."""
    reports, worst_by = [], None
    for k, name in enumerate(graph.model_outputs()):
        t = graph[name]
        got, want = _stack(graph, name, k, outputs), _stack(graph, name, k, ref)
        step = output_step(graph, name)
        per = 1.0 if t.dtype != "float32" or step is None else step
        diff = np.abs(got - want).reshape(len(got), -1) / per
        if t.dtype == "float32" and step is not None:
            diff = np.round(diff, 3)
        classifier = is_classifier(t.shape)
        fig = dict(name=name, dtype=t.dtype, unit="steps" if step is not None else "abs",
                   exact=int(np.sum(np.all(got == want, axis=tuple(range(1, got.ndim))))),
                   max_diff=float(diff.max(initial=0)),
                   top1=float(np.mean(_argmax(got) == _argmax(want))) if classifier else None)
        sample_error = diff.max(axis=1, initial=0)
        if floats is not None:
            flt = _stack(graph, name, k, floats)
            err = np.abs(real(graph, name, got) - flt).reshape(len(got), -1)
            fig.update(float_mae=float(err.mean()),
                       float_top1=float(np.mean(_argmax(got) == _argmax(flt))) if classifier else None)
            sample_error = err.mean(axis=1)
        if worst_by is None:
            worst_by = sample_error
        reports.append(OutputReport(**fig))
    return reports, worst_by


def label_output(graph: Graph, labels: np.ndarray, source: str) -> int:
    """The position of the output ``labels`` are for: the first with one score per class; MCUDeployError where
    there is none, or a label is not one of its classes."""
    names = graph.model_outputs()
    k = next((k for k, n in enumerate(names) if is_classifier(graph[n].shape)), None)
    if k is None:
        raise MCUDeployError(f"--dataset {source} has labels, but no output of the model gives one score per class "
                             f"({', '.join(f'{n} {list(graph[n].shape)}' for n in names)})")
    name = names[k]
    classes = graph[name].size
    bad = np.flatnonzero((labels < 0) | (labels >= classes))
    if len(bad):
        raise MCUDeployError(f"--dataset {source}: sample {bad[0]} has label {labels[bad[0]]}; output {name} has "
                             f"{classes} classes (labels 0..{classes - 1})")
    return k


def accuracy(graph: Graph, labels: np.ndarray, source: str, outputs, ref, floats=None) -> Accuracy:
    """Top-1 accuracy against ``labels`` on the first output with one score per class."""
    k = label_output(graph, labels, source)
    name = graph.model_outputs()[k]

    def top1(values) -> float:
        return float(np.mean(_argmax(_stack(graph, name, k, values)) == labels))

    return Accuracy(name, graph[name].size, top1(outputs), top1(ref), top1(floats) if floats is not None else None)


def _oracle_layers(model, reference: Graph, sample: dict) -> Optional[tuple[str, dict]]:
    """onnxruntime's value of every tensor of an ONNX model it shows on ``sample`` (None for a .tflite, whose
    TensorFlow Lite Micro shows only outputs, and for a stateful model, whose state onnxruntime does not carry)."""
    from mcudeploy.frontend import is_tflite_model

    if is_tflite_model(model) or reference.states:
        return None
    from mcudeploy.check.onnxrt import tensor_values

    return "onnxruntime", tensor_values(model, reference, [sample])[0]


def validate(compiled, reference: Graph, model, data: Dataset, float_ref: Optional[FloatReference] = None,
             pool=None, stream=None, sanitize: bool = False) -> tuple[Validation, list, object]:
    """Run ``data`` through the deployed plan ``compiled`` (of ``model``; ``reference`` the lowered model before
    any split), the reference and ``float_ref``, with a progress bar on ``stream`` (default stderr); return the
    report, the deployed outputs per sample, and the BoardRun (None on the host). ``sanitize``: the host build
    with AddressSanitizer and UndefinedBehaviorSanitizer."""
    graph, samples = compiled.graph, data.samples
    if data.labels is not None:
        label_output(graph, data.labels, data.source)  # refused before any long work
    steps = len(samples) * (3 if float_ref is None else 4)  # deployed, reference, numpy reference (, float)
    with Bar(steps, f"{len(samples)} samples on {compiled.board.name}", stream) as bar:
        outputs, board_run = run_deployed(compiled, samples, bar, pool, sanitize)
        bar.stage("the reference")
        ref, oracle, why = reference_outputs(model, reference, samples, bar)
        floats = None
        if float_ref is not None:
            bar.stage("the float model")
            floats = float_ref.run(reference, samples)
            bar.advance(len(samples))
        bar.stage("mcudeploy's numpy reference")
        not_exact, _ = against_reference(compiled, reference, samples, outputs)
        bar.advance(len(samples))
        reports, worst_by = output_reports(graph, outputs, ref, floats)
        worst = int(np.argmax(worst_by))  # the first of the largest
        why_worst = ("the largest mean abs error from the float model" if floats is not None else
                     f"the largest difference from {oracle}") + f" on {graph.model_outputs()[0]}"
        if float(worst_by[worst]) == 0:
            why_worst = f"every sample's outputs equal {oracle}'s; the first shown"
        bar.stage(f"per-layer error on sample {worst}")
        layers = layer_errors(compiled, reference, samples[worst], samples[:worst] if graph.states else (),
                              float_ref.graph if float_ref is not None else None,
                              _oracle_layers(model, reference, samples[worst]))
    acc = accuracy(graph, data.labels, data.source, outputs, ref, floats) if data.labels is not None else None
    result = Validation(data.source, len(samples), compiled.board.name, oracle, tuple(reports), acc, not_exact, worst,
                        data.names[worst], why_worst, layers, float_ref.path if float_ref else None, why)
    return result, outputs, board_run
