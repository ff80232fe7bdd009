"""Acceptance 1 of issue 5: for random valid schemes, the split graph computes bit for bit what the
original does, on the numpy reference and in generated C on the host board.

Schemes are drawn by tests/partition/split_cases.py (one or two cuts, each a connected set of
nodes of one axis component, 2-6 pieces, halo kept or recomputed) on the shared int8 reference
models, on seeded generated graphs (benchmarks/graphs.py, random weights) and on the zoo's
onnxruntime-quantized models. Each example in C builds one program (a second for small graphs,
several for the reference models, whose weights become large C arrays), so the example counts
are small and derandomized: the same schemes every run."""
from __future__ import annotations

import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zoo
from shared_models import need_models, shared_models
from split_cases import generated, random_inputs, random_scheme, same
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.frontend import import_onnx
from mcudeploy.partition import split
from mcudeploy.compile import compile_graph, lower
from mcudeploy.plan import CompileOptions
from mcudeploy.reference import run_reference

MODELS = [p.name for p in shared_models("*_int8.onnx")] or ["(absent)"]
CI = settings(max_examples=3, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
METHODS = ("rpo", "dfs", "refine")


@lru_cache(maxsize=None)
def model_graph(name: str):
    need_models()
    return lower(import_onnx(shared_models(name)[0]))


def check(graph, seed: int, in_c: bool = True):
    """Split by a random scheme; compare with the original on the reference and (int8) in C."""
    rng = random.Random(seed)
    scheme = random_scheme(graph, rng)
    if not scheme:
        pytest.skip("no valid cut in this graph")
    x = random_inputs(graph, seed)
    want = run_reference(graph, x)
    pieces = split(graph, scheme)
    assert same(run_reference(pieces, x), want), f"reference differs for scheme {scheme}"
    if in_c:
        compiled = compile_graph(pieces, "host",
                                 options=CompileOptions(schedule_method=rng.choice(METHODS),
                                                        placement_method="greedy"))
        got = run_compiled_on_host(compiled, [x])[0]
        assert same(got, want), f"host C differs for scheme {scheme}"
    return scheme


@pytest.mark.parametrize("name", MODELS)
@settings(CI, max_examples=6)
@given(seed=st.integers(0, 2**20))
def test_split_shared_model_is_exact_on_reference(name, seed):
    check(model_graph(name), seed, in_c=False)


@pytest.mark.parametrize("name", [m for m in MODELS if "large" not in m])  # its C alone takes ~20 s to build
@settings(CI, max_examples=2)
@given(seed=st.integers(0, 2**20))
def test_split_shared_model_is_exact_in_c(name, seed):
    check(model_graph(name), seed)


@pytest.mark.parametrize("family", ("randwire", "nas", "unet"))
@settings(CI, max_examples=4)
@given(seed=st.integers(0, 2**20))
def test_split_generated_int8_is_exact(family, seed):
    check(generated(family, 24, seed % 7, "int8"), seed)


@pytest.mark.parametrize("family", ("randwire", "nas", "unet"))
@settings(CI, max_examples=6)
@given(seed=st.integers(0, 2**20))
def test_split_generated_float_is_exact_on_reference(family, seed):
    """float32 too: a piece sums the same terms in the same order as the whole operator."""
    check(generated(family, 24, seed % 7, "float32"), seed, in_c=False)


@pytest.fixture(scope="module")
def zoo_graph(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            _, qdq, _ = zoo.BUILDERS[name](tmp_path_factory.mktemp(name))
            cache[name] = lower(import_onnx(qdq))
        return cache[name]

    return get


@pytest.mark.parametrize("name", ("convs", "branching", "unet", "activations"))
@settings(CI, max_examples=2)
@given(seed=st.integers(0, 2**20))
def test_split_zoo_int8_is_exact(zoo_graph, name, seed):
    check(zoo_graph(name), seed)
