"""Tensors of the IR: static shapes, a dtype, optional quantization, and data for constants."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

DTYPES = {
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "bool": np.bool_,
}
CTYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "uint16": "uint16_t",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "int64": "int64_t",
    "uint64": "uint64_t",
    "float32": "float",
    "bool": "uint8_t",
}
# "state": a value the model keeps between calls (Graph.states), its initial value as data
KINDS = ("input", "output", "activation", "constant", "state")
# The most bytes one tensor may take: the largest memory region of any board (the host's 1 GiB;
# tests/test_bad_inputs.py keeps every board within it). A Cortex-M has a few MB and its kernels
# index views with int32_t, so a bigger tensor is a damaged model, refused before any work.
MAX_TENSOR_BYTES = 1 << 30


def row_major(shape) -> tuple[int, ...]:
    """Element strides of a dense row-major (C order) array of ``shape``."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def itemsize(dtype: str) -> int:
    return np.dtype(DTYPES[dtype]).itemsize


def dtype_of(array: np.ndarray) -> str:
    for name, np_type in DTYPES.items():
        if array.dtype == np_type:
            return name
    raise TypeError(f"no IR dtype for numpy dtype {array.dtype}")


@dataclass(frozen=True)
class Quant:
    """Affine quantization: real = scale * (q - zero_point), per tensor or along ``axis``."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: Optional[int] = None

    @property
    def per_channel(self) -> bool:
        return self.axis is not None and len(self.scale) > 1

    def scale_array(self) -> np.ndarray:
        return np.asarray(self.scale, dtype=np.float64)

    def zp_array(self) -> np.ndarray:
        return np.asarray(self.zero_point, dtype=np.int64)

    def single(self) -> tuple[float, int]:
        """Scale and zero point of a per-tensor quantization."""
        if len(self.scale) != 1:
            raise ValueError("per-channel quantization where a per-tensor one is required")
        return float(self.scale[0]), int(self.zero_point[0])


@dataclass(frozen=True)
class Rows:
    """What a tensor of a split graph holds of the graph before the split: rows [lo, hi) of
    dimension ``dim`` of tensor ``of`` (mcudeploy/partition)."""

    of: str
    dim: int
    lo: int
    hi: int


@dataclass(frozen=True, eq=False)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str = "activation"
    quant: Optional[Quant] = None
    data: Optional[np.ndarray] = field(default=None, repr=False)  # a constant's value, a state's initial value
    rows: Optional[Rows] = None  # a piece or slice made by the split: which rows of which tensor
    region: Optional[str] = None  # the memory region a rewrite put it in (mcudeploy/offload); None: any

    @property
    def original(self) -> str:
        """The tensor of the graph before the split whose rows this one holds (itself if none)."""
        return self.rows.of if self.rows is not None else self.name

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"tensor {self.name}: unknown dtype {self.dtype}")
        if self.kind not in KINDS:
            raise ValueError(f"tensor {self.name}: unknown kind {self.kind}")
        if any((not isinstance(d, (int, np.integer))) or d < 0 for d in self.shape):
            raise ValueError(f"tensor {self.name}: shape {self.shape} is not static")
        if self.data is not None:
            self.data.setflags(write=False)

    @property
    def size(self) -> int:
        return math.prod(int(d) for d in self.shape)  # Python ints: no overflow, and far cheaper than np.prod

    @property
    def nbytes(self) -> int:
        return self.size * itemsize(self.dtype)

    @property
    def is_const(self) -> bool:
        return self.kind == "constant"

    def with_(self, **changes) -> "Tensor":
        return replace(self, **changes)


def constant(name: str, data: np.ndarray, quant: Optional[Quant] = None) -> Tensor:
    data = np.asarray(data)
    data = np.ascontiguousarray(data).reshape(data.shape)  # ascontiguousarray alone makes a scalar 1-D
    return Tensor(name, tuple(int(d) for d in data.shape), dtype_of(data), "constant", quant, data)
