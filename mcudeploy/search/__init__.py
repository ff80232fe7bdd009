"""The host-in-the-loop search for the least-memory plan within a latency budget (``mcudeploy tune``)."""
__all__ = ["TuneResult", "Tuner", "write_result"]


def __getattr__(name):
    """The search's entry points, loaded when first asked for: the CLI reads its defaults from
    search.budget without loading the compiler."""
    if name in __all__:
        from mcudeploy.search import tune

        return getattr(tune, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
