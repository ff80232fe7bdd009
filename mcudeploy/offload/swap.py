"""Swap under a fast-memory budget: ``fit_fast_memory(graph, order, board, budget)``.

The first usable region of a board is its fast memory; a later region with a ``speed`` (board
data: bytes per tick each way and a cost per transfer) is slow. Given a budget for the fast
region's live bytes, the planner follows the swap part of seed 004, for inference:

1. access tracking: every tensor's uses in the order, and between them its idle intervals, timed
   by the ticks of the operators that run meanwhile (``node_ticks``: the timing cache's entries
   given by the caller, else the board's default estimates, mcudeploy/simulate);
2. while the fast region's live-bytes peak exceeds the budget: of the tensors live and idle at the
   peak step (a buffer of its own, not a graph output), take the one with the longest idle time
   (ties: the larger, then the name; a second pass takes the one that adds the fewest ticks per
   byte of excess it relieves, and the plan of the two that adds fewer ticks is kept), and move it
   out after its last use before the peak and back before its next one (offload/moves.py): its copies cost ``Speed.copy_ticks`` each way. Where a
   step from that next use on exceeds the budget still, back in fast memory it would only add to
   it there: with ``spill`` it stays out, and its later readers read the copy in the slow region,
   priced by their kernels' traffic (offload/access.py); place_within keeps the plan with spills
   or the one without, whichever adds fewer ticks;
3. when no tensor idles at the peak (in a chain, an operator's input and output are both in use at
   its step), a tensor live there goes to the slow region for its whole life instead: its
   producer writes it there and its consumers read it there (what X-CUBE-AI does with whole
   activation pools), the one whose accesses (every byte its kernels read and write of it,
   offload/access.py) cost least per byte freed of the excess (bytes beyond the excess lower
   nothing that matters). A tensor goes with its views, but not with the tensors operators wrote
   over it in place: pinned to another region, it no longer shares their buffer (memory/alias.py).
   Once the budget is met, tensors kept there that a later choice made needless come back, and one
   read only later is copied into fast memory before its first reader where the budget holds and
   the copy costs less than the reads (a stage, offload/moves.py);
   A graph input or output may go too where the slow region is reachable by the caller ("dma");
4. when nothing at the peak can go, the budget cannot be met: the error says the least fast
   memory this order needs.

For each tensor chosen in step 2, recompute (offload/recompute.py: its producer run again right
before the next use) replaces the swap where the producer's inputs are live there anyway and its
estimated ticks are fewer than the two copies'.

Where the board's DMA engine reaches both regions (boards/NAME.json "dma_engine"), a swap's copies
are asynchronous (a CopyStart, and a CopyWait before the copy's first reader, ops/copy_async.py):
once the budget is met, the start of each copy back slides earlier (its trigger) and the wait of
each copy out later, a step at a time, while the computation in between hides less than the copy's
modelled ticks and the fast region's live bytes stay within the budget; then ``earlier`` more steps
for a copy back whose wait a board reported stalled (search/stalls.py). A copy then costs what the computation
in between does not hide; elsewhere a plain Copy costs its whole time. The figures are modelled
where the region's speed says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

from mcudeploy.boards import Region
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph, Node
from mcudeploy.ops.copy_async import SLOTS
from mcudeploy.memory.layout import lay_out
from mcudeploy.memory.lifetimes import lifetimes
from mcudeploy.memory.regions import areas
from mcudeploy.offload.access import slow_access_ticks
from mcudeploy.offload.moves import COPIES, COPY, COPY_START, COPY_WAIT, STAGE, move, stage
from mcudeploy.offload.recompute import RECOMPUTE, recompute, recomputable
from mcudeploy.ops import registry
from mcudeploy.simulate.simulate import Estimator, work
from mcudeploy.simulate.timing_cache import CacheView

MAX_ROUNDS = 10_000  # every round moves one tensor out of the peak; a bound against a planner bug


@dataclass(frozen=True)
class Swap:
    tensor: str
    nbytes: int
    out_step: int  # the step of the copy out in the final order
    in_step: int  # the step of the copy back
    idle_ticks: float  # what runs while the tensor is away
    copy_ticks: float  # both copies, modelled from the slow region's speed
    trigger: int = -1  # the step that starts the copy back (a CopyStart; in_step for a plain copy)
    hidden_ticks: float = 0.0  # of copy_ticks, what the computation beside asynchronous copies hides
    back: bool = True  # False: a spill, no copy back (in_step, trigger -1): later readers read the slow copy
    access_ticks: float = 0.0  # a spill's: what the later readers' kernels spend reading the slow copy


@dataclass(frozen=True)
class Recompute:
    """A tensor dropped while idle and made again by a clone of its producer before its next use."""

    tensor: str
    node: str  # the producer run again
    step: int  # the clone's step in the final order
    ticks: float  # the clone's estimated ticks


@dataclass(frozen=True)
class Resident:
    """A tensor kept in the slow region for its whole life: written there once, read there by each use."""

    tensor: str
    nbytes: int
    access_ticks: float  # its write and reads at the slow region's speed


@dataclass(frozen=True)
class Offload:
    """What fit_fast_memory did: plan.json's "offload"."""

    budget_bytes: int
    fast_region: str
    slow_region: str
    swaps: tuple[Swap, ...]
    residents: tuple[Resident, ...]
    baseline_ticks: float  # the order's estimated ticks before the swaps
    modelled: bool  # the slow region's speed is a model
    recomputes: tuple[Recompute, ...] = ()
    asynchronous: bool = False  # the swaps' copies are DMA transfers (CopyStart/CopyWait)

    @property
    def unseen_ticks(self) -> float:
        """Of the added ticks, what a run under an emulator does not show (it runs the slow memory at
        full speed): with modelled speeds, the residents' accesses and the plain copies' slowness (a
        CopyWait waits its modelled time on the board itself)."""
        if not self.modelled:
            return 0.0
        return (sum(r.access_ticks for r in self.residents) + sum(s.access_ticks for s in self.swaps)
                + (0.0 if self.asynchronous else sum(s.copy_ticks for s in self.swaps)))

    @property
    def bytes_moved(self) -> int:
        return sum((2 if s.back else 1) * s.nbytes for s in self.swaps)

    @property
    def added_ticks(self) -> float:
        return (sum(s.copy_ticks - s.hidden_ticks + s.access_ticks for s in self.swaps)
                + sum(r.access_ticks for r in self.residents)
                + sum(r.ticks for r in self.recomputes))

    @staticmethod
    def from_plan(d: dict) -> "Offload":
        """plan.json's "offload" read back (what ``run DIR`` rebuilds)."""
        swaps = tuple(Swap(s["tensor"], int(s["bytes"]), int(s["out_step"]), int(s["in_step"]), float(s["idle_ticks"]),
                           float(s["copy_ticks"]), int(s.get("trigger", s["in_step"])),
                           float(s.get("hidden_ticks", 0.0)), bool(s.get("back", True)),
                           float(s.get("access_ticks", 0.0))) for s in d["swaps"])
        residents = tuple(Resident(r["tensor"], int(r["bytes"]), float(r["access_ticks"])) for r in d.get("resident", []))
        again = tuple(Recompute(r["tensor"], r["operators"][0], int(r["step"]), float(r["ticks"]))
                      for r in d.get("recomputes", []))
        return Offload(int(d["budget_bytes"]), d["fast_region"], d["slow_region"], swaps, residents,
                       float(d["baseline_ticks"]), d.get("speeds") == "modelled", again, bool(d.get("asynchronous")))

    def as_plan(self) -> dict:
        return {"budget_bytes": self.budget_bytes, "fast_region": self.fast_region, "slow_region": self.slow_region,
                "swaps": [{"tensor": s.tensor, "bytes": s.nbytes, "out_step": s.out_step, "in_step": s.in_step,
                           "trigger": s.trigger, "idle_ticks": round(s.idle_ticks, 1),
                           "copy_ticks": round(s.copy_ticks, 1), "hidden_ticks": round(s.hidden_ticks, 1),
                           "back": s.back, "access_ticks": round(s.access_ticks, 1)}
                          for s in self.swaps],
                "resident": [{"tensor": r.tensor, "bytes": r.nbytes, "access_ticks": round(r.access_ticks, 1)}
                             for r in self.residents],
                "slow_bytes": sum(s.nbytes for s in self.swaps) + sum(r.nbytes for r in self.residents),
                "recomputes": [{"tensor": r.tensor, "operators": [r.node], "step": r.step, "ticks": round(r.ticks, 1)}
                               for r in self.recomputes],
                "bytes_moved": self.bytes_moved,
                "added_ticks_modelled": round(self.added_ticks, 1), "baseline_ticks": round(self.baseline_ticks, 1),
                "speeds": "modelled" if self.modelled else "measured", "asynchronous": self.asynchronous}


def has_slow_region(board) -> bool:
    return any(r.speed is not None for r in [r for r in board.regions if not r.excluded][1:])


def regions_for_swap(board) -> tuple[str, Region]:
    """(the fast region's name, the slow region) of a board, or a sentence saying what it lacks."""
    usable = [r for r in board.regions if not r.excluded]
    slow = next((r for r in usable[1:] if r.speed is not None), None)
    if slow is None:
        raise MCUDeployError(f"board {board.name} has no slower memory region to swap to (a region with a speed in "
                             f"boards/{board.name}.json)")
    return usable[0].name, slow


def parse_budget(spec: str) -> tuple[Optional[int], Optional[float]]:
    """--fast-memory: (bytes, None) for "BYTES" (K/M suffixes allowed), (None, fraction) for "N%"."""
    text = str(spec).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", text)
    if m:
        share = float(m.group(1)) / 100
        if not 0 < share <= 1:
            raise MCUDeployError(f"--fast-memory {spec}: a share of the arena must be in (0%, 100%]")
        return None, share
    m = re.fullmatch(r"(\d+)\s*([kKmM]?)[bB]?", text)
    if not m:
        raise MCUDeployError(f"--fast-memory {spec}: give bytes (e.g. 32768, 32K) or a share of the arena (e.g. 50%)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20}[m.group(2).lower()], None


def node_ticks(graph: Graph, order: Sequence[Node], board, cache: Optional[CacheView] = None,
               slow=None) -> list[float]:
    """Estimated ticks of every step (views: 0); a Copy to or from the slow region costs its modelled
    copy, a CopyStart nothing, and a CopyWait what the steps since its start do not hide of it."""
    estimate = Estimator(cache or CacheView({}), board)
    out = []
    for node in order:
        op = registry.get(node.op)
        if op.view or op.subview or node.op == COPY_START:
            out.append(0.0)
        elif node.op == COPY and slow is not None and node.attr("of"):
            out.append(transfer_ticks(graph, node, slow))
        elif node.op == COPY_WAIT:
            out.append(0.0)  # below, once the steps before it are known
        else:
            macs, nbytes = work(graph, node)
            out.append(estimate(op.kernel(graph, node).fn, macs, nbytes)[0])
    for w, node in enumerate(order):
        if node.op == COPY_WAIT:
            start = _start_of(order, w)
            out[w] = max(0.0, float(node.attr("ticks", 0)) - sum(out[start + 1:w]))
    return out


def transfer_ticks(graph: Graph, node: Node, slow) -> float:
    """The modelled ticks of a copy between the fast region and ``slow``, by the region it writes."""
    return slow.speed.copy_ticks(graph[node.outputs[0]].nbytes, out=graph[node.outputs[0]].region == slow.name)


def _start_of(order: Sequence[Node], wait: int) -> int:
    """The step of the CopyStart whose copy the CopyWait at step ``wait`` waits for."""
    flight = order[wait].inputs[0]
    return next(i for i in range(wait - 1, -1, -1) if flight in order[i].outputs)


def asynchronous(board, fast: str, slow) -> bool:
    """Whether the board's DMA engine copies between its fast region and ``slow``."""
    dma = board.dma_engine
    return dma is not None and (not dma.reaches or {fast, slow.name} <= set(dma.reaches))


def _fast_live(graph: Graph, order: Sequence[Node], alignment: int, slow: str):
    lives = lifetimes(graph, order, alignment)
    pinned = {lives.buffer_of[t] for t in lives.buffer_of if graph[t].region == slow}
    live = [0] * (lives.steps + 1)  # index 0 is step -1
    for b in lives.buffers:
        if b.name in pinned:
            continue
        for _, size, first, last in b.rects():
            for i in range(first + 1, last + 2):
                live[i] += size
    return lives, pinned, live


def _candidates(graph: Graph, order: Sequence[Node], lives, pinned, step: int, ticks: Sequence[float]):
    """(idle ticks, bytes, tensor, after, before) of every tensor that idles across ``step`` in fast memory."""
    out = []
    made_at = {o: i for i, n in enumerate(order) for o in n.outputs}
    for b in lives.buffers:
        if b.name in pinned or b.parts or b.name not in b.tensors or not b.first < step < b.last:
            continue
        t = b.name  # the tensor that owns the buffer; the others must come after its next use
        if t in graph.outputs or graph[t].is_const:
            continue
        uses = [i for i, n in enumerate(order) if t in n.inputs]
        made = made_at.get(t, -1)
        if step in uses:
            continue
        after = max([made] + [u for u in uses if u < step])
        later = [u for u in uses if u > step]
        if not later:
            continue
        before = later[0]
        if any(made_at.get(u, -1) < before for u in b.tensors if u != t):
            continue  # a view of it, or an output written over it, is in use while it would be away
        if made >= 0 and order[made].op == COPY_START:
            continue  # a copy in flight: its bytes are the engine's until the wait
        if all(n.op in COPIES for n in order[after + 1:before]):
            continue  # only other swaps' copies run meanwhile: moving it would only add copies
        out.append((sum(ticks[after + 1:before]), b.size, t, after, before))
    return out


def resident_ticks(graph: Graph, order: Sequence[Node], tensors, slow) -> float:
    """What a buffer kept in a slow region for its whole life costs: every byte its kernels read and
    write of it there (offload/access.py), and the copies that stage it into fast memory for its
    readers; a swap's copies aside (they are priced as the swap's)."""
    return slow_access_ticks(graph, [n for n in order if n.op not in COPIES or n.attr(STAGE)], tensors, slow.speed)


def _view_groups(graph: Graph, order: Sequence[Node], tensors) -> dict[str, list[str]]:
    """``tensors`` by the tensor each is a view of (itself where it is no view)."""
    made = {o: n for n in order for o in n.outputs}
    def base(t: str) -> str:
        n = made.get(t)
        while n is not None and (registry.get(n.op).view or registry.get(n.op).subview) and n.inputs[0] in tensors:
            t, n = n.inputs[0], made.get(n.inputs[0])
        return t
    groups: dict[str, list[str]] = {}
    for t in tensors:
        groups.setdefault(base(t), []).append(t)
    return groups


def _residents(graph: Graph, order: Sequence[Node], lives, pinned, step: int, slow):
    """(access ticks per byte, bytes, tensors, access ticks hoped for, access ticks) of every tensor
    live at ``step`` in fast memory that could live in the slow region instead, with its views: one
    at a time, also where operators wrote it over others in place (pinned apart, they no longer
    share a buffer)."""
    out = []
    steps: dict[str, list[int]] = {t: [-1] for t in graph.stored_inputs()}
    for i, n in enumerate(order):
        for t in (*n.inputs, *n.outputs):
            if t:
                steps.setdefault(t, []).append(i)
    for b in lives.buffers:
        if b.name in pinned or not b.tensors or not b.first <= step <= b.last:
            continue
        if any(graph[t].is_const for t in b.tensors):
            continue
        for group in _view_groups(graph, order, b.tensors).values():
            seen = [i for t in group for i in steps.get(t, ())]
            if not seen or not min(seen) <= step <= max(seen):
                continue
            if not slow.dma and any(t in graph.inputs or t in graph.outputs for t in group):
                continue
            nbytes = max(graph[t].nbytes for t in group)
            ticks = resident_ticks(graph, order, group, slow)
            # read only after this step, it may be staged into fast memory for its readers (_staged):
            # chosen as if it will be, priced as it is until it is
            hope = ticks
            if not any(set(group) & set(n.inputs) for n in order[:step + 1]) and len(group) == 1:
                hope = min(ticks, resident_ticks(graph, order[:step + 1], group, slow)
                           + slow.speed.copy_ticks(nbytes, out=False))
            out.append((hope / max(nbytes, 1), nbytes, tuple(group), hope, ticks))
    return out


def fit_fast_memory(graph: Graph, order: Sequence[Node], board, budget: int, alignment: int = 4,
                    cache: Optional[CacheView] = None, keep: bool = True,
                    earlier: Mapping[str, int] = {}, spill: bool = False) -> tuple[Graph, tuple[Node, ...], Offload]:
    """The graph and order with idle tensors swapped out of the fast region, and with ``keep``
    tensors pinned to the slow region, until the fast region's live bytes fit ``budget``; and what
    was done. Without ``keep`` it stops where no tensor idles at a step over the budget (the region
    assignment then moves whole buffers, place_within); with it, a budget it cannot meet is
    refused in one sentence. ``earlier``: per swapped tensor, steps its asynchronous copy back starts
    earlier than its estimated ticks ask (for the stalls a board reported, search/stalls.py).
    ``spill``: a tensor whose copy back would land where the budget is exceeded still stays out.

    Each rule of ``RULES`` picks the tensor to move (step 2 of the module's text); the plan that
    meets the budget with the fewest added ticks is kept (ties: the first rule's), and where none
    does, the first rule's (or its refusal)."""
    plans, refusal = [], None
    for rule in RULES:
        try:
            plans.append(_fit(graph, order, board, budget, alignment, cache, keep, earlier, spill, rule))
        except MCUDeployError as err:
            refusal = refusal or err
    if not plans:
        raise refusal
    _, slow = regions_for_swap(board)
    met = [p for p in plans if max(_fast_live(p[0], p[1], alignment, slow.name)[2]) <= budget]
    return min(met, key=lambda p: p[2].added_ticks) if met else plans[0]


def _idle_first(candidate: tuple, price) -> tuple:
    idle, nbytes, tensor = candidate[:3]
    return (-idle, -nbytes, tensor)


def _cheapest_relief(candidate: tuple, price) -> tuple:
    idle, nbytes, tensor = candidate[:3]
    return (price(candidate), -idle, -nbytes, tensor)


# How step 2 picks among the tensors idle at the peak (a sort key of a candidate, given ``price``,
# which prices one only where the rule asks): seed 004's longest idle time (ties: the larger, then
# the name), and the fewest added ticks per byte of excess it relieves over the steps above the
# budget its idle interval spans (a short cheap swap can beat a long one that must be made twice).
RULES = (_idle_first, _cheapest_relief)


def _fit(graph: Graph, order: Sequence[Node], board, budget: int, alignment: int, cache: Optional[CacheView],
         keep: bool, earlier: Mapping[str, int], spill: bool, rule) -> tuple[Graph, tuple[Node, ...], Offload]:
    fast, slow = regions_for_swap(board)
    dma = asynchronous(board, fast, slow)
    order = tuple(order)
    baseline = sum(node_ticks(graph, order, board, cache, slow))
    swaps, residents, recomputes = [], [], []
    groups: dict[str, tuple[str, ...]] = {}  # per resident, the tensors pinned to the slow region
    for _ in range(MAX_ROUNDS):
        lives, pinned, live = _fast_live(graph, order, alignment, slow.name)
        peak = max(live)
        if peak <= budget:
            break
        ticks = node_ticks(graph, order, board, cache, slow)
        over = sorted((i - 1 for i, v in enumerate(live) if v > budget), key=lambda k: (-live[k + 1], k))
        found = next((f for f in (_candidates(graph, order, lives, pinned, k, ticks) for k in over) if f), None)
        if found:
            idle, nbytes, tensor, after, before = min(
                found, key=lambda c: rule(c, lambda c: _price(graph, order, c, live, budget, ticks, slow, dma)))
            both = (slow.speed.copy_ticks(nbytes, out=True), slow.speed.copy_ticks(nbytes, out=False))
            model = tuple(int(-(-t // 1)) for t in both)
            last = max(i for i, n in enumerate(order) if tensor in n.inputs)
            if spill and any(live[i + 1] > budget for i in range(before, last + 1)):
                # back in fast memory it would sit where the budget is exceeded still: its later
                # readers read it in the slow region instead
                reads = resident_ticks(graph, order[before:], [tensor], slow)
                graph, order = move(graph, order, tensor, slow.name, after, None, (model[0], 0) if dma else None,
                                    slow.speed.modelled)
                swaps.append(Swap(tensor, graph[tensor].nbytes, after, -1, idle, both[0], back=False,
                                  access_ticks=reads))
                continue
            cost = max(0.0, sum(both) - idle) if dma else sum(both)  # what the idle time cannot hide
            producer = recomputable(graph, order, tensor, before)
            again = ticks[order.index(producer)] if producer is not None else None
            if again is not None and again < cost:  # running the producer again is cheaper than the copies
                graph, order = recompute(graph, order, tensor, before)
                recomputes.append(Recompute(tensor, producer.name, before, again))
                continue
            graph, order = move(graph, order, tensor, slow.name, after, before, model if dma else None,
                                slow.speed.modelled)
            swaps.append(Swap(tensor, graph[tensor].nbytes, after, before, idle, sum(both)))
            continue
        if not keep:
            break
        step = over[0]
        stay = _residents(graph, order, lives, pinned, step, slow)
        if not stay:
            at = order[step].name if step >= 0 else "the start"
            raise MCUDeployError(f"a fast-memory budget of {budget:,} B cannot be met with {slow.name}: at least "
                                 f"{peak:,} B stay live in {fast} at step {step} ({at}), where nothing live can "
                                 f"go to {slow.name}")
        excess = peak - budget  # bytes beyond what is needed free nothing useful: price per byte that helps
        _, nbytes, held, _, cost = min(stay, key=lambda c: (c[3] / max(min(c[1], excess), 1), -c[1], c[2]))
        graph = graph.replace(tensors={**graph.tensors, **{t: graph[t].with_(region=slow.name) for t in held}})
        residents.append(Resident(held[0], nbytes, cost))
        groups[held[0]] = held
    else:
        raise MCUDeployError(f"swapping for a fast-memory budget of {budget:,} B did not converge in {MAX_ROUNDS} moves")
    graph, residents = _unpin(graph, order, residents, groups, budget, alignment, slow)
    graph, order, residents = _staged(graph, order, residents, groups, budget, alignment, slow)
    if dma and swaps:
        order = _slide(graph, order, board, budget, alignment, cache, slow, earlier)
        graph, order = _slots(graph, order)
    steps = {n.attr(RECOMPUTE): i for i, n in enumerate(order) if n.attr(RECOMPUTE)}
    again = tuple(replace(r, step=steps[r.node]) for r in recomputes)
    final = _final_steps(swaps, graph, order, node_ticks(graph, order, board, cache, slow), slow)
    return graph, order, Offload(budget, fast, slow.name, final, tuple(residents), baseline, slow.speed.modelled, again,
                                 dma and bool(swaps))


def _price(graph: Graph, order: Sequence[Node], candidate, live: Sequence[int], budget: int,
           ticks: Sequence[float], slow, dma: bool) -> float:
    """A candidate's added ticks (its swap's copies, less what DMA hides behind its idle time, or
    its producer run again where cheaper) per byte of excess it relieves over the steps above the
    budget that its idle interval spans."""
    idle, nbytes, tensor, after, before = candidate
    copies = slow.speed.copy_ticks(nbytes, out=True) + slow.speed.copy_ticks(nbytes, out=False)
    cost = max(0.0, copies - idle) if dma else copies
    producer = recomputable(graph, order, tensor, before)
    if producer is not None:
        cost = min(cost, ticks[order.index(producer)])
    relief = sum(min(nbytes, live[s + 1] - budget) for s in range(after + 1, before) if live[s + 1] > budget)
    return cost / max(relief, 1)


def _unpin(graph: Graph, order: Sequence[Node], residents: list, groups: Mapping[str, tuple[str, ...]], budget: int,
           alignment: int, slow) -> tuple[Graph, list]:
    """The graph with each resident, dearest first, back in fast memory where the fast live bytes
    still fit ``budget`` without it (one chosen at the highest step may have made one chosen earlier,
    at a lower one, needless); and the residents left."""
    kept = list(residents)
    for r in sorted(residents, key=lambda r: (-r.access_ticks, r.tensor)):
        back = graph.replace(tensors={**graph.tensors, **{t: graph[t].with_(region=None) for t in groups[r.tensor]}})
        if max(_fast_live(back, order, alignment, slow.name)[2]) <= budget:
            graph = back
            kept.remove(r)
    return graph, kept


def _staged(graph: Graph, order: tuple[Node, ...], residents: list, groups: Mapping[str, tuple[str, ...]],
            budget: int, alignment: int, slow) -> tuple[Graph, tuple[Node, ...], list]:
    """The graph and order with each resident (a tensor without views, not swapped), dearest first,
    copied into fast memory right before its first reader where the fast live bytes still fit
    ``budget`` and that costs fewer ticks than the readers' traffic in slow memory (a convolution
    reading its input nine times); and the residents repriced."""
    out = []
    for r in sorted(residents, key=lambda r: (-r.access_ticks, r.tensor)):
        t = r.tensor
        readers = [i for i, n in enumerate(order) if t in n.inputs]
        if groups.get(t) != (t,) or not readers or any(n.attr("of") == t for n in order):
            out.append(r)
            continue
        g, o = stage(graph, order, t, readers[0])
        cost = resident_ticks(g, o, [t], slow)
        if cost < r.access_ticks and max(_fast_live(g, o, alignment, slow.name)[2]) <= budget:
            graph, order, r = g, o, replace(r, access_ticks=cost)
        out.append(r)
    by = {k.tensor: k for k in out}
    return graph, order, [by[r.tensor] for r in residents]


def _slide(graph: Graph, order: tuple[Node, ...], board, budget: int, alignment: int, cache, slow,
           earlier: Mapping[str, int]) -> tuple[Node, ...]:
    """The order with each asynchronous copy back started earlier and each copy out waited for
    later, a step at a time, while the steps in between hide less than the copy's modelled ticks
    (a copy back then ``earlier`` steps more), and no step's fast live bytes rise above both the
    budget and what they were."""
    before = _fast_live(graph, order, alignment, slow.name)[2]
    bound = [max(budget, v) for v in before]

    def fits(candidate) -> bool:
        live = _fast_live(graph, candidate, alignment, slow.name)[2]
        return all(v <= b for v, b in zip(live, bound))
    # what each step costs, waits aside (theirs depend on the order): the same wherever it runs
    cost = {n.name: t for n, t in zip(order, node_ticks(graph, order, board, cache, slow)) if n.op != COPY_WAIT}
    for wait in [n.name for n in order if n.op == COPY_WAIT]:
        more = None
        while True:
            w = next(i for i, n in enumerate(order) if n.name == wait)
            start = _start_of(order, w)
            node = order[w]
            back = graph[node.outputs[0]].region != slow.name
            hidden = sum(cost.get(n.name, 0.0) for n in order[start + 1:w])
            if more is None and hidden >= float(node.attr("ticks", 0)):
                more = int(earlier.get(node.attr("of"), 0)) if back else 0
            if more is not None:
                if more <= 0:
                    break
                more -= 1
            if back:  # the start one step earlier, unless that step makes what it copies
                k = start - 1
                if k < 0 or set(order[k].outputs) & set(order[start].inputs):
                    break
                candidate = order[:k] + (order[start], order[k]) + order[start + 1:]
            else:  # the wait one step later, unless that step reads what it makes
                k = w + 1
                if k >= len(order) or set(order[k].inputs) & set(node.outputs):
                    break
                candidate = order[:w] + (order[k], node) + order[k + 1:]
            if not fits(candidate):
                break
            order = candidate
    return order


def _slots(graph: Graph, order: tuple[Node, ...]) -> tuple[Graph, tuple[Node, ...]]:
    """The graph and order with every asynchronous copy given a slot (attribute "slot") that no copy
    in flight at the same time has: the firmware pairs a start with its wait by it."""
    free, held, named = list(range(SLOTS)), {}, {}
    for n in order:
        if n.op == COPY_START:
            if not free:
                raise MCUDeployError(f"more than {SLOTS} asynchronous copies would be in flight at once at {n.name}")
            held[n.outputs[0]] = free.pop(0)
            named[n.name] = held[n.outputs[0]]
        elif n.op == COPY_WAIT:
            slot = held.pop(n.inputs[0])
            named[n.name] = slot
            free.insert(0, slot)
    new = {n.name: n.with_(attrs={**n.attrs, "slot": named[n.name]}) if n.name in named else n for n in graph.nodes}
    return graph.replace(nodes=tuple(new[n.name] for n in graph.nodes)), tuple(new[n.name] for n in order)


def residents_placed(offload: Offload, graph: Graph, order: Sequence[Node], lives, placement, slow) -> Offload:
    """The offload with every buffer the placement put in the slow region (other than the swaps'
    copies) as a resident, priced by resident_ticks."""
    copies = {n.outputs[0] for n in order if n.op in COPIES}
    out = []
    for b in lives.buffers:
        if placement.regions.get(b.name) != slow.name or not b.tensors or any(t in copies for t in b.tensors):
            continue
        out.append(Resident(b.name, b.size, resident_ticks(graph, order, b.tensors, slow)))
    return replace(offload, residents=tuple(out))


def place_within(graph: Graph, order: Sequence[Node], board, budget: int, method: str = "greedy",
                 time_limit: float = 10.0, rounds: int = 4, earlier: Mapping[str, int] = {}):
    """(graph, order, lifetimes, placement, offload): the scheduled graph with swaps, and buffers in
    the slow region, so that the fast region's placed arena fits ``budget``. Two ways are tried,
    the one that adds fewer modelled ticks kept (ties: the first): the planner's own choice of
    tensors to keep in slow memory, and the region assignment's (mcudeploy/memory/regions.py, whole
    buffers by their benefit at the peak, X-CUBE-AI's approach) after the swaps. Where the placed
    arena lands above the live bytes, the plan aims that much lower, ``rounds`` times at most.
    ``earlier``: fit_fast_memory's."""
    fast, slow = regions_for_swap(board)
    regions = areas(board)
    capped = (replace(regions[0], capacity=min(regions[0].capacity, budget)),) + regions[1:]
    best, least, refusal = None, None, None
    for keep in (True, False):
        target = budget
        for _ in range(rounds):
            try:
                # with keep, spills or none (the planner's own figures are whole then): the fewer ticks
                g, o, offload = min((fit_fast_memory(graph, order, board, target, board.alignment, keep=keep,
                                                     earlier=earlier, spill=spill) for spill in (False, True)[:1 + keep]),
                                    key=lambda f: f[2].added_ticks)
            except MCUDeployError as err:
                refusal = refusal or err
                break
            lives, placement = lay_out(g, o, capped, method, board.alignment, time_limit)
            placed = placement.arenas.get(fast, 0)
            least = placed if least is None else min(least, placed)
            if placed <= budget:
                offload = residents_placed(offload, g, o, lives, placement, slow)
                if best is None or offload.added_ticks < best[4].added_ticks:
                    best = (g, o, lives, placement, offload)
                break
            target -= placed - budget
    if best is None:
        if refusal is not None and least is None:
            raise refusal
        raise MCUDeployError(f"a fast-memory budget of {budget:,} B cannot be met with {slow.name}: the least "
                             f"arena {fast} reached is {least:,} B")
    return best


def _final_steps(swaps: Sequence[Swap], graph: Graph, order: Sequence[Node], ticks: Sequence[float],
                 slow) -> tuple[Swap, ...]:
    """The swaps with their steps in the final order: the copy out's (its start), the copy back's
    (its wait) and the trigger (the copy back's start); and what the computation beside them hides."""
    out = []
    for s in swaps:
        copy_out = next(i for i, n in enumerate(order) if n.op in (COPY, COPY_START) and n.inputs[0] == s.tensor
                        and n.attr("of") == s.tensor)
        held = order[copy_out].outputs[0]
        if order[copy_out].op == COPY_START:
            held = next(n for n in order if n.op == COPY_WAIT and n.inputs[0] == held).outputs[0]
        stalls = sum(ticks[i] for i, n in enumerate(order) if n.op == COPY_WAIT and n.attr("of") == s.tensor)
        waited = any(n.op == COPY_WAIT and n.attr("of") == s.tensor for n in order)
        if not s.back:
            out.append(replace(s, out_step=copy_out, in_step=-1, trigger=-1,
                               hidden_ticks=max(0.0, s.copy_ticks - stalls) if waited else 0.0))
            continue
        trigger = next(i for i, n in enumerate(order) if n.op in (COPY, COPY_START) and n.inputs[0] == held)
        copy_in = trigger
        if order[trigger].op == COPY_START:
            copy_in = next(i for i, n in enumerate(order) if n.op == COPY_WAIT and n.inputs[0] == order[trigger].outputs[0])
        out.append(replace(s, out_step=copy_out, in_step=copy_in, trigger=trigger,
                           hidden_ticks=max(0.0, s.copy_ticks - stalls) if waited else 0.0))
    return tuple(out)
