"""The latency objective's constants in SRAM (mcudeploy/offload/sram.py): which ones, within what room, where the
firmware puts them, and the same bits."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from mcudeploy.boards import load_board
from mcudeploy.cli import main
from mcudeploy.compile import compile_model
from mcudeploy.objective import Objective, first_region_bytes
from mcudeploy.offload.sram import STATICS_ALLOWANCE, constants_to_sram, node_constants
from mcudeploy.ops import registry
from mcudeploy.plan import CompileOptions

MODEL = Path(__file__).resolve().parents[1] / "keras_corpus" / "dscnn_gap-int8.tflite"


@pytest.fixture(scope="module")
def memory_plan():
    return compile_model(str(MODEL), "qemu-m4")


def _constants(compiled, features=frozenset({"dsp"})):
    g = compiled.graph
    return {n.name: node_constants(g, n, registry.get(n.op).kernel(g, n), features)
            for n in compiled.order if not registry.get(n.op).view and n.name not in compiled.lifetimes.elided}


def test_a_convolution_of_the_block_kernels_counts_only_what_it_reads(memory_plan):
    """mcud_conv_s8_fast reads its int16 copy (or, on an MVE core, its int8 weights) from its parameters: neither the
    model's weight and bias tensors nor the other variant's array go to SRAM."""
    g = memory_plan.graph
    fast = [n for n in memory_plan.order if n.op == "Conv"
            and registry.get(n.op).kernel(g, n).fn == "mcud_conv_s8_fast"]
    assert fast
    for node in fast:
        call = registry.get(node.op).kernel(g, node)
        fields = dict(call.params.fields)
        dsp = node_constants(g, node, call, frozenset({"dsp"}))
        mve = node_constants(g, node, call, frozenset({"dsp", "mve"}))
        assert not any(k.startswith("tensor:") for k in dsp) and not any(k.startswith("tensor:") for k in mve)
        assert f"field:{node.name}:w16" in dsp and f"field:{node.name}:w" not in dsp, node.name
        assert f"field:{node.name}:w" in mve and f"field:{node.name}:w16" not in mve, node.name
        assert dsp[f"field:{node.name}:w16"] == 2 * len(fields["w16"].values)
    other = [n for n in memory_plan.order if n.op == "Gemm"]
    assert other and all(_constants(memory_plan)[n.name] for n in other)  # other kernels: every constant they get


def test_nodes_go_by_products_per_byte_within_the_room(memory_plan):
    """Everything where the room holds it; with less room the nodes of the most multiply-accumulates per byte first,
    each whole, never past the room, and none left out that would still fit."""
    found = _constants(memory_plan)
    total = sum(sum(f.values()) for f in found.values())
    graph, used, every = constants_to_sram(memory_plan.graph, memory_plan.order, frozenset({"dsp"}), total)
    assert every and used == total
    assert {n.name for n in graph.nodes if n.attr("sram", 0)} == {k for k, f in found.items() if f}
    room = total // 3
    graph, used, every = constants_to_sram(memory_plan.graph, memory_plan.order, frozenset({"dsp"}), room)
    moved = {n.name: n.attr("sram") for n in graph.nodes if n.attr("sram", 0)}
    assert not every and 0 < used <= room and sum(moved.values()) == used
    assert all(moved[k] == sum(found[k].values()) for k in moved)  # whole nodes (no weights shared here)
    left = [k for k, f in found.items() if f and k not in moved]
    assert left and all(sum(found[k].values()) > room - used for k in left)
    g = memory_plan.graph
    per_byte = {k: registry.get(g.node(k).op).macs(g, g.node(k)) / sum(f.values()) for k, f in found.items() if f}
    best = max(per_byte, key=per_byte.get)
    assert best in moved or sum(found[best].values()) > room
    graph, used, every = constants_to_sram(memory_plan.graph, memory_plan.order, frozenset({"dsp"}), 0)
    assert used == 0 and not every and not any(n.attr("sram", 0) for n in graph.nodes)


def test_the_memory_and_balanced_objectives_keep_their_constants_in_flash():
    for objective in (Objective(), Objective("balanced")):
        plan = compile_model(str(MODEL), "qemu-m4", CompileOptions(objective=objective))
        assert not any(n.attr("sram", 0) for n in plan.graph.nodes), objective.name
        assert not plan.objective.sram_constants_bytes


def test_the_latency_plan_copies_to_sram_what_fits_beside_its_arena():
    """On the board's first region less the arena and STATICS_ALLOWANCE; fit.py counts them there."""
    from mcudeploy.fit import fit

    plan = compile_model(str(MODEL), "qemu-m4", CompileOptions(objective=Objective("latency")))
    moved = sum(n.attr("sram", 0) for n in plan.graph.nodes)
    assert moved and plan.objective.sram_constants_bytes == moved
    assert plan.objective.as_plan()["sram_constants_bytes"] == moved
    found = _constants(plan)
    assert moved == sum(sum(f.values()) for f in found.values())  # 4 MB: room for every one
    first = next(u for u in fit(plan).uses if u.region == "sram")
    assert dict(first.parts)["constants copied to SRAM"] == moved
    arena = first_region_bytes(plan.placement, plan.board)
    budget = arena + STATICS_ALLOWANCE + moved // 2
    half = compile_model(str(MODEL), "qemu-m4", CompileOptions(objective=Objective("latency", budget)))
    assert 0 < half.objective.sram_constants_bytes <= moved // 2
    assert first_region_bytes(half.placement, half.board) + half.objective.sram_constants_bytes \
        + STATICS_ALLOWANCE <= budget


def test_the_firmware_reads_them_from_sram_with_the_same_bits(tmp_path, need_qemu):
    """plan.json records each step's bytes and the folder rebuilds to the same plan; model.c marks exactly the
    arrays of those steps MCUD_IN_RAM; in the ELF they lie in the RAM region (loaded from flash), the others in
    flash; and the run is bit for bit the reference's."""
    from mcudeploy.device.runner import build_for_board
    from mcudeploy.project import load_project

    out = tmp_path / "out"
    assert main(["compile", str(MODEL), "-b", "qemu-m4", "--objective", "latency", "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    steps = {e["node"]: e["sram"] for e in plan["order"] if e.get("sram")}
    assert steps and sum(steps.values()) == plan["objective"]["sram_constants_bytes"]
    project = load_project(out)
    assert {n.name: n.attr("sram") for n in project.compiled.graph.nodes if n.attr("sram", 0)} == steps
    code = (out / "model.c").read_text()
    marked = [line for line in code.splitlines() if line.startswith("static const") and "MCUD_IN_RAM" in line]
    found = _constants(project.compiled)
    assert len(marked) == sum(len(found[k]) for k in steps)
    firmware = build_for_board(project.compiled, tmp_path / "build")
    board = load_board("qemu-m4")
    ram = board.regions[0]
    symbols = subprocess.run(["arm-none-eabi-nm", str(firmware.elf)], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    where = {p[2]: int(p[0], 16) for p in (s.split() for s in symbols) if len(p) == 3 and p[2].startswith("K")}
    in_ram = {re.match(r"static const \w+ (K\d+)\[", line)[1] for line in marked}
    kept = in_ram & set(where)  # the linker drops what no kernel reads (fit.py's count is an upper bound)
    assert kept and all(ram.origin <= where[k] < ram.origin + ram.size for k in kept)
    flash = [k for k in where if k not in in_ram]
    assert all(board.flash_origin <= where[k] < board.flash_origin + board.flash_bytes for k in flash)
    assert main(["run", str(out), "--check"]) == 0
