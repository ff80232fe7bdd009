"""micro_speech as one firmware: both models in one arena, a rolling window of features, a label every 20 ms.

The audio preprocessor and the classifier are compiled for qemu-m4 with extern arenas (`mcudeploy compile --arena
extern`), linked into one firmware (firmware/main.c.j2) beside one copy of the kernel library, and run one after the
other in one buffer as large as the larger arena. At every hop of 20 ms the preprocessor turns the last 30 ms of
audio into 40 features, the features join a window of the last 49 rows (zeros at the start), and the classifier
scores the window. Under QEMU the firmware reads the audio from a host file and writes, per hop, the features, the
scores and the ticks of each step.

Then TensorFlow Lite Micro runs the two models the same way (one preprocessor interpreter through the whole stream,
the same rolling window, the classifier at every hop), and every feature and score of every hop is compared.

    python examples/micro_speech/one_firmware.py                 # TFLite Micro's four clips back to back, 4 s
    python examples/micro_speech/one_firmware.py --clips         # the 25 clips of make_clips.py, 25 s
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from mcudeploy.boards import load_board
from mcudeploy.check.tflm import run_tflm
from mcudeploy.codegen import write_project
from mcudeploy.codegen.emit import BANNER
from mcudeploy.compile import compile_model
from mcudeploy.device.build import ARCH, firmware_build_spec
from mcudeploy.device.elfsize import MemoryReport, memory_report
from mcudeploy.device.qemu import instructions_per_tick, qemu_binary
from mcudeploy.errors import MCUDeployError
from mcudeploy.plan.code_options import CodeOptions

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_clips import clips as made_clips, read_wav  # noqa: E402
from run import CLASSIFIER, FRAMES, LABELS, PREPROCESSOR, STRIDE, WINDOW  # noqa: E402

BOARD = "qemu-m4"
ARM = "arm-none-eabi-gcc"
FEATURES, SCORES = 40, 4
RECORD = np.dtype([("features", "i1", FEATURES), ("scores", "i1", SCORES), ("ticks", "<u4", 3)])  # main.c.j2's


@dataclass
class Stream:
    features: np.ndarray        # int8 [hops, 40], the row each hop adds to the window
    scores: np.ndarray          # int8 [hops, 4], the classifier's output at each hop
    ticks: np.ndarray           # uint32 [hops, 3]: preprocessor, classifier, the whole hop
    memory: MemoryReport        # the firmware's
    arenas: dict[str, int]      # model -> its arena's bytes (the shared buffer is the larger)
    state_bytes: int            # the preprocessor's noise estimate, outside the arena
    instructions_per_tick: float
    tflm_features: Optional[np.ndarray] = None
    tflm_scores: Optional[np.ndarray] = None


def hops(audio: np.ndarray) -> int:
    return (len(audio) - WINDOW) // STRIDE + 1


def build_and_run(audio: np.ndarray, work: Path) -> Stream:
    """The firmware of both models built for qemu-m4 and run on ``audio`` (int16, 16 kHz), hop by hop."""
    board = load_board(BOARD)
    for tool in (ARM, qemu_binary(board)):
        if shutil.which(tool) is None:
            raise MCUDeployError(f"the one-firmware example needs {tool}, which is not installed")
    models = {}
    for name, path in (("preprocessor", PREPROCESSOR), ("classifier", CLASSIFIER)):
        c = compile_model(path, BOARD)
        code = dataclasses.replace(c.code or CodeOptions(), name=name, arena="extern")
        models[name] = dataclasses.replace(c, code=code)
    folders = {name: write_project(c, work / name) for name, c in models.items()}
    (work / "audio.bin").write_bytes(audio.astype("<i2").tobytes())
    count = hops(audio)
    env = Environment(loader=FileSystemLoader(str(HERE / "firmware")), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    main = work / "main.c"
    main.write_text(env.get_template("main.c.j2").render(
        banner=BANNER, pre="preprocessor", PRE="PREPROCESSOR", cls="classifier", CLS="CLASSIFIER", board=BOARD,
        window=WINDOW, stride=STRIDE, frames=FRAMES, features=FEATURES, scores=SCORES, hops=count,
        audio_file=str(work / "audio.bin"), output_file=str(work / "hops.bin")))

    # the board's compiler flags, link script and start-up (the measurer's, without its protocol), one kernel library
    spec = firmware_build_spec(board, work / "measurer")
    runtime = Path(spec["project_dir"]) / "firmware" / "runtime"
    library = folders["preprocessor"] / "mcud"
    cflags = [f for f in spec["cflags"] if not f.startswith(("-include", "-fstack-usage", "-fcallgraph-info"))
              and not f.endswith("mcud_measure.h")]
    includes = [f"-I{d}" for d in (runtime, library / "include", *folders.values())]
    sources = [main, *(runtime / f for f in ARCH[board.arch].runtime), runtime / "system.c",
               runtime / f"timer_{board.timer.driver}.c", *sorted((library / "kernels").glob("*.c")),
               *(folder / "model.c" for folder in folders.values())]
    objects = []
    for k, source in enumerate(sources):
        obj = work / "obj" / f"{k}-{source.stem}.o"
        obj.parent.mkdir(exist_ok=True)
        done = subprocess.run([ARM, *cflags, *includes, "-c", str(source), "-o", str(obj)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise MCUDeployError(f"{source.name} did not compile: {done.stderr[-2000:]}")
        objects.append(obj)
    elf = work / "micro_speech.elf"
    done = subprocess.run([ARM, *spec["ldflags"], "-T", spec["linker_script"], *map(str, objects), *spec["libs"],
                           "-o", str(elf)], capture_output=True, text=True)
    if done.returncode != 0:
        raise MCUDeployError(f"the firmware did not link: {done.stderr[-2000:]}")

    q = board.qemu
    done = subprocess.run([qemu_binary(board), "-M", q.machine, "-display", "none", "-monitor", "none", "-serial",
                           "null", "-icount", f"shift={q.icount_shift},sleep=off", "-semihosting-config",
                           "enable=on,target=native", "-kernel", str(elf), *q.extra_args],
                          capture_output=True, text=True, timeout=600, cwd=work)
    if done.returncode != 0:
        raise MCUDeployError(f"the firmware ended with status {done.returncode} under QEMU {done.stderr[-500:]}")
    records = np.frombuffer((work / "hops.bin").read_bytes(), RECORD)
    if len(records) != count:
        raise MCUDeployError(f"the firmware wrote {len(records)} hops of {count}")
    return Stream(records["features"].copy(), records["scores"].copy(), records["ticks"].copy(),
                  memory_report(elf, spec["flash_bytes"], spec["sram_bytes"], spec["sram_region"]),
                  {name: c.placement.arena_bytes for name, c in models.items()},
                  models["preprocessor"].placement.state_bytes, instructions_per_tick(board))


def tflm_stream(audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TensorFlow Lite Micro's features and scores per hop, the same way: one preprocessor interpreter through the
    whole stream (its noise estimate carried), a rolling window of 49 rows from zeros, the classifier at each hop."""
    pre_in = "audio"  # run_tflm keys the samples by these names; only their order matters
    frames = [{pre_in: audio[k * STRIDE:k * STRIDE + WINDOW].reshape(1, WINDOW)} for k in range(hops(audio))]
    features = np.stack([o[0].reshape(-1) for o in run_tflm(PREPROCESSOR, [pre_in], frames)]).astype(np.int8)
    window, windows = np.zeros((FRAMES, FEATURES), np.int8), []
    for row in features:
        window = np.concatenate([window[1:], row[None]])
        windows.append({"features": window.reshape(1, -1)})
    scores = np.stack([o[0].reshape(-1) for o in run_tflm(CLASSIFIER, ["features"], windows)]).astype(np.int8)
    return features, scores


def stream(audio: np.ndarray, check: bool = True, work: Optional[Path] = None) -> Stream:
    with tempfile.TemporaryDirectory(prefix="mcud-speech-") as tmp:
        result = build_and_run(audio, Path(work or tmp))
    if check:
        result.tflm_features, result.tflm_scores = tflm_stream(audio)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", action="store_true", help="the 25 clips of make_clips.py back to back")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with TensorFlow Lite Micro")
    args = parser.parse_args(argv)
    names = list(made_clips()) if args.clips else ["yes", "no", "silence", "noise"]
    audio = np.concatenate([made_clips()[n] for n in names]) if args.clips else \
        np.concatenate([read_wav(HERE / "testdata" / f"{n}_1000ms.wav") for n in names])
    try:
        s = stream(audio, check=not args.no_check)
    except MCUDeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    m, ipt = s.memory, s.instructions_per_tick
    print(f"one firmware on {BOARD}: flash {m.flash_used:,} B (code {m.text:,}, constants {m.rodata:,}, data "
          f"{m.data:,}); SRAM {m.sram_used:,} B: shared arena {m.arena:,} B (preprocessor {s.arenas['preprocessor']:,},"
          f" classifier {s.arenas['classifier']:,}), statics {m.data + m.bss - m.arena:,} (the 1,960 B window and "
          f"the preprocessor's {s.state_bytes} B state among them), stack {m.stack:,}")
    for k, what in enumerate(("preprocessor", "classifier", "hop")):
        t = s.ticks[:, k]
        print(f"{what:12s} {int(t.min()):,} .. {int(t.max()):,} ticks per hop (median {int(np.median(t)):,}, "
              f"~{np.median(t) * ipt:,.0f} guest instructions)")
    print(f"{len(s.ticks)} hops of 20 ms over {len(names)} s of audio; the label when the window holds each clip:")
    for k, name in enumerate(names):
        h = 50 * k + FRAMES - 1  # the hop whose 49 rows are the clip's own windows
        tflm = LABELS[int(np.argmax(s.tflm_scores[h]))] if s.tflm_scores is not None else "-"
        print(f"  {name:20s} hop {h:4d}: {LABELS[int(np.argmax(s.scores[h]))]:8s} (TFLM {tflm})")
    if args.no_check:
        return 0
    features_same = int(np.sum(np.all(s.features == s.tflm_features, axis=1)))
    scores_same = int(np.sum(np.all(s.scores == s.tflm_scores, axis=1)))
    print(f"vs TensorFlow Lite Micro: features of {features_same} of {len(s.features)} hops and scores of "
          f"{scores_same} of {len(s.scores)} hops bit for bit")
    return 0 if features_same == scores_same == len(s.features) else 1


if __name__ == "__main__":
    sys.exit(main())
