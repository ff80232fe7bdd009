"""A board's outputs against the host board's on the same plan (``run`` on a board says SAME or
DIFFERENT): the check that the C runs alike on the board and natively."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mcudeploy.boards import load_board
from mcudeploy.device.host import run_compiled_on_host

HOST_FLOAT_ABS = 1e-5


def compare_with_host(compiled, outputs: Sequence[Sequence[np.ndarray]], samples) -> tuple[bool, list[str]]:
    """The board's outputs against the host board's (same plan, built natively): integers bit for
    bit, float within HOST_FLOAT_ABS."""
    host = run_compiled_on_host(dataclasses.replace(compiled, board=load_board("host")), samples)
    ok, lines = True, []
    for k, name in enumerate(compiled.graph.model_outputs()):
        dev = np.stack([np.asarray(o[k]) for o in outputs])
        ref = np.stack([np.asarray(o[k]) for o in host])
        if compiled.graph[name].dtype == "float32":
            diff = float(np.max(np.abs(dev.astype(np.float64) - ref.astype(np.float64)), initial=0.0))
            good = diff <= HOST_FLOAT_ABS
            lines.append(f"{name} (float32) vs the host board: max difference {diff:g} (limit {HOST_FLOAT_ABS:g})")
        else:
            differ = int(np.count_nonzero(dev != ref))
            good = differ == 0
            lines.append(f"{name} ({compiled.graph[name].dtype}) vs the host board: "
                         f"{'bit for bit identical' if good else f'{differ} element(s) differ'}")
        ok = ok and good
    lines.append(f"{'SAME' if ok else 'DIFFERENT'} as the host board on {len(samples)} input(s)")
    return ok, lines
