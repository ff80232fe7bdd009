"""A small model on which splitting pays: a stem and one inverted residual block."""
from __future__ import annotations

import onnx
import pytest
import zoo


@pytest.fixture(scope="module")
def small_mobilenet(tmp_path_factory):
    """A stem and one inverted residual block on a 32x32 input: the expanded tensor dwarfs the rest."""
    work = tmp_path_factory.mktemp("mnv2")
    _, qdq, _ = zoo.mobilenetv2(work, size=32, stages=((6, 8, 1, 1),), stem=8, classes=4)
    path = work / "mnv2_32_int8.onnx"
    onnx.save(qdq, path)
    return path
