"""The examples under examples/ run as their READMEs say.

micro_speech (examples/micro_speech/run.py): TensorFlow Lite Micro's own audio preprocessor and keyword model on its
own one-second recordings give its labels (yes for yes_1000ms.wav, no for no_1000ms.wav, as its micro_speech_test.cc
expects), every feature and score bit for bit TensorFlow Lite Micro's interpreter, on the host and on qemu-m4."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mcudeploy.check.tflm import available
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "micro_speech"


def _load():
    spec = importlib.util.spec_from_file_location("micro_speech_run", EXAMPLE / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


micro_speech = _load()


@pytest.fixture(scope="module")
def need_tflm():
    why = available()
    if why is not None:
        pytest.skip(f"TensorFlow Lite Micro is not installed: {why}")


@pytest.mark.parametrize("word", ["yes", "no"])
def test_micro_speech_on_the_host(word, need_tflm):
    result = micro_speech.listen(EXAMPLE / "testdata" / f"{word}_1000ms.wav")
    assert result.label == word, (result.scores, result.lines)
    assert result.features_same and result.scores_same
    assert result.features.shape == (49, 40)


# The first frame of features of TensorFlow Lite Micro's 30 ms clips: the expected_feature arrays of its
# micro_speech_test.cc (NoFeatureTest, YesFeatureTest), which its reference kernels compute and assert exactly.
FIRST_FRAME = {
    "yes": [124, 105, 126, 103, 125, 101, 123, 100, 116, 98, 115, 97, 113, 90, 91, 82, 104, 96, 117, 97, 121, 103,
            126, 101, 125, 104, 126, 104, 125, 101, 116, 90, 81, 74, 80, 71, 83, 76, 82, 71],
    "no": [126, 103, 124, 102, 124, 102, 123, 100, 118, 97, 118, 100, 118, 98, 121, 100, 121, 98, 117, 91, 96, 74, 54,
           87, 100, 87, 109, 92, 91, 80, 64, 55, 83, 74, 74, 78, 114, 95, 101, 81],
}


def test_micro_speech_features_of_a_30_ms_clip_are_tflite_micros_own_test_values(tmp_path):
    preprocessor = compile_model(micro_speech.PREPROCESSOR, "host")
    name, = preprocessor.graph.model_inputs()
    clips = [{name: micro_speech.read_wav(EXAMPLE / "testdata" / f"{w}_30ms.wav").reshape(1, -1)} for w in FIRST_FRAME]
    for word, sample in zip(FIRST_FRAME, clips):  # each clip is a first call: the state from its initial value
        features = run_compiled_on_host(preprocessor, [sample], tmp_path / word)[0][0]
        assert features.tolist() == FIRST_FRAME[word], word


@pytest.mark.qemu
@pytest.mark.parametrize("word", ["yes", "no"])
def test_micro_speech_on_qemu_m4(word, need_qemu, need_tflm):
    result = micro_speech.listen(EXAMPLE / "testdata" / f"{word}_1000ms.wav", "qemu-m4")
    assert result.label == word, (result.scores, result.lines)
    assert result.features_same and result.scores_same
