"""The .tflite mutation fuzzer in CI: 2,000 damaged .tflite files through what ``mcudeploy plan MODEL -b
host`` does.

Every case must compile or end in an MCUDeployError of one line; any other exception, a message of
several lines, a case over 10 s or a dead worker is a failure (``python benchmarks/fuzz_bench.py
--format tflite --case I`` makes case I again; it runs 20,000 in under 3 minutes). Measured on one
worker, the machine shared: 7 to 9 ms a case (most damaged files are refused by the flatbuffer check,
mcudeploy/frontend/tflite/verify.py, before any import), 14 to 17 s for the 2,000 here, within the 30 s
this slice may take; the recurrent seeds (0.5 s a plan) are left out (fuzz/seeds.py). The first 100 cases are
also run with each one that plans built and run under the sanitizers (45 s in CI).
"""
import random

import pytest

from fuzz.mutate_tflite import fields_of, mutant
from fuzz.runner import case, case_suffix, fuzz
from fuzz.seeds import tflite_seed_models
from fuzz.target import outcome

CASES = 2000
SEED = 0


@pytest.fixture(scope="module")
def seeds():
    return tflite_seed_models()


def test_every_tflite_seed_compiles(seeds, tmp_path):
    """Unmutated, each seed plans, and its fields are found: the outcomes below are the mutations' doing."""
    assert len(seeds) >= 20
    for name, data, fmt in seeds:
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        assert fmt == "tflite" and outcome(path) == "ok", name
        assert any(f.name == "Tensor.shape[]" for f in fields_of(data)), name


def test_a_tflite_case_is_made_again_from_its_index(seeds):
    assert case(seeds, SEED, 17) == case(seeds, SEED, 17)
    assert case(seeds, SEED, 17)[1] != case(seeds, SEED, 18)[1]
    assert case_suffix(seeds, SEED, 17) == ".tflite"
    data, done = mutant(seeds[0][1], random.Random("x"))
    assert done and data != seeds[0][1]
    assert mutant(seeds[0][1], random.Random("x")) == (data, done)


def test_damaged_tflite_files_end_in_one_sentence(seeds):
    result = fuzz(seeds, CASES, seed=SEED, timeout=10.0)
    assert sum(result.counts.values()) == CASES
    assert not result.failures, result.failure_lines("python benchmarks/fuzz_bench.py --format tflite --case I")
    assert result.counts["ok"] > CASES // 20, result.counts  # mutants reach past the reader and compile


SANITIZED = 100  # cases run sanitized too: about a tenth plan, each a sanitized build and run of 1 to 3 s


def test_damaged_tflite_models_that_plan_run_clean_under_the_sanitizers(seeds):
    """The first 100 .tflite cases again, each that plans also built with AddressSanitizer and UBSan and run
    (``run --sanitize -b host``): no report, no failed build (benchmarks/fuzz_bench.py --sanitize at length)."""
    result = fuzz(seeds, SANITIZED, seed=SEED, timeout=60.0, sanitize=True)
    assert not result.failures, result.failure_lines("fuzz_bench.py --format tflite --case I --sanitize")
    assert result.counts["ok"] >= 5, result.counts  # enough mutants reach the C to make the check mean something
