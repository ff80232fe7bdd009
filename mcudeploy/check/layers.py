"""The per-layer error of ``run --dataset`` on one sample: the plan built for the host in trace mode (every arena
saved after each operator: device/host.py, read as check/first_difference.py reads it), and each operator's output as
the C left it compared with

- mcudeploy's numpy reference of the unsplit model (the elements that differ: none where the C is right),
- for an ONNX model, onnxruntime's value of the same tensor (the largest difference in steps), where the
  integer arithmetic of the deployed model starts to drift from onnxruntime's float one, and
- a float model's value of the same layer (its lowered graph run by mcudeploy's numpy reference, which
  ``run --check`` holds to onnxruntime and TensorFlow Lite Micro), on dequantized values: the largest and mean
  absolute error and the signal-to-noise ratio. A layer is matched by its tensor's name (the TFLite converter
  and onnxruntime's quantizer keep the float model's names), else by position: the next operator of the float
  model of the same type and output shape after the last one matched.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.check.figures import real, snr_db
from mcudeploy.check.local import short
from mcudeploy.check.first_difference import differing, expected_values, name, read
from mcudeploy.device.host import trace_compiled_on_host
from mcudeploy.device.runner import timed_nodes
from mcudeploy.ir import Graph
from mcudeploy.reference import evaluate, next_state


@dataclass(frozen=True)
class LayerError:
    index: int  # among the operators model.c times
    label: str  # the operator, as check/trace.name says it
    tensor: str
    shape: tuple
    dtype: str
    differ: int  # elements of the C's value that differ from mcudeploy's numpy reference
    count: int
    oracle_diff: Optional[float] = None  # largest difference from onnxruntime's value (steps; float: absolute)
    float_tensor: Optional[str] = None  # the float model's tensor it is compared with
    float_max: Optional[float] = None
    float_mean: Optional[float] = None
    float_snr_db: Optional[float] = None


@dataclass(frozen=True)
class LayerReport:
    layers: tuple[LayerError, ...]
    float_source: Optional[str]  # how the float values were matched, None without a float model
    oracle: Optional[str] = None  # the reference whose values of the layers are shown (an ONNX model's onnxruntime)

    def lines(self) -> list[str]:
        floats = self.float_source is not None
        head = f"{'#':>3}  {'operator':<44} {'shape':<16} {'C vs numpy reference':<22}"
        if self.oracle:
            head += f" {'vs ' + self.oracle:<18}"
        if floats:
            head += f" {'vs float: max abs':>17} {'mean abs':>10} {'SNR':>9}"
        out = [head.rstrip()]
        for e in self.layers:
            ref = "bit for bit" if not e.differ else f"{e.differ:,} of {e.count:,} differ"
            line = f"{e.index:>3}  {short(e.label, 44):<44} {'x'.join(map(str, e.shape)):<16} {ref:<22}"
            if self.oracle:
                line += f" {_oracle_text(e):<18}"
            if floats and e.float_max is not None:
                snr = "exact" if e.float_snr_db == np.inf else "-" if np.isnan(e.float_snr_db) else \
                    f"{e.float_snr_db:.1f} dB"
                line += f" {e.float_max:>17.4g} {e.float_mean:>10.4g} {snr:>9}"
            elif floats:
                line += f" {'(no matching float layer)':>38}"
            out.append(line.rstrip())
        if floats:
            out.append(f"float values: {self.float_source}")
        return out


def _oracle_text(e: LayerError) -> str:
    if e.oracle_diff is None:
        return "-"
    if e.oracle_diff == 0:
        return "equal"
    return f"max {e.oracle_diff:.3g}" if e.dtype == "float32" else \
        f"max {e.oracle_diff:g} step{'s' if e.oracle_diff != 1 else ''}"


def _match(graph: Graph, nodes: Sequence, float_graph: Graph) -> dict[str, str]:
    """Output tensor of ``nodes`` (of ``graph``) -> the float graph's tensor of the same layer."""
    matched, last = {}, -1
    order = list(float_graph.nodes)
    position = {o: i for i, n in enumerate(order) for o in n.outputs}
    used = set()
    for node in nodes:
        for out in node.outputs:
            t = graph[out]
            if out in float_graph.tensors and float_graph[out].shape == t.shape:
                matched[out] = out
                last = max(last, position.get(out, last))
                used.add(out)
                continue
            if t.rows is not None:
                continue
            found = next((i for i in range(last + 1, len(order)) if order[i].op == node.op and order[i].outputs
                          and order[i].outputs[0] not in used
                          and float_graph[order[i].outputs[0]].shape == t.shape), None)
            if found is not None:
                matched[out] = order[found].outputs[0]
                used.add(matched[out])
                last = found
    return matched


def layer_errors(compiled, reference: Graph, sample: Mapping[str, np.ndarray],
                 before: Sequence[Mapping[str, np.ndarray]] = (), float_graph: Optional[Graph] = None,
                 oracle: Optional[tuple[str, Mapping[str, np.ndarray]]] = None) -> LayerReport:
    """Each timed operator's output on ``sample`` (a stateful model's after the samples ``before``) as the C of
    ``compiled`` leaves it, against ``reference``'s numpy reference, given, ``float_graph``'s values, and
    ``oracle``'s (its name, and its value of the tensors it shows: onnxruntime's, check/onnxrt.tensor_values)."""
    graph = compiled.graph
    want, _ = expected_values(graph, reference, sample, before)
    trace = trace_compiled_on_host(compiled, sample, before=before)
    nodes = timed_nodes(compiled)
    floats, matched = {}, {}
    if float_graph is not None:
        feeds = {f: real(graph, name, sample[name]).astype(np.float32)
                 for f, name in zip(float_graph.model_inputs(), graph.model_inputs())}
        state = None
        for earlier in before:  # a stateful float model from the state the samples before leave
            state = next_state(float_graph, evaluate(float_graph, {
                f: real(graph, n, earlier[n]).astype(np.float32)
                for f, n in zip(float_graph.model_inputs(), graph.model_inputs())}, state))
        floats = evaluate(float_graph, feeds, state)
        matched = _match(graph, nodes, float_graph)
    layers = []
    for index, node in enumerate(nodes):
        for out in node.outputs:
            got = read(compiled, trace, index, out)
            if got is None or out not in want:
                continue
            t = graph[out]
            fig = dict(index=index, label=name(node), tensor=out, shape=tuple(t.shape), dtype=t.dtype,
                       differ=differing(got, np.asarray(want[out]), t.dtype), count=int(got.size))
            if oracle is not None and out in oracle[1] and np.size(oracle[1][out]) == got.size:
                shown = np.asarray(oracle[1][out]).reshape(got.shape).astype(np.float64)
                fig.update(oracle_diff=float(np.abs(got.astype(np.float64) - shown).max(initial=0)))
            if out in matched:
                value = np.asarray(floats[matched[out]], dtype=np.float64).reshape(t.shape)
                err = np.abs(real(graph, out, got) - value)
                fig.update(float_tensor=matched[out], float_max=float(err.max(initial=0)), float_mean=float(err.mean()),
                           float_snr_db=snr_db(value, real(graph, out, got)))
            layers.append(LayerError(**fig))
    source = None
    if float_graph is not None:
        source = (f"the float model's layers by mcudeploy's numpy reference, {len(matched)} of {len(layers)} matched "
                  f"(by tensor name, else the next layer of the same type and shape)")
    return LayerReport(tuple(layers), source, oracle[0] if oracle is not None else None)
