"""Make the Keras 3 corpus: every architecture of models.py, exported as a user would (TensorFlow's TFLite
converter on the Keras model, batch left unknown), as a float model and as a full-integer int8 one (the audio models also as 16x8: int16 activations, int8 weights).

    python -m tests.keras_corpus.make [NAME ...]

Like tests/conformance/tflite_gen.py (whose virtual environment it shares), it needs TensorFlow and makes an
environment for it when this Python has none. It writes tests/keras_corpus/<name>-<type>.tflite and corpus.json:
per model its size, its operators, and its reference: TensorFlow Lite Micro where it runs the file, else LiteRT's
reference kernels (with TFLite Micro's complaint).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = HERE / "corpus.json"
SEED = 20261125
CALIBRATION = 64
STATIC_BATCH = ("lstm_kws", "gru_kws")


def convert(tf, keras, name: str, dtype: str) -> bytes:
    import numpy as np

    from keras_corpus.models import KERAS, STREAMING, _randomize_batchnorm

    keras.utils.set_random_seed(SEED)
    if name in STREAMING:
        build, shape = STREAMING[name]
        inner = build(tf, keras)
        inner(tf.zeros(shape))  # builds the layers' weights

        class Export(tf.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32, name="in0")])
            def f(self, x):
                return self.inner(x)

        module = Export()
        conv = tf.lite.TFLiteConverter.from_concrete_functions([module.f.get_concrete_function()], module)
        conv.experimental_enable_resource_variables = True
        shapes = [shape]
    else:
        model = KERAS[name](keras)
        _randomize_batchnorm(model, SEED)
        shapes = [(1,) + tuple(i.shape[1:]) for i in model.inputs]
        # the batch is left unknown as Keras exports it, but for a recurrent model: its initial state is then
        # made by FILL of a run-time shape, which TFLite Micro cannot allocate (a user targeting it fixes the batch)
        batch = 1 if name in STATIC_BATCH else None
        sig = [tf.TensorSpec((batch,) + s[1:], tf.float32, name=f"in{k}") for k, s in enumerate(shapes)]
        fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0]), input_signature=sig)
        conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()])
    if dtype in ("int8", "int16"):
        rng = np.random.default_rng(SEED + 1)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([rng.normal(0, 1, s).astype(np.float32) for s in shapes]
                                               for _ in range(CALIBRATION))
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if dtype == "int8" else
                                          tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        conv.inference_input_type = conv.inference_output_type = getattr(tf, dtype)
    return conv.convert()


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(ROOT / "tests"))
    from conformance import tflite_gen

    tflite_gen.ensure_tensorflow("tests.keras_corpus.make")  # the same environment, made once
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import keras

    from keras_corpus.models import KERAS, STREAMING, TYPES

    names = [n for n in list(KERAS) + list(STREAMING) if not args or n in args]
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"models": []}
    models = {m["file"]: m for m in old["models"]}
    for name in names:
        for dtype in TYPES[name]:
            path = HERE / f"{name}-{dtype}.tflite"
            data = convert(tf, keras, name, dtype)
            path.write_bytes(data)
            why = tflite_gen.tflm_runs(path, 2)
            reference = "tflm"
            if why:
                if tflite_gen.litert_runs(path, 2):
                    raise SystemExit(f"{path.name}: neither TFLite Micro ({why}) nor LiteRT runs it")
                reference = "litert"
            ops = tflite_gen.operators(data)
            models[path.name] = {"file": path.name, "architecture": name, "type": dtype, "bytes": len(data),
                                 "reference": reference, "why_not_tflm": why, "operators": sorted(set(ops))}
            print(f"{path.name}: {len(data):,} bytes, reference {reference}, {' '.join(sorted(set(ops)))}", flush=True)
    MANIFEST.write_text(json.dumps({"tensorflow": tf.__version__, "keras": keras.__version__,
                                    "models": sorted(models.values(), key=lambda m: m["file"])}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
