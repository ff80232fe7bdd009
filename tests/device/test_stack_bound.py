"""The firmware's worst-case stack (mcudeploy/device/stack_bound.py): GCC's call-graph files parsed, the longest path
taken across units, and what it cannot bound refused in one sentence; then a real build's bound, and a board whose
stack is too small for it refused before the link."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mcudeploy.device import stack_bound as sb
from mcudeploy.errors import MCUDeployError


def node(title, frame=None, qual="static", label=None, file="x.c"):
    name = label or title.rsplit(":", 1)[-1]
    if frame is None:
        return f'node: {{ title: "{title}" label: "{name}\\nx.h:1:1" shape : ellipse }}'
    return f'node: {{ title: "{title}" label: "{name}\\n/p/{file}:1:1\\n{frame} bytes ({qual})" }}'


def edge(a, b):
    return f'edge: {{ sourcename: "{a}" targetname: "{b}" label: "x.c:2:3" }}'


def unit(*lines):
    return sb.parse_ci('graph: { title: "x.c"\n' + "\n".join(lines) + "\n}\n")


# startup.c as GCC writes it (a static helper titled "file:name"), and a unit holding main and a kernel
STARTUP = unit(node("Reset_Handler", 8), node("main"), edge("Reset_Handler", "main"),
               node("mcud_unused_handler", 8), node("s.c:mcud_note_fault", 4),
               edge("mcud_unused_handler", "s.c:mcud_note_fault"))
MAIN = [node("main", 24), node("mcud_model_run", 16), node("mcud_op_3", 200), node("mcud_op_1", 40),
        node("memcpy"), edge("main", "mcud_model_run"), edge("mcud_model_run", "mcud_op_1"),
        edge("mcud_model_run", "mcud_op_3"), edge("mcud_op_1", "memcpy")]
LIBRARY = {"memcpy": 8}


def test_the_parser_reads_frames_qualifiers_and_edges():
    f = unit(*MAIN, node("vla", 16, "dynamic"), node("bounded", 32, "dynamic,bounded"))
    assert f["main"] == sb.Function("main", "main", 24, False, ("mcud_model_run",), "x.c")
    assert f["memcpy"].frame is None and f["vla"].dynamic and not f["bounded"].dynamic and f["bounded"].frame == 32
    assert STARTUP["s.c:mcud_note_fault"].label == "mcud_note_fault"
    su = sb.parse_su("/p/startup.c:53:6:Reset_Handler\t8\tstatic\n/p/k.c:9:1:vla\t16\tdynamic\n")
    assert su == {"Reset_Handler": (8, "static"), "vla": (16, "dynamic")}


def test_the_longest_path_crosses_units_and_adds_the_deepest_handler_and_the_exception_frame():
    graph = sb.call_graph([STARTUP, unit(*MAIN)])
    found = sb.bound(graph, LIBRARY, 104)
    # Reset_Handler 8 + main 24 + mcud_model_run 16 + mcud_op_3 200 (deeper than op_1 40 + memcpy 8) = 248;
    # plus mcud_unused_handler 8 + mcud_note_fault 4 and the FP exception frame 104: 364
    assert found.bytes == 248 + 12 + 104
    assert found.path == ("Reset_Handler", "main", "mcud_model_run", "mcud_op_3")
    assert found.handler_path == ("mcud_unused_handler", "mcud_note_fault")
    assert (found.largest_frame, found.largest) == (200, "mcud_op_3") and found.library == ("memcpy",)
    assert found.path_text() == "main -> mcud_model_run -> mcud_op_3"
    assert sb.guard_bytes(found, "cortex-m4") == 256 and sb.guard_bytes(found, "cortex-m55") == 32


def _refusal(*extra, library=LIBRARY) -> str:
    with pytest.raises(MCUDeployError) as err:
        sb.bound(sb.call_graph([STARTUP, unit(*MAIN, *extra)]), library, 32)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_recursion_is_refused_naming_the_function():
    text = _refusal(node("walk", 16), edge("mcud_op_3", "walk"), edge("walk", "walk"))
    assert text == "function walk is recursive (walk -> walk), so the firmware's worst-case stack is unknown"


def test_a_dynamic_frame_is_refused_and_a_bounded_one_counted():
    text = _refusal(node("mcud_pad", 16, "dynamic"), edge("mcud_op_1", "mcud_pad"))
    assert text.startswith("function mcud_pad has a dynamic stack frame")
    bounded = unit(*MAIN, node("mcud_pad", 300, "dynamic,bounded"), edge("mcud_op_1", "mcud_pad"))
    graph = sb.call_graph([STARTUP, bounded])
    assert sb.bound(graph, LIBRARY, 32).path[-2:] == ("mcud_op_1", "mcud_pad")


def test_an_unknown_pointer_call_is_refused_and_the_known_one_resolved():
    text = _refusal(node("__indirect_call"), edge("mcud_op_1", "__indirect_call"))
    assert text.startswith("function mcud_op_1 calls through a pointer the firmware's call graph cannot resolve")
    # kernels/stream.c's mcud_read_input calls the model's <name>_read_input (INDIRECT, by the caller's file)
    graph = sb.call_graph([STARTUP, unit(*MAIN, node("mcud_read_input", 8, file="stream.c"), node("__indirect_call"),
                                         edge("mcud_op_1", "mcud_read_input"),
                                         edge("mcud_read_input", "__indirect_call"),
                                         node("kws_read_input", 400, file="model.c"), node("read_input", 900))])
    assert sb.bound(graph, LIBRARY, 32).path[-3:] == ("mcud_op_1", "mcud_read_input", "kws_read_input")


def test_a_library_function_without_an_allowance_is_refused():
    assert _refusal(library={}).startswith("function memcpy has no known stack")


def test_a_weak_definition_counts_and_a_restart_is_not_a_call():
    # system.c's weak mcud_sys_core is titled "file:name"; arch_riscv.c's mcud_sys_reset jumps to _start
    graph = sb.call_graph([STARTUP, unit(*MAIN, node("mcud_sys_core"), edge("mcud_op_3", "mcud_sys_core"),
                                         edge("mcud_op_3", "Reset_Handler")),
                           unit(node("sys.c:mcud_sys_core", 40, label="mcud_sys_core"))])
    assert sb.bound(graph, LIBRARY, 32).path[-2:] == ("mcud_op_3", "mcud_sys_core")


def test_the_check_gives_both_figures_and_the_path():
    found = sb.bound(sb.call_graph([STARTUP, unit(*MAIN)]), LIBRARY, 104)
    sb.check_stack(found, 364 + sb.MARGIN, "qemu-m4")
    with pytest.raises(MCUDeployError) as err:
        sb.check_stack(found, 256, "qemu-m4")
    assert str(err.value) == ("the firmware's worst-case stack is 364 B (main -> mcud_model_run -> mcud_op_3), more "
                              "than board qemu-m4's stack of 256 B: give the board file a larger stack_bytes")


# --------------------------------------------------------------------------- a real firmware (the cross compiler)

MODEL = Path(__file__).resolve().parents[1] / "keras_corpus" / "dscnn_gap-int8.tflite"


@pytest.mark.qemu
def test_a_real_firmware_has_a_bound_and_a_stack_below_it_is_refused_before_the_link(tmp_path, need_arm_gcc):
    from mcudeploy.boards import load_board
    from mcudeploy.compile import compile_model
    from mcudeploy.device.build import build_firmware
    from mcudeploy.device.elfsize import read_sections
    from mcudeploy.project import write_project

    board = load_board("qemu-m4")
    compiled = compile_model(str(MODEL), board)
    fw = build_firmware(board, write_project(compiled, tmp_path / "p"))
    found = fw.stack
    assert found.path[:2] == ("Reset_Handler", "main") and found.exception_frame == 104
    assert 512 < found.bytes < board.stack_bytes and fw.report.stack_worst == found.bytes
    assert f"(worst case {found.bytes:,})" in fw.report.lines()[0]
    guard = sb.guard_bytes(found, board.core)
    assert guard >= found.largest_frame and guard & (guard - 1) == 0
    stack = {s.name: s for s in read_sections(fw.elf)[0]}[".stack"]
    assert stack.size == guard + board.stack_bytes and stack.addr % guard == 0  # at the bottom of RAM, aligned

    small = dataclasses.replace(board, stack_bytes=found.bytes - 8)
    with pytest.raises(MCUDeployError) as err:
        build_firmware(small, write_project(compile_model(str(MODEL), small), tmp_path / "q"))
    assert str(err.value) == (f"the firmware's worst-case stack is {found.bytes:,} B ({found.path_text()}), more than "
                              f"board qemu-m4's stack of {found.bytes - 8:,} B: give the board file a larger "
                              f"stack_bytes")
    assert not (tmp_path / "q" / "firmware" / "build" / "firmware.elf").exists()  # refused before the link
