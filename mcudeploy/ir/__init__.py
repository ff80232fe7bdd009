from mcudeploy.ir.graph import Graph, Node, frozen_attrs
from mcudeploy.ir.tensor import CTYPES, DTYPES, Quant, Tensor, constant, dtype_of, itemsize
from mcudeploy.ir.verify import VerifyError, verify

__all__ = ["Graph", "Node", "Tensor", "Quant", "constant", "dtype_of", "itemsize", "verify",
           "VerifyError", "DTYPES", "CTYPES", "frozen_attrs"]
