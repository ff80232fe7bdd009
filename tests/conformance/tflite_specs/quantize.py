"""QUANTIZE and DEQUANTIZE: float inputs and outputs of a quantized model (the converter writes them at the
edges), and QUANTIZE between two quantizations (requantization)."""
from conformance.tflite_specs import In, Spec

X = In((1, 4, 6, 3))

SPECS = [
    Spec("QUANTIZE", "float-input", lambda tf: (lambda x: tf.nn.relu(x)), (X,), ("int8", "int16"), io="float"),
    # a uint8 output (as streaming wake-word models give their probability): QUANTIZE int8 -> uint8 at the end
    Spec("QUANTIZE", "uint8-output", lambda tf: (lambda x: tf.nn.relu(x)), (X,), ("int8",),
         converter={"inference_output_type": lambda tf: tf.uint8}),
    Spec("QUANTIZE", "uint8-input", lambda tf: (lambda x: tf.nn.relu6(x)), (X,), ("int8",),
         converter={"inference_input_type": lambda tf: tf.uint8}),
    Spec("DEQUANTIZE", "float-output", lambda tf: (lambda x: tf.nn.relu6(x)), (X,), ("int8", "int16"), io="float"),
    Spec("DEQUANTIZE", "float16-weights", lambda tf: tf.keras.layers.Dense(5, bias_initializer="random_normal"),
         (In((1, 8)),), ("float16w",)),
]
