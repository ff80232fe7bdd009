"""The compiler's table of contents: every pass, in order, by name."""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Mapping, Optional, Sequence, Union

import onnx

from mcudeploy.boards import Board, load_board
from mcudeploy.errors import MCUDeployError, UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.ir import Graph, Node, verify
from mcudeploy.memory import areas
from mcudeploy.memory.layout import lay_out
from mcudeploy.objective import MEMORY, meet
from mcudeploy.offload import dsp_packings, fit_scratch, fit_wide_weights
from mcudeploy.offload.scratch import scratch_steps, scratch_where_it_pays
from mcudeploy.offload.swap import has_slow_region, parse_budget, place_within
from mcudeploy.partition import split
from mcudeploy.passes.activation import fuse_activations, fuse_swish
from mcudeploy.passes.batchnorm import fold_batchnorm
from mcudeploy.passes.graph_edit import eliminate_dead
from mcudeploy.passes.int8_input import take_int8_inputs
from mcudeploy.passes.qdq import lower_qdq
from mcudeploy.passes.transformer import fuse_transformer_patterns
from mcudeploy.passes.shuffle import lower_channel_shuffle
from mcudeploy.passes.slices import materialize_slices
from mcudeploy.passes.stream_input import stream_inputs
from mcudeploy.plan.compiled import Compiled
from mcudeploy.plan.options import CompileOptions
from mcudeploy.schedule import schedule


SCRATCH_POLICIES = ("fit", "keep")  # compile_graph's choice of kernels with working memory

PASSES: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (
    ("fold_batchnorm", fold_batchnorm),
    ("fuse_transformer_patterns", fuse_transformer_patterns),
    ("lower_qdq", lower_qdq),
    ("lower_channel_shuffle", lower_channel_shuffle),
    ("fuse_activations", fuse_activations),
    ("fuse_swish", fuse_swish),
    ("eliminate_dead", eliminate_dead),
    ("materialize_slices", materialize_slices),
)
# what --int8-input adds in front: the quantized inputs are taken as the integers their QuantizeLinear makes
INT8_INPUT: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (("take_int8_inputs", take_int8_inputs),)
# what --stream-input adds at the end: the inputs come into the arena through ReadInput nodes
STREAM_INPUT: tuple[tuple[str, Callable[[Graph], Graph]], ...] = (("stream_inputs", stream_inputs),)


def lower(graph: Graph, check: bool = False, int8_input: bool = False, stream_input: bool = False) -> Graph:
    for _, run in (INT8_INPUT if int8_input else ()) + PASSES + (STREAM_INPUT if stream_input else ()):
        graph = run(graph)
        if check:
            verify(graph)
    return graph


def computed_outputs(graph: Graph, where: str) -> None:
    """Refuse a model output that lowering found to be a constant (e.g. a DequantizeLinear of an initializer,
    folded): no operator would compute it, and the plan gives it no place."""
    for name in graph.model_outputs():
        if graph.is_const(name):
            raise UnsupportedError(f"{where}: graph output {name} is computed from constants only (the same for "
                                   f"every input), not by any operator that runs")


def compile_model(source: Union[str, os.PathLike, onnx.ModelProto], board: Union[str, Board] = "host",
                  options: CompileOptions = CompileOptions(),
                  input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None, check: bool = False) -> Compiled:
    """Import, lower (with `int8_input`, the quantized inputs taken as integers), split by `scheme`
    (none: the operators as they are), then compile_graph. fast_memory: bytes, or a share of the
    unconstrained first region's arena ("50%"; that arena is compiled first to know it)."""
    if options.fast_memory is not None and options.objective.name != "memory":
        raise MCUDeployError(f"--fast-memory swaps tensors to a slow region until the fast one fits, the memory "
                             f"objective's way: with --objective {options.objective.name} give the budget as "
                             f"--memory-budget")
    graph = lower(import_model(source, input_shapes), check=check, int8_input=options.int8_input,
                  stream_input=options.stream_input)
    name = graph.name if isinstance(source, onnx.ModelProto) else os.fspath(source)
    computed_outputs(graph, name)
    if options.scheme:
        graph = split(graph, options.scheme)
    if options.fast_memory is not None:
        board = load_board(board) if isinstance(board, str) else board
        plain = dataclasses.replace(options, fast_memory=None, earlier={}, objective=MEMORY)
        options = dataclasses.replace(options, fast_memory=fast_memory_bytes(
            options.fast_memory, lambda: compile_graph(graph, board, name, plain)))
    return compile_graph(graph, board, name, options)


def fast_memory_bytes(spec: Union[int, str], unconstrained: Callable[[], Compiled]) -> int:
    """A --fast-memory budget in bytes: as given, or its share of the first region's arena in the
    plan ``unconstrained`` compiles."""
    if isinstance(spec, int):
        return spec
    nbytes, share = parse_budget(spec)
    if nbytes is not None:
        return nbytes
    plain = unconstrained()
    return int(plain.placement.arenas.get(areas(plain.board)[0].name, 0) * share)


# a rewrite of a scheduled graph (mcudeploy/offload): the graph and its order in, both out
Rewrite = Callable[[Graph, tuple[Node, ...]], tuple[Graph, tuple[Node, ...]]]


def rewrite_ordered(graph: Graph, order, board: Board, scratch: str = "fit",
                    rewrites: Sequence[Rewrite] = (), limit: Optional[int] = None,
                    priced: bool = True) -> tuple[Graph, tuple[Node, ...]]:
    """The rewrites of a scheduled graph (mcudeploy/offload), in order: the caller's (e.g. moves of
    idle tensors to another region, offload.move), then, with scratch "fit", kernels whose working
    memory would raise the peak (above ``limit``, if given) run their variant without it; convolutions whose
    weights widened to int16 would not fit the board's flash keep int8 ones only (offload.fit_wide_weights), and
    products and convolutions pack their constants for the DSP kernels where the core has no MVE
    (offload.dsp_packings). A fast-memory
    budget's swaps come with the placement (offload.place_within), as the placed arena decides whether
    they suffice. ``priced`` (CompileOptions.priced_scratch): first, kernels whose scratch buys no speed on the
    board's core run without it, whatever the policy (offload.scratch.scratch_where_it_pays)."""
    order = tuple(order)
    for rewrite in rewrites:
        graph, order = rewrite(graph, order)
        order = tuple(order)
    if priced:
        graph, order = scratch_where_it_pays(graph, order, board.features)
    if scratch == "fit":
        graph, order = fit_scratch(graph, order, board.alignment, limit=limit)
    graph = dsp_packings(fit_wide_weights(graph, board), board)
    by_name = {n.name: n for n in graph.nodes}
    return graph, tuple(by_name[n.name] for n in order)


def compile_graph(graph: Graph, board: Union[str, Board] = "host", name: Optional[str] = None,
                  options: CompileOptions = CompileOptions()) -> Compiled:
    """Schedule, find lifetimes and place an already lowered graph (split by `scheme` and lowered
    with `int8_input`, which are only recorded here). The time limits are in effort seconds
    (mcudeploy/effort.py): work, not wall-clock time, so the same graph gives the same plan on a
    loaded machine. scratch "fit": kernels whose working memory would raise the peak run their
    scratch-free (slower) variant (fit_scratch); "keep": every kernel keeps its scratch (the
    fastest plan, a little more memory; tune times both). rewrites: run on the scheduled graph
    before the scratch fitting (rewrite_ordered). fast_memory: a budget in bytes for the board's
    first region, met by swapping idle tensors to its slow region and keeping others there
    (offload.place_within); a plan too big for the first region gets its capacity as the budget
    where the board has a slow region (its moves are then priced, and swaps tried). earlier: per
    swapped tensor, steps its asynchronous copy back starts earlier (search/stalls.py). objective:
    which of the plans of the schedule's order (mcudeploy/objective: meet)."""
    o = options
    if o.scratch not in SCRATCH_POLICIES:
        raise MCUDeployError(f"scratch must be one of {', '.join(SCRATCH_POLICIES)}, not {o.scratch!r}")
    board = load_board(board) if isinstance(board, str) else board
    sched = schedule(graph, o.schedule_method, o.schedule_time_limit, board.alignment)
    done, objective = meet(o.objective, graph, OrderPlanner(sched.order, board, o), board,
                           os.path.basename(name or graph.name))
    rewritten, order, lives, placement, offload = done
    sched = dataclasses.replace(sched, order=order)
    return Compiled(name or graph.name, board, rewritten, sched, lives, placement, tuple(o.scheme),
                    int8_input=o.int8_input, offload=offload, stream_input=o.stream_input, objective=objective)


@dataclasses.dataclass(frozen=True)
class OrderPlanner:
    """compile_graph's placements of a graph (the lowered one, or its tiled copy) in the schedule's ``order``, as
    the objective asks for them (objective.Planner): rewritten (rewrite_ordered) and placed (_placed) by ``options``."""

    order: tuple[Node, ...]
    board: Board
    options: CompileOptions

    @property
    def fits_scratch(self) -> bool:
        return self.options.scratch == "fit"

    def place(self, graph: Graph, limit: Optional[int] = None) -> tuple:
        o = self.options
        rewritten, ordered = rewrite_ordered(graph, self._in_order(graph), self.board, o.scratch, o.rewrites, limit,
                                             o.priced_scratch)
        return _placed(rewritten, ordered, self.board, o.fast_memory, o.placement_method, o.placement_time_limit,
                       o.earlier)

    def steps(self, graph: Graph):
        o = self.options
        kept = rewrite_ordered(graph, self._in_order(graph), self.board, "keep", o.rewrites, priced=o.priced_scratch)
        return scratch_steps(*kept, self.board.alignment)

    def _in_order(self, graph: Graph) -> tuple[Node, ...]:
        by_name = {n.name: n for n in graph.nodes}
        return tuple(by_name[n.name] for n in self.order)


def _placed(rewritten: Graph, order, board: Board, fast_memory: Optional[int], placement_method: str,
            placement_time_limit: float, earlier: Mapping[str, int]):
    """(graph, order, lifetimes, placement, offload or None): the rewritten graph placed (compile_graph's
    fast_memory and earlier)."""
    offload = None
    if fast_memory is None:
        lives, placement = lay_out(rewritten, order, areas(board), placement_method, board.alignment,
                                   placement_time_limit)
        fast = areas(board)[0]
        if has_slow_region(board) and any(r != fast.name for r in placement.regions.values()):
            fast_memory = fast.capacity  # too big for the fast region: swap too, where that costs less
    if fast_memory is not None:
        rewritten, order, lives, placement, offload = place_within(rewritten, order, board, fast_memory,
                                                                   placement_method, placement_time_limit,
                                                                   earlier=earlier)
    return rewritten, order, lives, placement, offload
