from mcudeploy.ir.graph import Graph, Node, Piece, frozen_attrs
from mcudeploy.ir.tensor import (CTYPES, DTYPES, MAX_TENSOR_BYTES, Quant, Rows, Tensor, constant, dtype_of, itemsize,
                                 row_major)
from mcudeploy.ir.verify import VerifyError, verify

__all__ = ["Graph", "Node", "Piece", "Tensor", "Rows", "Quant", "constant", "dtype_of", "itemsize", "verify",
           "VerifyError", "DTYPES", "CTYPES", "MAX_TENSOR_BYTES", "frozen_attrs", "row_major"]
