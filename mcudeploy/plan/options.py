"""CompileOptions: every choice that changes what the compiler decides for a model, in one typed
object that the command line builds once and the library hands on whole (compile.compile_model,
compile_graph; stages; flash) instead of a dozen loose keyword arguments."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence, Union

from mcudeploy.objective import MEMORY, Objective
from mcudeploy.partition import Scheme


@dataclass(frozen=True)
class CompileOptions:
    schedule_method: str = "auto"  # schedule.METHODS
    placement_method: str = "exact"  # memory.METHODS
    placement_time_limit: float = 5.0  # effort seconds (mcudeploy/effort.py)
    schedule_time_limit: float = 10.0  # effort seconds
    scheme: Scheme = ()  # the split of the lowered graph (mcudeploy/partition), none by default
    scratch: str = "fit"  # compile.SCRATCH_POLICIES: kernels with working memory fitted, or all kept
    int8_input: bool = False  # --int8-input: quantized inputs taken as integers
    stream_input: bool = False  # --stream-input: inputs read into the arena by ReadInput nodes
    fast_memory: Union[int, str, None] = None  # bytes of the first region, or a share of it ("50%"); None: no budget
    earlier: Mapping[str, int] = field(default_factory=dict)  # per swapped tensor, steps its copy back starts earlier
    objective: Objective = MEMORY  # what the plan is made for (mcudeploy/objective)
    rewrites: Sequence = ()  # run on the scheduled graph before the scratch fitting (compile.rewrite_ordered)
    # kernels whose scratch buys no speed on the board's core run without it (offload.scratch.scratch_where_it_pays);
    # False: every kernel's scratch is priced as on the DSP cores (tune --objective latency times both)
    priced_scratch: bool = True
