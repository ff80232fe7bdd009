"""Plain text for C literals: numbers and brace lists. Every other piece of C is in templates."""
from __future__ import annotations

import math

import numpy as np

INT_MIN = -(2 ** 31)


def c_int(v) -> str:
    v = int(v)
    if v == INT_MIN:
        return "(-2147483647 - 1)"
    if v == -(2 ** 63):
        return "(-9223372036854775807LL - 1)"
    if v > 2 ** 31 - 1 or v < INT_MIN:
        return f"{v}LL"
    return str(v)


def c_float(v) -> str:
    v = float(np.float32(v))
    if math.isinf(v):
        return "-3.40282347e+38f" if v < 0 else "3.40282347e+38f"
    if math.isnan(v):
        raise ValueError("NaN in a constant")
    text = "%.9g" % v
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def c_numbers(values: np.ndarray, ctype: str, per_row: int = 16) -> list[str]:
    """Rows of comma-separated literals for a constant array initializer."""
    flat = np.ravel(values)
    if ctype == "float":
        items = [c_float(v) for v in flat.astype(np.float32)]
    else:
        items = [c_int(v) for v in flat.astype(np.int64)]
    if not items:
        items = ["0"]
    return [", ".join(items[i:i + per_row]) for i in range(0, len(items), per_row)]


def c_list(items) -> str:
    """A brace list of C literals, e.g. a struct field that is an array: {1, 2, 3}."""
    return "{" + ", ".join(items) + "}"
