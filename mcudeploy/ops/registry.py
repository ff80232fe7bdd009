"""The one table of operators: canonical IR name -> declaration, ONNX op type -> declaration."""
from __future__ import annotations

from typing import Optional

from mcudeploy.ops.base import Op

_BY_NAME: dict[str, Op] = {}
_BY_ONNX: dict[str, Op] = {}


def register(cls: type[Op]) -> type[Op]:
    op = cls()
    if not op.name:
        raise ValueError(f"{cls.__name__} has no name")
    if op.name in _BY_NAME:
        raise ValueError(f"operator {op.name} is registered twice")
    _BY_NAME[op.name] = op
    for onnx_type in op.onnx_types:
        if onnx_type in _BY_ONNX:
            raise ValueError(f"ONNX op {onnx_type} is imported by two declarations")
        _BY_ONNX[onnx_type] = op
    return cls


def register_kinds(base: type[Op], kinds: dict[str, dict]) -> None:
    """A family whose operators differ only in class attributes (a reduction's ``kind``, ...): one
    registered subclass of ``base`` per entry, named after the ONNX op type it imports, with the
    attributes given."""
    for name, attrs in kinds.items():
        register(type(name, (base,), {"name": name, "onnx_types": (name,), "__module__": base.__module__, **attrs}))


def get(name: str) -> Op:
    _load()
    return _BY_NAME[name]


def slices(name: str) -> str:
    """How operator ``name`` shares buffers with slices of one tensor (Op.slices); "" for a name not registered."""
    _load()
    op = _BY_NAME.get(name)
    return op.slices if op is not None else ""


def for_onnx(op_type: str) -> Optional[Op]:
    _load()
    return _BY_ONNX.get(op_type)


def names() -> list[str]:
    _load()
    return sorted(_BY_NAME)


def onnx_types() -> list[str]:
    _load()
    return sorted(_BY_ONNX)


_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from mcudeploy.ops import FAMILIES  # noqa: F401  (importing registers every family)
