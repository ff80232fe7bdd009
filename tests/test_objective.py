"""--objective memory|latency|balanced and --memory-budget (mcudeploy/objective, pipeline.latency_plan).

The model is the Keras corpus's streaming int8 keyword spotter (tests/keras_corpus/streaming_kws-int8.tflite): its
memory plan gives up the scratch of its three 1-D convolutions (the int8 block kernel's columns) to keep the arena
at the 600 bytes its tensors alone need; with every scratch kept it takes 1,104 bytes, and the steps that raise the
peak stand at two heights (1,104 B for the first convolution, 672 B for the other two).
(Until the 16x8 pointwise kernel needed no scratch, these tests used the 16x8 DS-CNN, whose pointwise layers were
the steps that gave theirs up.)
"""
import json
from pathlib import Path

import pytest

from mcudeploy.cli import main
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import Graph
from mcudeploy.memory.alias import SHARING
from mcudeploy.memory.lifetimes import SCRATCH, Lifetimes, lifetimes
from mcudeploy.objective import BALANCED_FACTOR, Objective
from mcudeploy.compile import compile_graph, compile_model, lower
from mcudeploy.frontend import import_model
from mcudeploy.plan import CompileOptions

MODEL = Path(__file__).resolve().parent / "keras_corpus" / "streaming_kws-int8.tflite"
MEMORY_ARENA = 600  # the memory plan on qemu-m4: its tensors' live bytes alone (scratch_steps' floor)
KEEP_ARENA = 1_104  # ... and with every kernel's scratch kept: the first convolution's step
SECOND_STEP = 672  # the other two convolutions' steps with their scratch
STEPS = 3  # the kernels the memory plan runs without scratch


def _error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


@pytest.fixture(scope="module")
def lowered() -> Graph:
    return lower(import_model(str(MODEL)))


def _without(compiled) -> set:
    return {n.name for n in compiled.graph.nodes if n.attrs.get("scratch", 1) == 0}


def _first(compiled) -> int:
    return compiled.placement.arenas.get("sram", compiled.placement.arena_bytes)


def test_the_memory_objective_plans_as_before(lowered):
    """Today's rule, written out again: the scratch of every step it would lift above the live bytes
    without scratch goes (no step of this model writes over its input)."""
    plan = compile_graph(lowered, "qemu-m4", str(MODEL))
    kept = compile_graph(lowered, "qemu-m4", str(MODEL), options=CompileOptions(scratch="keep"))
    lives = lifetimes(kept.graph, kept.order, 4, SHARING)
    base = Lifetimes(tuple(b for b in lives.buffers if b.tensors), lives.buffer_of, lives.steps).live_bytes()
    scratch = [b for b in lives.buffers if b.name.endswith(SCRATCH)]
    expected = {kept.order[b.first].name for b in scratch if base[b.first + 1] + b.size > max(base)}
    assert _without(plan) == expected and len(expected) == STEPS
    assert plan.placement.arena_bytes == MEMORY_ARENA and kept.placement.arena_bytes == KEEP_ARENA
    assert [n.name for n in plan.order] == [n.name for n in kept.order]
    assert plan.objective == Objective() and plan.objective.as_plan() == {"name": "memory"}


@pytest.mark.parametrize("budget", [None, KEEP_ARENA, KEEP_ARENA - 1, SECOND_STEP, SECOND_STEP - 1, MEMORY_ARENA])
def test_the_latency_plan_is_never_slower_than_the_memory_plan_nor_over_its_budget(lowered, budget):
    """The latency plan runs a subset of the memory plan's scratch-free (slower) kernels, every other one
    with its faster scratch kernel, and its first region's arena is within the budget."""
    memory = compile_graph(lowered, "qemu-m4", str(MODEL))
    plan = compile_graph(lowered, "qemu-m4", str(MODEL), options=CompileOptions(objective=Objective("latency", budget)))
    assert _without(plan) <= _without(memory)
    assert _first(plan) <= (budget or plan.objective.limit_bytes)
    # the steps whose live bytes with their scratch are above the budget give it up, no others (the placement
    # meets the live bytes here)
    given_up = 0 if budget is None or budget >= KEEP_ARENA else 1 if budget >= SECOND_STEP else STEPS
    assert len(_without(plan)) == given_up
    assert plan.objective.limit_from == ("board" if budget is None else "--memory-budget")
    assert plan.objective.memory_arena_bytes == MEMORY_ARENA
    assert (plan.objective.without_scratch, plan.objective.memory_without_scratch) == (len(_without(plan)), STEPS)


def test_balanced_is_the_latency_plan_within_its_factor_of_the_memory_arena(lowered):
    plan = compile_graph(lowered, "qemu-m4", str(MODEL), options=CompileOptions(objective=Objective("balanced")))
    assert plan.objective.arena_limit_bytes == int(MEMORY_ARENA * BALANCED_FACTOR)  # 750 B: between the two heights
    assert len(_without(plan)) == 1 and plan.placement.arena_bytes <= plan.objective.arena_limit_bytes
    # a first-region budget below the factor's is the one in force
    tight = compile_graph(lowered, "qemu-m4", str(MODEL),
                          options=CompileOptions(objective=Objective("balanced", MEMORY_ARENA)))
    assert tight.objective.limit_bytes == MEMORY_ARENA and _without(tight) == _without(
        compile_graph(lowered, "qemu-m4", str(MODEL)))


def test_the_latency_plan_gives_up_scratch_only_as_far_as_the_placement_needs():
    """Where the placed arena lands above the live bytes, the limit goes down to the next step with scratch
    (pipeline.latency_plan), and never below the memory plan's set."""
    from mcudeploy.offload.scratch import ScratchSteps
    from mcudeploy.objective import latency_plan
    from mcudeploy.boards import load_board
    from mcudeploy.memory.place import Placement

    steps = ScratchSteps(100, (("a", 180), ("b", 150), ("c", 120)))
    assert steps.above(0) == {"a", "b", "c"} and steps.above(160) == {"a"} and steps.above(50) == {"a", "b", "c"}
    assert steps.next_below(200) == 179 and steps.next_below(150) == 149 and steps.next_below(119) is None
    asked = []

    def arrange(limit):  # the placement lands 25 bytes above the live bytes of what is kept
        asked.append(limit)
        live = max([100] + [h for _, h in steps.levels if limit is not None and h <= max(limit, 100)])
        graph = Graph("g", {}, (), (), ())
        return graph, (), None, Placement({}, live + 25, live, "greedy"), None

    (_, _, _, placement, _), met = latency_plan(arrange, steps, load_board("host"), Objective("latency", 160))
    # 160 keeps b and c (175 placed); the limit goes 15 bytes lower, past b's step: c's scratch is kept
    assert placement.arena_bytes == 145 and asked == [None, 160, 145]
    assert met.limit_bytes == 160 and met.memory_arena_bytes == 125
    _, met = latency_plan(arrange, steps, load_board("host"), Objective("latency", 1 << 40))
    assert (met.limit_bytes, met.limit_from) == (1 << 30, "board")  # a budget above the board's region is the region
    asked.clear()  # balanced: the whole arena within 1.25x the memory plan's 125 B, 156 B
    (_, _, _, placement, _), met = latency_plan(arrange, steps, load_board("host"), Objective("balanced"))
    assert placement.arena_bytes == 145 and asked == [None, 156, 137] and met.arena_limit_bytes == 156
    with pytest.raises(MCUDeployError, match=r"^no plan of m\.tflite fits --memory-budget 124 B: .* \(1 B over\)$"):
        latency_plan(arrange, steps, load_board("host"), Objective("latency", 124), "m.tflite")


def test_plan_json_the_summary_and_the_report_say_which_objective(tmp_path, capsys):
    from mcudeploy.project import load_project
    from mcudeploy.plan import board_plan
    from mcudeploy.report.html import render

    out = tmp_path / "out"
    assert main(["compile", str(MODEL), "-b", "host", "--objective", "latency", "--memory-budget", "30K",
                 "-o", str(out)]) == 0
    assert "objective latency: the fastest plan within 30,720 B in the first region (--memory-budget)" in \
        capsys.readouterr().out
    plan = json.loads((out / "plan.json").read_text())
    assert plan["objective"]["name"] == "latency" and plan["objective"]["budget_bytes"] == 30_720
    assert plan["objective"]["kernels_without_scratch"] == 0 and plan["objective"]["memory_kernels_without_scratch"] == STEPS
    assert 'id="fact-objective">objective latency' in render(board_plan(plan))
    project = load_project(out)  # run DIR, flash DIR: the recorded plan keeps its objective
    assert project.compiled.objective.name == "latency" and "objective latency" in project.lines()[0]


@pytest.mark.parametrize("argv, words", [
    (["--memory-budget", "64K"], "--memory-budget applies to --objective latency or balanced"),
    (["--objective", "latency", "--memory-budget", "12x"], "--memory-budget 12x: give bytes (e.g. 65536 or 64K)"),
    (["--objective", "latency", "--memory-budget", "0"], "--memory-budget must be a positive number of bytes"),
    (["--objective", "fit"], "--objective fit applies to a system of cores or chips (e.g. -b qemu-m4x2), not to the "
                             "board qemu-m4; a board takes memory, latency, balanced"),
    (["--objective", "latency", "--fast-memory", "50%"], "with --objective latency give the budget as --memory-budget"),
    (["--objective", "latency", "--memory-budget", "599"],
     "no plan of streaming_kws-int8.tflite fits --memory-budget 599 B: even the memory objective's arena needs "
     "600 B in sram (1 B over)"),
])
def test_objective_refusals(capsys, argv, words):
    assert words in _error(capsys, ["plan", str(MODEL), "-b", "qemu-m4", *argv])


@pytest.mark.parametrize("command, output", [("measure", ["-o"]), ("flash", ["--no-upload", "--project-dir"])],
                         ids=["measure", "flash"])
def test_measure_and_flash_refuse_a_memory_budget_below_the_least_arena_before_writing(tmp_path, capsys, command,
                                                                                    output):
    """The budget reaches measure's and flash's plan: below the memory plan's arena no plan fits, said in one
    sentence before a board is started or a folder written (the latency plans on qemu-m4 themselves:
    tests/device/test_objective_qemu.py)."""
    out = tmp_path / "out"
    err = _error(capsys, [command, str(MODEL), "-b", "qemu-m4", "--objective", "latency", "--memory-budget",
                          str(MEMORY_ARENA - 1), *output, str(out)])
    assert err == ("mcudeploy: error: no plan of streaming_kws-int8.tflite fits --memory-budget 599 B: even the "
                   "memory objective's arena needs 600 B in sram (1 B over)\n")
    assert not out.exists()


def test_a_system_refuses_a_boards_objective_and_a_folder_any(tmp_path, capsys):
    err = _error(capsys, ["compile", str(MODEL), "-b", "qemu-m4x2", "--objective", "latency", "-o", str(tmp_path / "o")])
    assert "--objective latency applies to one board, not to the system qemu-m4x2" in err
    out = tmp_path / "out"
    assert main(["compile", str(MODEL), "-b", "host", "-o", str(out)]) == 0
    capsys.readouterr()
    assert "--objective applies only to a model file" in _error(capsys, ["run", str(out), "--objective", "latency"])


def _scratch_model_ticks(compiled) -> int:
    """A latency model for the search (no board): a kernel without its scratch costs 10x (a made-up ratio: the
    search's choice is what is tested, not the kernels)."""
    return sum(1000 if n.attrs.get("scratch", 1) == 0 else 100 for n in compiled.order)


@pytest.mark.parametrize("budget, kept", [(None, 0), (KEEP_ARENA - 1, 1)])
def test_tune_latency_keeps_the_least_ticks_within_the_budget(tmp_path, budget, kept):
    from mcudeploy.search import TuneOptions, Tuner, write_result
    from mcudeploy.simulate.timing_cache import TimingCache

    said = []
    tuner = Tuner(MODEL, "qemu-m4", tmp_path / "out", measure=_scratch_model_ticks, progress=said.append,
                  cache=TimingCache("qemu-m4", tmp_path / "cache"),
                  options=TuneOptions(effort=1.0, objective=Objective("latency", budget)))
    result = tuner.run()
    best, base = result.best, result.baseline
    assert len(_without(base.compiled)) == STEPS and len(_without(best.compiled)) == kept
    assert best.ticks == _scratch_model_ticks(best.compiled) <= base.ticks
    assert _first(best.compiled) <= (budget or best.compiled.objective.limit_bytes)
    assert any("latency @ refine" in line for line in said)
    plan = json.loads((write_result(result) / "plan.json").read_text())
    assert plan["objective"]["name"] == "latency" and "split" not in plan
    assert plan["latency"]["baseline_ticks"] == base.ticks


def test_a_latency_plan_over_several_regions_of_one_speed_keeps_its_scratch():
    """qemu-an505: 24,576 B of fast SRAM for the arena, then SSRAM of the same speed, then PSRAM (slower).
    VWW's memory plan spills to SSRAM; the latency plan may too, but puts nothing more in PSRAM."""
    from tests.shared_models import MODELS, need_models

    need_models()
    vww = str(MODELS / "tflite" / "vww_mobilenetv1_int8.tflite")
    plan = compile_model(vww, "qemu-an505", options=CompileOptions(objective=Objective("latency")))
    assert plan.objective.memory_without_scratch == 1 and not _without(plan)
    assert plan.placement.arenas["sram"] <= plan.objective.limit_bytes == 24_576
    assert plan.placement.arenas["ssram"] > 0 and plan.placement.arenas.get("psram", 0) == 0  # as the memory plan's


@pytest.mark.qemu
def test_the_latency_plan_takes_its_convolutions_scratch_in_tiles(tmp_path, need_qemu):
    """offload/tiles.py: on a Cortex-M7 (4 KB of data cache) the latency objective's int8 convolutions whose weights
    and constants outgrow it get a scratch of several blocks, the fewest passes of at most TILE_BLOCKS blocks shared
    out evenly (the memory objective's keep one; a Cortex-M4 gets none), plan.json records each step's tile, and the
    folder rebuilds to the same C with the numpy reference's bits."""
    from mcudeploy.boards import load_board
    from mcudeploy.offload.tiles import TILE_BLOCKS, cache_bytes
    from mcudeploy.ops.conv import tile_weight_bytes
    from mcudeploy.project import load_project

    model = Path(__file__).resolve().parent / "keras_corpus" / "dscnn_gap-int8.tflite"
    out = tmp_path / "out"
    # a budget with no room for constants beside the arena (offload/sram.py): the weights stay in flash, in tiles
    assert main(["compile", str(model), "-b", "qemu-m7", "--objective", "latency", "--memory-budget", "20K",
                 "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert not any(e.get("sram") for e in plan["order"])
    tiled = {e["node"]: e["tile"] for e in plan["order"] if e.get("tile")}
    memory = compile_model(str(model), "qemu-m7")
    cache = cache_bytes(load_board("qemu-m7"))
    sizes = {n.name: tile_weight_bytes(memory.graph, n) for n in memory.graph.nodes}
    assert set(tiled) == {name for name, s in sizes.items() if s and s[0] > cache and 2 * s[1] <= cache}
    for name, tile in tiled.items():
        blocks = -(-sizes[name][2] // 4)
        passes = -(-blocks // TILE_BLOCKS)
        assert 1 < tile <= TILE_BLOCKS and -(-blocks // tile) == passes and (tile - 1) * passes < blocks, name
    assert tiled and not any(n.attrs.get("tile") for n in memory.graph.nodes)
    m4 = compile_model(str(model), "qemu-m4", CompileOptions(objective=Objective("latency", 20 * 1024)))
    assert not any(n.attrs.get("tile") for n in m4.graph.nodes)
    project = load_project(out)
    assert {n.name: n.attrs["tile"] for n in project.compiled.graph.nodes if n.attrs.get("tile")} == tiled
    assert main(["run", str(out), "--check"]) == 0


def test_a_budget_the_tiles_do_not_fit_keeps_the_plan_without_tiles():
    """offload/tiles.py: a tiled pointwise step writes over its input, so it keeps its scratch of 16 blocks even in
    its order's memory plan; a --memory-budget below that but at or above the memory objective's arena gets the
    plan without tiles, not a refusal that names the tiled arena as the memory objective's."""
    model = Path(__file__).resolve().parent / "keras_corpus" / "dscnn_gap-int8.tflite"
    least = compile_model(str(model), "qemu-m7").placement.arena_bytes
    roomy = compile_model(str(model), "qemu-m7", CompileOptions(objective=Objective("latency", 20 * 1024)))
    assert any(n.attrs.get("tile") for n in roomy.graph.nodes) and _first(roomy) > least  # the tiles' arena
    for budget in (least, _first(roomy) - 1):
        plan = compile_model(str(model), "qemu-m7", CompileOptions(objective=Objective("latency", budget)))
        assert _first(plan) <= budget and not any(n.attrs.get("tile") for n in plan.graph.nodes)
    with pytest.raises(MCUDeployError, match=f"needs {least:,} B in sram"):
        compile_model(str(model), "qemu-m7", CompileOptions(objective=Objective("latency", least - 1)))


@pytest.mark.parametrize("model", ["se_resnet-int8.tflite", "dscnn_gap-int8.tflite"])
def test_a_latency_plan_on_an_m7_runs_without_scratch_no_step_the_memory_plan_runs_with_it(model):
    """objective.meet._tiles_if_faster: on a Cortex-M7 a budget with no room for constants in SRAM brings tiles
    (offload/tiles.py), whose larger scratch could crowd other steps out of theirs; the plan keeps tiles only where
    that runs no step without scratch that the plan without tiles runs with it. So at every budget the latency plan
    runs at most the memory plan's scratch-free (slower) kernels: it is never slower than the memory plan."""
    path = str(Path(__file__).resolve().parent / "keras_corpus" / model)
    memory = compile_model(path, "qemu-m7")
    roomy = compile_model(path, "qemu-m7", CompileOptions(objective=Objective("latency")))
    for budget in sorted({memory.placement.arena_bytes, _first(roomy), _first(roomy) + 4096}):
        plan = compile_model(path, "qemu-m7", CompileOptions(objective=Objective("latency", budget)))
        assert _first(plan) <= budget and _without(plan) <= _without(memory), (budget, _without(plan))
    balanced = compile_model(path, "qemu-m7", CompileOptions(objective=Objective("balanced")))
    assert _without(balanced) <= _without(memory)
