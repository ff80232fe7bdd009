"""Stateful (streaming) .tflite models: resource variables imported as states (Graph.states), their buffer
outside the arena (mcudeploy/memory/state.py), NAME_reset() and the copy-back in the C, a sequence of calls
bit for bit with TensorFlow Lite Micro, and the refusals of control flow. The real converter's streaming
models are the conformance cases var_handle-* and read_variable-* (tests/conformance/tflite_specs/state.py).

The models here are built with tests/tflite_build.py: a ring buffer of the last 4 frames, as streaming
keyword spotters keep one (state = concat(state[1:], x); y = state + state)."""
from __future__ import annotations

import dataclasses
import re
import subprocess

import numpy as np
import pytest

import tflite_build as tb
from mcudeploy import check
from mcudeploy.cli import main
from mcudeploy.codegen import write_project
from mcudeploy.device.host import build, run_compiled_on_host
from mcudeploy.frontend import import_model
from mcudeploy.ir import verify
from mcudeploy.memory.oracle import run_in_arena
from mcudeploy.ops import registry
from mcudeploy.compile import compile_model
from mcudeploy.plan import plan_dict
from mcudeploy.reference import evaluate, next_state, run_sequence

OPS = tb.OPS
FRAMES, WIDTH = 4, 3
INITIAL = np.arange(FRAMES * WIDTH, dtype=np.float32).reshape(1, FRAMES, WIDTH) / 10 - 0.5



def _slice_options():
    return tb._options("StridedSliceOptions", BeginMask=0, EndMask=0)


def ring_model(init: bool = True, assign: bool = True, read_again: bool = False, init_op: int = OPS.ASSIGN_VARIABLE,
               control: int = 0, doubled: bool = False) -> tb.Model:
    """x [1, 1, 3] -> y = m + m where m = concat(ring[:, 1:], x) is assigned to the variable "ring" (assign=False:
    y from the ring as it is, never assigned; doubled: y is assigned, and the output is y + y); read_again: y
    also adds the variable read after the assignment (its new value); init: CALL_ONCE's subgraph assigns INITIAL
    (else TFLite Micro's default, zeros); init_op: the operator that subgraph runs; control: an operator (WHILE,
    IF) run first, which mcudeploy refuses."""
    def i32(name, v):
        return tb.T(name, (len(v),), "int32", data=np.array(v, np.int32))

    tensors = [tb.T("x", (1, 1, WIDTH), "float32"), tb.T("h", (), "resource"),
               tb.T("r", (1, FRAMES, WIDTH), "float32"), tb.T("s", (1, FRAMES - 1, WIDTH), "float32"),
               tb.T("m", (1, FRAMES, WIDTH), "float32"), tb.T("y", (1, FRAMES, WIDTH), "float32"),
               i32("b", [0, 1, 0]), i32("e", [1, FRAMES, WIDTH]), i32("st", [1, 1, 1])]
    ops = [tb.Op(OPS.CALL_ONCE, (), (), tb.call_once_options(1))] if init else []
    if control:
        tensors.append(tb.T("x2", (1, 1, WIDTH), "float32"))
        options = (tb._options("IfOptions", ThenSubgraphIndex=1, ElseSubgraphIndex=1) if control == OPS.IF
                   else tb._options("WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=1))
        ops.append(tb.Op(control, ("x",), ("x2",), options))
    ops += [tb.Op(OPS.VAR_HANDLE, (), ("h",), tb.var_handle_options("ring")),
            tb.Op(OPS.READ_VARIABLE, ("h",), ("r",)),
            tb.Op(OPS.STRIDED_SLICE, ("r", "b", "e", "st"), ("s",), _slice_options()),
            tb.Op(OPS.CONCATENATION, ("s", "x"), ("m",), tb.concat_options(1))]
    if assign and not doubled:
        ops.append(tb.Op(OPS.ASSIGN_VARIABLE, ("h", "m"), ()))
    if read_again:
        tensors += [tb.T("r2", (1, FRAMES, WIDTH), "float32"), tb.T("z", (1, FRAMES, WIDTH), "float32")]
        ops += [tb.Op(OPS.READ_VARIABLE, ("h",), ("r2",)), tb.Op(OPS.ADD, ("m", "r2"), ("z",), tb.add_options()),
                tb.Op(OPS.ADD, ("z", "m"), ("y",), tb.add_options())]
    elif doubled:
        tensors.append(tb.T("yy", (1, FRAMES, WIDTH), "float32"))
        ops += [tb.Op(OPS.ADD, ("m", "m"), ("yy",), tb.add_options()), tb.Op(OPS.ASSIGN_VARIABLE, ("h", "yy"), ()),
                tb.Op(OPS.ADD, ("yy", "yy"), ("y",), tb.add_options())]
    else:
        ops.append(tb.Op(OPS.ADD, ("m", "m"), ("y",), tb.add_options()))
    init_graph = tb.Model([tb.T("v", INITIAL.shape, "float32", data=INITIAL), tb.T("h1", (), "resource"),
                           tb.T("w", INITIAL.shape, "float32")],
                          [tb.Op(OPS.VAR_HANDLE, (), ("h1",), tb.var_handle_options("ring")),
                           tb.Op(init_op, ("h1", "v") if init_op == OPS.ASSIGN_VARIABLE else ("v", "v"),
                                 () if init_op == OPS.ASSIGN_VARIABLE else ("w",),
                                 None if init_op == OPS.ASSIGN_VARIABLE else tb.add_options())])
    return tb.Model(tensors, ops, ("x",), ("y",), subgraphs=[init_graph] if init or control else [])


def _save(model: tb.Model, tmp_path, name="ring") -> object:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model.build())
    return path


def _frames(n: int, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.uniform(-2, 2, (1, 1, WIDTH)).astype(np.float32)} for _ in range(n)]


def _ring_by_hand(frames, initial=INITIAL, read_again=False) -> list[np.ndarray]:
    ring, out = initial.copy(), []
    for f in frames:
        m = np.concatenate([ring[:, 1:], f["x"]], axis=1)
        ring = m
        out.append(m + m + (m if read_again else 0))
    return out


# ---------------------------------------------------------------- import


def test_a_variable_the_model_assigns_is_a_state(tmp_path):
    graph = import_model(_save(ring_model(), tmp_path))
    verify(graph)
    assert graph.states == ("ring",) and graph.model_inputs() == ("x",) and graph.model_outputs() == ("y",)
    state, value = graph.state_updates()[0]
    assert graph[state].kind == "state" and np.array_equal(graph[state].data, INITIAL)
    assert graph.producer(value).op == "Concat"  # READ_VARIABLE and ASSIGN_VARIABLE are no nodes at all
    got = run_sequence(graph, _frames(6))
    assert all(np.array_equal(g[0], w) for g, w in zip(got, _ring_by_hand(_frames(6))))


def test_a_read_after_the_assignment_reads_the_new_value(tmp_path):
    graph = import_model(_save(ring_model(read_again=True), tmp_path))
    got = run_sequence(graph, _frames(5))
    assert all(np.array_equal(g[0], w) for g, w in zip(got, _ring_by_hand(_frames(5), read_again=True)))


def test_a_variable_never_assigned_is_a_constant(tmp_path):
    graph = import_model(_save(ring_model(assign=False), tmp_path))
    assert graph.states == () and not any(t.kind == "state" for t in graph.tensors.values())
    y = run_sequence(graph, _frames(2))
    m = np.concatenate([INITIAL[:, 1:], _frames(2)[1]["x"]], axis=1)
    assert np.array_equal(y[1][0], m + m)  # every call starts from the initial value


def test_without_initialisation_a_variable_starts_at_its_zero_point(tmp_path):
    graph = import_model(_save(ring_model(init=False), tmp_path))
    assert np.array_equal(graph[graph.states[0]].data, np.zeros(INITIAL.shape, np.float32))


@pytest.mark.parametrize("control,name", [(OPS.WHILE, "WHILE"), (OPS.IF, "IF")])
def test_control_flow_is_refused_in_one_sentence(tmp_path, capsys, control, name):
    path = _save(ring_model(control=control), tmp_path)
    assert main(["plan", str(path), "-b", "host"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err and f"operator 1 ({name}) is not supported" in err, err
    assert "it runs other subgraphs" in err


def test_an_initialisation_that_computes_is_refused_in_one_sentence(tmp_path, capsys):
    path = _save(ring_model(init_op=OPS.ADD), tmp_path)
    assert main(["plan", str(path), "-b", "host"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "operator 0 (CALL_ONCE) is not supported" in err and "subgraph 1 runs" in err, err


# ---------------------------------------------------------------- memory


@pytest.mark.parametrize("board", ["host", "qemu-m4"])
def test_the_state_lives_outside_the_arena(tmp_path, board):
    compiled = compile_model(_save(ring_model(), tmp_path), board)
    lives, placement = compiled.lifetimes, compiled.placement
    in_arena = {t for b in lives.buffers for t in b.tensors}
    assert "ring" not in in_arena and [b.tensors[0] for b in lives.state] == ["ring"]
    assert placement.state_bytes >= compiled.graph["ring"].nbytes and "ring" in placement.state_offsets
    assert placement.arena_bytes == max(lives.live_bytes()) or placement.arena_bytes >= lives.lower_bound()
    plan = plan_dict(compiled)
    assert plan["state_bytes"] == placement.state_bytes and plan["states"][0]["name"] == "ring"
    assert [i["name"] for i in plan["inputs"]] == ["x"] and [o["name"] for o in plan["outputs"]] == ["y"]


def test_a_next_value_made_after_the_last_read_is_written_in_place(tmp_path):
    """m = concat(ring[1:], x) reads the ring as it makes the next value: it cannot be written over the ring, so
    it is copied in after the step that last reads the state; a next value made by an operator after the last
    read (m + m) is written in the state's own buffer, and nothing is copied."""
    compiled = compile_model(_save(ring_model(), tmp_path), "host")
    assert compiled.lifetimes.in_place == {"ring": False}
    assert "/* ring takes" in (write_project(compiled, tmp_path / "copy") / "model.c").read_text()  # the copy-back
    compiled = compile_model(_save(ring_model(doubled=True), tmp_path, "doubled"), "host")
    state, value = compiled.graph.state_updates()[0]
    assert compiled.lifetimes.in_place == {"ring": True}
    assert compiled.lifetimes.buffer_of[value] == compiled.lifetimes.buffer_of[state]
    assert "/* ring takes" not in (write_project(compiled, tmp_path / "in-place") / "model.c").read_text()
    graph = compiled.graph
    with pytest.raises(AssertionError):  # a next value that is also an output needs a copy (the importer makes one)
        verify(graph.replace(outputs=(graph.outputs[1], graph.outputs[1])))


@pytest.mark.parametrize("board", ["host", "qemu-m4"])
def test_the_plan_computes_the_sequence_in_its_arenas(tmp_path, board):
    """The memory oracle runs each call in the plan's arenas and state buffer; the state left by a call equals the
    reference's next state, whether written in place or copied in."""
    for path in [_save(ring_model(), tmp_path), _save(ring_model(read_again=True), tmp_path, "again"),
                 _save(ring_model(doubled=True), tmp_path, "doubled")]:
        compiled = compile_model(path, board)
        graph, state = compiled.graph, None
        for frame in _frames(4):
            values = evaluate(graph, frame, state)
            got = run_in_arena(graph, compiled.order, compiled.lifetimes, compiled.placement,
                               {**frame, **(state or {})})
            assert all(np.array_equal(g, values[o]) for g, o in zip(got, graph.outputs))
            state = next_state(graph, values)


# ---------------------------------------------------------------- the C


def test_the_header_declares_reset_and_the_state_bytes(tmp_path):
    compiled = compile_model(_save(ring_model(), tmp_path), "host")
    out = write_project(compiled, tmp_path / "c")
    header = (out / "ring_tflite.h").read_text() if (out / "ring_tflite.h").is_file() else \
        next(p for p in out.glob("*.h") if p.name != "mcud_model.h").read_text()
    assert re.search(r"#define \w+_STATE_BYTES \d+u", header) and re.search(r"void \w+_reset\(void\);", header)
    assert re.search(r"#define \w+_NUM_INPUTS 1\b", header) and re.search(r"#define \w+_NUM_OUTPUTS 1\b", header)


def test_a_stateless_header_has_no_reset(tmp_path):
    compiled = compile_model(_save(ring_model(assign=False), tmp_path), "host")
    out = write_project(compiled, tmp_path / "c")
    assert "_reset" not in "".join(p.read_text() for p in out.glob("*.h")) + (out / "model.c").read_text()


def test_the_c_carries_the_state_and_reset_starts_afresh(tmp_path):
    """The host runner runs every sample in one process from the initial state; a firmware that calls
    NAME_reset() between two streams gets the first stream's outputs again."""
    compiled = compile_model(_save(ring_model(), tmp_path), "host")
    frames = _frames(7)
    got = run_compiled_on_host(compiled, frames, tmp_path / "run")
    assert all(np.array_equal(g[0], w) for g, w in zip(got, _ring_by_hand(frames)))
    project = tmp_path / "reset"
    write_project(compiled, project)
    name = next(p.stem for p in project.glob("*.h") if p.name != "mcud_model.h")
    (project / "main_host.c").write_text(f"""#include <stdio.h>
#include <string.h>
#include "{name}.h"
int main(void)
{{
    float y[2][3][{FRAMES * WIDTH}];
    for (int pass = 0; pass < 2; pass++) {{
        for (int k = 0; k < 3; k++) {{
            float *x = (float *){name}_input(0);
            for (int j = 0; j < {WIDTH}; j++) {{
                x[j] = (float)(k * {WIDTH} + j);
            }}
            {name}_run();
            memcpy(y[pass][k], {name}_output(0), sizeof y[pass][k]);
        }}
        {name}_reset();
    }}
    return memcmp(y[0], y[1], sizeof y[0]) != 0;
}}
""")
    exe = build(project, compiled.board)
    assert subprocess.run([str(exe)], check=False).returncode == 0


def test_a_sequence_bit_for_bit_with_tflite_micro(tmp_path, need_tflm):
    for path in [_save(ring_model(), tmp_path), _save(ring_model(read_again=True), tmp_path, "again"),
                 _save(ring_model(init=False), tmp_path, "zeros"),
                 _save(ring_model(doubled=True), tmp_path, "doubled")]:
        compiled = compile_model(path, "host")
        samples = check.random_inputs(compiled.graph, 20)
        outputs = run_compiled_on_host(compiled, samples, tmp_path / path.stem)
        verdict = check.check_tflite_outputs(path, compiled, outputs, samples)
        assert verdict.ok, "\n".join(verdict.lines())


def test_run_check_feeds_at_least_20_inputs_in_sequence(tmp_path, capsys, need_tflm):
    path = _save(ring_model(), tmp_path)
    assert main(["run", str(path), "-b", "host", "--check", "--samples", "3"]) == 0
    out = capsys.readouterr().out
    assert "20 inputs in sequence" in out and "PASS on 20 input(s)" in out


def test_a_wrong_state_is_found_and_named(tmp_path, need_tflm):
    """A plan that forgets the copy-back fails --check, and the trace names the state as where the C parts."""
    path = _save(ring_model(), tmp_path)
    compiled = compile_model(path, "host")
    broken = dataclasses.replace(compiled, lifetimes=dataclasses.replace(compiled.lifetimes, in_place={"ring": True}))
    samples = check.random_inputs(compiled.graph, 20)
    outputs = run_compiled_on_host(broken, samples, tmp_path / "c")
    verdict = check.check_tflite_outputs(path, broken, outputs, samples, compiled.graph)
    assert not verdict.ok and verdict.difference is not None and verdict.difference.cause == "state"


def test_a_stateful_model_runs_on_one_chip(tmp_path, capsys):
    path = _save(ring_model(), tmp_path)
    assert main(["compile", str(path), "-b", "qemu-m4x2", "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "keeps a state between calls" in err and err.count("\n") == 1


def window_model(width: int = 64) -> tb.Model:
    """A ring buffer as streaming models keep one: m = concat(ring, x) of FRAMES frames, the ring's next value the
    window m[:, 1:] (the last FRAMES - 1 frames), y = a frame of m summed. The memory m is the arena's peak."""
    def i32(name, v):
        return tb.T(name, (len(v),), "int32", data=np.array(v, np.int32))

    tensors = [tb.T("x", (1, 1, width), "float32"), tb.T("h", (), "resource"),
               tb.T("r", (1, FRAMES - 1, width), "float32"), tb.T("m", (1, FRAMES, width), "float32"),
               tb.T("s", (1, FRAMES - 1, width), "float32"), tb.T("y", (1, width), "float32"),
               i32("b", [0, 1, 0]), i32("e", [1, FRAMES, width]), i32("st", [1, 1, 1]), i32("axes", [1])]
    ops = [tb.Op(OPS.VAR_HANDLE, (), ("h",), tb.var_handle_options("ring")),
           tb.Op(OPS.READ_VARIABLE, ("h",), ("r",)),
           tb.Op(OPS.CONCATENATION, ("r", "x"), ("m",), tb.concat_options(1)),
           tb.Op(OPS.STRIDED_SLICE, ("m", "b", "e", "st"), ("s",), _slice_options()),
           tb.Op(OPS.ASSIGN_VARIABLE, ("h", "s"), ()),
           tb.Op(OPS.SUM, ("m", "axes"), ("y",), tb._options("ReducerOptions", KeepDims=False))]
    return tb.Model(tensors, ops, ("x",), ("y",))


def test_a_ring_buffers_window_is_copied_in_when_its_memory_reads_the_state(tmp_path):
    """A ring buffer's next value is a window (frames 1..) of the memory concatenated from it. The memory is made
    by the step that last reads the state, so it cannot take the state's buffer (memory/state.py writes a next
    value in place only after the state's last read): the window is copied in after the state's last read,
    outside the arena, and the plan computes every call in its arenas."""
    compiled = compile_model(_save(window_model(), tmp_path, "window"), "host")
    lives, graph = compiled.lifetimes, compiled.graph
    assert lives.in_place == {"ring": False}
    assert "/* ring takes" in (write_project(compiled, tmp_path / "copy") / "model.c").read_text()
    for state, buffer in zip(graph.states, lives.state):
        assert not any(t in b.tensors for b in lives.buffers for t in buffer.tensors)
    state = None
    for frame in check.random_inputs(graph, 3):
        values = evaluate(graph, frame, state)
        got = run_in_arena(graph, compiled.order, lives, compiled.placement, {**frame, **(state or {})})
        assert all(np.array_equal(g, values[o]) for g, o in zip(got, graph.outputs))
        state = next_state(graph, values)


def feeder_model(width: int = 64) -> tb.Model:
    """A feature window feeding a classifier, as a streaming keyword spotter keeps one: m = concat(ring[:, 1:], x)
    is the ring's next value and the input of y = sum((m + m) * (m + m)) over the frames. Nothing reads the ring
    after the concatenation, and nothing reads m after the addition."""
    def i32(name, v):
        return tb.T(name, (len(v),), "int32", data=np.array(v, np.int32))

    shape = (1, FRAMES, width)
    tensors = [tb.T("x", (1, 1, width), "float32"), tb.T("h", (), "resource"), tb.T("r", shape, "float32"),
               tb.T("s", (1, FRAMES - 1, width), "float32"), tb.T("m", shape, "float32"),
               tb.T("a", shape, "float32"), tb.T("p", shape, "float32"), tb.T("y", (1, width), "float32"),
               i32("b", [0, 1, 0]), i32("e", [1, FRAMES, width]), i32("st", [1, 1, 1]), i32("axes", [1])]
    ops = [tb.Op(OPS.VAR_HANDLE, (), ("h",), tb.var_handle_options("ring")),
           tb.Op(OPS.READ_VARIABLE, ("h",), ("r",)),
           tb.Op(OPS.STRIDED_SLICE, ("r", "b", "e", "st"), ("s",), _slice_options()),
           tb.Op(OPS.CONCATENATION, ("s", "x"), ("m",), tb.concat_options(1)),
           tb.Op(OPS.ASSIGN_VARIABLE, ("h", "m"), ()),
           tb.Op(OPS.ADD, ("m", "m"), ("a",), tb.add_options()),
           tb.Op(OPS.MUL, ("a", "a"), ("p",), tb._options("MulOptions")),
           tb.Op(OPS.SUM, ("p", "axes"), ("y",), tb._options("ReducerOptions", KeepDims=False))]
    return tb.Model(tensors, ops, ("x",), ("y",))


def test_a_next_value_is_copied_in_once_nothing_reads_the_state_and_leaves_the_arena(tmp_path):
    """The ring's next value m is copied into the state right after the concatenation that last reads the state,
    so the arena holds m only while the addition reads it, not to the end of the call: the multiplication's step
    holds a and p (2 x 1,024 B), not m too (3 x 1,024 B before). Every call computed in the arena and in the C as
    the reference computes it."""
    path = _save(feeder_model(), tmp_path, "feeder")
    compiled = compile_model(path, "host")
    lives, graph, order = compiled.lifetimes, compiled.graph, compiled.order
    state, value = graph.state_updates()[0]
    assert lives.in_place == {state: False}
    step = lives.copies[state]
    assert order[step].op == "Concat" and step < len(order) - 2
    buffer = next(b for b in lives.buffers if b.name == lives.buffer_of[value])
    assert buffer.last == next(k for k, n in enumerate(order) if n.op == "Add") < len(order) - 1
    assert compiled.placement.arena_bytes <= 2 * 1024 + 256
    text = (write_project(compiled, tmp_path / "c") / "model.c").read_text()
    mul = [n.op for n in order if not registry.get(n.op).view].index("Mul")  # its call (views make none)
    assert text.index("/* ring takes") < text.index(f"MCUD_OP_BEGIN({mul});")
    state_values = None
    for frame in check.random_inputs(graph, 4):
        values = evaluate(graph, frame, state_values)
        got = run_in_arena(graph, order, lives, compiled.placement, {**frame, **(state_values or {})})
        assert all(np.array_equal(g, values[o]) for g, o in zip(got, graph.outputs))
        state_values = next_state(graph, values)
    frames = check.random_inputs(graph, 6, seed=5)
    expected = run_sequence(graph, frames)
    got = run_compiled_on_host(compiled, frames, tmp_path / "run")
    assert all(np.array_equal(g[0], e[0]) for g, e in zip(got, expected))


def test_the_converters_streaming_spotter_keeps_its_states_in_the_layout_of_its_convolutions():
    """The converter's streaming keyword spotter (conformance case var_handle-kws-float32) concatenates each 4-D
    state with a convolution's output: the state is kept NCHW as that output is, so a call moves no data between
    layouts (no Transpose), and the states stay apart from the arena."""
    from pathlib import Path

    path = Path(__file__).parent / "conformance" / "tflite" / "var_handle-kws-float32.tflite"
    compiled = compile_model(path, "host")
    graph = compiled.graph
    assert not any(n.op == "Transpose" for n in graph.nodes), [n.op for n in graph.nodes]
    assert all(len(graph[s].shape) == 4 and graph[s].kind == "state" for s in graph.states)
    assert not any(s in b.tensors for b in compiled.lifetimes.buffers for s in graph.states)


@pytest.mark.qemu
def test_on_a_board_the_first_run_of_a_sequence_resets_the_state(tmp_path):
    """The measurer keeps the state between RUNs and resets it at a RUN flagged as the first of a sequence: the same
    three frames twice, each time from the first, give the same outputs, and those are the host build's."""
    import shutil

    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import build_for_board, connect
    from mcudeploy.device.samples import output_array, sample_bytes

    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")
    compiled = compile_model(_save(ring_model(), tmp_path), "qemu-m4")
    graph = compiled.graph
    frames = _frames(3)
    firmware = build_for_board(compiled, tmp_path / "fw")
    runs = []
    with connect(compiled.board, firmware) as session:
        for _ in range(2):
            out = []
            for k, frame in enumerate(frames):
                raw, _ = session.infer(sample_bytes(graph, frame), [graph["y"].nbytes], reset=k == 0)
                out.append([output_array(graph, "y", raw[0])])
            runs.append(out)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(*runs))
    same, lines = compare_with_host(compiled, runs[1], frames)
    assert same, "\n".join(lines)


def test_a_variable_read_as_an_output_or_never_read(tmp_path):
    """A variable read straight into a graph output is copied there (the state's bytes change at the end of the
    call); one assigned but never read is no state at all."""
    model = ring_model()
    model.tensors.append(tb.T("seen", (1, FRAMES, WIDTH), "float32"))
    model.ops.insert(3, tb.Op(OPS.READ_VARIABLE, ("h",), ("seen",)))
    model.outputs = ("y", "seen")
    graph = import_model(_save(model, tmp_path))
    assert graph.model_outputs() == ("y", "seen") and graph.producer("seen").op == "Copy"
    got = run_sequence(graph, _frames(3))
    rings = [INITIAL] + [y / 2 for y in _ring_by_hand(_frames(3))]  # y = 2 m, and m is the next ring
    assert all(np.array_equal(g[1], r) for g, r in zip(got, rings))
    write_only = ring_model()  # the memory made from a constant and x: the variable is assigned, never read
    write_only.ops = [op for op in write_only.ops if op.code != OPS.READ_VARIABLE]
    next(op for op in write_only.ops if op.code == OPS.STRIDED_SLICE).inputs = ("v0", "b", "e", "st")
    write_only.tensors.append(tb.T("v0", INITIAL.shape, "float32", data=INITIAL))
    graph = import_model(_save(write_only, tmp_path, "write_only"))
    assert graph.states == ()
