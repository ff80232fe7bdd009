"""Conformance: the ONNX node test cases and generated int8 cases, run through the generated C."""
