"""Feedback from the board for asynchronous swaps (seed 004's runtime adjustment): each CopyWait's
measured ticks are its stall (a wait whose copy is done returns at once), so a copy back whose wait
stalled gets its start (the trigger) one step earlier per round, and the plan is built and measured
again, until no wait stalls or no trigger moves any more (it reached the copy out, or an earlier
start would break the fast-memory budget).

``settle(build, measure)`` runs that loop over two callables the caller gives: ``build(earlier)``
compiles with ``earlier`` (per swapped tensor, extra steps; compile.compile_graph's argument) and
``measure(compiled)`` runs it and returns the per-operator ticks of device.runner.timed_nodes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from mcudeploy.device.runner import timed_nodes
from mcudeploy.ops.copy_async import COPY_START, COPY_WAIT
from mcudeploy.search.space import short_name

STALL_TICKS = 8  # a wait that finds its copy done takes a call and a register read: a few ticks of its own
MAX_ROUNDS = 8  # each round moves every stalled trigger a step; a bound on builds and runs


@dataclass(frozen=True)
class Round:
    earlier: dict[str, int]  # what the plan was built with
    triggers: dict[str, int]  # per swapped tensor, the step of its copy back's start
    stalls: dict[str, int]  # per swapped tensor whose copy back's wait stalled, the ticks it waited


def stalls(compiled, op_ticks: Sequence[int]) -> dict[str, int]:
    """Per swapped tensor whose copy back's wait stalled: the wait's ticks."""
    slow = compiled.offload.slow_region if compiled.offload else None
    out = {}
    for node, ticks in zip(timed_nodes(compiled), op_ticks):
        if node.op == COPY_WAIT and compiled.graph[node.outputs[0]].region != slow and ticks > STALL_TICKS:
            out[node.attr("of")] = int(ticks)
    return out


def triggers(compiled) -> dict[str, int]:
    """Per swapped tensor, the step of its copy back's start."""
    slow = compiled.offload.slow_region if compiled.offload else None
    return {n.attr("of"): i for i, n in enumerate(compiled.order)
            if n.op == COPY_START and compiled.graph[n.outputs[0]].region != slow}


def settle(build: Callable[[Mapping[str, int]], object], measure: Callable[[object], Sequence[int]],
           rounds: int = MAX_ROUNDS):
    """(the last plan, the rounds): plans built and measured while a copy back's wait stalls and its
    trigger can still move earlier."""
    earlier: dict[str, int] = {}
    history: list[Round] = []
    compiled = build(earlier)
    for _ in range(rounds):
        stalled = stalls(compiled, measure(compiled))
        history.append(Round(dict(earlier), triggers(compiled), stalled))
        if not stalled:
            break
        earlier = {**earlier, **{t: earlier.get(t, 0) + 1 for t in stalled}}
        again = build(earlier)
        if triggers(again) == history[-1].triggers:
            break  # no stalled trigger could move: the copy out or the budget holds each where it is
        compiled = again
    return compiled, history


def settle_on_board(build: Callable[[Mapping[str, int]], object], samples, port=None, rounds: int = MAX_ROUNDS):
    """settle, each plan run whole on the board (one sample) and its per-operator ticks read back."""
    from mcudeploy.device.runner import run_on_board

    return settle(build, lambda compiled: run_on_board(compiled, samples[:1], port=port).runs[0].op_ticks, rounds)


def round_lines(history: Sequence[Round]) -> list[str]:
    """Per round: the stalled waits (tensor, ticks) and each trigger that moved since the round before."""
    lines = []
    for k, r in enumerate(history):
        stalled = ", ".join(f"{short_name(t)} {n:,} ticks" for t, n in sorted(r.stalls.items())) or "none"
        moved = [f"{short_name(t)} step {history[k - 1].triggers[t]} -> {s}" for t, s in sorted(r.triggers.items())
                 if k and history[k - 1].triggers.get(t, s) != s]
        lines.append(f"round {k + 1}: copies back by DMA: {len(r.triggers)}; stalled waits: {stalled}"
                     + (f"; triggers moved earlier: {', '.join(moved)}" if moved else ""))
    if history and history[-1].stalls:
        lines.append(f"{len(history[-1].stalls)} wait(s) still stall after {len(history)} round(s): the copy out or "
                     f"the fast-memory budget holds their triggers, or the rounds ran out")
    elif history:
        lines.append(f"no wait stalls after {len(history)} round(s)")
    return lines
