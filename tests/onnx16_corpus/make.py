"""Make the int16 QDQ ONNX corpus (issue 43): the corpus's 16x8 architectures and one model per operator, exported
to float ONNX and quantized as a user of onnxruntime does it: quant_pre_process, then quantize_static in QDQ format
with int16 activations and int8 weights on seeded calibration data.

    python3 -m tests.onnx16_corpus.make [NAME ...]

It needs torch, onnx and onnxruntime and makes a virtual environment for them when this Python lacks torch
(~/.cache/mcudeploy/onnx16-gen-venv, or $MCUDEPLOY_ONNX16_GEN_VENV). It writes tests/onnx16_corpus/<name>.onnx and
corpus.json (per model: its architecture, how it was quantized, its operators).

Variants (``VARIANTS``): ``int16`` symmetric activations (zero point 0, what mcudeploy's 16x8 kernels take: the
ActivationSymmetric option), weights per channel for the architectures; ``int16-asym`` onnxruntime's defaults
(asymmetric activations: mcudeploy keeps those operators in float); ``int16-io`` int16 graph inputs and outputs
(the boundary QuantizeLinear and DequantizeLinear removed, as a model fed by an int16 sensor); ``int16-ms`` opset 17,
where onnxruntime writes 16-bit QuantizeLinear/DequantizeLinear in its com.microsoft domain.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = HERE / "corpus.json"
PACKAGES = ("torch==2.13.0", "onnx==1.20.1", "onnxruntime==1.23.2", "onnxscript==0.7.2", "numpy")
CALIBRATION = 32
OPSET = 21  # the first whose QuantizeLinear/DequantizeLinear take int16
QDQ = ("quantize", "dequantize")  # written by hand (qdq_model)
# per model, the variants made besides "int16"
VARIANTS = {"dscnn_gap": ("int16-asym", "int16-io"), "denoiser": ("int16-asym", "int16-io"),
            "lstm_kws": ("int16-asym",), "conv": ("int16-asym", "int16-io", "int16-ms"), "gemm": ("int16-asym",),
            "add": ("int16-io",), "sigmoid": ("int16-io",)}


def ensure_torch() -> None:
    """Run in a Python that has torch and onnxruntime: this one, or a virtual environment made for them."""
    try:
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
        import onnxscript  # noqa: F401
        return
    except ImportError:
        pass
    venv = Path(os.environ.get("MCUDEPLOY_ONNX16_GEN_VENV", Path.home() / ".cache" / "mcudeploy" / "onnx16-gen-venv"))
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"onnx16_corpus: making {venv} with {', '.join(PACKAGES)}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if Path(sys.prefix).resolve() == venv.resolve() or not python.exists():
        raise SystemExit(f"{venv} lacks torch or onnxruntime")
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    os.chdir(ROOT)
    os.execv(str(python), [str(python), "-m", "tests.onnx16_corpus.make", *sys.argv[1:]])


# ---------------------------------------------------------------------------------------------- float models

def torch_model(name: str):
    import torch

    from tests.onnx16_corpus.models import SEED, TORCH, _randomize_batchnorm

    torch.manual_seed(SEED)
    model, shape = TORCH[name](torch)
    _randomize_batchnorm(torch, model, SEED)
    model.eval()
    return model, {"x": shape}


def export_torch(name: str, path: Path, opset: int):
    import torch

    model, inputs = torch_model(name)
    args = tuple(torch.zeros(s) for s in inputs.values())
    torch.onnx.export(model, args, str(path), input_names=list(inputs), output_names=["y"], opset_version=opset,
                      dynamo=False)
    return inputs


def helper_model(name: str, opset: int):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from tests.onnx16_corpus.models import OPS

    inputs, nodes, consts = OPS[name]
    graph_nodes = [helper.make_node(op, ins, outs, name=f"{op.lower()}_{k}", **attrs)
                   for k, (op, ins, outs, attrs) in enumerate(nodes)]
    graph = helper.make_graph(
        graph_nodes, name, [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    return model, inputs


def qdq_model(name: str, opset: int):
    """QuantizeLinear alone (a float input to int16 codes, per tensor) or DequantizeLinear alone (int16 codes to
    float, per channel along axis 1), as written by hand: quantize_static makes neither on its own."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    shape = (1, 4, 6, 6)
    if name == "quantize":
        scale, zero = np.array(3.0e-4, np.float32), np.array(-7, np.int16)
        node = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"], name="quantize")
        types = (onnx.TensorProto.FLOAT, onnx.TensorProto.INT16)
    else:
        scale = np.array([2.0e-4, 5.0e-4, 1.0e-3, 3.1e-5], np.float32)
        zero = np.array([0, 100, -250, 0], np.int16)
        node = helper.make_node("DequantizeLinear", ["x", "scale", "zero"], ["y"], name="dequantize", axis=1)
        types = (onnx.TensorProto.INT16, onnx.TensorProto.FLOAT)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", types[0], shape)],
                              [helper.make_tensor_value_info("y", types[1], shape)],
                              [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(zero, "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


# ---------------------------------------------------------------------------------------------- quantization

class Calibration:
    """Seeded normal(0, 1) inputs, as the Keras corpus's representative dataset."""

    def __init__(self, inputs: dict, seed: int):
        import numpy as np

        rng = np.random.default_rng(seed)
        self.batches = iter([{n: rng.normal(0, 1, s).astype(np.float32) for n, s in inputs.items()}
                             for _ in range(CALIBRATION)])

    def get_next(self):
        return next(self.batches, None)


def quantize(float_path: Path, out: Path, inputs: dict, variant: str, architecture: bool) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from tests.onnx16_corpus.models import SEED

    pre = float_path.with_suffix(".pre.onnx")
    # (the LSTM's x W + b + h R becomes a Gemm of x and W whose bias h R is computed: onnxruntime warns that it
    # quantizes that bias as an activation, and mcudeploy keeps such a Gemm in float)
    quant_pre_process(str(float_path), str(pre), skip_symbolic_shape=True)
    extra = {} if variant == "int16-asym" else {"ActivationSymmetric": True}
    types = None
    if not architecture:  # one operator: quantized even where onnxruntime would wait for a quantized input
        import onnx

        extra["ForceQuantizeNoInputCheck"] = True
        types = sorted({n.op_type for n in onnx.load(str(pre)).graph.node})
    quantize_static(str(pre), str(out), Calibration(inputs, SEED + 1), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt16, weight_type=QuantType.QInt8, op_types_to_quantize=types,
                    per_channel=architecture and variant != "int16-asym", extra_options=extra)
    pre.unlink()
    if variant == "int16-io":
        integer_boundary(out)


def integer_boundary(path: Path) -> None:
    """The model takes its inputs and gives its outputs as int16 codes: a graph input read by one QuantizeLinear
    becomes that QuantizeLinear's output under the input's name; a graph output made by DequantizeLinear becomes its
    input under the output's name."""
    import onnx

    model = onnx.load(str(path))
    g = model.graph
    nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in g.node]
    rename, drop = {}, set()
    for vi in g.input:
        readers = [k for k, n in enumerate(nodes) if vi.name in n.input]
        if len(readers) == 1 and nodes[readers[0]].op_type == "QuantizeLinear":
            rename[nodes[readers[0]].output[0]] = vi.name
            drop.add(readers[0])
            vi.type.tensor_type.elem_type = onnx.TensorProto.INT16
    for vi in g.output:
        maker = next(k for k, n in enumerate(nodes) if vi.name in n.output)
        if nodes[maker].op_type == "DequantizeLinear":
            rename[nodes[maker].input[0]] = vi.name
            drop.add(maker)
            vi.type.tensor_type.elem_type = onnx.TensorProto.INT16
    kept = [n for k, n in enumerate(nodes) if k not in drop]
    for n in kept:
        n.input[:] = [rename.get(i, i) for i in n.input]
        n.output[:] = [rename.get(o, o) for o in n.output]
    del g.node[:]
    g.node.extend(kept)
    del g.value_info[:]
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def make(name: str, variant: str, tmp: Path) -> dict:
    import onnx

    from tests.onnx16_corpus.models import TORCH

    opset = 17 if variant == "int16-ms" else OPSET
    architecture = name in TORCH
    float_path = tmp / f"{name}-{variant}-float.onnx"
    if architecture:
        inputs = export_torch(name, float_path, 18)
        model = onnx.load(str(float_path))
        if opset != 18:
            model = onnx.version_converter.convert_version(model, opset)
        onnx.save(model, str(float_path))
    elif name not in QDQ:
        model, inputs = helper_model(name, opset)
        onnx.save(model, str(float_path))
    out = HERE / f"{name}-{variant}.onnx"
    if name in QDQ:
        onnx.save(qdq_model(name, opset), str(out))
    else:
        quantize(float_path, out, inputs, variant, architecture)
    model = onnx.load(str(out))
    ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in model.graph.node})
    return {"file": out.name, "architecture": name, "kind": "model" if architecture else "operator",
            "variant": variant, "opset": opset, "bytes": out.stat().st_size, "operators": ops}


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    ensure_torch()
    sys.path.insert(0, str(ROOT))
    importlib.invalidate_caches()
    import tempfile

    import onnxruntime
    import torch

    from tests.onnx16_corpus.models import OPS, TORCH

    names = [n for n in list(TORCH) + list(OPS) + list(QDQ) if not args or n in args]
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"models": []}
    models = {m["file"]: m for m in old["models"]}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for variant in ("int16",) + VARIANTS.get(name, ()):
                entry = make(name, variant, Path(tmp))
                models[entry["file"]] = entry
                print(f"{entry['file']}: {entry['bytes']:,} bytes, {' '.join(entry['operators'])}", flush=True)
    MANIFEST.write_text(json.dumps({"torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
                                    "models": sorted(models.values(), key=lambda m: m["file"])}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
