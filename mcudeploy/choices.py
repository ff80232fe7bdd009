"""Choices of options that the command line lists in its help and the library checks, declared once
here, where importing them costs nothing (no module of the compiler is imported: importing the
scheduler would cost every command half a second)."""
from __future__ import annotations

SCHEDULE_METHODS = ("auto", "exact", "refine", "bfs", "dfs", "rpo", "demand", "model", "pieces")  # schedule.METHODS
# --objective for one board (mcudeploy/objective; as in objective.OBJECTIVES, which checks it: importing it
# here would cost every command the planner's imports) and for a system of chips (stages/assign.py)
BOARD_OBJECTIVES = ("memory", "latency", "balanced")
SYSTEM_OBJECTIVES = ("throughput", "fit")
