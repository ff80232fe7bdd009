"""The host-in-the-loop search for the least-memory plan within a latency budget (``mcudeploy tune``).

tune.py is the search; timing.py what it asks the board; progress.py what it says as it goes;
write.py the project and plan.json it writes; budget.py, state.py, peak.py and space.py what it
spends, what it keeps on disk, where the peak is and which cuts there are."""
import importlib

_MODULES = {"TuneOptions": "tune", "TuneResult": "tune", "Tuner": "tune", "write_result": "write"}
__all__ = sorted(_MODULES)


def __getattr__(name):
    """The search's entry points, loaded when first asked for: the CLI reads its defaults from
    search.budget without loading the compiler."""
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
