"""``--stream-input``: every graph input comes into the arena band by band, as the layers that read
it need its rows, through the application's callback (model.h: ``<name>_read_input``).

Each input X gets a ReadInput node (mcudeploy/ops/read_input.py) that makes X's values under a new
name, "X#read"; what read X reads that. X stays a graph input (its name, shape, type and
quantization are the API's), listed in ``Graph.streamed``: the memory planner gives it no bytes.
Unsplit, the ReadInput reads the whole input, so the arena holds it as before (written by the
callback in place of the caller); a split (mcudeploy/partition) that cuts the ReadInput with the
first layers reads one band of rows per piece, and a band is freed once the layers have read it.
An input that is also a graph output cannot be streamed (the caller reads it back).
"""
from __future__ import annotations

from mcudeploy.analysis.io import input_layout, quantization
from mcudeploy.errors import UnsupportedError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops.read_input import READ_INPUT


def stream_inputs(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    renames: dict[str, str] = {}
    reads: list[Node] = []
    for index, name in enumerate(graph.model_inputs()):  # a state (Graph.states) is no input the caller streams
        t = graph[name]
        if name in graph.streamed or not graph.users(name):
            continue
        if name in graph.outputs:
            raise UnsupportedError(f"--stream-input: input {name} is also a graph output, which the caller reads "
                                   f"back from the arena; it cannot be streamed")
        new = f"{name}#read"
        while new in tensors:
            new += "~"
        quant = t.quant or quantization(graph, name)
        tensors[name] = t.with_(quant=quant)
        tensors[new] = t.with_(name=new, kind="activation", quant=quant)
        renames[name] = new
        reads.append(Node(new, READ_INPUT, (), (new,),
                          {"input": index, "starts": (0,) * len(t.shape), "shape": t.shape, "dtype": t.dtype,
                           "layout": input_layout(graph, name)}))
    if not renames:
        raise UnsupportedError("--stream-input: the model has no input that an operator reads")
    nodes = tuple(reads) + tuple(n.with_(inputs=tuple(renames.get(i, i) for i in n.inputs)) for n in graph.nodes)
    return graph.replace(tensors=tensors, nodes=nodes, streamed=graph.streamed + tuple(renames))
