"""The host-in-the-loop search for the least-memory plan within a latency budget (``mcudeploy tune``)."""
from mcudeploy.search.tune import TuneResult, Tuner, write_result

__all__ = ["TuneResult", "Tuner", "write_result"]
