"""Operator tests. A package, so that the tests import their shared helpers (kernel_harness,
onnx_helpers) relatively under every pytest import mode."""
