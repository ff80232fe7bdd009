"""The verdict of ``run --check``.

PASS when (1) every operator of the lowered model, given onnxruntime's values of its inputs, agrees
with onnxruntime's output: within one quantization step, and the nearest step to onnxruntime's
unrounded value at all but a few elements (check/local.py: what mcudeploy computes is what the
model says), and (2) the generated C equals mcudeploy's numpy reference bit for bit (float: within
FLOAT_REL of its largest magnitude) on every input (the C computes what mcudeploy means). Where (2) fails, the host build
is traced to name the first operator that differs (check/first_difference.py).

The end-to-end distance from onnxruntime (and from a float model) is reported, not judged: integer
rounding drifts through a deep network although every operator is right.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from mcudeploy.check import local
from mcudeploy.check.figures import FloatModel, OutputFigures, end_to_end
from mcudeploy.check.onnxrt import Model, model_proto, quantized_from, tensor_values
from mcudeploy.check.first_difference import Difference, against_reference, first_difference, reference_lines
from mcudeploy.ir import Graph


@dataclass(frozen=True)
class Verdict:
    samples: int
    local: local.LocalReport
    outputs: list[OutputFigures]
    not_exact: dict  # output -> elements that differ from the numpy reference (over all samples)
    difference: Optional[Difference] = None  # where the C first differs (traced on the host)
    traced: bool = False  # the host build was traced (and found ``difference``, or nothing)

    @property
    def exact(self) -> bool:
        return not any(self.not_exact.values())

    @property
    def ok(self) -> bool:
        return self.local.ok and self.exact

    def lines(self) -> list[str]:
        out = self.local.lines() + [o.line() for o in self.outputs]
        out += reference_lines(self.not_exact, self.difference, self.traced)
        verdict = "PASS" if self.ok else "FAIL"
        out.append(f"{verdict} on {self.samples} input(s); pass = every operator, given the same inputs, within "
                   f"{local.STEPS} step of onnxruntime and the nearest step to its unrounded value at "
                   f">= {1 - local.OFF_SHARE:.0%} of the elements (float: {local.FLOAT_REL:g} relative), and the C "
                   f"bit for bit the numpy reference; end-to-end figures not judged")
        return out


def check_outputs(model: Model, compiled, outputs: Sequence[Sequence[np.ndarray]], samples,
                  reference: Optional[Graph] = None, float_model: Optional[FloatModel] = None,
                  trace: bool = True) -> Verdict:
    """The verdict on ``outputs`` (per sample, per output), what the C of ``compiled`` gave on
    ``samples``. ``model``: the ONNX model compiled; ``reference``: the lowered model before any split
    (default ``compiled.graph``); ``float_model``: a float model to report figures against (figures.float_model);
    ``trace``: where the C differs from the reference, trace the host build to find where."""
    graph = reference or compiled.graph
    model = model_proto(model)
    values = tensor_values(model, graph, samples)
    agreement = local.compare_operators(graph, values, quantized_from(model))
    ort_outputs = [[v[o] for o in graph.outputs] for v in values]
    floats = float_model.run(graph, samples) if float_model is not None else None
    figures = end_to_end(compiled.graph, outputs, ort_outputs, floats)
    not_exact, first_bad = against_reference(compiled, graph, samples, outputs)
    difference = None
    if first_bad is not None and trace:
        difference = first_difference(compiled, samples[first_bad], graph)
    return Verdict(len(samples), agreement, figures, not_exact, difference, first_bad is not None and trace)
