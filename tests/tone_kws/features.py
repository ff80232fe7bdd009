"""A labelled keyword-spotting-like data set made offline: one second of audio per sample holding one of CLASSES
sound patterns (steady tones, chirps, two-tone calls, a beep, noise alone) at a random onset, length, pitch
and level, in noise of a random level, turned into 49 frames x 10 log band energies (the layout of the MLPerf
Tiny KWS input, 49 x 10 x 1; bands instead of MFCCs). Pure numpy, seeded: the same seed gives the same set.

    python -m tests.tone_kws.features -n 200 -o kws200.npz [--seed S]

writes x (float32[N, 49, 10, 1]) and y (int64[N], the class of each sample), the format of `run --dataset`.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

RATE = 8000  # Hz
FRAMES, BANDS = 49, 10
FRAME, HOP = 320, 160  # 40 ms windows every 20 ms: 49 frames in one second
CLASSES = ("noise", "low", "high", "rise", "fall", "trill", "step", "beep")
TEST_SEED = 1  # the seed of the set the acceptance figures use (make.py trains on seed 0)


def _edges() -> np.ndarray:
    """BANDS log-spaced band edges over 100 Hz .. 3.6 kHz, as FFT bins of a FRAME window."""
    hz = np.geomspace(100, 3600, BANDS + 1)
    return np.round(hz * FRAME / RATE).astype(int)


def _pattern(label: int, t: np.ndarray, rng) -> np.ndarray:
    """The instantaneous frequency (Hz) of class ``label`` over ``t`` (seconds from its onset, 0..1)."""
    lo, hi = rng.uniform(300, 600), rng.uniform(1400, 2400)
    if label == 1:
        return np.full_like(t, lo)
    if label == 2:
        return np.full_like(t, hi)
    if label == 3:
        return lo + (hi - lo) * t
    if label == 4:
        return hi - (hi - lo) * t
    if label == 5:
        rate = rng.uniform(5, 9)
        return np.where(np.sin(2 * np.pi * rate * t) > 0, lo, hi)
    if label == 6:
        return np.where(t < 0.5, lo, hi)
    return np.full_like(t, rng.uniform(800, 1200))  # beep: a short mid tone


def audio(label: int, rng) -> np.ndarray:
    """One second of float audio of class ``label``."""
    n = RATE
    x = rng.normal(0, 1, n) * rng.uniform(0.05, 0.5)
    if label == 0:
        return x
    length = rng.uniform(0.12, 0.25) if label == 7 else rng.uniform(0.45, 0.8)
    start = rng.uniform(0, 1 - length)
    i0, i1 = int(start * RATE), int((start + length) * RATE)
    t = np.linspace(0, 1, i1 - i0, endpoint=False)
    freq = _pattern(label, t, rng) * rng.uniform(0.9, 1.1)
    phase = 2 * np.pi * np.cumsum(freq) / RATE
    envelope = np.minimum(1, np.minimum(t, 1 - t) * 20)
    x[i0:i1] += rng.uniform(0.3, 1.0) * envelope * np.sin(phase)
    return x


def features(x: np.ndarray) -> np.ndarray:
    """FRAMES x BANDS log band energies of one second of audio (Hann windows, power spectrum summed per band)."""
    window = np.hanning(FRAME)
    frames = np.stack([x[k * HOP:k * HOP + FRAME] * window for k in range(FRAMES)])
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    e = _edges()
    bands = np.stack([power[:, e[b]:max(e[b + 1], e[b] + 1)].sum(1) for b in range(BANDS)], axis=1)
    return np.log(bands + 1e-3).astype(np.float32)


def make_set(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(x float32[count, 49, 10, 1], y int64[count]): classes in turn, so every class has count / 8 samples."""
    rng = np.random.default_rng(seed)
    y = np.arange(count) % len(CLASSES)
    rng.shuffle(y)
    x = np.stack([features(audio(int(label), rng)) for label in y])[..., None]
    return x, y.astype(np.int64)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.tone_kws.features", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=TEST_SEED)
    p.add_argument("-o", "--output", required=True, help="the .npz to write (x, y)")
    args = p.parse_args(argv)
    x, y = make_set(args.samples, args.seed)
    np.savez_compressed(args.output, x=x, y=y)
    print(f"wrote {args.output}: x {x.dtype}{list(x.shape)}, y {y.dtype}{list(y.shape)}, "
          f"{np.bincount(y, minlength=len(CLASSES)).tolist()} per class")
    return 0


if __name__ == "__main__":
    sys.exit(main())
