""".tflite -> IR. ``reader`` parses the flatbuffer, ``importer`` walks the main subgraph and hands each
built-in operator to its handler, registered by the family modules below (conv, elementwise, ...)."""
from __future__ import annotations

import os
import struct
from typing import Union

from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend.tflite import (activation, conv, detection, elementwise, pad, pool,  # noqa: F401
                                       quantize, reduce, resize, sequence, shape, signal, slicing, space,
                                       svdf, variables)
from mcudeploy.frontend.tflite.importer import HANDLERS, Importer
from mcudeploy.frontend.tflite.reader import IDENTIFIER, is_tflite, load_tflite
from mcudeploy.ir import Graph


def import_tflite(source: Union[str, os.PathLike]) -> Graph:
    model, data = load_tflite(source)
    try:
        return Importer(model, data, str(source)).run()
    except (struct.error, IndexError) as exc:  # a table or vector reaching past the end of the file
        raise MCUDeployError(f"{source} is not a readable TFLite model: the file is truncated or damaged "
                             f"({type(exc).__name__}: {str(exc) or 'no detail'})") from None


__all__ = ["HANDLERS", "IDENTIFIER", "import_tflite", "is_tflite", "load_tflite"]
