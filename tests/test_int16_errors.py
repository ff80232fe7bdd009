"""Issue 43: what stays unsupported in a 16x8 model is refused in one sentence naming the operator, its index and
its type, int16 (never int8 for an int16 tensor): one operator of int16 tensors per builtin, one refusal each."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from tflite_build import OPS, SAME, Model, Op, T, conv_options

Q = dict(scale=(0.05,), zero_point=(0,))
# "int8 Div", "of int8", "int8 tensors": int8 said of a tensor (int8 in a list of what is supported is right)
SAYS_INT8 = re.compile(r"\bint8 [A-Z]|\bof (quantized )?int8\b|\bint8 tensors\b|mcudeploy's int8\b")


def _unary(code, dtype="int16"):
    return Model([T("a", (1, 8), dtype, **Q), T("y", (1, 8), dtype, **Q)], [Op(code, ("a",), ("y",))], ("a",), ("y",))


def _binary(code, dtype="int16", out=None):
    y = T("y", (1, 8), out or dtype, **({} if out == "bool" else Q))
    return Model([T("a", (1, 8), dtype, **Q), T("b", (1, 8), dtype, **Q), y], [Op(code, ("a", "b"), ("y",))],
                 ("a", "b"), ("y",))


def _conv16(x_zero_point: int):
    """A 16x8 CONV_2D whose input has zero point ``x_zero_point`` (TFLite Micro's takes 0 only)."""
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (4, 3, 3, 4)).astype(np.int8)
    return Model([T("x", (1, 6, 6, 4), "int16", scale=(0.001,), zero_point=(x_zero_point,)),
                  T("w", (4, 3, 3, 4), "int8", scale=(0.01,) * 4, zero_point=(0,) * 4, data=w),
                  T("b", (4,), "int64", scale=(1e-5,) * 4, zero_point=(0,) * 4, data=np.zeros(4, np.int64)),
                  T("y", (1, 6, 6, 4), "int16", scale=(0.01,), zero_point=(0,))],
                 [Op(OPS.CONV_2D, ("x", "w", "b"), ("y",), conv_options((1, 1), SAME))], ("x",), ("y",))


CASES = {
    "HARD_SWISH": (lambda: _unary(OPS.HARD_SWISH), "of int16 is not supported"),
    "EXP": (lambda: _unary(OPS.EXP), "of int16 is not supported"),
    "GELU": (lambda: _unary(OPS.GELU), "not supported by mcudeploy at any type (here on int16 tensors)"),
    "DIV": (lambda: _binary(OPS.DIV), "of quantized int16 is not supported (mcudeploy's quantized Div takes int8)"),
    "FLOOR_DIV": (lambda: _binary(OPS.FLOOR_DIV), "of quantized int16 is not supported (mcudeploy runs FloorDiv"),
    "EQUAL": (lambda: _binary(OPS.EQUAL, out="bool"), "Equal of int16 is not supported"),
    "ADD_N": (lambda: _binary(OPS.ADD_N), "of int16 is not supported"),
    "PRELU": (lambda: _unary(OPS.PRELU), "(int16 tensors)"),  # a reason of its own, the type added
    "CONV_2D": (lambda: _conv16(5), "mcudeploy's int16 Conv does not take them"),
}


@pytest.mark.parametrize("builtin", CASES)
def test_an_unsupported_int16_operator_is_named_with_its_index_and_type(builtin, tmp_path):
    make, words = CASES[builtin]
    path = tmp_path / f"{builtin.lower()}.tflite"
    path.write_bytes(make().build())
    with pytest.raises(MCUDeployError) as exc:
        import_model(path)
    text = str(exc.value)
    assert f"operator 0 ({builtin})" in text and words in text, text
    assert "int16" in text and not SAYS_INT8.search(text), text


def test_an_int8_refusal_still_says_int8(tmp_path):
    path = tmp_path / "floor_div.tflite"
    path.write_bytes(_binary(OPS.FLOOR_DIV, "int8").build())
    with pytest.raises(MCUDeployError, match=r"operator 0 \(FLOOR_DIV\) of quantized int8 is not supported"):
        import_model(path)
