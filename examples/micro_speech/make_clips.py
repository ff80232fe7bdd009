"""Clips for micro_speech made from TensorFlow Lite Micro's four recordings: one second of 16 kHz int16 each.

The four clips (yes, no, silence, noise) and 21 more made from them, the same every time (one seed): louder and
softer, shifted in time, with white noise at three levels added, two mixed, reversed, and pure signals (digital
silence, tones, a chirp, white noise, a full-scale square wave). What label they deserve does not matter: they are
there to drive the two models through many different frames, and the test is that mcudeploy's labels and bits
are TensorFlow Lite Micro's on every one.

    python examples/micro_speech/make_clips.py OUT_DIR     # writes the 25 clips as wav files
"""
from __future__ import annotations

import sys
import wave
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RATE = 16000
SEED = 59  # issue 59


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)


def write_wav(path: Path, audio: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(audio.astype("<i2").tobytes())


def _pcm(x: np.ndarray) -> np.ndarray:
    """Rounded and clipped to int16, one second long (zeros past the end)."""
    x = np.clip(np.rint(np.asarray(x, np.float64)), -32768, 32767).astype(np.int16)
    return np.concatenate([x, np.zeros(max(0, RATE - len(x)), np.int16)])[:RATE]


def _shift(x: np.ndarray, ms: int) -> np.ndarray:
    """Later by ``ms`` (earlier if negative), zeros coming in."""
    n = RATE * abs(ms) // 1000
    zeros = np.zeros(n, np.int16)
    return np.concatenate([zeros, x[:RATE - n]]) if ms > 0 else np.concatenate([x[n:], zeros])


def clips() -> dict[str, np.ndarray]:
    """name -> int16[16000], the four recordings first."""
    real = {w: _pcm(read_wav(HERE / "testdata" / f"{w}_1000ms.wav")) for w in ("yes", "no", "silence", "noise")}
    yes, no, silence, noise = (real[w].astype(np.float64) for w in real)
    rng = np.random.default_rng(SEED)
    t = np.arange(RATE) / RATE
    out = dict(real)
    out.update({
        "yes_x0.25": _pcm(yes * 0.25),
        "yes_x4": _pcm(yes * 4),                 # clipped at full scale
        "no_x0.5": _pcm(no * 0.5),
        "no_x3": _pcm(no * 3),
        "yes_later_150ms": _shift(real["yes"], 150),
        "yes_earlier_200ms": _shift(real["yes"], -200),
        "no_later_250ms": _shift(real["no"], 250),
        "yes_noise_100": _pcm(yes + rng.normal(0, 100, RATE)),
        "yes_noise_1000": _pcm(yes + rng.normal(0, 1000, RATE)),
        "no_noise_300": _pcm(no + rng.normal(0, 300, RATE)),
        "no_noise_3000": _pcm(no + rng.normal(0, 3000, RATE)),
        "yes_plus_no": _pcm(0.5 * yes + 0.5 * no),
        "yes_over_noise": _pcm(yes + 4 * noise),
        "no_over_silence_x8": _pcm(no + 8 * silence),
        "yes_reversed": real["yes"][::-1].copy(),
        "digital_silence": np.zeros(RATE, np.int16),
        "tone_440hz": _pcm(8000 * np.sin(2 * np.pi * 440 * t)),
        "tone_2khz_quiet": _pcm(60 * np.sin(2 * np.pi * 2000 * t)),
        "chirp_100hz_7khz": _pcm(6000 * np.sin(2 * np.pi * (100 * t + (7000 - 100) / 2 * t * t))),
        "white_noise_2000": _pcm(rng.normal(0, 2000, RATE)),
        "square_250hz_full": _pcm(np.where(np.sin(2 * np.pi * 250 * t) >= 0, 32767, -32768)),
    })
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, audio in clips().items():
        write_wav(folder / f"{name}.wav", audio)
    print(f"{len(clips())} clips in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
