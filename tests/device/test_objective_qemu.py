"""``measure`` and ``flash`` with ``--objective`` on qemu-m4 (issue 42): each times or flashes the plan of the
objective asked for, the one ``compile`` writes with it (its plan id). The model is tests/test_objective.py's
streaming int8 keyword spotter: its memory plan (600 B) runs its three 1-D convolutions without scratch, the latency
plan (1,104 B) keeps their scratch and runs them faster. measure's and flash's refusal of a
--memory-budget below the least arena: tests/test_objective.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcudeploy.cli import main
from mcudeploy.device.qemu import free_port

pytestmark = pytest.mark.qemu

MODEL = str(Path(__file__).resolve().parent.parent / "keras_corpus" / "streaming_kws-int8.tflite")
ARENA = {"memory": 600, "latency": 1_104}  # tests/test_objective.py's MEMORY_ARENA and KEEP_ARENA


def _ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out


def _plan_id(folder: Path) -> str:
    (planned,) = re.findall(r"PLAN_ID (0x[0-9A-F]{8}u)", (folder / "streaming_kws_int8_tflite.h").read_text())
    return planned


def _compiled(capsys, tmp_path) -> dict:
    """compile -o of each objective: {objective: its folder}, whose plans differ."""
    folders = {objective: tmp_path / "compiled" / objective for objective in ARENA}
    for objective, folder in folders.items():
        _ok(capsys, "compile", MODEL, "-b", "qemu-m4", "--objective", objective, "-o", str(folder))
    assert _plan_id(folders["memory"]) != _plan_id(folders["latency"])
    return folders


def test_measure_times_the_plan_of_its_objective(tmp_path, capsys, need_qemu):
    compiled = _compiled(capsys, tmp_path)
    measured = {}
    for objective in ARENA:
        kept = tmp_path / "measured" / objective
        out = _ok(capsys, "measure", MODEL, "-b", "qemu-m4", "--objective", objective, "--repeat", "1", "--json",
                  "-o", str(kept))
        measured[objective] = json.loads(out)
        assert measured[objective]["objective"]["name"] == objective  # the JSON says which plan it timed
        assert _plan_id(kept) == _plan_id(compiled[objective])  # the plan measured is the one compile writes
        plan = json.loads((kept / "plan.json").read_text())
        assert plan["objective"]["name"] == objective and plan["arena_bytes"] == ARENA[objective]
        timings = json.loads((kept / "timings.json").read_text())
        assert timings["memory"]["arena"] == ARENA[objective]  # the firmware's, from its ELF
    kernels = {objective: {o["node"]: o["kernel"] for o in d["ops"]} for objective, d in measured.items()}
    memory_plan = json.loads((compiled["memory"] / "plan.json").read_text())
    without_scratch = {e["node"] for e in memory_plan["order"] if e.get("scratch") == 0}
    assert len(without_scratch) == 3  # the kernels timed differ exactly there
    assert {n for n, k in kernels["memory"].items() if kernels["latency"][n] != k} == without_scratch
    assert measured["latency"]["total_ticks"] < measured["memory"]["total_ticks"]


def test_flash_objective_latency_puts_the_latency_plan_on_the_emulator(tmp_path, capsys, need_qemu):
    compiled = _compiled(capsys, tmp_path)
    project = tmp_path / "pio"
    url = f"socket://127.0.0.1:{free_port()}"
    try:
        out = _ok(capsys, "flash", MODEL, "-b", "qemu-m4", "--objective", "latency", "--port", url,
                  "--project-dir", str(project))
        assert f"plan {_plan_id(compiled['latency'])}, model id" in out
        assert out.startswith("objective latency: the fastest plan within")  # which plan went onto the board
        assert f"arena {ARENA['latency']:,}, stack" in out  # the firmware's SRAM, from its ELF
        assert (project / "model.c").read_bytes() == (compiled["latency"] / "model.c").read_bytes()
        assert json.loads((project / "plan.json").read_text())["objective"]["name"] == "latency"
        # the emulator runs that build: run of the latency plan finds its model id there
        out = _ok(capsys, "run", MODEL, "-b", "qemu-m4", "--objective", "latency", "--port", url, "--samples", "1")
        assert "total ticks over 1 sample(s)" in out
    finally:
        main(["flash", "-b", "qemu-m4", "--stop", "--port", url])
