""".tflite files: the flatbuffer identifier, the parse (the ``tflite`` package, the TFLite schema's
generated Python classes) and the names of its codes. A file that is not one, or is damaged, is
refused in one sentence naming it: before anything is read, verify.py checks that every table, vector
and string the importer reads lies in the file and that its indices and sizes are in range."""
from __future__ import annotations

import os
from typing import Union

from mcudeploy.errors import InvalidModelError, MCUDeployError
from mcudeploy.files import read_model

IDENTIFIER = b"TFL3"
# TFLite's TensorType codes (schema.fbs); the unsigned wide types are the Signal operators' (uint32 spectra, uint64
# filter bank sums)
DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 6: "bool", 7: "int16", 9: "int8", 12: "uint64",
          15: "uint32", 16: "uint16"}


def is_tflite(path: Union[str, os.PathLike]) -> bool:
    """A TFLite flatbuffer: the file identifier "TFL3" at bytes 4..8 (whatever the extension)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return len(head) == 8 and head[4:8] == IDENTIFIER



def tflite_schema():
    try:
        import tflite
    except ImportError:  # a dependency of mcudeploy; a broken install
        raise MCUDeployError("reading .tflite files needs the Python package tflite (pip install tflite)") from None
    return tflite



def load_tflite(path: Union[str, os.PathLike]):
    """The parsed model (tflite.Model) and its bytes; one sentence where the file is not one."""
    path, data = read_model(path)
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise MCUDeployError(f"{path} is not a TFLite model (no \"TFL3\" flatbuffer identifier)")
    tflite = tflite_schema()
    from mcudeploy.frontend.tflite.verify import Damaged, Invalid, check

    try:
        check(data)
    except Invalid as exc:
        raise InvalidModelError(f"{path} is not a valid TFLite model: {exc}") from None
    except Damaged as exc:
        raise MCUDeployError(f"{path} is not a readable TFLite model: the file is truncated or damaged ({exc})") from None
    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        model.Version()
        if model.SubgraphsLength() < 1:
            raise ValueError("it has no subgraph")
        g = model.Subgraphs(0)
        for i in range(g.TensorsLength()):
            t = g.Tensors(i)
            t.ShapeAsNumpy() if t.ShapeLength() else None
            t.Name()
        for i in range(g.OperatorsLength()):
            op = g.Operators(i)
            op.InputsAsNumpy() if op.InputsLength() else None
            op.OpcodeIndex()
    except Exception as exc:  # noqa: BLE001  (a damaged flatbuffer fails in struct, index and value errors)
        raise MCUDeployError(f"{path} is not a readable TFLite model: the file is truncated or damaged "
                             f"({type(exc).__name__}: {str(exc) or 'no detail'})") from None
    return model, data



def op_names() -> dict[int, str]:
    tflite = tflite_schema()
    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}


