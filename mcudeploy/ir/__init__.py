from mcudeploy.ir.graph import Graph, Node, frozen_attrs
from mcudeploy.ir.tensor import CTYPES, DTYPES, MAX_TENSOR_BYTES, Quant, Tensor, constant, dtype_of, itemsize
from mcudeploy.ir.verify import VerifyError, verify

__all__ = ["Graph", "Node", "Tensor", "Quant", "constant", "dtype_of", "itemsize", "verify",
           "VerifyError", "DTYPES", "CTYPES", "MAX_TENSOR_BYTES", "frozen_attrs"]
