"""Model files -> IR: ONNX (onnx_import) and TFLite (the tflite package), told apart by their content."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional, Union

import onnx

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend.onnx_import import import_onnx, load_model, parse_input_shapes
from mcudeploy.frontend.tflite import import_tflite, is_tflite
from mcudeploy.ir import Graph


def is_tflite_model(source) -> bool:
    """A .tflite file: the flatbuffer identifier "TFL3", or the extension (so that a damaged one is
    refused as a TFLite model, not as ONNX)."""
    if isinstance(source, onnx.ModelProto):
        return False
    return is_tflite(source) or Path(source).suffix.lower() == ".tflite"


def import_model(source: Union[str, os.PathLike, onnx.ModelProto],
                 input_shapes: Optional[Mapping[str, tuple[int, ...]]] = None) -> Graph:
    """The model as a Graph, whichever format it is in."""
    if is_tflite_model(source):
        if input_shapes:
            raise MCUDeployError(f"--input-shape applies to ONNX models; the shapes of {source} are fixed")
        return import_tflite(source)
    return import_onnx(source, input_shapes)


__all__ = ["import_model", "import_onnx", "import_tflite", "is_tflite_model", "load_model", "parse_input_shapes"]
