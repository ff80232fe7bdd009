"""micro_speech, from the microphone to the label, with mcudeploy.

TensorFlow Lite Micro's keyword spotter is two models:

- models/audio_preprocessor_int8.tflite turns 30 ms of 16 kHz audio (480 int16 samples) into 40 int8 features,
  with TFLite Micro's Signal operators (window, FFT, mel filter bank, noise reduction, PCAN, log). It keeps a
  noise estimate between calls, so it runs on the frames in order, 20 ms apart.
- models/micro_speech_quantized.tflite reads the 49 frames of features of one second (49 x 40) and scores
  silence, unknown, yes and no.

This script compiles both to C, runs a one-second wav through them on the host (or on an emulated board, -b), prints
the label and the scores, and checks every feature and score bit for bit against TensorFlow Lite Micro running the
same two models the same way (its Python interpreter, PyPI's tflite-micro).

    python examples/micro_speech/run.py                              # testdata/yes_1000ms.wav on the host
    python examples/micro_speech/run.py examples/micro_speech/testdata/no_1000ms.wav -b qemu-m4
    python examples/micro_speech/run.py --clips -b qemu-m4           # the 25 clips of make_clips.py, one session

Several clips run through each model in one process (one board session), the preprocessor's noise estimate set back
to its initial value at each clip's first frame, as a new TensorFlow Lite Micro interpreter starts it.
"""
from __future__ import annotations

import argparse
import sys
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from mcudeploy.check.tflm import run_tflm, run_tflm_many
from mcudeploy.compile import compile_model
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.errors import MCUDeployError

HERE = Path(__file__).resolve().parent
PREPROCESSOR = HERE / "models" / "audio_preprocessor_int8.tflite"
CLASSIFIER = HERE / "models" / "micro_speech_quantized.tflite"
LABELS = ("silence", "unknown", "yes", "no")
RATE = 16000
WINDOW, STRIDE = 480, 320  # 30 ms windows every 20 ms, as TFLite Micro's micro_speech example
FRAMES = 49                # (16000 - 480) // 320 + 1 windows fit in one second


@dataclass
class Result:
    label: str
    scores: np.ndarray      # the classifier's probabilities, dequantized
    features: np.ndarray    # int8 [49, 40], the preprocessor's output frame by frame
    codes: np.ndarray       # int8 [4], the classifier's raw output
    features_same: Optional[bool]  # bit for bit TensorFlow Lite Micro's (None: not checked)
    scores_same: Optional[bool]
    lines: list[str]               # what each model cost, for the user (the same for every clip of a run)
    tflm_label: Optional[str] = None  # TensorFlow Lite Micro's label (None: not checked)


def read_wav(path: Path) -> np.ndarray:
    """The samples of a 16 kHz, 16-bit mono wav file."""
    with wave.open(str(path)) as w:
        if (w.getframerate(), w.getsampwidth(), w.getnchannels()) != (RATE, 2, 1):
            raise SystemExit(f"{path}: give a 16 kHz, 16-bit mono wav file")
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)


def windows(audio: np.ndarray) -> list[np.ndarray]:
    """The 49 windows of 30 ms, 20 ms apart, of the audio's first second (zeros past its end if it is shorter)."""
    audio = np.concatenate([audio, np.zeros(max(0, RATE - len(audio)), np.int16)])
    return [audio[k * STRIDE:k * STRIDE + WINDOW] for k in range(FRAMES)]


def span(low: float, high: float, unit: str) -> str:
    return f"{low:,.0f} {unit}" if low == high else f"{low:,.0f} .. {high:,.0f} {unit}"


def run_model(compiled, samples: list[dict], sequence: Optional[int] = None) -> tuple[list, str]:
    """The model's outputs on each sample, in order, in one process or one board session (a state carries from one
    call to the next; ``sequence``: set to its initial value again every ``sequence`` calls, one clip's): built once
    and run on this computer for the host board, else as firmware on the board (an emulator for qemu-*). With what
    it cost."""
    calls = f"{len(samples)} call{'s' if len(samples) > 1 else ''}"
    start = time.perf_counter()
    if compiled.board.kind == "host":
        outputs = run_compiled_on_host(compiled, samples, reset_every=sequence)
        return outputs, f"{calls} on this computer, {time.perf_counter() - start:.2f} s with the build"
    run = run_on_board(compiled, samples, reset_every=sequence)
    low, high = min(r.total_ticks for r in run.runs), max(r.total_ticks for r in run.runs)
    per = span(low, high, "ticks")
    if run.instructions_per_tick:  # an emulator counts guest instructions, so many per tick
        per += f" (~{span(low * run.instructions_per_tick, high * run.instructions_per_tick, 'instructions')})"
    memory = run.firmware.report
    return run.outputs, (f"{calls} on {compiled.board.name}, {per} each, {time.perf_counter() - start:.1f} s with the "
                         f"build; firmware: flash {memory.flash_used:,} B, SRAM {memory.sram_used:,} B (arena "
                         f"{memory.arena:,}, stack {memory.stack:,})")


def listen_all(clips: dict[str, np.ndarray], board: str = "host", check: bool = True) -> dict[str, Result]:
    """The label of each one-second clip (name -> int16 audio), and whether each step is bit for bit TensorFlow Lite
    Micro's. Each model is compiled and built once; all the clips go through it in one run, the preprocessor's noise
    estimate set to its initial value at the start of each clip, as a new TensorFlow Lite Micro interpreter starts
    (its micro_speech_test.cc makes one per clip), and TensorFlow Lite Micro's side gets a new interpreter per clip."""
    preprocessor = compile_model(PREPROCESSOR, board)
    classifier = compile_model(CLASSIFIER, board)
    frame_input, = preprocessor.graph.model_inputs()   # int16 [1, 480]
    feature_input, = classifier.graph.model_inputs()   # int8 [1, 1960]
    scores_output, = classifier.graph.model_outputs()  # int8 [1, 4]
    names = list(clips)
    lines = []

    # 1. the audio preprocessor, once per 20 ms hop: 49 calls per clip in sequence, its noise estimate kept between
    # them and set back to zeros at each clip's first
    frames = {name: [{frame_input: w.reshape(1, WINDOW)} for w in windows(clips[name])] for name in names}
    outputs, cost = run_model(preprocessor, [f for name in names for f in frames[name]], sequence=FRAMES)
    features = np.stack([o[0] for o in outputs]).astype(np.int8).reshape(len(names), FRAMES, -1)  # [clips, 49, 40]
    lines.append(f"preprocessor (arena {preprocessor.placement.arena_bytes:,} B, state "
                 f"{preprocessor.placement.state_bytes:,} B): {cost}")

    # 2. the classifier, once per clip on its 49 x 40 features
    outputs, cost = run_model(classifier, [{feature_input: f.reshape(1, -1)} for f in features])
    codes = np.stack([o[0].reshape(-1) for o in outputs]).astype(np.int8)  # [clips, 4]
    lines.append(f"classifier (arena {classifier.placement.arena_bytes:,} B): {cost}")
    q = classifier.graph[scores_output].quant
    scores = (codes.astype(np.float32) - q.zero_point[0]) * q.scale[0]

    # 3. TensorFlow Lite Micro's interpreter on the same frames (a new one per clip), then on its own features
    tflm_features = tflm_codes = None
    if check:
        done = run_tflm_many([(PREPROCESSOR, [frame_input], frames[name]) for name in names])
        for name, got in zip(names, done):
            if isinstance(got, Exception):
                raise MCUDeployError(f"{name}: {got}")
        tflm_features = np.stack([np.stack([o[0] for o in got]).reshape(FRAMES, -1) for got in done]).astype(np.int8)
        tflm_codes = np.stack([np.asarray(o[0]).reshape(-1) for o in run_tflm(
            CLASSIFIER, [feature_input], [{feature_input: f.reshape(1, -1)} for f in tflm_features])]).astype(np.int8)
    results = {}
    for k, name in enumerate(names):
        same = (None, None, None) if not check else (
            bool(np.array_equal(features[k], tflm_features[k])), bool(np.array_equal(codes[k], tflm_codes[k])),
            LABELS[int(np.argmax(tflm_codes[k]))])
        results[name] = Result(LABELS[int(np.argmax(codes[k]))], scores[k], features[k], codes[k], same[0], same[1],
                               lines, same[2])
    return results


def listen(wav: Path, board: str = "host", check: bool = True) -> Result:
    """The label of a one-second wav file, and whether each step is bit for bit TensorFlow Lite Micro's."""
    return listen_all({wav.name: read_wav(wav)}, board, check)[wav.name]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wav", nargs="*", default=[str(HERE / "testdata" / "yes_1000ms.wav")],
                        help="one-second 16 kHz 16-bit mono wav files (default: testdata/yes_1000ms.wav)")
    parser.add_argument("-b", "--board", default="host", help="host (this computer) or a board, e.g. qemu-m4")
    parser.add_argument("--clips", action="store_true",
                        help="the 25 clips of make_clips.py (TFLite Micro's four and 21 made from them), not wav files")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with TensorFlow Lite Micro")
    args = parser.parse_args(argv)
    if args.clips:
        from make_clips import clips
        audio = clips()
    else:
        audio = {Path(w).name: read_wav(Path(w)) for w in args.wav}
    try:
        results = listen_all(audio, args.board, check=not args.no_check)
    except MCUDeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in next(iter(results.values())).lines:
        print(line)
    if len(results) == 1:
        (name, result), = results.items()
        print(f"{name} on {args.board}: {result.label}")
        for label, score, code in zip(LABELS, result.scores, result.codes):
            print(f"  {label:8s} {score:.4f}  (int8 {code})")
        if args.no_check:
            return 0
        verdict = {True: "bit for bit", False: "DIFFERENT"}
        print(f"features (49 x 40 int8) vs TensorFlow Lite Micro: {verdict[result.features_same]}")
        print(f"scores (4 int8) vs TensorFlow Lite Micro: {verdict[result.scores_same]}")
        return 0 if result.features_same and result.scores_same else 1
    width = max(len(n) for n in results)
    print(f"{'clip':{width}s}  {'label':8s} {'TFLM':8s} scores (int8: {', '.join(LABELS)})  features  scores")
    for name, r in results.items():
        marks = ["" if args.no_check else ("same" if same else "DIFFERENT")
                 for same in (r.features_same, r.scores_same)]
        codes = ", ".join(f"{c:4d}" for c in r.codes)
        print(f"{name:{width}s}  {r.label:8s} {r.tflm_label or '-':8s} {codes:30s}"
              f"  {marks[0]:9s} {marks[1]}")
    if args.no_check:
        return 0
    good = sum(r.features_same and r.scores_same and r.label == r.tflm_label for r in results.values())
    print(f"{good} of {len(results)} clips: the same label, features and scores as TensorFlow Lite Micro, bit for bit")
    return 0 if good == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
