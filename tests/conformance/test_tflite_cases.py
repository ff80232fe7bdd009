"""TFLite conformance: every case of tests/conformance/tflite/ (one operator at one type, made by TensorFlow's
converter) run by TensorFlow Lite Micro and by mcudeploy's C on the host, bit for bit (tflite_cases.py).

A case either passes or is listed, with its reason, in the "TFLite conformance cases" table of
mcudeploy/ops/UNSUPPORTED.md: a listed case that passes fails here until its row is removed, and so do a row
naming no case and a summary table that no longer follows from the cases and the rows."""
from __future__ import annotations

import pytest

from mcudeploy.check.tflm import available
from mcudeploy.errors import MCUDeployError

from .tflite_cases import (MANIFEST, TFLM_BUILTINS, TFLM_CUSTOM, TFLM_SIGNAL, Mismatch, cases, check,
                           current_summary, listed_unsupported, manifest, summary_block, tflm_outputs)

CASES = cases()
LISTED = listed_unsupported()


@pytest.fixture(scope="module")
def expected():
    why = available()
    if why is not None:
        pytest.skip(f"TensorFlow Lite Micro is not installed: {why}")
    return {}


def _expected(cache: dict, case):
    """TFLite Micro's outputs, computed for every case of this worker's share at the first call."""
    if case.name not in cache:
        cache.update(tflm_outputs([c for c in CASES if c.name not in cache]))
    return cache[case.name]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_tflite_case(case, expected, tmp_path):
    row = LISTED.get(case.name)
    want = _expected(expected, case)
    if row is None:
        check(case, want, tmp_path)
        return
    try:
        check(case, want, tmp_path)
    except (MCUDeployError, Mismatch) as exc:
        if isinstance(exc, Mismatch) and "the reference did not run" not in str(exc):
            pytest.fail(f"{case.name} is listed as unsupported ({row.reason}) but gives a wrong result: {exc}")
        pytest.xfail(f"listed in UNSUPPORTED.md: {row.reason}")
    pytest.fail(f"{case.name} passes now: remove its row from UNSUPPORTED.md (python -m tests.conformance.tflite_cases "
                f"--write)")


def test_the_cases_cover_every_builtin_family():
    held = {op for c in CASES for op in c.operators}
    assert len(CASES) >= 200, f"only {len(CASES)} cases in {MANIFEST}"
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "MEAN", "RESIZE_BILINEAR", "EXPAND_DIMS"} <= held
    assert {c.dtype for c in CASES} >= {"float32", "int8", "int16"}


def test_every_case_file_is_in_the_manifest():
    names = {c["case"] for c in manifest()["cases"]}
    files = {p.stem for p in MANIFEST.parent.glob("*.tflite")}
    assert files == names, f"files without a manifest entry: {sorted(files - names)}; entries without a file: " \
                           f"{sorted(names - files)}"


def test_every_listed_case_exists_and_names_its_builtin_and_type():
    by_name = {c.name: c for c in CASES}
    stale = sorted(set(LISTED) - set(by_name))
    assert not stale, f"UNSUPPORTED.md lists TFLite cases that do not exist: {', '.join(stale)}"
    wrong = [n for n, r in LISTED.items() if (r.builtin, r.dtype) != (by_name[n].builtin, by_name[n].dtype)]
    assert not wrong, f"UNSUPPORTED.md names the wrong builtin or type for: {', '.join(wrong)}"
    assert all(r.reason for r in LISTED.values())


def test_the_builtin_summary_follows_from_the_cases_and_the_list():
    assert current_summary() == summary_block(CASES, LISTED), \
        "the TFLite builtins table of UNSUPPORTED.md is stale: python -m tests.conformance.tflite_cases --write"


def test_every_case_operator_is_a_builtin_tflite_micro_registers():
    """A case holds only what TFLite Micro runs (the generator keeps no other; the cases built by hand, only the
    Signal library's operators and TFLite_Detection_PostProcess, which it registers), so the summary lists them all."""
    unknown = sorted({op for c in CASES if c.reference == "tflm" for op in c.operators}
                     - set(TFLM_BUILTINS) - set(TFLM_SIGNAL) - set(TFLM_CUSTOM))
    assert not unknown, f"operators not in TFLM_BUILTINS, TFLM_SIGNAL or TFLM_CUSTOM: {unknown}"
