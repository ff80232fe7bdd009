"""Issue 43: the planner, the splitter, swap and recompute, and the pipeline stages on 16x8 TFLite models (int16
activations, int8 weights: two bytes an element), unchanged. The Keras corpus's 16x8 DS-CNN and 1-D denoiser are
cut along their connected axes (the segments the search tries, and the scheme tune keeps), compiled under a
fast-memory budget (tensors kept in the slow region; the idle skip of a 16x8 residual block swapped, recomputed,
or copied by DMA) and cut into pipeline stages; every plan's C gives the unsplit plan's outputs bit for bit, and
TensorFlow Lite Micro's where it is installed."""
from __future__ import annotations

import dataclasses
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from mcudeploy import check
from mcudeploy.boards import DmaEngine, load_board
from mcudeploy.check.tflm import available
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.frontend import import_model
from mcudeploy.ir import itemsize
from mcudeploy.ops import registry
from mcudeploy.partition import split
from mcudeploy.compile import compile_graph, compile_model, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.search import TuneOptions, Tuner
from mcudeploy.search.space import segment_cuts, segments
from mcudeploy.simulate.timing_cache import TimingCache
from mcudeploy.stages import compile_stages, staged_plan_dict
from tflite_build import OPS, RELU, SAME, Model, Op, T, add_options, conv_options

CORPUS = Path(__file__).resolve().parent / "keras_corpus"
DSCNN, DENOISER = CORPUS / "dscnn_gap-int16.tflite", CORPUS / "denoiser-int16.tflite"
CUTS = 10  # cuts tried per model, drawn from every segment's (each a host build)


def residual16(seed: int = 16, hw: int = 12, c: int = 8, recompute: bool = False) -> Model:
    """x -> a = Relu(Conv x) -> b = Conv a -> c = Conv b -> y = a + c, 16x8 (int16 activations of zero point 0,
    per-channel int8 weights, int64 biases, as the converter writes them): a idles while b and c run. With
    ``recompute``: h = Conv x, a = RELU(h), b = Conv h, c = Conv b, y = (a + c) + h, so h is live where a is read
    again and the RELU may run again there."""
    rng = np.random.default_rng(seed)
    scale = {"x": 0.0004, "h": 0.002, "a": 0.002, "b": 0.01, "c": 0.05, "s": 0.05, "y": 0.05}
    tensors, ops = [T("x", (1, hw, hw, c), "int16", scale=(scale["x"],), zero_point=(0,))], []

    def tensor(name):
        tensors.append(T(name, (1, hw, hw, c), "int16", scale=(scale[name],), zero_point=(0,)))

    def conv(name, src, act=0):
        w = rng.integers(-127, 128, (c, 3, 3, c)).astype(np.int8)
        sw = tuple(float(s) for s in rng.uniform(0.002, 0.01, c))
        bias = rng.integers(-20000, 20000, c).astype(np.int64)
        tensors.extend([T(f"{name}_w", (c, 3, 3, c), "int8", scale=sw, zero_point=(0,) * c, data=w),
                        T(f"{name}_b", (c,), "int64", scale=tuple(scale[src] * s for s in sw), zero_point=(0,) * c,
                          data=bias)])
        tensor(name)
        ops.append(Op(OPS.CONV_2D, (src, f"{name}_w", f"{name}_b"), (name,), conv_options((1, 1), SAME, act)))

    def add(name, a, b):
        tensor(name)
        ops.append(Op(OPS.ADD, (a, b), (name,), add_options()))

    if not recompute:
        conv("a", "x", RELU), conv("b", "a"), conv("c", "b"), add("y", "a", "c")
        return Model(tensors, ops, ("x",), ("y",))
    conv("h", "x")
    tensor("a")
    ops.append(Op(OPS.RELU, ("h",), ("a",)))
    conv("b", "h"), conv("c", "b"), add("s", "a", "c"), add("y", "s", "h")
    return Model(tensors, ops, ("x",), ("y",))


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    path = tmp_path_factory.mktemp("res16") / "residual16.tflite"
    path.write_bytes(residual16().build())
    return path


@pytest.fixture(scope="module")
def with_recompute(tmp_path_factory):
    path = tmp_path_factory.mktemp("res16r") / "recompute16.tflite"
    path.write_bytes(residual16(recompute=True).build())
    return path


def outputs(compiled, samples, tmp_path, tag):
    return run_compiled_on_host(compiled, samples, tmp_path / tag)


def same(got, want) -> bool:
    return all(np.array_equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws))


def against_tflm(model, compiled, got, samples, reference=None):
    """Where TensorFlow Lite Micro is installed, the plan's outputs are its own bit for bit."""
    if available() is not None:
        return
    verdict = check.check_tflite_outputs(model, compiled, got, samples, reference)
    assert verdict.ok, "\n".join(verdict.lines())


def fast_arena(compiled) -> int:
    return compiled.placement.arenas[compiled.board.regions[0].name]


def model_ticks(compiled) -> int:
    """A latency model for the search (no board): a tick per MAC and 50 per kernel call."""
    graph = compiled.graph
    return sum(registry.get(n.op).macs(graph, n) + 50 for n in compiled.order
               if not registry.get(n.op).view and n.name not in compiled.lifetimes.elided)


@pytest.mark.parametrize("model", [DSCNN, DENOISER], ids=lambda p: p.stem)
def test_cuts_of_a_16x8_network_give_the_unsplit_plans_outputs(model, tmp_path):
    graph = lower(import_model(model))
    assert {graph[o].dtype for n in graph.nodes for o in n.outputs} == {"int16"}
    samples = check.random_inputs(graph, 2)
    want = outputs(compile_graph(graph, "host"), samples, tmp_path, "whole")
    cuts = [c for s in segments(graph) for c in segment_cuts(graph, s, pieces=(2, 3, 4))]
    chosen = random.Random(43).sample(cuts, min(CUTS, len(cuts)))
    assert len(chosen) == CUTS
    for k, cut in enumerate(chosen):
        pieces = split(graph, (cut,))
        # a piece of a tensor is its rows at two bytes an element
        assert all(t.nbytes == t.size * 2 for t in pieces.tensors.values() if not t.is_const and t.dtype == "int16")
        compiled = compile_graph(pieces, "host", options=CompileOptions(scheme=(cut,), placement_method="greedy"))
        assert same(outputs(compiled, samples, tmp_path, f"cut{k}"), want), f"{cut} changes the outputs"


def test_tune_cuts_the_16x8_ds_cnn_and_its_c_is_tensorflow_lite_micros(tmp_path):
    """The search on the 16x8 DS-CNN (timed by a latency model, as tests/search/test_tune.py's): it keeps a
    scheme of less arena than the unsplit plan, whose C gives the unsplit plan's outputs and TFLite Micro's."""
    tuner = Tuner(DSCNN, "qemu-m4", tmp_path / "out", measure=model_ticks, progress=lambda m: None,
                  cache=TimingCache("qemu-m4", tmp_path / "cache"),
                  options=TuneOptions(max_overhead=0.05, time_limit=600, effort=0.25, budget=6))
    result = tuner.run()
    best = result.best
    assert best.scheme and best.arena < result.baseline.arena
    host = load_board("host")
    tuned, whole = (dataclasses.replace(r.compiled, board=host) for r in (best, result.baseline))
    samples = check.random_inputs(tuned.graph, 3)
    got = outputs(tuned, samples, tmp_path, "tuned")
    assert same(got, outputs(whole, samples, tmp_path, "whole"))
    against_tflm(DSCNN, tuned, got, samples, tuner.lowered)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_the_16x8_ds_cnn_under_a_fast_memory_budget(share, tmp_path):
    """A chain has no idle tensor: its largest activations are kept in the slow region, read there by the
    int16 kernels."""
    plain = compile_model(DSCNN, "host")
    fitted = compile_model(DSCNN, "host", options=CompileOptions(fast_memory=f"{share * 100:g}%"))
    assert fast_arena(fitted) <= int(fast_arena(plain) * share)
    o = fitted.offload
    assert o.residents and all(r.nbytes == fitted.graph[r.tensor].size * 2 for r in o.residents)
    samples = check.random_inputs(plain.graph, 2)
    got = outputs(fitted, samples, tmp_path, "fitted")
    assert same(got, outputs(plain, samples, tmp_path, "plain"))
    against_tflm(DSCNN, fitted, got, samples)


def slow_board(bytes_per_tick: float, dma: bool = False):
    host = load_board("host")
    slow = host.regions[1]
    speed = dataclasses.replace(slow.speed, read_bytes_per_tick=bytes_per_tick, write_bytes_per_tick=bytes_per_tick)
    return dataclasses.replace(host, regions=(host.regions[0], dataclasses.replace(slow, speed=speed)),
                               dma_engine=DmaEngine("pl080", 0, 2) if dma else None)


@pytest.mark.parametrize("how", ["swap", "recompute", "dma"])
def test_the_idle_int16_skip_is_swapped_or_recomputed(residual, with_recompute, how, tmp_path):
    """The skip a (12 x 12 x 8 int16: 2,304 bytes) is copied out and back (both copies move its bytes, by DMA
    where the board has an engine) or, with a slow memory of a quarter byte a tick, its RELU run again before the
    Add, within a budget of the arena less a."""
    model = with_recompute if how == "recompute" else residual
    board = slow_board(0.25 if how == "recompute" else 40.0, dma=how == "dma")
    plain = compile_model(model, board, options=CompileOptions(schedule_method="model"))
    a = plain.graph["a"]
    assert a.nbytes == a.size * itemsize("int16") == 2304
    fitted = compile_model(model, board,
                           options=CompileOptions(schedule_method="model", fast_memory=fast_arena(plain) - a.nbytes))
    o = fitted.offload
    assert fast_arena(fitted) <= fast_arena(plain) - a.nbytes
    if how == "recompute":
        assert [r.tensor for r in o.recomputes] == ["a"] and not o.swaps
    else:
        assert [(s.tensor, s.nbytes) for s in o.swaps] == [("a", 2304)] and o.bytes_moved == 2 * 2304
        assert o.asynchronous == (how == "dma")
    samples = check.random_inputs(plain.graph, 2)
    got = outputs(fitted, samples, tmp_path, "fitted")
    assert same(got, outputs(plain, samples, tmp_path, "plain"))
    against_tflm(model, fitted, got, samples)


def run_staged(staged, sample, tmp_path):
    values = dict(sample)
    for stage in staged.stages:
        g = stage.compiled.graph
        outs, = run_compiled_on_host(stage.compiled, [{i: values[i] for i in g.inputs}], tmp_path / f"s{stage.index}")
        values.update(zip(g.outputs, outs))
    return values


@pytest.mark.parametrize("model", [DSCNN, DENOISER], ids=lambda p: p.stem)
def test_16x8_networks_over_three_stages(model, tmp_path):
    """Each stage compiled for its own chip; what crosses a link is an int16 tensor, counted at two bytes an
    element; the stages' C in turn gives the whole plan's outputs."""
    graph = lower(import_model(model))
    steps = len(graph.nodes)
    staged = compile_stages(graph, "host", [steps // 3, 2 * steps // 3])
    assert staged.links and all(graph[l.tensor].dtype == "int16" and l.nbytes == graph[l.tensor].size * 2
                                for l in staged.links)
    plan = staged_plan_dict(staged)
    assert sum(l["bytes"] for l in plan["links"]) == sum(l.nbytes for l in staged.links)
    whole = compile_graph(graph, "host")
    samples = check.random_inputs(graph, 2)
    want = outputs(whole, samples, tmp_path, "whole")
    for sample, w in zip(samples, want):
        got = run_staged(staged, sample, tmp_path)
        assert all(np.array_equal(got[name], value) for name, value in zip(graph.outputs, w))


def _need_qemu():
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")


@pytest.mark.slow
@pytest.mark.qemu
def test_a_cut_16x8_ds_cnn_on_qemu_and_a_dma_swapped_skip_on_the_m33(residual, tmp_path):
    """On emulated boards: the DS-CNN cut into row strips on the Cortex-M4, and the residual block's skip copied
    to the AN505's PSRAM and back by its PL081 DMA engine; each bit for bit the host build of the same plan."""
    from mcudeploy.check.against_host import compare_with_host
    from mcudeploy.device.runner import run_on_board

    _need_qemu()
    graph = lower(import_model(DSCNN))
    seg = max(segments(graph), key=lambda s: len(s.axes))
    cut = next(c for c in segment_cuts(graph, seg, pieces=(4,), halos=("keep",)))
    plans = [compile_graph(split(graph, (cut,)), "qemu-m4", options=CompileOptions(scheme=(cut,)))]
    board = load_board("qemu-an505")
    plain = compile_model(residual, board, options=CompileOptions(schedule_method="model"))
    fitted = compile_model(residual, board,
                           options=CompileOptions(schedule_method="model",
                                                  fast_memory=fast_arena(plain) - plain.graph["a"].nbytes))
    assert fitted.offload.asynchronous and [s.tensor for s in fitted.offload.swaps] == ["a"]
    plans.append(fitted)
    for compiled in plans:
        samples = check.random_inputs(compiled.graph, 2)
        got = run_on_board(compiled, samples).outputs
        ok, lines = compare_with_host(compiled, got, samples)
        assert ok, "\n".join(lines)
