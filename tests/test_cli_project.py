"""``mcudeploy run DIR``: a folder written by compile -o or tune -o runs (and is checked) as the plan
recorded there, and a folder that does not match its model is refused in one sentence naming the file."""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import numpy as np
import onnx
import pytest
import zoo

from mcudeploy.boards import load_board
from mcudeploy.cli import main
from mcudeploy.frontend import import_onnx
from mcudeploy.ops import registry
from mcudeploy.compile import lower
from mcudeploy.project import load_project
from mcudeploy.reference import run_reference
from mcudeploy.search import space, write_result
from mcudeploy.search.timing import TimedScheme
from mcudeploy.search.tune import SEARCH_OPTIONS, TuneResult, compile_scheme


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two small int8 MobileNetV2s (a stem and one inverted residual block), on which a split pays with
    an int8 input (--int8-input: every plan here is made so, and plan.json records it)."""
    work = tmp_path_factory.mktemp("project-models")
    paths = []
    for size, classes in ((32, 4), (24, 3)):
        _, qdq, _ = zoo.mobilenetv2(work, size=size, stages=((6, 8, 1, 1),), stem=8, classes=classes)
        paths.append(work / f"mnv2_{size}_int8.onnx")
        onnx.save(qdq, paths[-1])
    return paths


def fake_ticks(compiled) -> int:
    """A stand-in for the board: one tick per MAC and 50 per kernel call."""
    return sum(registry.get(n.op).macs(compiled.graph, n) + 50 for n in compiled.order if not registry.get(n.op).view)


def the_cut(lowered):
    """The longest valid cut into 4 pieces with recomputed halos: on these models it halves the
    arena (a deterministic pick)."""
    cuts = [c for c in space.candidate_cuts(lowered, space.segments(lowered), frozenset(), frozenset())
            if c.pieces == 4 and c.halo == "recompute"]
    return max(cuts, key=lambda c: (len(c.axes), c.axes))


def write_split(model, board: str, out):
    """What ``mcudeploy tune -o out`` writes for a one-cut scheme, timed by fake_ticks (exact
    placement; "fit" lets compile_graph drop a kernel's scratch at the peak)."""
    lowered = lower(import_onnx(model), int8_input=True)
    target = load_board(board)
    options = replace(SEARCH_OPTIONS, schedule_method="auto", placement_method="exact", int8_input=True)
    base = TimedScheme((), compile_scheme(lowered, (), target, str(model), options))
    scheme = (the_cut(lowered),)
    best = TimedScheme(scheme, compile_scheme(lowered, scheme, target, str(model), replace(options, scratch="fit")))
    base.ticks, best.ticks = fake_ticks(base.compiled), fake_ticks(best.compiled)
    write_result(TuneResult(base, best, int(base.ticks * 2), out))
    return best.compiled


def _error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcudeploy: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_run_a_compiled_project_checks_on_host(models, tmp_path, capsys):
    out = tmp_path / "proj"
    assert main(["compile", str(models[0]), "-b", "host", "--int8-input", "-o", str(out)]) == 0
    capsys.readouterr()
    plan = json.loads((out / "plan.json").read_text())
    (x,) = plan["inputs"]
    assert plan["int8_input"] and x["dtype"] == "int8" and x["scale"] > 0  # --int8-input: recorded, and documented:
    (header,) = [h.read_text() for h in out.glob("*.h") if not h.name.startswith("mcud_")]
    zero = x["zero_point"]
    assert re.search(r"#define \w+_INPUT0_SCALE ", header)
    assert re.search(r"#define \w+_INPUT0_ZERO_POINT " + re.escape(f"({zero})" if zero < 0 else str(zero)) + "\n", header)
    assert main(["run", str(out), "--check", "--samples", "3"]) == 0
    text = capsys.readouterr().out
    assert "rebuilt from the model and verified" in text and "PASS on 3 input(s)" in text
    assert main(["run", str(out / "plan.json"), "-b", "host"]) == 0  # the plan file, the board named


def test_run_a_split_project_is_its_recorded_plan(models, tmp_path, capsys):
    out = tmp_path / "split"
    written = write_split(models[0], "host", out)
    plan = json.loads((out / "plan.json").read_text())
    assert plan["cuts"] and plan["split"]["saved_bytes"] > 0
    loaded = load_project(out).compiled
    assert [n.name for n in loaded.order] == [n.name for n in written.order]
    assert loaded.placement.offsets == written.placement.offsets
    assert loaded.lifetimes.buffers == written.lifetimes.buffers
    assert {n.name for n in loaded.graph.nodes if n.attrs.get("scratch", 1) == 0} == \
        {n.name for n in written.graph.nodes if n.attrs.get("scratch", 1) == 0}

    assert main(["run", str(out), "--check", "--samples", "4"]) == 0
    assert "PASS on 4 input(s)" in capsys.readouterr().out
    # --input and -o: the outputs of the split plan are the unsplit model's reference, bit for bit
    unsplit = lower(import_onnx(models[0]), int8_input=True)
    x = np.random.default_rng(7).integers(-128, 128, size=unsplit[unsplit.inputs[0]].shape).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(out), "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz")]) == 0
    got = np.load(tmp_path / "y.npz")[unsplit.outputs[0]][0]
    np.testing.assert_array_equal(got, run_reference(unsplit, {unsplit.inputs[0]: x})[0])


def test_a_folder_without_plan_json(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert f"{tmp_path / 'empty'} holds no plan.json" in _error(capsys, ["run", str(tmp_path / "empty")])


@pytest.fixture
def project(models, tmp_path):
    """A compiled host project of models[0], with its model beside it (a copy the tests may change)."""
    model = tmp_path / "m.onnx"
    shutil.copy(models[0], model)
    write_split(model, "host", tmp_path / "proj")
    return tmp_path / "proj", model


def _edit(plan_path, change) -> None:
    plan = json.loads(plan_path.read_text())
    change(plan)
    plan_path.write_text(json.dumps(plan))


def test_a_plan_whose_model_changed(models, project, capsys):
    out, model = project
    shutil.copy(models[1], model)
    err = _error(capsys, ["run", str(out)])
    assert f"{out / 'plan.json'} was not made from {model}" in err


def test_a_plan_of_another_model(models, project, capsys):
    """plan.json pointed at another model (its digest too, or none recorded): the cuts, order or
    buffers do not fit, and plan.json is named."""
    out, _ = project
    other = str(models[1].resolve())
    _edit(out / "plan.json", lambda p: p.update(model_path=other, model_sha256=None))
    err = _error(capsys, ["run", str(out)])
    assert f"{out / 'plan.json'} does not match {other}" in err


def test_a_plan_whose_model_is_gone(project, capsys):
    out, model = project
    model.unlink()
    assert f"{out / 'plan.json'} was made from {model.resolve()}, which is not there" in _error(capsys, ["run", str(out)])


def test_edited_offsets_and_order_are_refused(project, capsys):
    out, _ = project
    plan_path = out / "plan.json"
    saved = plan_path.read_text()

    def overlap(plan):  # every buffer at offset 0: some live together
        for b in plan["buffers"]:
            b["offset"] = 0
    _edit(plan_path, overlap)
    assert f"{plan_path} is not a valid plan: buffers" in _error(capsys, ["run", str(out)])

    plan_path.write_text(saved)
    _edit(plan_path, lambda p: p["order"].reverse())
    err = _error(capsys, ["run", str(out)])
    assert str(plan_path) in err and "before it is written" in err


def test_edited_c_is_refused(project, capsys):
    out, _ = project
    with open(out / "model.c", "a") as f:
        f.write("/* edited */\n")
    assert f"{out / 'model.c'} is not the C of {out / 'plan.json'}" in _error(capsys, ["run", str(out)])


def test_an_older_plan_without_cuts(project, capsys):
    out, _ = project
    _edit(out / "plan.json", lambda p: p.pop("cuts"))
    assert "lacks \"cuts\"" in _error(capsys, ["run", str(out)])


def test_a_streamed_split_project_round_trips(models, tmp_path, capsys):
    """--stream-input: plan.json records it, the header declares the callback and no offset for the
    input, and a split plan whose cut holds the ReadInput loads back as written and checks on host."""
    lowered = lower(import_onnx(models[0]), int8_input=True, stream_input=True)
    cuts = [c for c in space.candidate_cuts(lowered, space.segments(lowered), frozenset(), frozenset())
            if c.pieces == 4 and any(n == lowered.nodes[0].name for n, _ in c.axes)]
    scheme = (max(cuts, key=lambda c: (len(c.axes), c.axes)),)
    target = load_board("host")
    options = replace(SEARCH_OPTIONS, schedule_method="auto", int8_input=True, stream_input=True)
    base = TimedScheme((), compile_scheme(lowered, (), target, str(models[0]), options))
    best = TimedScheme(scheme, compile_scheme(lowered, scheme, target, str(models[0]), options))
    base.ticks, best.ticks = fake_ticks(base.compiled), fake_ticks(best.compiled)
    out = tmp_path / "streamed"
    write_result(TuneResult(base, best, int(base.ticks * 2), out))
    plan = json.loads((out / "plan.json").read_text())
    assert plan["stream_input"] and plan["int8_input"]
    (header,) = [h.read_text() for h in out.glob("*.h") if not h.name.startswith("mcud_")]
    assert re.search(r"#define \w+_INPUT0_STREAMED 1", header) and "_INPUT0_OFFSET" not in header
    assert re.search(r"void \w+_read_input\(int32_t index, int32_t offset, int32_t count, void \*dst\);", header)
    loaded = load_project(out).compiled
    assert loaded.stream_input and loaded.placement.offsets == best.compiled.placement.offsets
    assert sum(n.op == "ReadInput" for n in loaded.graph.nodes) == 4
    assert main(["run", str(out), "--check", "--samples", "3"]) == 0
    assert "PASS on 3 input(s)" in capsys.readouterr().out


def test_another_board_or_options_that_a_plan_fixes(project, capsys):
    out, _ = project
    assert "is a plan for board host, not qemu-m4" in _error(capsys, ["run", str(out), "-b", "qemu-m4"])
    assert "--schedule applies only to a model file" in _error(capsys, ["run", str(out), "--schedule", "rpo"])
    assert "--int8-input applies only to a model file" in _error(capsys, ["run", str(out), "--int8-input"])
    assert "--stream-input applies only to a model file" in _error(capsys, ["run", str(out), "--stream-input"])
    assert "give the board with -b" in _error(capsys, ["run", str(out / ".." / "m.onnx")])


@pytest.mark.qemu
def test_a_split_plan_passes_check_on_qemu(models, tmp_path, capsys):
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    out = tmp_path / "split-m4"
    write_split(models[0], "qemu-m4", out)
    assert main(["run", str(out), "-b", "qemu-m4", "--check", "--samples", "3"]) == 0
    text = capsys.readouterr().out
    assert "split by 1 cut(s)" in text and "PASS on 3 input(s)" in text and "SAME as the host board" in text
