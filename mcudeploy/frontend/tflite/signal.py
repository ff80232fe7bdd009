"""TensorFlow Lite Micro's Signal library: the custom operators of its audio front end ("CUSTOM SignalWindow",
...), whose options are a flexbuffer map (``op.CustomOptionsAsNumpy()``).

TFLite Micro reads the options by position in the map's sorted keys (``FlexbufferWrapper::ElementAsInt32(i)``), so
a map with other keys than the operator's own would be read as other values: such options are refused, as are
missing or unreadable ones, in one sentence naming the operator (the importer's label).
"""
from __future__ import annotations

from mcudeploy.errors import InvalidModelError


def custom_options(imp, op, keys: tuple[str, ...]) -> dict:
    """The operator's flexbuffer options as a dict holding exactly ``keys``."""
    from flatbuffers import flexbuffers

    raw = op.CustomOptionsAsNumpy() if op.CustomOptionsLength() else None
    if raw is None or not len(raw):
        raise InvalidModelError(f"has no options (TFLite Micro needs {', '.join(keys)})")
    try:
        found = flexbuffers.Loads(bytes(raw.tobytes()))
    except Exception as exc:  # noqa: BLE001  (the flexbuffers reader raises what a damaged buffer makes it)
        raise InvalidModelError(f"has options that are not a readable flexbuffer ({type(exc).__name__})") from None
    if not isinstance(found, dict):
        raise InvalidModelError(f"has options that are not a flexbuffer map (TFLite Micro needs {', '.join(keys)})")
    if sorted(found) != sorted(keys):
        raise InvalidModelError(f"has options {', '.join(sorted(found)) or '(none)'} where TFLite Micro reads exactly "
                                f"{', '.join(sorted(keys))} by position")
    return found


def int_option(opts: dict, key: str) -> int:
    """An integer option (a flexbuffer bool or int, as TFLite Micro's AsInt32/AsBool read either)."""
    value = opts[key]
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int):
        raise InvalidModelError(f"has option {key} = {value!r} where TFLite Micro reads an integer")
    return value
