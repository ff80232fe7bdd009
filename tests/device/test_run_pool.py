"""run --boards 2: the samples of one run cut over two emulators at once give the outputs one
emulator gives, in the samples' order, and the boards' status is said on stderr (issue 22)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from devmodels import matmul

from mcudeploy.cli import main

pytestmark = pytest.mark.qemu


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_on_two_emulators_gives_the_outputs_of_one(tmp_path, capsys, need_qemu):
    model = matmul(tmp_path / "mm.onnx", rows=4)
    code, _, err = run(capsys, str(model), "-b", "qemu-m4", "--samples", "5", "-o", str(tmp_path / "one.npz"))
    assert code == 0, err
    code, out, err = run(capsys, str(model), "-b", "qemu-m4", "--samples", "5", "--boards", "2", "--check",
                         "-o", str(tmp_path / "two.npz"))
    assert code == 0, out + err
    assert re.search(r"2/2 boards busy; board 1: [23] sample\(s\) of mm.onnx; board 2: [23] sample", err), err
    assert "total ticks over 5 sample(s)" in out
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert list(one) == list(two) == ["Y"]
    assert one["Y"].shape[0] == 5 and np.array_equal(one["Y"], two["Y"])
