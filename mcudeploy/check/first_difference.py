"""Where the generated C first parts from the numpy reference: the plan built for the host in trace
mode (device/host.py) saves every arena before the first operator and after each one, and each
operator's inputs (as it found them) and outputs (as it left them) are read there and compared with
the reference's values of the same tensors.

What a tensor should hold is the reference of the unsplit model (``reference``): a tensor of a
split plan that keeps its name is that tensor, a piece or slice (``Tensor.rows``) is its rows. So
the first operator that differs is named whether the kernel computes other values than its
reference (``kernel``), the split rewrite gives a piece other rows than the model's (``split``:
the split graph's own reference agrees with the C), or an input was overwritten between its
producer and this reader (``memory``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from mcudeploy.check.local import short
from mcudeploy.codegen.emit import STATE, arenas, location
from mcudeploy.device.host import Trace, trace_compiled_on_host
from mcudeploy.device.runner import timed_nodes
from mcudeploy.ir import DTYPES, Graph, Node, Rows, itemsize
from mcudeploy.ops import registry
from mcudeploy.reference import evaluate, next_state, run_sequence

FLOAT_REL = 1e-4  # the C against the reference on float tensors, relative to the tensor's largest magnitude
# (at least 1): float kernels sum in another order than numpy, which on values in the hundreds moves more
# than 1e-4 (float32's step at 256 is 3e-5)
CAUSES = {
    "kernel": "its kernel and its numpy reference disagree",
    "split": "the split gives this piece other values than the model's (the split graph's own reference agrees "
             "with the C)",
    "memory": "the operator found its input {tensor} changed since it was written (overwritten in between)",
    "state": "the call started from another value of state {tensor} than the calls before should have left",
}


@dataclass(frozen=True)
class Difference:
    index: int  # position among the operators model.c times (its MCUD_OP_END index)
    node: Node
    tensor: str
    differ: int  # elements
    count: int
    cause: str  # a key of CAUSES
    rows: Optional[Rows] = None  # the tensor's, when it is a piece or slice of a split plan

    def sentence(self) -> str:
        r = self.rows
        rows = f" (rows {r.lo}..{r.hi - 1} of {short(r.of)} along dimension {r.dim})" if r is not None else ""
        tensor = short(self.tensor)
        return (f"the C first differs at operator {self.index}, {name(self.node)}: {self.differ:,} of {self.count:,} "
                f"elements of {tensor}{rows} differ; {CAUSES[self.cause].format(tensor=tensor)}")


def name(node: Node) -> str:
    """The operator as the model knows it: a piece of a split plan by the operator it was cut from."""
    if node.piece is None:
        return f"{node.op} {short(node.name)}"
    if node.piece.index is None:
        return f"{node.op} {short(node.name)} (added by the split for {short(node.piece.of)})"
    return f"{node.op} {short(node.piece.of)} (its piece {node.piece.index})"


def expected_values(graph: Graph, reference: Graph, sample: Mapping[str, np.ndarray],
                    before: Sequence[Mapping[str, np.ndarray]] = ()) -> tuple[dict, dict]:
    """(what every activation of ``graph`` should hold by ``reference``'s numpy reference, what
    ``graph``'s own reference computes); a stateful model's from the state the samples ``before`` leave."""
    own = evaluate(graph, sample, _state_after(graph, before))
    if reference is graph:
        return own, own
    model = evaluate(reference, sample, _state_after(reference, before))
    want = {}
    for n, t in graph.tensors.items():
        if t.is_const:
            continue
        if n in reference.tensors and not reference[n].is_const:
            want[n] = model[n]
        elif t.rows is not None and t.rows.of in model:
            r = t.rows
            want[n] = model[r.of][tuple(slice(r.lo, r.hi) if d == r.dim else slice(None) for d in range(len(t.shape)))]
        else:
            want[n] = own[n]
    return want, own


def _state_after(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]]) -> Optional[dict]:
    """The states' values after ``samples`` in turn from their initial values (None: stateless, or none)."""
    state = None
    for sample in samples if graph.states else ():
        state = next_state(graph, evaluate(graph, sample, state))
    return state


def read(compiled, trace: Trace, index: int, tensor: str) -> Optional[np.ndarray]:
    """The tensor as model.c holds it after operator ``index`` (-1: before the first)."""
    if tensor not in compiled.lifetimes.buffer_of:
        return None
    t = compiled.graph[tensor]
    sym, offset, strides = location(compiled, tensor)
    where = [a["sym"] for a in arenas(compiled)] + [STATE]
    where = where.index(sym)
    size = itemsize(t.dtype)
    return np.ndarray(t.shape, DTYPES[t.dtype], buffer=trace.at(index)[where], offset=offset,
                      strides=[s * size for s in strides]).copy()


def against_reference(compiled, graph: Graph, samples: Sequence[Mapping[str, np.ndarray]],
                      outputs: Sequence[Sequence[np.ndarray]]) -> tuple[dict[str, int], Optional[int]]:
    """The C's outputs (one list per sample) against the numpy reference of ``graph`` (the unsplit
    model): per output, the elements that differ (differing()), and the first
    sample where any does (None: bit for bit)."""
    ref_outputs = run_sequence(graph, samples)  # a stateful model's samples are one sequence
    not_exact, first_bad = {}, None
    for k, name in enumerate(compiled.graph.model_outputs()):
        count = 0
        for s, (got, want) in enumerate(zip(outputs, ref_outputs)):
            g, w = np.asarray(got[k]).reshape(want[k].shape), want[k]
            n = differing(g, w, compiled.graph[name].dtype)
            count += n
            if n and first_bad is None:
                first_bad = s
        not_exact[name] = count
    return not_exact, first_bad


def differing(got: np.ndarray, want: np.ndarray, dtype: str) -> int:
    """Elements of the C's ``got`` that differ from the reference's ``want``: integers exactly, float32 by
    more than FLOAT_REL of ``want``'s largest magnitude (at least 1)."""
    if dtype != "float32":
        return int(np.count_nonzero(got != want))
    tol = FLOAT_REL * max(1.0, float(np.max(np.abs(want), initial=0.0)))
    return int(np.count_nonzero(~np.isclose(got, want, rtol=0, atol=tol)))


def reference_lines(not_exact: Mapping[str, int], difference: Optional[Difference], traced: bool) -> list[str]:
    """What --check says of the C against the numpy reference (against_reference's counts, and the
    first differing operator the host trace found)."""
    if not any(not_exact.values()):
        return ["the C vs mcudeploy's numpy reference: bit for bit"]
    bad = ", ".join(f"{n}: {k:,} element(s)" for n, k in not_exact.items() if k)
    out = [f"the C vs mcudeploy's numpy reference: differs ({bad})"]
    if difference is not None:
        out.append(difference.sentence())
    elif traced:
        out.append("the host build, traced, equals the reference at every operator: the difference is the board's build")
    return out


def first_difference(compiled, sample: Mapping[str, np.ndarray], reference: Optional[Graph] = None,
                     before: Sequence[Mapping[str, np.ndarray]] = ()) -> Optional[Difference]:
    """The first operator of ``compiled`` (a plan) whose inputs or outputs in the host build differ from
    ``reference``'s (default: the plan's own graph) on ``sample`` (a stateful model's: after the samples
    ``before``); None if every one agrees."""
    graph = compiled.graph
    want, own = expected_values(graph, reference or graph, sample, before)
    trace = trace_compiled_on_host(compiled, sample, before=before)
    nodes = timed_nodes(compiled)
    for state in graph.states:  # a call that starts from another state than the calls before should leave
        found = _compare(compiled, trace, -1, state, want)
        if found is not None:
            index, node = next(((i, n) for i, n in enumerate(nodes) if state in n.inputs), (0, nodes[0]))
            return Difference(index, node, state, *found, "state")
    for index, node in enumerate(nodes):
        # a Slice (a window, no kernel) is judged by its window alone: the rows of its input it does not
        # read may already hold other tensors, when the plan frees the input by rows as its slices are read
        window = registry.get(node.op).subview
        for tensor in (i for i in node.inputs if i and not graph[i].is_const and not window):
            found = _compare(compiled, trace, index - 1, tensor, want)
            if found is not None:
                split_ = np.array_equal(read(compiled, trace, index - 1, tensor), own[tensor])
                return Difference(index, node, tensor, *found, "split" if split_ else "memory", graph[tensor].rows)
        for tensor in node.outputs:
            found = _compare(compiled, trace, index, tensor, want)
            if found is not None:
                split_ = np.array_equal(read(compiled, trace, index, tensor), own[tensor])
                cause = "split" if split_ else "memory" if window else "kernel"
                return Difference(index, node, tensor, *found, cause, graph[tensor].rows)
    return None


def _compare(compiled, trace: Trace, index: int, tensor: str, want: dict) -> Optional[tuple[int, int]]:
    got = read(compiled, trace, index, tensor)
    if got is None or tensor not in want:
        return None
    differ = differing(got, np.asarray(want[tensor]), compiled.graph[tensor].dtype)
    return (differ, int(got.size)) if differ else None

