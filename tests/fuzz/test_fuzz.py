"""The mutation fuzzer in CI: 3,000 damaged models through what ``mcudeploy plan MODEL -b host`` does.

Every case must compile or end in an MCUDeployError of one line; any other exception, a message of
several lines, a case over 10 s or a dead worker is a failure (benchmarks/fuzz_bench.py runs 50,000
and makes any case again by its index). 7 to 17 ms a case on one worker, as the machine is idle or
shared: 20 s to 50 s in all (5,000 until stop 50 took 84 s of CI's 45 minutes). The first 100 cases are also
run with each one that plans built and run under the sanitizers (60 s in CI).
"""
import random

import pytest

from fuzz.mutate import mutant
from fuzz.runner import case, fuzz
from fuzz.seeds import seed_models
from fuzz.target import error_kind, outcome

CASES = 3000
SEED = 0


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return seed_models(tmp_path_factory.mktemp("fuzz-seeds"))


def test_every_seed_compiles(seeds, tmp_path):
    """Unmutated, each seed plans: the outcomes below are the mutations' doing."""
    for name, data in seeds:
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(data)
        assert outcome(path) == "ok", name


def test_a_case_is_made_again_from_its_index(seeds):
    assert case(seeds, SEED, 17) == case(seeds, SEED, 17)
    assert case(seeds, SEED, 17)[1] != case(seeds, SEED, 18)[1]
    data, done = mutant(seeds[0][1], random.Random("x"))
    assert done and data != seeds[0][1]


def test_error_kind_masks_names_and_numbers():
    text = "/tmp/m.onnx: node conv_3 (Conv) reads constant w7, which holds NaN or infinite values (1 of 64)"
    assert error_kind(text, "/tmp/m.onnx") == "MODEL: node * (Conv) reads constant *,"


def test_damaged_models_end_in_one_sentence(seeds):
    result = fuzz(seeds, CASES, seed=SEED, timeout=10.0)
    assert sum(result.counts.values()) == CASES
    assert not result.failures, result.failure_lines("python benchmarks/fuzz_bench.py --format onnx --case I")
    assert result.counts["ok"] > CASES // 20, result.counts  # mutants reach past the parser and compile


SANITIZED = 100  # cases run sanitized too: about a tenth plan, each a sanitized build and run of 1 to 3 s


def test_damaged_models_that_plan_run_clean_under_the_sanitizers(seeds):
    """The first 100 ONNX cases again, each that plans also built with AddressSanitizer and UBSan and run
    (``run --sanitize -b host``): no report, no failed build (benchmarks/fuzz_bench.py --sanitize at length)."""
    result = fuzz(seeds, SANITIZED, seed=SEED, timeout=60.0, sanitize=True)
    assert not result.failures, result.failure_lines("fuzz_bench.py --format onnx --case I --sanitize")
    assert result.counts["ok"] >= 5, result.counts  # enough mutants reach the C to make the check mean something
