"""Invariants every graph between passes must keep."""
from __future__ import annotations

from mcudeploy.ir.graph import Graph


class VerifyError(AssertionError):
    pass


def verify(graph: Graph) -> Graph:
    """Check the graph's invariants; return it unchanged so it can sit in a pipeline."""
    problems: list[str] = []
    defined = set()
    for name in graph.inputs:
        t = graph.tensors.get(name)
        if t is None:
            problems.append(f"graph input {name} has no tensor")
        elif t.kind != ("state" if name in graph.states else "input"):
            problems.append(f"graph input {name} has kind {t.kind}")
        defined.add(name)
    for name in graph.states:
        t = graph.tensors.get(name)
        if name not in graph.inputs:
            problems.append(f"state {name} is not a graph input")
        elif t.data is None or tuple(t.data.shape) != t.shape:
            problems.append(f"state {name} has no initial value of its shape")
    if len(graph.outputs) < len(graph.states):
        problems.append(f"{len(graph.states)} states but {len(graph.outputs)} graph outputs")
    else:
        for state, value in graph.state_updates():
            s, v = graph.tensors.get(state), graph.tensors.get(value)
            if s is not None and v is not None and (s.shape, s.dtype) != (v.shape, v.dtype):
                problems.append(f"state {state} is {s.dtype}{list(s.shape)} but takes the value of "
                                f"{v.dtype}{list(v.shape)} {value}")
            if value in graph.model_outputs() or value in graph.inputs or (v is not None and v.is_const):
                problems.append(f"state {state} takes the value of {value}, which is also a graph output, an "
                                f"input or a constant (a copy of it must be made)")
        if len(set(graph.outputs[len(graph.outputs) - len(graph.states):])) != len(graph.states):
            problems.append("two states take the value of one tensor")
    for name in graph.streamed:
        if name not in graph.inputs:
            problems.append(f"streamed tensor {name} is not a graph input")
        elif graph.users(name):
            problems.append(f"streamed input {name} is read by node {graph.users(name)[0].name}; only ReadInput "
                            f"nodes (which name no input) may read it")
    for name, t in graph.tensors.items():
        if name != t.name:
            problems.append(f"tensor stored under {name} is named {t.name}")
        if t.is_const:
            if t.data is None:
                problems.append(f"constant {name} has no data")
            elif tuple(t.data.shape) != t.shape:
                problems.append(f"constant {name} has data of shape {t.data.shape}, declared {t.shape}")
            defined.add(name)
    names = set()
    for n in graph.nodes:
        if n.name in names:
            problems.append(f"two nodes are named {n.name}")
        names.add(n.name)
        for i in n.inputs:
            if i and i not in defined:
                problems.append(f"node {n.name} reads {i} before it is produced (or it does not exist)")
        for o in n.outputs:
            if o in defined:
                problems.append(f"tensor {o} is produced twice (again by {n.name})")
            if o not in graph.tensors:
                problems.append(f"node {n.name} produces {o}, which has no tensor")
            elif graph.tensors[o].kind in ("input", "constant", "state"):
                problems.append(f"node {n.name} writes {graph.tensors[o].kind} {o}")
            defined.add(o)
    for name in graph.outputs:
        if name not in defined:
            problems.append(f"graph output {name} is never produced")
    if problems:
        raise VerifyError(f"graph {graph.name}: " + "; ".join(problems[:10]))
    return graph
