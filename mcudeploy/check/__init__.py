"""``run --check``: the deployed model against onnxruntime, operator by operator (a .tflite model: against
TensorFlow Lite Micro, end to end, bit for bit: tflite.py), and the generated C against mcudeploy's numpy
reference, bit for bit (verdict.py says how they make the verdict)."""
from mcudeploy.check.figures import FloatModel, OutputFigures, float_model, output_step
from mcudeploy.check.inputs import load_input
from mcudeploy.samples import random_inputs
from mcudeploy.check.local import LocalReport, OpAgreement, compare_operators
from mcudeploy.check.onnxrt import quantized_from, run_onnxruntime, tensor_values
from mcudeploy.check.first_difference import Difference, first_difference
from mcudeploy.check.tflite import TFLiteVerdict, check_tflite_outputs
from mcudeploy.check.verdict import Verdict, check_outputs

__all__ = ["TFLiteVerdict", "check_tflite_outputs", "Difference", "FloatModel", "LocalReport", "OpAgreement", "OutputFigures", "Verdict", "check_outputs",
           "compare_operators", "first_difference", "float_model", "load_input", "output_step", "quantized_from",
           "random_inputs", "run_onnxruntime", "tensor_values"]
