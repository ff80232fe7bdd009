"""micro_speech as one model: a 30 ms frame in every 20 ms hop, a label out, on the host or a board.

models/micro_speech_stream.tflite is the audio preprocessor and the classifier joined into one TFLite model by
join.py: the preprocessor's 40 features go into a rolling window of the last 49 rows (a resource variable, zeros at
the first call), and the classifier scores the window at every hop. mcudeploy compiles it like any model: one plan,
one arena, one firmware (the measurer, for a board). This script runs an audio stream through it hop by hop, in one
process or one board session (the preprocessor's noise estimate and the window carried from hop to hop), and
compares every hop's features and scores with TensorFlow Lite Micro's, run two ways: on the joined file, and on
the two models of TensorFlow Lite Micro's example run separately the same way (one preprocessor interpreter
through the whole stream, a window of 49 rows from zeros, the classifier at each hop).

    python examples/micro_speech/stream.py                    # the four clips back to back, 199 hops, host
    python examples/micro_speech/stream.py -b qemu-m4         # the same on an emulated Cortex-M4
    python examples/micro_speech/stream.py --clips -b qemu-m4 # the 25 clips of make_clips.py, 1,249 hops
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from mcudeploy.check.tflm import run_tflm
from mcudeploy.compile import compile_model
from mcudeploy.device.elfsize import MemoryReport
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.errors import MCUDeployError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from join import JOINED  # noqa: E402
from make_clips import clips as made_clips, read_wav  # noqa: E402
from run import CLASSIFIER, FRAMES, LABELS, PREPROCESSOR, STRIDE, WINDOW  # noqa: E402


@dataclass
class Stream:
    features: np.ndarray        # int8 [hops, 40], the row each hop adds to the window
    scores: np.ndarray          # int8 [hops, 4], the classifier's output at each hop
    arena: int                  # the plan's arena, bytes
    state_bytes: int            # what the model keeps between calls (the window, the noise estimate)
    seconds: float              # the compile, build and run
    ticks: Optional[np.ndarray] = None  # per hop, on a board
    instructions_per_tick: Optional[float] = None  # an emulator's
    memory: Optional[MemoryReport] = None  # the firmware's, on a board
    tflm_features: Optional[np.ndarray] = None  # TensorFlow Lite Micro's two models, run separately
    tflm_scores: Optional[np.ndarray] = None
    tflm_joined_scores: Optional[np.ndarray] = None  # TensorFlow Lite Micro on the joined file
    tflm_joined_features: Optional[np.ndarray] = None


def frames(audio: np.ndarray) -> list[np.ndarray]:
    """The 30 ms windows of the stream, 20 ms apart, as many as fit."""
    return [audio[k * STRIDE:k * STRIDE + WINDOW].reshape(1, WINDOW) for k in range((len(audio) - WINDOW) // STRIDE + 1)]


def two_models(audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TensorFlow Lite Micro's features and scores per hop from its example's two models run separately: one
    preprocessor interpreter through the whole stream, a rolling window of 49 rows from zeros, the classifier at
    each hop."""
    features = np.stack([o[0].reshape(-1) for o in run_tflm(PREPROCESSOR, ["audio"], [{"audio": f} for f in
                                                                                        frames(audio)])])
    window, windows = np.zeros((FRAMES, features.shape[1]), np.int8), []
    for row in features.astype(np.int8):
        window = np.concatenate([window[1:], row[None]])
        windows.append({"features": window.reshape(1, -1)})
    scores = np.stack([o[0].reshape(-1) for o in run_tflm(CLASSIFIER, ["features"], windows)])
    return features.astype(np.int8), scores.astype(np.int8)


def stream(audio: np.ndarray, board: str = "host", check: bool = True, model: Path = JOINED) -> Stream:
    """The joined model run on ``audio`` (int16, 16 kHz) hop by hop on ``board``; with ``check``, TensorFlow Lite
    Micro's features and scores beside it, both ways."""
    start = time.perf_counter()
    compiled = compile_model(model, board)
    frame_input, = compiled.graph.model_inputs()
    samples = [{frame_input: f} for f in frames(audio)]
    extra = {}
    if compiled.board.kind == "host":
        outputs = run_compiled_on_host(compiled, samples)
    else:
        run = run_on_board(compiled, samples)
        outputs = run.outputs
        extra = dict(ticks=np.array([r.total_ticks for r in run.runs]), memory=run.firmware.report,
                     instructions_per_tick=run.instructions_per_tick)
    result = Stream(np.stack([o[1].reshape(-1) for o in outputs]).astype(np.int8),
                    np.stack([o[0].reshape(-1) for o in outputs]).astype(np.int8),
                    compiled.placement.arena_bytes, compiled.placement.state_bytes, time.perf_counter() - start,
                    **extra)
    if check:
        result.tflm_features, result.tflm_scores = two_models(audio)
        joined = run_tflm(model, [frame_input], samples)
        result.tflm_joined_scores = np.stack([o[0].reshape(-1) for o in joined]).astype(np.int8)
        result.tflm_joined_features = np.stack([o[1].reshape(-1) for o in joined]).astype(np.int8)
    return result


def same_hops(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.sum(np.all(a == b, axis=1)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-b", "--board", default="host", help="host (this computer) or a board, e.g. qemu-m4")
    parser.add_argument("--clips", action="store_true", help="the 25 clips of make_clips.py back to back")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with TensorFlow Lite Micro")
    args = parser.parse_args(argv)
    names = list(made_clips()) if args.clips else ["yes", "no", "silence", "noise"]
    audio = np.concatenate([made_clips()[n] for n in names]) if args.clips else \
        np.concatenate([read_wav(HERE / "testdata" / f"{n}_1000ms.wav") for n in names])
    try:
        s = stream(audio, args.board, check=not args.no_check)
    except MCUDeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    hops = len(s.scores)
    print(f"{JOINED.name} on {args.board}: arena {s.arena:,} B, state {s.state_bytes:,} B (the window and the "
          f"noise estimate); {hops} hops of 20 ms over {len(names)} s of audio, {s.seconds:.1f} s with the build")
    if s.memory is not None:
        m = s.memory
        print(f"firmware: flash {m.flash_used:,} B (code {m.text:,}, constants {m.rodata:,}, data {m.data:,}); SRAM "
              f"{m.sram_used:,} B (arena {m.arena:,}, statics {m.data + m.bss - m.arena:,}, stack {m.stack:,})")
    if s.ticks is not None:
        per = f"{int(s.ticks.min()):,} .. {int(s.ticks.max()):,} ticks per hop (median {int(np.median(s.ticks)):,}"
        if s.instructions_per_tick:
            per += f", ~{np.median(s.ticks) * s.instructions_per_tick:,.0f} guest instructions"
        print(per + ")")
    print("the label when the window holds each clip:")
    for k, name in enumerate(names):
        h = 50 * k + FRAMES - 1  # the hop whose 49 rows are the clip's own windows
        tflm = LABELS[int(np.argmax(s.tflm_scores[h]))] if s.tflm_scores is not None else "-"
        print(f"  {name:20s} hop {h:4d}: {LABELS[int(np.argmax(s.scores[h]))]:8s} (TFLM {tflm})")
    if args.no_check:
        return 0
    counts = [same_hops(s.features, s.tflm_features), same_hops(s.scores, s.tflm_scores),
              same_hops(s.features, s.tflm_joined_features), same_hops(s.scores, s.tflm_joined_scores)]
    print(f"vs TensorFlow Lite Micro's two models run separately: features of {counts[0]} of {hops} hops, scores of "
          f"{counts[1]} of {hops} hops bit for bit")
    print(f"vs TensorFlow Lite Micro on {JOINED.name}: features of {counts[2]} of {hops} hops, scores of "
          f"{counts[3]} of {hops} hops bit for bit")
    return 0 if all(c == hops for c in counts) else 1


if __name__ == "__main__":
    sys.exit(main())
