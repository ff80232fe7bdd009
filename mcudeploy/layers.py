"""The floors of the house, top to bottom: a module imports only rooms on floors below its own
(never one on its floor, never one above), and no modules import each other round in a circle.
tests/test_layers.py computes every import of mcudeploy from the source (nothing is run) and holds
both rules. A room is a package or a module directly under mcudeploy/; this module imports nothing.

``target/`` (one interface for a board or a system) holds the runners of systems, so ``stages/`` only
plans and sits below ``device/``.
"""
from __future__ import annotations

FLOORS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("launch",),
    ("cli",),
    ("search",),
    ("target",),  # a board or a system of cores and chips, one interface: compile, write, flash, run, measure
    ("check",),
    ("device",),
    ("stages",),  # systems of cores and chips, planned (target/ runs them)
    ("project",),
    ("cores",),  # one inference on the cores of one chip, planned (target/ compiles and runs it, project/ reloads it)
    ("compile",),  # the compiler's table of contents
    ("codegen",),
    ("report",),
    ("plan",),
    ("objective",),
    ("offload",),
    ("schedule",),
    ("memory",),
    ("partition",),
    ("estimate",),
    ("simulate",),
    ("frontend",),
    ("passes",),
    ("analysis",),
    ("reference", "samples"),
    ("ops",),
    ("ir",),
    ("boards",),
    ("clocks",),
    ("choices", "effort", "fit", "files", "progress", "resources", "schema", "layers"),
    ("errors", "interrupts"),
    ("mcudeploy",),  # the package itself: __version__
)


def floor_of(room: str) -> int:
    """The floor of ``room``, 0 at the top; a room not listed raises KeyError."""
    for k, rooms in enumerate(FLOORS):
        if room in rooms:
            return k
    raise KeyError(room)
