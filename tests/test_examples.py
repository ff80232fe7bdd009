"""The examples under examples/ run as their READMEs say.

micro_speech (examples/micro_speech/run.py): TensorFlow Lite Micro's own audio preprocessor and keyword model, on its
four one-second recordings and 21 clips made from them (make_clips.py, seeded), give TensorFlow Lite Micro's labels
(for its own recordings those its micro_speech_test.cc asserts), every feature and score bit for bit TensorFlow Lite
Micro's interpreter, on the host and on qemu-m4. Each model is built once and runs every clip in one process (one
board session), its noise estimate set back at each clip's start, as TensorFlow Lite Micro's new interpreter per
clip starts it (without that, 23 of the 25 clips' features differ, measured once; the reset itself is tested on
the host below)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "micro_speech"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"micro_speech_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


micro_speech = _load("run")
make_clips = _load("make_clips")
join = _load("join")
stream = _load("stream")

# what TensorFlow Lite Micro's micro_speech_test.cc asserts of its four one-second recordings
TFLM_TEST_LABELS = {"yes": "yes", "no": "no", "silence": "silence", "noise": "silence"}


def _all_same_as_tflm(results: dict) -> None:
    assert len(results) >= 20
    for name, r in results.items():
        assert r.features.shape == (49, 40), name
        assert r.features_same and r.scores_same, (name, r.codes, r.lines)
        assert r.label == r.tflm_label, (name, r.codes)
    for name, label in TFLM_TEST_LABELS.items():
        assert results[name].label == label, (name, results[name].codes)



def test_micro_speech_on_the_host_25_clips_bit_for_bit(need_tflm):
    _all_same_as_tflm(micro_speech.listen_all(make_clips.clips()))


def test_the_host_runner_sets_the_preprocessors_state_back_every_sequence(tmp_path):
    """The yes clip twice in one process: with reset_every=49 its second pass is its first, bit for bit; without,
    the noise estimate the first pass left changes the second's features."""
    preprocessor = compile_model(micro_speech.PREPROCESSOR, "host")
    name, = preprocessor.graph.model_inputs()
    frames = [{name: w.reshape(1, -1)} for w in micro_speech.windows(make_clips.clips()["yes"])] * 2
    for reset, same in ((49, True), (None, False)):
        out = run_compiled_on_host(preprocessor, frames, tmp_path / str(reset), reset_every=reset)
        features = [o[0] for o in out]
        assert all((a == b).all() for a, b in zip(features[:49], features[49:])) is same, reset


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
def test_micro_speech_on_qemu_m4_25_clips_bit_for_bit(need_qemu, need_tflm):
    _all_same_as_tflm(micro_speech.listen_all(make_clips.clips(), "qemu-m4"))


def _stream_same_as_tflm(s, words) -> None:
    """Every hop's features and scores bit for bit TFLite Micro's, both on the joined file and from its example's two
    models run separately (one preprocessor interpreter through the stream, the window from zeros), and the label of
    each clip's own window the one its micro_speech_test.cc asserts."""
    hops = 50 * len(words) - 1
    assert s.features.shape == (hops, 40) and s.scores.shape == (hops, 4)
    assert np.array_equal(s.features, s.tflm_features) and np.array_equal(s.scores, s.tflm_scores)
    assert np.array_equal(s.features, s.tflm_joined_features) and np.array_equal(s.scores, s.tflm_joined_scores)
    for k, word in enumerate(words):
        assert micro_speech.LABELS[int(np.argmax(s.scores[50 * k + 48]))] == TFLM_TEST_LABELS[word]


WORDS = ["yes", "no", "silence", "noise"]


def _four_clips() -> np.ndarray:
    return np.concatenate([make_clips.clips()[w] for w in WORDS])


def test_the_committed_joined_model_is_what_join_py_writes():
    pytest.importorskip("ai_edge_litert", reason="join.py needs the TFLite schema's object API")
    assert join.join(join.PREPROCESSOR, join.CLASSIFIER) == join.JOINED.read_bytes()


def test_join_py_refuses_what_it_cannot_chain_in_one_sentence(tmp_path, capsys):
    pytest.importorskip("ai_edge_litert", reason="join.py needs the TFLite schema's object API")
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a flatbuffer at all")
    cases = [((junk, join.CLASSIFIER), "is not a TFLite model"),
             ((join.PREPROCESSOR, join.PREPROCESSOR), "must be int8"),
             ((tmp_path / "missing.tflite", join.CLASSIFIER), "could not be read")]
    for (first, second), words in cases:
        with pytest.raises(join.JoinError, match=words):
            join.join(first, second)
    assert join.main([str(junk), str(join.CLASSIFIER), "-o", str(tmp_path / "out.tflite")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out.tflite").exists()


def test_micro_speech_as_one_model_on_the_host_hop_by_hop(need_tflm):
    _stream_same_as_tflm(stream.stream(_four_clips()), WORDS)


def test_run_check_takes_the_joined_model(need_tflm):
    """`mcudeploy run --check` on the pair as one model: random frames in sequence against TFLite Micro."""
    from mcudeploy.cli import main
    assert main(["run", str(join.JOINED), "-b", "host", "--check", "--samples", "6"]) == 0


@pytest.mark.qemu
def test_micro_speech_as_one_model_on_qemu_m4_hop_by_hop(need_qemu, need_tflm):
    """TFLite Micro's four clips back to back (199 hops of 20 ms) through one firmware of the joined model: one
    plan, one arena, the window and the noise estimate carried in its state."""
    s = stream.stream(_four_clips(), "qemu-m4")
    _stream_same_as_tflm(s, WORDS)
    assert s.memory.arena == s.arena and s.ticks is not None and (s.ticks > 0).all()


@pytest.mark.qemu
def test_measure_times_every_operator_of_the_joined_model_on_qemu_m4(need_qemu, capsys):
    """`mcudeploy measure` on the pair as one model: a time for each operator of both models and of the window,
    the Signal operators and the classifier's convolution among them."""
    from mcudeploy.cli import main
    assert main(["measure", str(join.JOINED), "-b", "qemu-m4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    kernels = [op["kernel"] for op in report["ops"]]
    assert any(k.startswith("mcud_signal_rfft") for k in kernels) and any(k.startswith("mcud_conv") for k in kernels)
    assert "mcud_concat_s8" in kernels  # the window's new row
    assert all(op["ticks"] > 0 for op in report["ops"] if op["kernel"] != "-")
    assert report["total_ticks"] >= sum(op["ticks"] for op in report["ops"] if op["kernel"] != "-") // 2
