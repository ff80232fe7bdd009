"""Make the TFLite conformance fixtures with the real converter: every spec of tflite_specs/ at each of its
types, converted by TensorFlow's TFLite converter, kept where TensorFlow Lite Micro runs it.

    python -m tests.conformance.tflite_gen [--only BUILTIN_OR_CASE ...] [--keep-others]

TensorFlow is needed here and nowhere else: without it the script makes a virtual environment of its
own ($MCUDEPLOY_TFLITE_GEN_VENV, default ~/.cache/mcudeploy/tflite-gen-venv), installs tensorflow,
tflite-micro and tflite from PyPI into it, and runs itself there. CI and the tests read only what this
writes into tests/conformance/tflite/: the small .tflite files and cases.json, which lists each kept
case (its builtin, type, the operators in the file, its inputs' ranges) and each dropped one with why
(the converter refused the type, did not emit the operator, or TFLite Micro cannot run the result).

Weights and calibration data come from fixed seeds, so a second run writes the same cases (the
converter's output bytes may differ between TensorFlow releases; cases.json records the release).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "tflite"
MANIFEST = OUT / "cases.json"
PACKAGES = ("tensorflow", "tflite-micro", "tflite", "ai-edge-litert", "tf_keras")  # tf_keras: Keras 2, whose LSTM converts fused
CALIBRATION = 24  # representative samples
SEED = 20261125
LITERT_TYPES = ("float16w", "hybrid")  # weight formats TFLite Micro does not run: checked against LiteRT instead


def ensure_tensorflow(module: str = "tests.conformance.tflite_gen") -> None:
    """Run in a Python that has TensorFlow: this one, or a virtual environment made for it, where ``module``
    (the script being run) starts again with the same arguments."""
    try:
        import tensorflow  # noqa: F401
        import tf_keras  # noqa: F401
        import tflite  # noqa: F401
        import tflite_micro  # noqa: F401
        import ai_edge_litert  # noqa: F401
        return
    except ImportError:
        pass
    venv = Path(os.environ.get("MCUDEPLOY_TFLITE_GEN_VENV", Path.home() / ".cache" / "mcudeploy" / "tflite-gen-venv"))
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"tflite_gen: making {venv} with {', '.join(PACKAGES)} (TensorFlow is needed only here)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    if Path(sys.prefix).resolve() == venv.resolve():  # a venv made before a package joined PACKAGES
        print(f"tflite_gen: installing {', '.join(PACKAGES)} into {venv}", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
        importlib.invalidate_caches()
        return
    os.chdir(ROOT)
    os.execv(str(python), [str(python), "-m", module, *sys.argv[1:]])


# ---------------------------------------------------------------------------------------------- conversion


def _np_dtype(name: str):
    import numpy as np
    return {"float32": np.float32, "int32": np.int32, "int64": np.int64, "bool": np.bool_,
            "int8": np.int8, "int16": np.int16}[name]


def sample(spec_input, rng):
    """One value of a spec input: uniform in [low, high] (integers inclusive)."""
    import numpy as np
    dtype = _np_dtype(spec_input.dtype)
    if spec_input.dtype == "bool":
        return rng.integers(0, 2, size=spec_input.shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(spec_input.low), int(spec_input.high) + 1, size=spec_input.shape).astype(dtype)
    return rng.uniform(spec_input.low, spec_input.high, size=spec_input.shape).astype(dtype)


def _module(tf, spec):
    """A tf.Module whose ``f`` is the spec's computation, traced with the inputs' signature."""
    import numpy as np

    tf.keras.utils.set_random_seed(SEED)
    fn = spec.build(tf)
    rng = np.random.default_rng(SEED)
    fn(*[tf.constant(sample(i, rng)) for i in spec.inputs])  # builds a layer's weights, from the seed
    # a batch of 1 is left unknown, as Keras exports it (the converter then writes EXPAND_DIMS, SHAPE, ...)
    dynamic = not spec.static_batch
    signature = [tf.TensorSpec((None,) + tuple(i.shape[1:]) if dynamic and i.shape and i.shape[0] == 1 else i.shape,
                               getattr(tf, i.dtype), name=f"in{k}") for k, i in enumerate(spec.inputs)]

    class Case(tf.Module):
        def __init__(self):
            super().__init__()
            self.fn = fn

        @tf.function(input_signature=signature)
        def f(self, *xs):
            return self.fn(*xs)

    return Case()


def convert(tf, spec, dtype: str) -> bytes:
    import numpy as np

    module = _module(tf, spec)
    if spec.resource_variables or spec.trackable:  # the module keeps its variables (and its functions apart)
        conv = tf.lite.TFLiteConverter.from_concrete_functions([module.f.get_concrete_function()], module)
        conv.experimental_enable_resource_variables = spec.resource_variables
    else:  # weights frozen into constants, as a Keras model's are
        conv = tf.lite.TFLiteConverter.from_concrete_functions([module.f.get_concrete_function()])
    if dtype in ("int8", "int16", "float16w", "hybrid"):  # any other type: a float model whose operator computes in it
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if dtype in ("int8", "int16"):
        rng = np.random.default_rng(SEED + 1)
        conv.representative_dataset = lambda: ([sample(i, rng) for i in spec.inputs] for _ in range(CALIBRATION))
        if dtype == "int8":
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        else:
            conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        if spec.io == "quantized":
            conv.inference_input_type = conv.inference_output_type = getattr(tf, dtype)
    elif dtype == "float16w":
        conv.target_spec.supported_types = [tf.float16]
    for key, value in spec.converter.items():  # a callable value is given TensorFlow (a dtype: lambda tf: tf.int32)
        setattr(conv, key, value(tf) if callable(value) else value)
    return conv.convert()


def input_order(data: bytes, count: int) -> list[int]:
    """The spec input (its position, from the name "in<k>" the signature gave it) of each input of the file,
    in the file's order: the converter may reorder them."""
    import re

    import tflite

    g = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    order = []
    for i in range(g.InputsLength()):
        found = re.search(r"in(\d+)", g.Tensors(g.Inputs(i)).Name().decode(errors="replace"))
        order.append(int(found.group(1)) if found else i)
    if sorted(order) != list(range(count)):
        raise ValueError(f"the file's inputs {order} are not the spec's {count}")
    return order


def operators(data: bytes) -> list[str]:
    """The built-in operators of every subgraph of a .tflite, in order (CUSTOM as CUSTOM:name)."""
    import tflite

    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    model = tflite.Model.GetRootAsModel(data, 0)
    ops = []
    for s in range(model.SubgraphsLength()):
        g = model.Subgraphs(s)
        for i in range(g.OperatorsLength()):
            code = model.OperatorCodes(g.Operators(i).OpcodeIndex())
            name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
            if name == "CUSTOM":
                name = f"CUSTOM:{code.CustomCode().decode(errors='replace')}"
            ops.append(name)
    return ops


_PROBE = """
import json, sys, numpy as np
from tflite_micro.python.tflite_micro import runtime
interp = runtime.Interpreter.from_file(sys.argv[1], arena_size=16 << 20)
ranges = json.loads(sys.argv[3]) or [[-3, 3]] * 64  # per input of the file: the spec's [low, high] (indices, counts)
rng = np.random.default_rng(0)
for _ in range(int(sys.argv[2])):
    i = 0
    while True:
        try:
            d = interp.get_input_details(i)
        except (IndexError, RuntimeError):
            break
        info = np.iinfo(d["dtype"]) if np.issubdtype(d["dtype"], np.integer) else None
        x = (rng.integers(0, 2, d["shape"]) if info is None or d["dtype"] == np.bool_ else
             rng.integers(max(info.min, int(ranges[i][0])), min(info.max, int(ranges[i][1])) + 1, d["shape"])
             if d["dtype"] in (np.int32, np.int64) else
             rng.integers(info.min, info.max + 1, d["shape"])) if d["dtype"] != np.float32 else rng.normal(size=d["shape"])
        interp.set_input(x.astype(d["dtype"]), i)
        i += 1
    interp.invoke()
print("ok")
"""


_LITERT_PROBE = """
import sys, numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
try:
    interp = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
except (RuntimeError, ValueError):  # an operator version its reference resolver lacks
    interp = Interpreter(model_path=sys.argv[1])
interp.allocate_tensors()
rng = np.random.default_rng(0)
for _ in range(int(sys.argv[2])):
    for d in interp.get_input_details():
        x = rng.normal(size=d["shape"]) if d["dtype"] == np.float32 else rng.integers(-3, 4, d["shape"])
        interp.set_tensor(d["index"], x.astype(d["dtype"]))
    interp.invoke()
print("ok")
"""


def litert_runs(path: Path, steps: int) -> str:
    """"" when LiteRT's reference kernels run the file, else why not."""
    try:
        run = subprocess.run([sys.executable, "-c", _LITERT_PROBE, str(path), str(steps)], capture_output=True,
                             text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "LiteRT did not finish within 120 s"
    ok = run.returncode == 0 and run.stdout.strip().endswith("ok")
    return "" if ok else ((run.stderr + run.stdout).strip().splitlines() or ["failed"])[-1][:200]


def tflm_runs(path: Path, steps: int, ranges: list | None = None) -> str:
    """"" when TensorFlow Lite Micro runs the file (int32 and int64 inputs drawn from ``ranges``, [low, high] per
    input of the file; without them from [-3, 3]), else its complaint (one line)."""
    try:
        run = subprocess.run([sys.executable, "-c", _PROBE, str(path), str(steps), json.dumps(ranges)],
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "TFLite Micro did not finish within 120 s"
    if run.returncode == 0 and run.stdout.strip().endswith("ok"):
        return ""
    lines = [line.strip() for line in (run.stderr + run.stdout).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Traceback", "File ", "^"))]
    why = (useful or lines or [f"exit status {run.returncode}"])[-1]
    return why[:200] if run.returncode >= 0 else f"TFLite Micro aborted (signal {-run.returncode}): {why[:160]}"


# ---------------------------------------------------------------------------------------------- main


def make(tf, spec, dtype: str) -> dict:
    """Convert one case and probe it: the manifest entry it gets ({"kept": ...} or {"dropped": ...}); a kept
    case's .tflite is written."""
    from conformance.tflite_cases import TFLM_BUILTINS
    from conformance.tflite_specs import QUANTIZED

    case = spec.case(dtype)
    path = OUT / f"{case}.tflite"
    path.unlink(missing_ok=True)

    def dropped(why: str) -> dict:
        return {"dropped": {"case": case, "builtin": spec.builtin, "type": dtype, "why": why}}

    try:
        data = convert(tf, spec, dtype)
    except Exception as exc:  # noqa: BLE001  (the converter's refusal of a type, in its own words)
        text = " ".join(str(exc).split())
        why = text[text.find("error: ") + 7:] if "error: " in text else text
        return dropped(f"the converter refuses it: {why[:200]}")
    ops = operators(data)
    if spec.builtin not in ops:
        return dropped(f"the converter does not emit {spec.builtin} (it wrote {', '.join(ops) or 'nothing'})")
    with tempfile.NamedTemporaryFile(suffix=".tflite", delete=False) as f:
        f.write(data)
    ranges = [[spec.inputs[k].low, spec.inputs[k].high] for k in input_order(data, len(spec.inputs))]
    why = tflm_runs(Path(f.name), spec.steps, ranges)
    reference = "tflm"
    if why and (dtype in LITERT_TYPES or spec.builtin not in TFLM_BUILTINS) and not litert_runs(Path(f.name), spec.steps):
        reference = "litert"  # what TFLite Micro does not run but a .tflite holds: checked against LiteRT
    os.unlink(f.name)
    if why and reference == "tflm":
        return dropped(f"TensorFlow Lite Micro does not run it: {why}")
    path.write_bytes(data)
    return {"kept": {"case": case, "builtin": spec.builtin, "type": dtype, "operators": ops, "bytes": len(data),
                     "reference": reference, "why_not_tflm": why,
                     "steps": spec.steps, "quantized_io": dtype in QUANTIZED and spec.io == "quantized",
                     "inputs": [{"dtype": spec.inputs[k].dtype, "low": spec.inputs[k].low, "high": spec.inputs[k].high}
                                for k in input_order(data, len(spec.inputs))]}}


def _worker(names: list[str]) -> None:
    """Make the cases named (in this order), a JSON line on stdout for each; TensorFlow is imported once."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    from conformance.tflite_specs import all_specs

    by_case = {s.case(t): (s, t) for s in all_specs() for t in s.types}
    print(json.dumps({"tensorflow": tf.__version__}), flush=True)
    for name in names:
        spec, dtype = by_case[name]
        print(json.dumps(make(tf, spec, dtype)), flush=True)


def main(argv=None) -> int:
    """Every case runs in a child process that imports TensorFlow once; a case that crashes the converter
    (it has aborted on some layers) is dropped as such and the child is started again after it."""
    args = list(sys.argv[1:] if argv is None else argv)
    ensure_tensorflow()
    sys.path.insert(0, str(ROOT / "tests"))
    if args[:1] == ["--worker"]:
        _worker(args[1:])
        return 0
    from conformance.tflite_specs import all_specs

    keep_others = "--keep-others" in args
    only = {a.lower() for a in args if not a.startswith("--")}
    OUT.mkdir(parents=True, exist_ok=True)
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"cases": [], "dropped": []}
    cases = {c["case"]: c for c in old["cases"]} if (only or keep_others) else {}
    dropped = {d["case"]: d for d in old["dropped"]} if (only or keep_others) else {}
    todo = [(s, t) for s in all_specs() for t in s.types
            if not only or s.builtin.lower() in only or s.name.lower() in only or s.case(t) in only]
    version = old.get("tensorflow", "")
    while todo:
        names = [s.case(t) for s, t in todo]
        child = subprocess.Popen([sys.executable, "-m", "tests.conformance.tflite_gen", "--worker", *names],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        done = 0
        for line in child.stdout:
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            if "tensorflow" in entry:
                version = entry["tensorflow"]
                continue
            spec, dtype = todo[done]
            case = spec.case(dtype)
            cases.pop(case, None)
            dropped.pop(case, None)
            if "kept" in entry:
                cases[case] = entry["kept"]
                print(f"{case}: {entry['kept']['bytes']:,} bytes, {' '.join(entry['kept']['operators'])}", flush=True)
            else:
                dropped[case] = entry["dropped"]
                print(f"{case}: dropped: {entry['dropped']['why']}", flush=True)
            done += 1
        child.wait()
        todo = todo[done:]
        if todo and child.returncode != 0:  # the converter crashed on the next case
            spec, dtype = todo.pop(0)
            case = spec.case(dtype)
            cases.pop(case, None)
            dropped[case] = {"case": case, "builtin": spec.builtin, "type": dtype,
                             "why": f"the converter crashed on it (exit status {child.returncode})"}
            (OUT / f"{case}.tflite").unlink(missing_ok=True)
            print(f"{case}: dropped: the converter crashed (exit status {child.returncode})", flush=True)
        elif todo:
            raise SystemExit(f"tflite_gen: the worker stopped before {todo[0][0].case(todo[0][1])}")
    known = set(cases)
    for stale in OUT.glob("*.tflite"):
        if stale.stem not in known:
            stale.unlink()
    MANIFEST.write_text(json.dumps({
        "tensorflow": version,
        "cases": sorted(cases.values(), key=lambda c: c["case"]),
        "dropped": sorted(dropped.values(), key=lambda c: c["case"]),
    }, indent=1) + "\n")
    print(f"tflite_gen: {len(cases)} cases kept, {len(dropped)} dropped; {MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
