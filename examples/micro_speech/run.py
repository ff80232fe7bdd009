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

from mcudeploy.check.tflm import run_tflm
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
    lines: list[str]               # what each model cost, for the user


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


def run_model(compiled, samples: list[dict]) -> tuple[list, str]:
    """The model's outputs on each sample, in order (a state carries from one call to the next): built and run on
    this computer for the host board, else as firmware on the board (an emulator for qemu-*). With what it cost."""
    calls = f"{len(samples)} call{'s' if len(samples) > 1 else ''}"
    start = time.perf_counter()
    if compiled.board.kind == "host":
        outputs = run_compiled_on_host(compiled, samples)
        return outputs, f"{calls} on this computer, {time.perf_counter() - start:.2f} s with the build"
    run = run_on_board(compiled, samples)
    low, high = min(r.total_ticks for r in run.runs), max(r.total_ticks for r in run.runs)
    per = span(low, high, "ticks")
    if run.instructions_per_tick:  # an emulator counts guest instructions, so many per tick
        per += f" (~{span(low * run.instructions_per_tick, high * run.instructions_per_tick, 'instructions')})"
    memory = run.firmware.report
    return run.outputs, (f"{calls} on {compiled.board.name}, {per} each; firmware: flash {memory.flash_used:,} B, "
                         f"SRAM {memory.sram_used:,} B (arena {memory.arena:,}, stack {memory.stack:,})")


def listen(wav: Path, board: str = "host", check: bool = True) -> Result:
    """The label of a one-second wav file, and whether each step is bit for bit TensorFlow Lite Micro's."""
    preprocessor = compile_model(PREPROCESSOR, board)
    classifier = compile_model(CLASSIFIER, board)
    frame_input, = preprocessor.graph.model_inputs()   # int16 [1, 480]
    feature_input, = classifier.graph.model_inputs()   # int8 [1, 1960]
    scores_output, = classifier.graph.model_outputs()  # int8 [1, 4]
    lines = []

    # 1. the audio preprocessor, once per 20 ms hop: 49 calls in sequence, its noise estimate kept between them
    frames = [{frame_input: w.reshape(1, WINDOW)} for w in windows(read_wav(wav))]
    outputs, cost = run_model(preprocessor, frames)
    features = np.stack([o[0] for o in outputs]).astype(np.int8)  # [49, 40]
    lines.append(f"preprocessor (arena {preprocessor.placement.arena_bytes:,} B, state "
                 f"{preprocessor.placement.state_bytes:,} B): {cost}")

    # 2. the classifier, once on the 49 x 40 features
    spectrogram = {feature_input: features.reshape(1, -1)}
    outputs, cost = run_model(classifier, [spectrogram])
    codes = outputs[0][0].reshape(-1).astype(np.int8)
    lines.append(f"classifier (arena {classifier.placement.arena_bytes:,} B): {cost}")
    q = classifier.graph[scores_output].quant
    scores = (codes.astype(np.float32) - q.zero_point[0]) * q.scale[0]

    # 3. TensorFlow Lite Micro's interpreter on the same frames, then on its own features: every bit the same?
    features_same = scores_same = None
    if check:
        tflm_features = np.stack([o[0] for o in run_tflm(PREPROCESSOR, [frame_input], frames)]).reshape(features.shape)
        tflm_codes = run_tflm(CLASSIFIER, [feature_input], [{feature_input: tflm_features.reshape(1, -1)}])[0][0]
        features_same = bool(np.array_equal(features, tflm_features))
        scores_same = bool(np.array_equal(codes, np.asarray(tflm_codes).reshape(-1)))
    return Result(LABELS[int(np.argmax(codes))], scores, features, codes, features_same, scores_same, lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wav", nargs="?", default=str(HERE / "testdata" / "yes_1000ms.wav"),
                        help="a one-second 16 kHz 16-bit mono wav (default: testdata/yes_1000ms.wav)")
    parser.add_argument("-b", "--board", default="host", help="host (this computer) or a board, e.g. qemu-m4")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with TensorFlow Lite Micro")
    args = parser.parse_args(argv)
    try:
        result = listen(Path(args.wav), args.board, check=not args.no_check)
    except MCUDeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in result.lines:
        print(line)
    print(f"{Path(args.wav).name} on {args.board}: {result.label}")
    for name, score, code in zip(LABELS, result.scores, result.codes):
        print(f"  {name:8s} {score:.4f}  (int8 {code})")
    if args.no_check:
        return 0
    verdict = {True: "bit for bit", False: "DIFFERENT"}
    print(f"features (49 x 40 int8) vs TensorFlow Lite Micro: {verdict[result.features_same]}")
    print(f"scores (4 int8) vs TensorFlow Lite Micro: {verdict[result.scores_same]}")
    return 0 if result.features_same and result.scores_same else 1


if __name__ == "__main__":
    sys.exit(main())
