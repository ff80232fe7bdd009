"""The pass criterion of ``run --check``: every operator of the lowered graph, given onnxruntime's
values of its inputs, computes onnxruntime's value of its output.

End to end, a deep int8 network drifts from onnxruntime although no operator is wrong: an
integer operator may round a near-tie the other way (its requantization is a fixed-point
multiply, onnxruntime's a float one), the operators after it carry the difference on, and a
sigmoid or softmax amplifies it; onnxruntime with and without its own graph optimisations
disagrees as much. On identical inputs, an operator is judged by two figures:

- at most STEPS (1) quantization step from onnxruntime's output at any element, and
- its result is the nearest step to onnxruntime's unrounded result (the float tensor the
  QuantizeLinear rounds, within NEAR of half a step, so either side of a near-tie is right) at
  all but OFF_SHARE of the elements. Every integer operator of mcudeploy rounds to the nearest
  step at every element of the MLPerf Tiny and zoo models; a wrong rounding (floor instead of
  round) misses at about half of them, although it stays within one step. Where onnxruntime
  shows no unrounded value (an operator ONNX runs on integers, e.g. an int8 Transpose), the
  elements that differ at all count instead.

Float operators: within FLOAT_REL of their output's largest magnitude. An operator whose output
onnxruntime does not show (no ONNX tensor of that name; none in the models tested, since the
lowering keeps ONNX names) is evaluated on the values it is given and compared where its result
reaches a tensor onnxruntime shows, as part of that operator (``merged``): a tie it rounds the
other way then shows multiplied by that operator's gain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.ir import DTYPES, Graph
from mcudeploy.ops import registry
from mcudeploy.reference import arguments
from mcudeploy.ops.requant import QRANGE

STEPS = 1  # quantized outputs: at most one step from onnxruntime at any element...
OFF_SHARE = 0.1  # ...and not the nearest step to its unrounded value at no more than this share
NEAR = 0.01  # steps: how far past half a step an element may be and still count as the nearest (float noise)
FLOAT_REL = 1e-4  # float outputs: relative to the output's largest magnitude (at least 1)


@dataclass(frozen=True)
class OpAgreement:
    """One operator against onnxruntime, over every sample."""

    node: str
    op: str
    unit: str  # "steps" (quantized), "exact" (other integers) or "rel" (float, see FLOAT_REL)
    max_diff: float  # from onnxruntime's output
    differ: int  # elements that differ from onnxruntime's output at all (float: by more than FLOAT_REL)
    off: int  # quantized: elements not the nearest step to onnxruntime's unrounded value
    count: int  # elements compared
    unrounded: bool  # onnxruntime showed the unrounded value (else ``off`` counts ``differ``)
    merged: tuple[str, ...] = ()  # operators onnxruntime shows no output of, compared as part of this one

    @property
    def ok(self) -> bool:
        if self.unit == "rel":
            return self.max_diff <= FLOAT_REL
        if self.unit == "exact":
            return self.max_diff == 0
        return self.max_diff <= STEPS and self.off <= OFF_SHARE * self.count

    def figure(self) -> str:
        if self.unit == "rel":
            return f"{self.max_diff:.2g} of its largest value"
        steps = f"{self.max_diff:g} step{'s' if self.max_diff != 1 else ''}"
        text = f"{steps} at {self.differ:,} of {self.count:,} elements"
        if self.unrounded and self.off:
            text += f", {self.off:,} not the nearest step to onnxruntime's unrounded value"
        elif self.unrounded and self.differ:
            text += ", all near-ties"
        return text

    def label(self) -> str:
        merged = f" (with {', '.join(short(m) for m in self.merged)})" if self.merged else ""
        return f"{self.op} {short(self.node)}{merged}"


@dataclass(frozen=True)
class LocalReport:
    ops: tuple[OpAgreement, ...]  # in graph order
    uncompared: tuple[str, ...]  # operators whose result reaches no tensor onnxruntime shows
    samples: int

    @property
    def ok(self) -> bool:
        return all(a.ok for a in self.ops)

    @property
    def failures(self) -> list[OpAgreement]:
        return [a for a in self.ops if not a.ok]

    @property
    def first_difference(self) -> Optional[OpAgreement]:
        """The first integer operator that differs from onnxruntime at all: where mcudeploy's run and
        onnxruntime's part, since every operator before it got and gave the same values."""
        return next((a for a in self.ops if a.unit != "rel" and a.max_diff > 0), None)

    def lines(self) -> list[str]:
        parts = [f"onnxruntime operator by operator (each given onnxruntime's values of its inputs): "
                 f"{len(self.ops)} compared"]
        if self.uncompared:
            parts[0] += f", {len(self.uncompared)} not shown by onnxruntime ({', '.join(self.uncompared)})"
        bad = self.failures
        if bad:
            more = f" (and {len(bad) - 1} more operator(s))" if len(bad) > 1 else ""
            return ["; ".join(parts + [f"{bad[0].label()} differs by {bad[0].figure()}{more}"])]
        ints = [a for a in self.ops if a.unit != "rel"]
        floats = [a for a in self.ops if a.unit == "rel"]
        first = self.first_difference
        if ints and first is None:
            parts.append("every integer operator gives onnxruntime's values exactly")
        elif ints:
            worst = _worst(ints)
            parts.append(f"the first to differ {first.label()} ({first.figure()})")
            if worst is not first:
                parts.append(f"the most {worst.label()} ({worst.figure()})")
        if floats:
            worst = _worst(floats)
            parts.append(f"float operators within {worst.max_diff:.2g} of their largest value ({worst.label()})"
                         if worst.max_diff else "every float operator gives onnxruntime's values exactly")
        return ["; ".join(parts)]


def short(name: str, width: int = 48) -> str:
    """A node name cut for a line of text (TensorFlow exports join a dozen names with ';')."""
    if len(name) <= width:
        return name
    head = name.split(";", 1)[0]
    return (head if len(head) < width else head[:width - 1]) + "…"


def _worst(ops: Sequence[OpAgreement]) -> OpAgreement:
    return max(ops, key=lambda a: (a.max_diff, a.off / max(a.count, 1), a.differ / max(a.count, 1)))


def compare_operators(graph: Graph, values: Sequence[dict[str, np.ndarray]],
                      unrounded: Optional[Mapping[str, str]] = None) -> LocalReport:
    """Every operator of ``graph`` on onnxruntime's values of its inputs (``values``, per sample, from
    onnxrt.tensor_values) against onnxruntime's value of its output; ``unrounded``: tensor -> the float
    tensor onnxruntime rounded to it (onnxrt.quantized_from)."""
    unrounded = unrounded or {}
    stats: dict[str, list] = {}  # node -> [unit, max_diff, differ, off, count, unrounded, merged]
    reached: set[str] = set()
    for ort in values:
        own: dict[str, np.ndarray] = {}  # results of operators onnxruntime shows no output of
        pending: dict[str, tuple[str, ...]] = {}  # such a result -> the operators it went through
        for node in graph.nodes:
            inputs = arguments(graph, node, lambda i: graph[i].data if graph[i].is_const else own[i] if i in own
                               else ort[i])
            merged = tuple(dict.fromkeys(n for i in node.inputs if i in pending for n in pending[i]))
            results = registry.get(node.op).reference(graph, node, inputs)
            for out, got in zip(node.outputs, results):
                if out not in ort:
                    own[out] = np.asarray(got)
                    pending[out] = merged + (node.name,)
                    continue
                reached.update(merged)
                exact = ort.get(unrounded.get(out, ""))
                unit, diff, off = _difference(graph, out, np.asarray(got), ort[out], exact)
                entry = stats.setdefault(node.name, [unit, 0.0, 0, 0, 0, exact is not None, merged])
                entry[1] = max(entry[1], float(diff.max(initial=0)))
                entry[2] += int(np.count_nonzero(diff > (FLOAT_REL if unit == "rel" else 0)))
                entry[3] += off
                entry[4] += int(diff.size)
    ops = tuple(OpAgreement(n.name, n.op, *stats[n.name]) for n in graph.nodes if n.name in stats)
    uncompared = tuple(n.name for n in graph.nodes if n.name not in stats and n.name not in reached)
    return LocalReport(ops, uncompared, len(values))


def _difference(graph: Graph, name: str, got: np.ndarray, want: np.ndarray,
                exact: Optional[np.ndarray]) -> tuple[str, np.ndarray, int]:
    """(unit, elementwise difference from onnxruntime, elements not the nearest step to ``exact``)."""
    t = graph[name]
    if t.dtype == "float32":
        scale = max(1.0, float(np.max(np.abs(want), initial=0)))
        return "rel", np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale, 0
    diff = np.abs(got.astype(np.int64) - want.astype(DTYPES[t.dtype]).astype(np.int64))
    if t.quant is None:
        return "exact", diff, int(np.count_nonzero(diff))
    if exact is None or t.dtype not in QRANGE:
        return "steps", diff, int(np.count_nonzero(diff))
    shape = [1] * len(t.shape)
    if t.quant.per_channel:
        shape[t.quant.axis] = -1
    steps = (np.asarray(exact, np.float64).reshape(t.shape) / t.quant.scale_array().reshape(shape)
             + t.quant.zp_array().reshape(shape))
    steps = np.clip(steps, *QRANGE[t.dtype])
    return "steps", diff, int(np.count_nonzero(np.abs(got - steps) > 0.5 + NEAR))
