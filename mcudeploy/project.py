"""A project folder that ``mcudeploy compile -o DIR`` or ``mcudeploy tune -o DIR`` wrote, loaded back
as the plan it records, so that ``mcudeploy run DIR`` runs (and ``--check`` checks) exactly that plan.

How: the model named in plan.json is imported and lowered again and split by the plan's recorded
cuts; then, instead of scheduling and placing afresh, the recorded order, the kernels that run
without scratch and the recorded offsets are taken as they are. Scheduling and placement are not
repeated: they are deterministic (mcudeploy/effort.py), but the limits and methods a plan was made
with are not all recorded, tune's final plan is one of several it tried, and a folder written
by an older mcudeploy (whose CP-SAT stopped on the wall clock) must run as written. Nothing recorded is
trusted either: the model's digest must be the one in plan.json, the lifetimes computed for the
recorded order must give exactly the recorded buffers and tensor slots, no two live buffers may
overlap at the recorded offsets, the plan written from the rebuilt plan must equal the recorded
one (order, buffers, tensors, arena), and the C the rebuilt plan generates must equal the folder's
model.c and its headers byte for byte when they are there. So what runs is the plan in DIR, and the
firmware is built from the same C as DIR's.

This is sounder than building the folder's C files alone: ``--check`` needs the model's graph
anyway (inputs, onnxruntime, the numpy reference, the host board's run of the same plan), and
only the rebuilt plan ties the C, plan.json and the model together; a folder that disagrees
with its model is refused in one sentence naming the file.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from mcudeploy.boards import Board, load_board
from mcudeploy.codegen import write_project
from mcudeploy.codegen.emit import c_name
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model, is_tflite_model
from mcudeploy.frontend.onnx_import import load_model
from mcudeploy.ir import Graph, Node
from mcudeploy.cores.memory import widened
from mcudeploy.cores.plan import CorePlan
from mcudeploy.memory import Lifetimes, Placement, check_no_overlap, lifetimes
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.state import offsets as state_layout
from mcudeploy.objective import Objective
from mcudeploy.offload.moves import COPIES, COPY_WAIT
from mcudeploy.offload.swap import Offload
from mcudeploy.offload.wide import dsp_packings, fit_wide_weights
from mcudeploy.partition import SplitError, cut_from_dict, split
from mcudeploy.compile import lower
from mcudeploy.plan import codec
from mcudeploy.plan import PLAN_FILE, PLAN_VERSION, BoardPlan, CodeOptions, Compiled, model_sha256, plan_dict
from mcudeploy.plan.typed import Method
from mcudeploy.schedule import Schedule

# plan.json fields the rebuilt plan must reproduce exactly
CHECKED = ("order", "sharing", "buffers", "tensors", "regions", "inputs", "outputs", "arena_bytes", "lower_bound_bytes",
           "cuts", "offload", "moves", "states", "state_bytes")
GENERATED = ("model.c", "mcud_model.h", "main_host.c")  # C codegen writes next to plan.json, NAME.h and mcud/


@dataclass(frozen=True)
class Project:
    plan_path: Path
    plan: BoardPlan
    model_path: Path
    compiled: Compiled  # the recorded plan, rebuilt
    unsplit: Graph  # the lowered model before the split: the numpy reference --check compares with

    def lines(self) -> list[str]:
        cuts = self.plan.cuts
        split_ = f"split by {len(cuts)} cut(s)" if cuts else "unsplit"
        latency = self.plan.latency
        ticks = f"; recorded {latency.ticks:,} ticks ({latency.source})" if latency and latency.ticks else ""
        return [f"plan {self.plan_path} ({self.plan.plan_id}): {self.model_path.name} on {self.compiled.board.name}, "
                f"{split_}, arena {self.compiled.placement.arena_bytes:,} B{ticks}, objective "
                f"{self.compiled.objective.name}; rebuilt from the model and verified"]


def is_project(path: Union[str, os.PathLike]) -> bool:
    """A folder (compile's or tune's output) or a plan.json, rather than a model file."""
    p = Path(path)
    return p.is_dir() or p.suffix == ".json"


def plan_file(path: Union[str, os.PathLike]) -> Path:
    return codec.plan_path(path)


def load_project(path: Union[str, os.PathLike], board: Optional[str] = None) -> Project:
    """The plan recorded in ``path`` (a folder or its plan.json), rebuilt from its model and verified;
    MCUDeployError naming plan.json where it does not match."""
    where = plan_file(path)
    plan = _read(where)
    model_path = _model(where, plan)
    target = _board(where, plan, board)
    int8_input, stream_input = plan.int8_input, plan.stream_input
    unsplit = lower(import_model(model_path, _input_shapes(model_path, plan)), int8_input=int8_input,
                    stream_input=stream_input)
    try:
        cuts = tuple(cut_from_dict(c) for c in plan.cuts)
        graph = split(unsplit, cuts) if cuts else unsplit
    except (SplitError, KeyError, TypeError, ValueError) as exc:
        raise MCUDeployError(f"{where} does not match {model_path}: its cuts do not apply ({_clause(exc)})") from None
    graph, order = _order(where, plan, graph, model_path)
    graph, order = _for_board(graph, order, target)
    graph = _in_slow_memory(plan, graph)
    cores = _cores(where, plan, order)
    lives = _lifetimes(where, plan, graph, order, target.alignment, model_path, cores)
    placement = _placement(where, plan, lives, target.alignment)
    schedule = _schedule(plan.schedule or Method(), order, lives.lower_bound())
    code = _code(where, plan)
    offload = Offload.from_plan(plan.offload) if plan.offload else None
    compiled = Compiled(os.fspath(model_path), target, graph, schedule, lives, placement, cuts, code=code,
                        int8_input=int8_input, offload=offload, stream_input=stream_input,
                        objective=_objective(where, plan), cores=cores)
    _same_plan(where, plan, compiled)
    _same_c(where, compiled)
    return Project(where, plan, model_path, compiled, unsplit)


def _schedule(sched: Method, order: tuple[Node, ...], bound: int) -> Schedule:
    """The recorded order with how it was found ("schedule"; a field left out: the live-bytes bound, no time)."""
    method = sched.method or "model"
    return Schedule(order, method, sched.used or method, _or(sched.peak_bytes, bound), _or(sched.bound_bytes, bound),
                    bool(sched.proven_optimal), float(_or(sched.time_s, 0.0)), float(_or(sched.effort_s, 0.0)),
                    sched.effort_limit_s)


def _or(value, default):
    return default if value is None else value


def _objective(where: Path, plan: BoardPlan) -> Objective:
    """The objective the plan was made for, as recorded (none recorded: memory, the only one there was)."""
    try:
        return Objective.from_plan(plan.objective)
    except (MCUDeployError, KeyError, TypeError) as exc:
        raise MCUDeployError(f"{where} is not a valid plan: its \"objective\" does not apply ({_clause(exc)})") from None


def _in_slow_memory(plan: BoardPlan, graph: Graph) -> Graph:
    """The graph with every tensor of a buffer the plan put in its fast-memory budget's slow region
    pinned there, as the planner pinned them (pinned apart, tensors share no buffer in place)."""
    slow = (plan.offload or {}).get("slow_region")
    held = {t for b in plan.buffers if slow and b.region == slow for t in b.tensors}
    held &= set(graph.tensors)
    if not held:
        return graph
    return graph.replace(tensors={**graph.tensors, **{t: graph[t].with_(region=slow) for t in held}})


def _code(where: Path, plan: BoardPlan) -> CodeOptions:
    """The C options the folder was written with (--name, --arena, ...): its C is regenerated with them (none
    recorded, in a plan written before them: the defaults)."""
    c = plan.c
    if not c:
        return CodeOptions()
    try:
        return CodeOptions(c.name, c.arena, tuple((s.region, s.section) for s in c.sections), c.arduino)
    except MCUDeployError as exc:
        raise MCUDeployError(f"{where} is not a valid plan: its \"c\" options do not apply ({_clause(exc)})") from None


def _clause(exc) -> str:
    return str(exc).rstrip(".")


def _read(where: Path) -> BoardPlan:
    if not where.is_file():
        if where.parent.is_dir() and where.name == PLAN_FILE:
            raise MCUDeployError(f"{where.parent} holds no {PLAN_FILE}: give a folder written by mcudeploy compile -o "
                                 f"or mcudeploy tune -o, or a model file")
        raise MCUDeployError(f"{where}: no such plan file")
    try:
        plan = codec.read_plan(where).plan
    except OSError as exc:
        raise MCUDeployError(f"{where} is not a plan.json: it is not valid JSON ({exc})") from None
    if not isinstance(plan, BoardPlan):
        raise MCUDeployError(f"{where} is a system's plan: run, flash and measure take it with -b and the model")
    missing = next((key for key in ("tensors", "regions", "inputs", "placement") if not plan.has(key)), None)
    if missing is not None:
        raise MCUDeployError(f"{where} is not a plan.json: it has no \"{missing}\" field")
    for key in ("model_path", "cuts"):
        if not plan.has(key):
            raise MCUDeployError(f"{where} was written by an older mcudeploy and lacks \"{key}\": compile or tune "
                                 f"the model again to run this plan")
    if plan.version != PLAN_VERSION:
        raise MCUDeployError(f"{where} was written by another version of mcudeploy (plan version "
                             f"{plan.version}, this one reads {PLAN_VERSION}): compile or tune the model again")
    _kinds(where, plan)
    return plan


def _kinds(where: Path, plan: BoardPlan) -> None:
    """Refuse, naming the field, what the typed plan allows but a rebuilt plan cannot take (a hand edit, a
    damaged file): "schedule" or "placement" not an object, a region without its arena's bytes, an input
    without a shape of whole numbers above 0."""
    for key, method in (("placement", plan.placement), ("schedule", plan.schedule or Method())):
        if not isinstance(method, Method):
            raise MCUDeployError(f"{where} is not a valid plan: \"{key}\" is not an object")
    odd = next((k for k, r in enumerate(plan.regions) if r.arena_bytes is None), None)
    if odd is not None:
        raise MCUDeployError(f"{where} is not a valid plan: regions[{odd}] has no \"arena_bytes\" that is a whole number")
    odd = next((k for k, i in enumerate(plan.inputs) if i.shape is None or not all(d > 0 for d in i.shape)), None)
    if odd is not None:
        raise MCUDeployError(f"{where} is not a valid plan: inputs[{odd}].shape is not a list of whole numbers above 0")


def _model(where: Path, plan: BoardPlan) -> Path:
    """The model file plan.json was made from: its recorded path, else a file of its name beside
    plan.json (a folder moved with its model); its content must have the recorded digest."""
    candidates = [Path(plan.model_path)] if plan.model_path else []
    candidates.append(where.parent / plan.model)
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        named = plan.model_path or plan.model
        raise MCUDeployError(f"{where} was made from {named}, which is not there (nor {plan.model} beside it)")
    if plan.model_sha256 and model_sha256(path) != plan.model_sha256:
        raise MCUDeployError(f"{where} was not made from {path} as it is now (its SHA-256 differs): compile or "
                             f"tune it again")
    return path


def _board(where: Path, plan: BoardPlan, name: Optional[str]) -> Board:
    """The plan's board; a board given on the command line must be that one (offsets, alignment
    and kernels were chosen for it), or another name of it."""
    try:
        board = load_board(plan.board)
    except MCUDeployError:
        raise MCUDeployError(f"{where} is a plan for board {plan.board}, which this mcudeploy does not know "
                             f"(see mcudeploy boards)") from None
    if name is not None and name != board.name:
        given = load_board(name)
        if (given.alias_of or given.name) != (board.alias_of or board.name):
            raise MCUDeployError(f"{where} is a plan for board {board.name}, not {given.name}: compile or tune the "
                                 f"model for {given.name}")
    return board


def _input_shapes(model_path: Path, plan: BoardPlan) -> dict:
    """The recorded shape of every model input plan.json lists (what --input-shape pinned, if anything)."""
    if is_tflite_model(model_path):
        return {}  # a .tflite's shapes are fixed
    names = {vi.name for vi in load_model(model_path).graph.input}
    return {i.name: i.shape for i in plan.inputs if i.name in names}


def _order(where: Path, plan: BoardPlan, graph: Graph, model_path: Path) -> tuple[Graph, tuple[Node, ...]]:
    """The recorded order on the rebuilt graph, with "scratch" = 0 on the nodes fit_scratch set it on and the
    "tile" tile_convolutions gave the latency objective's convolutions, and the "sram" its constants took."""
    graph = _copies(where, plan, graph, model_path)
    names = [e.node for e in plan.order]
    known = {n.name for n in graph.nodes}
    stray = next((n for n in names if n not in known), None)
    if stray is not None:
        raise MCUDeployError(f"{where} does not match {model_path}: its order names node {stray}, which the model "
                             f"(split by the plan's cuts) does not have")
    if len(names) != len(set(names)) or len(names) != len(known):
        raise MCUDeployError(f"{where} does not match {model_path}: its order holds {len(names)} steps for "
                             f"{len(known)} operators")
    without = {e.node for e in plan.order if e.scratch == 0}
    tiles = {e.node: e.tile for e in plan.order if e.tile}  # offload.tile_convolutions
    sram = {e.node: e.sram for e in plan.order if e.sram}  # offload/sram.py

    def recorded(n: Node) -> Node:
        attrs = {**n.attrs, **({"scratch": 0} if n.name in without else {}),
                 **({"tile": tiles[n.name]} if n.name in tiles else {}),
                 **({"sram": sram[n.name]} if n.name in sram else {})}
        return n.with_(attrs=attrs) if attrs != n.attrs else n

    nodes = {n.name: recorded(n) for n in graph.nodes}
    graph = graph.replace(nodes=tuple(nodes[n.name] for n in graph.nodes))
    order = tuple(nodes[n] for n in names)
    made = set(graph.inputs) | {t for t in graph.tensors if graph.is_const(t)}
    for node in order:
        late = next((i for i in node.inputs if i and i not in made), None)
        if late is not None:
            raise MCUDeployError(f"{where} is not a valid order: step {node.name} reads {late} before it is written")
        made.update(node.outputs)
    return graph, order


def _copies(where: Path, plan: BoardPlan, graph: Graph, model_path: Path) -> Graph:
    """The graph with the nodes a fast-memory budget added (mcudeploy/offload), as the plan's order
    records them: copies to and from the slow region, and clones of recomputed producers; every
    later reader reads the tensor the order records."""
    entries = [e for e in plan.order if e.op in COPIES or e.recompute]
    if not entries:
        return graph
    tensors = dict(graph.tensors)
    slow = (plan.offload or {}).get("slow_region")
    known = {n.name: n for n in graph.nodes}
    nodes = []
    for e in entries:
        try:
            (dst,) = e.outputs
            if e.recompute:
                original = known[e.recompute]
                tensors[dst] = tensors[original.outputs[0]].with_(name=dst)
                nodes.append(original.with_(name=e.node, outputs=(dst,),
                                            attrs={**original.attrs, "recompute": original.name}))
                continue
            srcs = e.inputs
            region = e.region if e.region_recorded else slow if dst.endswith("@" + str(slow)) else None
            tensors[dst] = tensors[srcs[0]].with_(name=dst, kind="activation", region=region)
            if e.op not in COPIES or len(srcs) != (2 if e.op == COPY_WAIT else 1):
                raise ValueError(e.op)
        except (KeyError, IndexError, ValueError):
            raise MCUDeployError(f"{where} does not match {model_path}: its step {e.node} does not apply") from None
        timing = {k: int(v) for k, v in (("slot", e.slot), ("ticks", e.ticks), ("modelled", e.modelled)) if v is not None}
        nodes.append(Node(e.node, e.op, srcs, (dst,), {"of": e.of or srcs[0], **timing}))
    recorded = {e.node: e.inputs for e in plan.order}
    added = {n.outputs[0] for n in nodes}

    def rewired(n: Node) -> Node:
        ins = recorded.get(n.name)
        if ins is None or ins == tuple(i for i in n.inputs if i):
            return n
        it = iter(ins)
        new = tuple(next(it) if i else i for i in n.inputs)
        if any(a != b and a not in added for a, b in zip(new, n.inputs)):
            raise MCUDeployError(f"{where} does not match {model_path}: step {n.name} reads other tensors than the model's")
        return n.with_(inputs=new)
    return graph.replace(tensors=tensors, nodes=tuple(rewired(n) for n in graph.nodes) + tuple(nodes))


def _buffers(lives: Lifetimes) -> list:
    return [(b.name, list(b.tensors), b.size, b.first, b.last, [list(r) for r in b.parts]) for b in lives.buffers]


def _cores(where: Path, plan: BoardPlan, order) -> Optional[CorePlan]:
    """The recorded plan of one inference on several cores (mcudeploy/cores), or None for one core."""
    entry = plan.cores
    if entry is None:
        return None
    try:
        cores = CorePlan(int(entry["count"]), tuple(int(c) for c in entry["core"]), tuple(int(p) for p in entry["phase"]))
    except (KeyError, TypeError, ValueError):
        raise MCUDeployError(f"{where}: its cores are not a count with a core and a phase per step") from None
    if len(cores.core) != len(order) or len(cores.phase) != len(order) or cores.cores < 2 or \
            any(not -1 <= c < cores.cores for c in cores.core) or list(cores.phase) != sorted(cores.phase):
        raise MCUDeployError(f"{where}: its cores do not give each of its {len(order)} steps a core and a phase, in order")
    return cores


def _lifetimes(where: Path, plan: BoardPlan, graph: Graph, order, alignment: int, model_path: Path,
               cores: Optional[CorePlan] = None) -> Lifetimes:
    """Lifetimes of the recorded order under the recorded kinds of sharing (memory.layout.lay_out
    keeps the set that placed smallest), which must give exactly the recorded buffers; on several ``cores``,
    widened to whole phases (cores/memory.py)."""
    kinds = plan.sharing
    if kinds is None or not set(kinds) <= SHARING:
        raise MCUDeployError(f"{where} does not say which memory sharing its buffers use (written by an older "
                             f"mcudeploy?): compile or tune again")
    lives = lifetimes(graph, order, alignment, frozenset(kinds))
    if cores is not None:
        lives = widened(lives, cores)
    recorded = [(b.name, list(b.tensors), b.size, b.first, b.last, [list(r) for r in b.parts]) for b in plan.buffers]
    if _buffers(lives) == recorded:
        return lives
    got = {b[0]: b for b in _buffers(lives)}
    want = {b[0]: b for b in recorded}
    odd = next((n for n in list(want) + list(got) if want.get(n) != got.get(n)), "?")
    raise MCUDeployError(f"{where} does not match {model_path}: buffer {odd} is not what its order gives")


def _placement(where: Path, plan: BoardPlan, lives: Lifetimes, alignment: int) -> Placement:
    """The recorded offsets and regions, checked: no two live buffers overlap, each fits its arena."""
    offsets = {b.name: b.offset for b in plan.buffers}
    arenas = {r.name: r.arena_bytes for r in plan.regions}
    if not arenas:
        raise MCUDeployError(f"{where} is not a valid plan: it lists no region")
    regions = {b.name: b.region or next(iter(arenas)) for b in plan.buffers}
    for b in lives.buffers:
        if offsets[b.name] < 0:
            raise MCUDeployError(f"{where} is not a valid plan: buffer {b.name} starts before its region's arena "
                                 f"(offset {offsets[b.name]})")
        if offsets[b.name] % alignment:
            raise MCUDeployError(f"{where} is not a valid plan: buffer {b.name}'s offset {offsets[b.name]} is not a "
                                 f"multiple of the board's alignment ({alignment} B)")
    try:
        check_no_overlap(lives.buffers, offsets, regions)
    except AssertionError as exc:
        raise MCUDeployError(f"{where} is not a valid plan: {_clause(exc)}") from None
    for b in lives.buffers:
        if regions[b.name] not in arenas or offsets[b.name] + b.size > arenas[regions[b.name]]:
            raise MCUDeployError(f"{where} is not a valid plan: buffer {b.name} ends past its region's arena")
    if sum(arenas.values()) != plan.arena_bytes:
        raise MCUDeployError(f"{where} is not a valid plan: its regions' arenas do not add up to arena_bytes")
    p = plan.placement
    state_offsets, state_bytes = state_layout(lives.state, alignment)
    return Placement(offsets, plan.arena_bytes, lives.lower_bound(), p.method or "greedy", regions, arenas,
                     bool(p.proven_optimal), _or(p.detail, ""), float(_or(p.time_s, 0.0)), float(_or(p.effort_s, 0.0)),
                     state_offsets, state_bytes)


def _same_plan(where: Path, plan: BoardPlan, compiled: Compiled) -> None:
    again = codec.board_plan(plan_dict(compiled), str(where))
    for key in CHECKED:
        if getattr(again, key) != getattr(plan, key):
            raise MCUDeployError(f"{where} does not match {compiled.model}: its \"{key}\" differs from what the "
                                 f"model gives for the plan's cuts and order")


def _for_board(graph: Graph, order, board) -> tuple[Graph, tuple[Node, ...]]:
    """What compile decides from the board alone, again (compile.rewrite_ordered): which convolutions keep their
    weights widened to int16 (offload.fit_wide_weights) and which nodes pack their constants for the DSP kernels
    (offload.dsp_packings)."""
    graph = dsp_packings(fit_wide_weights(graph, board), board)
    nodes = {n.name: n for n in graph.nodes}
    return graph, tuple(nodes[n.name] for n in order)


def _same_c(where: Path, compiled: Compiled) -> None:
    """The folder's generated C, where present, must be what the rebuilt plan generates."""
    present = [name for name in GENERATED + (f"{c_name(compiled)}.h",) if (where.parent / name).is_file()]
    if not present:
        return
    with tempfile.TemporaryDirectory(prefix="mcud-project-") as tmp:
        write_project(compiled, tmp)
        for name in present:
            fresh = Path(tmp) / name
            if not fresh.is_file() or fresh.read_bytes() != (where.parent / name).read_bytes():
                raise MCUDeployError(f"{where.parent / name} is not the C of {where} (edited since it was written?): "
                                     f"compile or tune again")


__all__ = ["PLAN_FILE", "Project", "is_project", "load_project", "plan_file"]
