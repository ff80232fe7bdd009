from mcudeploy.frontend.onnx_import import import_onnx, load_model, parse_input_shapes

__all__ = ["import_onnx", "load_model", "parse_input_shapes"]
