"""One inference on two cores, the plan (mcudeploy/cores): phases that keep every step after what it reads,
one arena in which no two steps of one phase on different cores share a byte, and the plan's steps, run one
after another on the host, bit for bit the numpy reference."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import zoo
from mcudeploy import check as checks
from mcudeploy.boards import load_board
from mcudeploy.compile import lower
from mcudeploy.cores.compile import plan_on_cores
from mcudeploy.cores.plan import CorePlan, sorted_order
from mcudeploy.cores.races import PlanRace, check, check_order
from mcudeploy.frontend import import_onnx
from mcudeploy.reference import run_reference

BOARD = "qemu-an521-chip"
MODELS = ("convs", "branching", "unet", "mobilenetv2_035")
SMALL = {"mobilenetv2_035": lambda workdir: zoo.mobilenetv2_035(workdir, size=48)}  # its host build: 31 s at 96x96


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    out = {}
    for name in MODELS:
        build = SMALL.get(name) or zoo.BUILDERS[name]
        _, qdq, _ = build(tmp_path_factory.mktemp(name))
        graph = lower(import_onnx(qdq))
        out[name] = (graph, plan_on_cores(graph, load_board(BOARD)))
    return out


@pytest.mark.parametrize("name", MODELS)
def test_the_plan_shares_the_work_and_passes_its_own_check(plans, name):
    graph, p = plans[name]
    assert set(p.plan.core) - {-1} == {0, 1}
    assert p.critical_path() < 0.8 * p.one_core()
    check(p.graph, p.order, p.plan, p.lifetimes, p.placement)  # plan_on_cores ran it too: it does not depend on state
    assert p.placement.arena_bytes >= p.placement.lower_bound_bytes


@pytest.mark.parametrize("name", MODELS)
def test_each_phase_bounds_its_steps_lifetimes(plans, name):
    _, p = plans[name]
    bounds = p.plan.bounds()
    for b in p.lifetimes.buffers:
        if b.first >= 0:
            assert b.first == bounds[p.plan.phase[b.first]][0]
        assert b.last == -1 or b.last == bounds[p.plan.phase[b.last]][1]


def test_a_step_put_beside_what_it_reads_is_refused(plans):
    _, p = plans["convs"]
    flat = CorePlan(p.plan.cores, p.plan.core, (0,) * len(p.plan.phase))  # every barrier taken away
    with pytest.raises(PlanRace, match="without a barrier"):
        check_order(p.graph, p.order, flat, p.lifetimes.elided)


def test_two_cores_writing_one_place_at_once_is_refused(plans):
    _, p = plans["mobilenetv2_035"]
    order, plan, lives, placed = p.order, p.plan, p.lifetimes, p.placement
    # the two pieces of one operator, run at once, write their rows into one output: give both the first's rows
    for phase in range(plan.phase_count):
        a, b = plan.steps(phase, 0), plan.steps(phase, 1)
        if a and b and order[a[0]].original == order[b[0]].original:
            break
    out_a, out_b = order[a[0]].outputs[0], order[b[0]].outputs[0]
    assert lives.slots[out_a].buffer == lives.slots[out_b].buffer
    check(p.graph, order, plan, lives, placed)
    slots = dict(lives.slots, **{out_b: lives.slots[out_a]})
    with pytest.raises(PlanRace, match=f"in phase {phase}, core . writes byte"):
        check(p.graph, order, plan, dataclasses.replace(lives, slots=slots), placed)


def test_phases_come_from_the_cores_given():
    graph = lower(import_onnx(_three_convs()))
    order = kernels = graph.nodes
    assert [n.op for n in kernels] == ["Conv"] * 3
    one = {n.name: 0 for n in kernels}
    _, plan = sorted_order(graph, order, one, frozenset())
    assert plan.phase_count == 1
    alternate = {n.name: k % 2 for k, n in enumerate(kernels)}
    _, plan = sorted_order(graph, order, alternate, frozenset())
    assert plan.phase_count == len(kernels)  # a chain that changes core at every step waits at every step


def _three_convs():
    net = zoo.Net("chain", 1)
    x = net.conv("x", 2, 4, 3)
    x = net.conv(x, 4, 4, 3)
    x = net.conv(x, 4, 2, 3)
    return net.model({"x": (1, 2, 8, 8)}, {"y": x})


@pytest.mark.parametrize("name", MODELS[:3])  # MobileNetV2's host build alone took 27 s
def test_the_plans_steps_in_order_are_bit_for_bit_on_the_host(plans, name, tmp_path):
    from mcudeploy.device.host import run_compiled_on_host
    graph, p = plans[name]
    compiled = p.compiled(name, load_board("host"))
    samples = checks.random_inputs(compiled.graph, 2, seed=5)
    for sample, got in zip(samples, run_compiled_on_host(compiled, samples, tmp_path)):
        for g, want in zip(got, run_reference(graph, sample)):
            np.testing.assert_array_equal(g, want)


TSAN = ["-std=c99", "-O1", "-g", "-fsanitize=thread", "-pthread"]


def _tsan_run(compiled, samples, workdir, kernels: dict):
    """The plan built for the host with ThreadSanitizer and run on ``samples``; (outputs, None) or (None, its
    report). ``kernels``: the kernel library's objects, compiled by the first call and kept there."""
    import shutil
    import subprocess

    from mcudeploy.codegen import write_project
    from mcudeploy.device.host import run
    from mcudeploy.errors import MCUDeployError

    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("ThreadSanitizer's build needs gcc")
    project = write_project(compiled, workdir)
    include = ["-I", str(project), "-I", str(project / "mcud" / "include")]
    if not kernels:
        for source in sorted((project / "mcud" / "kernels").glob("*.c")):
            obj = workdir.parent / f"kernel-{source.stem}.o"
            proc = subprocess.run([cc, *TSAN, *include, "-c", str(source), "-o", str(obj)], capture_output=True,
                                  text=True)
            if proc.returncode != 0 and "tsan" in proc.stderr:
                pytest.skip(f"ThreadSanitizer is not installed: {proc.stderr.strip()[-200:]}")
            assert proc.returncode == 0, proc.stderr[-2000:]
            kernels[source.stem] = str(obj)
    exe = project / "model"
    proc = subprocess.run([cc, *TSAN, *include, str(project / "model.c"), str(project / "main_host.c"),
                           *kernels.values(), "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    try:
        return run(exe, compiled.graph, samples), None
    except MCUDeployError as exc:
        return None, str(exc)


def test_the_cores_run_at_once_and_only_a_plan_without_barriers_races(plans, tmp_path):
    """Under ThreadSanitizer, the plan's two threads meet at every barrier and touch no byte of the other's at
    once: no report, outputs bit for bit. The same steps with every barrier taken away: reported as a data race
    (so the threads do run at once, and the check above could fail)."""
    graph, p = plans["convs"]
    compiled = p.compiled("convs", load_board("host"))
    samples = checks.random_inputs(compiled.graph, 1, seed=7)
    kernels: dict = {}
    got, report = _tsan_run(compiled, samples, tmp_path / "plan", kernels)
    assert report is None
    for g, want in zip(got[0], run_reference(graph, samples[0])):
        np.testing.assert_array_equal(g, want)
    flat = CorePlan(p.plan.cores, p.plan.core, (0,) * len(p.plan.phase))
    _, report = _tsan_run(dataclasses.replace(compiled, cores=flat), samples, tmp_path / "flat", kernels)
    assert report is not None and "data race" in report
