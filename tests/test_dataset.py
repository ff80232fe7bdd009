"""Issue 37, acceptance 3: `run --dataset` reads a data set (one .npz of many samples, or a folder of one-sample
files), refuses what is ambiguous in one sentence naming the file, and reports the deployed model against its
reference, the float model and the labels, with the per-layer error on the worst sample. The model is the tone
keyword spotter of tests/tone_kws (trained on a synthetic labelled set, float32 and int8 .tflite)."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.check.dataset import load_dataset
from mcudeploy.check.inputs import quantize
from mcudeploy.check.tflm import available
from mcudeploy.check.validate import accuracy, label_output, output_reports
from mcudeploy.cli import main
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend import import_model
from mcudeploy.compile import lower
from mcudeploy.progress import Bar
from shared_models import MODELS, need_models

HERE = Path(__file__).resolve().parent / "tone_kws"
INT8, FLOAT = HERE / "tone_kws-int8.tflite", HERE / "tone_kws-float32.tflite"
SAMPLES = HERE / "samples.npz"  # 16 samples of the test set (features.TEST_SEED): x float32[16, 49, 10, 1], y


def need_tflm():
    why = available()
    if why:
        pytest.skip(f"TensorFlow Lite Micro, the reference of a .tflite, is not installed: {why}")


@pytest.fixture(scope="module")
def graph():
    return lower(import_model(INT8))


@pytest.fixture(scope="module")
def data():
    with np.load(SAMPLES) as d:
        return d["x"], d["y"]


def _refusal(path, graph) -> str:
    with pytest.raises(MCUDeployError) as err:
        load_dataset(path, graph)
    text = str(err.value)
    assert "\n" not in text
    return text


def test_one_npz_of_many_samples(graph, data, tmp_path):
    x, y = data
    t = graph["features"]
    for key, stack in (("x", x), ("features", x), ("x", x[:, None])):  # [N, *shape[1:]] and [N, *shape]
        np.savez(tmp_path / "d.npz", **{key: stack, "y": y})
        said = []
        got = load_dataset(tmp_path / "d.npz", graph, said.append)
        assert len(got) == 16 and got.names[3] == "d.npz[3]"
        np.testing.assert_array_equal(got.labels, y)
        np.testing.assert_array_equal(got.samples[5]["features"], quantize(x[5][None], t))
        assert len(said) == 1 and "quantized to int8 with scale" in said[0] and "d.npz" in said[0], said
    codes = np.stack([quantize(v[None], t) for v in x])
    np.savez(tmp_path / "codes.npz", x=codes, labels=y)  # int8 as it is: nothing said
    said = []
    got = load_dataset(tmp_path / "codes.npz", graph, said.append)
    assert not said and got.samples[0]["features"].dtype == np.int8
    np.testing.assert_array_equal(got.samples[0]["features"], codes[0])
    np.savez(tmp_path / "nolabels.npz", x=codes)
    assert load_dataset(tmp_path / "nolabels.npz", graph).labels is None


def test_a_folder_of_one_sample_files(graph, data, tmp_path):
    x, y = data
    for k in range(3):  # files in the order of their names
        np.savez(tmp_path / f"s{k}.npz", features=x[k], label=y[k])
    (tmp_path / "README.txt").write_text("not a sample")
    said = []
    got = load_dataset(tmp_path, graph, said.append)
    assert got.names == ("s0.npz", "s1.npz", "s2.npz") and got.labels.tolist() == y[:3].tolist()
    assert len(said) == 1, said
    npy = tmp_path / "npy"
    npy.mkdir()
    for k in range(2):
        np.save(npy / f"a{k}.npy", x[k][None])
    got = load_dataset(npy, graph)
    assert len(got) == 2 and got.labels is None


def test_what_is_ambiguous_or_wrong_is_refused_naming_the_file(graph, data, tmp_path):
    x, y = data
    cases = {
        "both.npz": ({"x": x, "features": x}, "holds both features and x"),
        "twolabels.npz": ({"x": x, "y": y, "label": y}, "labels under both y and label"),
        "extra.npz": ({"x": x, "weights": y}, "array weights is neither an input of the model (features) nor labels"),
        "none.npz": ({"inputs": x}, "has no array named features"),
        "shape.npz": ({"x": x[:, :40]}, "array x is float32[16, 40, 10, 1]; input features takes the samples as "
                                        "[N, 1, 49, 10, 1] or [N, 49, 10, 1]"),
        "floaty.npz": ({"x": x, "y": y.astype(np.float32)}, "labels y are float32[16]; --dataset takes integer"),
        "onehot.npz": ({"x": x, "y": np.eye(8, dtype=np.int64)[y]}, "not one-hot"),
        "count.npz": ({"x": x, "y": y[:5]}, "int[16]"),
        "empty.npz": ({"x": x[:0]}, "holds no sample"),
    }
    for name, (arrays, expected) in cases.items():
        np.savez(tmp_path / name, **arrays)
        text = _refusal(tmp_path / name, graph)
        assert expected in text and name in text, (name, text)
    np.savez(tmp_path / "c.npz", x=x.astype(np.complex64))
    assert "give it as int8 (or float values" in _refusal(tmp_path / "c.npz", graph)
    np.save(tmp_path / "many.npy", x)
    assert "a .npz file of many samples or a folder" in _refusal(tmp_path / "many.npy", graph)
    assert "no such file or folder" in _refusal(tmp_path / "absent.npz", graph)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    np.savez(mixed / "a.npz", x=x[0], y=y[0])
    np.savez(mixed / "b.npz", x=x[1])
    assert "a.npz has a label and" in _refusal(mixed, graph) and "b.npz none" in _refusal(mixed, graph)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no .npy or .npz file" in _refusal(empty, graph)
    with pytest.raises(MCUDeployError, match="sample 2 has label 8; output Identity has 8 classes"):
        label_output(graph, np.array([0, 7, 8]), "d.npz")


def test_the_figures_on_known_outputs(graph):
    """Three samples of an 8-class int8 output (scale 1/256, zero point -128) with known differences."""
    def out(*codes):
        return [np.array(codes, dtype=np.int8).reshape(1, 8)]

    deployed = [out(-128, 100, -128, -128, -128, -128, -128, -128), out(90, -128, -128, -128, -128, -128, -128, -128),
                out(-128, -128, 50, -128, -128, -128, -128, -128)]
    reference = [deployed[0], deployed[1], out(-128, -128, 47, -128, -128, -128, -128, 60)]  # 3 steps, and 188
    floats = [[np.full((1, 8), 0.0)] for _ in range(3)]
    floats[0][0][0, 1] = 228 / 256  # = (100 + 128) / 256: that sample's error is 0
    floats[1][0][0, 3] = 1.0
    floats[2][0][0, 2] = 1.0
    (report,), by_sample = output_reports(graph, deployed, reference, floats)
    assert report.exact == 2 and report.max_diff == 188 and report.top1 == pytest.approx(2 / 3)
    assert report.float_top1 == pytest.approx(2 / 3)  # the second sample's arg max is 0, the float model's 3
    e1 = (218 / 256 + 1.0) / 8
    e2 = (1 - 178 / 256) / 8
    assert report.float_mae == pytest.approx((0 + e1 + e2) / 3)
    assert int(np.argmax(by_sample)) == 1
    acc = accuracy(graph, np.array([1, 3, 2]), "d.npz", deployed, reference, floats)
    assert (acc.deployed, acc.reference, acc.float_model) == pytest.approx((2 / 3, 1 / 3, 1.0))


def test_the_progress_bar_draws_on_a_terminal_only():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term, log = Terminal(), io.StringIO()
    for stream in (term, log):
        with Bar(4, "4 samples on host", stream) as bar:
            bar.advance(2)
            bar.stage("the reference")
            bar.advance(2)
    assert log.getvalue() == ""
    drawn = term.getvalue()
    assert "4 samples on host [" in drawn and "the reference [" + "#" * 28 + "] 4/4" in drawn
    assert drawn.endswith("\r")  # cleared at the end


def test_run_dataset_on_the_host(tmp_path, capsys):
    """4 labelled samples: the report's figures agree with the outputs -o saves and the labels."""
    need_tflm()
    x, y = (np.load(SAMPLES)[k] for k in ("x", "y"))
    np.savez(tmp_path / "four.npz", x=x[:4], y=y[:4])
    code = main(["run", str(INT8), "-b", "host", "--dataset", str(tmp_path / "four.npz"), "--float-model", str(FLOAT),
                 "-o", str(tmp_path / "out.npz")])
    out, err = capsys.readouterr()
    assert code == 0, err
    saved = np.load(tmp_path / "out.npz")["Identity"]
    deployed = float(np.mean(np.argmax(saved.reshape(4, -1), -1) == y[:4]))
    assert "data set" in out and "4 sample(s), labelled; the model on host" in out
    assert "Identity (int8) vs TensorFlow Lite Micro: 4 of 4 samples bit for bit, max 0 steps" in out
    assert f"accuracy against the labels (Identity, top-1 of 8 classes, 4 samples): deployed on host {deployed:.1%}" in out
    assert "the C vs mcudeploy's numpy reference: bit for bit on 4 samples" in out
    layers = [line for line in out.splitlines() if line.startswith("    ") and " dB" in line]
    assert len(layers) == 8 and all("bit for bit" in line for line in layers), out
    assert "8 of 8 matched" in out and err.count("quantized to int8") == 1


def test_run_dataset_on_an_onnx_model_with_a_float_onnx_model(tmp_path, capsys):
    """The shared int8 KWS against onnxruntime, and its hybrid (float activations) as the float model."""
    need_models()
    kws, hybrid = MODELS / "onnx" / "kws_dscnn_int8.onnx", MODELS / "onnx" / "kws_dscnn_hybrid.onnx"
    x = np.random.default_rng(3).integers(-128, 128, (3, 1, 49, 10, 1)).astype(np.int8)
    np.savez(tmp_path / "kws.npz", input_1=x, labels=np.array([0, 5, 11]))
    assert main(["run", str(kws), "-b", "host", "--dataset", str(tmp_path / "kws.npz"), "--float-model",
                 str(hybrid), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "onnxruntime" and report["float_model"] == str(hybrid)
    out = report["outputs"][0]
    assert out["name"] == "Identity" and out["unit"] == "steps" and 0 <= out["exact"] <= 3
    assert out["float_mae"] is not None and 0 <= out["float_top1"] <= 1
    assert report["c_vs_numpy_reference"]["bit_for_bit"] and report["accuracy"]["classes"] == 12
    assert sum(layer["float_max"] is not None for layer in report["layers"]) == len(report["layers"]) == 12
    assert report["layers_oracle"] == "onnxruntime" and all(layer["oracle_diff"] is not None
                                                              for layer in report["layers"])


def test_float_data_for_an_input_quantized_after_its_transpose(tmp_path):
    """The shared int8 KWS ONNX takes its int8 input NHWC; its scale and zero point are on the Transpose's
    output. Float data is quantized with them, as the header's quantize helper does (and run --input)."""
    need_models()
    graph = lower(import_model(MODELS / "onnx" / "kws_dscnn_int8.onnx"))
    scale, zero = 0.584703, 83  # the DequantizeLinear after input_1's Transpose
    codes = np.random.default_rng(4).integers(-128, 128, (3, 49, 10, 1)).astype(np.int8)
    np.savez(tmp_path / "f.npz", x=((codes.astype(np.int64) - zero) * scale).astype(np.float32))
    said = []
    got = load_dataset(tmp_path / "f.npz", graph, said.append)
    np.testing.assert_array_equal(np.stack([s["input_1"][0] for s in got.samples]), codes)
    assert len(said) == 1 and "scale 0.584703 and zero point 83" in said[0], said


def test_run_dataset_refusals(tmp_path, capsys):
    np.savez(tmp_path / "d.npz", x=np.zeros((2, 49, 10, 1), np.float32))
    for args, expected in ((["--check"], "give --dataset or --check, not both"),
                           (["--input", str(tmp_path / "d.npz")], "give --dataset or --input, not both")):
        assert main(["run", str(INT8), "-b", "host", "--dataset", str(tmp_path / "d.npz"), *args]) == 1
        assert expected in capsys.readouterr().err
    assert main(["run", str(INT8), "-b", "host", "--dataset", str(tmp_path / "d.npz"), "--samples", "0"]) == 1
    assert "--samples 0: give 1 or more" in capsys.readouterr().err
    assert main(["run", str(INT8), "-b", "host", "--json"]) == 1
    assert "--json applies to run --dataset" in capsys.readouterr().err


@pytest.mark.qemu
def test_run_dataset_on_qemu(tmp_path, capsys):
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    need_tflm()
    x, y = (np.load(SAMPLES)[k] for k in ("x", "y"))
    for k in range(3):
        np.savez(tmp_path / f"s{k}.npz", x=x[k], y=y[k])
    assert main(["run", str(INT8), "-b", "qemu-m4", "--dataset", str(tmp_path), "-o", str(tmp_path / "o.npz"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    saved = np.load(tmp_path / "o.npz")["Identity"]
    assert report["board"] == "qemu-m4" and report["samples"] == 3 and report["reference"] == "TensorFlow Lite Micro"
    assert report["outputs"][0]["exact"] == 3 and report["c_vs_numpy_reference"]["bit_for_bit"]
    assert report["accuracy"]["deployed"] == pytest.approx(np.mean(np.argmax(saved.reshape(3, -1), -1) == y[:3]))
    assert len(report["layers"]) == 8 and report["float_model"] is None
    assert report["board_run"]["sessions"] == 1 and report["board_run"]["ticks_per_inference"][0] > 0
