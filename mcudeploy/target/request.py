"""What a command asks of its target, parsed once by the command line (cli.py) and handed on whole:
the plan-changing options (``Request``), and what run and measure do with the plan (``RunRequest``,
``MeasureRequest``). Plain frozen data; importing this module costs nothing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

RANDOM_SAMPLES = 20  # run's random inputs (--samples)
STREAM_STEPS = 20  # run --check of a stateful (streaming) model: at least this many inputs in sequence


@dataclass(frozen=True)
class Request:
    command: str  # the command asking (compile, plan, run, measure, flash, tune): the fit refusal's wording
    model: Optional[str]  # a model file, a compile -o or tune -o folder (or its plan.json), or None (flash)
    board: Optional[str]  # -b: a board or a system (boards/systems/)
    input_shape: tuple[str, ...] = ()  # --input-shape NAME=1x3x96x96, as given
    int8_input: bool = False
    stream_input: bool = False
    fast_memory: Optional[str] = None
    schedule: str = "auto"
    time_limit: float = 10.0  # the schedule's effort seconds
    objective: Optional[str] = None  # a board's or a system's (choices.py)
    memory_budget: Optional[str] = None
    stages: Optional[int] = None  # a system's pipeline stages
    allow_overflow: bool = False
    given: tuple[str, ...] = ()  # the plan-changing options given other than their defaults, in order
    ports: tuple[str, ...] = ()  # --port, as given (a board's one, or a system's one per stage)
    boards: int = 1  # --boards: emulators (or farm places) to spread the work over
    place: Optional[str] = None  # --place: a labgrid farm's place ("" any idle one), None without


@dataclass(frozen=True)
class RunRequest:
    input: Optional[str] = None  # .npy or .npz
    samples: Optional[int] = None
    check: bool = False
    float_model: Optional[str] = None
    output: Optional[str] = None  # the outputs saved as .npz
    dataset: Optional[str] = None
    json: bool = False  # run --dataset's report as JSON
    sanitize: bool = False  # the host build with AddressSanitizer and UndefinedBehaviorSanitizer


@dataclass(frozen=True)
class MeasureRequest:
    repeat: int = 5
    json: bool = False
    estimate_for: Optional[str] = None
    settle: bool = False
    sanitize: bool = False  # the host's timing build with AddressSanitizer and UndefinedBehaviorSanitizer
