"""Per-operator conformance: the official ONNX node test cases, compiled to C and run on the host.

Every selected case (see cases.py) must either pass — the C output and the numpy reference
match the case's expected outputs — or be listed, with its reason, in
mcudeploy/ops/UNSUPPORTED.md. The list is held exact both ways: a listed case that passes
fails here until its row is removed, and so does a row naming no selected case.
"""
from __future__ import annotations

import pytest

from mcudeploy.errors import MCUDeployError

from .cases import UNSUPPORTED_MD, Mismatch, check, listed_unsupported, selected

CASES = selected()
LISTED = listed_unsupported()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case, tmp_path):
    row = LISTED.get(case.name)
    if row is None:
        check(case, tmp_path)
        return
    try:
        check(case, tmp_path)
    except (MCUDeployError, Mismatch) as exc:
        pytest.xfail(f"listed in UNSUPPORTED.md: {row.reason} ({str(exc).splitlines()[0]})")
    pytest.fail(f"{case.name} passes now: remove its row from {UNSUPPORTED_MD.name}")


def test_selection_is_not_empty():
    ops = {c.op for c in CASES}
    assert len(CASES) >= 50 and {"Conv", "MaxPool", "Relu"} <= ops


def test_every_listed_case_is_selected():
    names = {c.name for c in CASES}
    stale = sorted(set(LISTED) - names)
    assert not stale, f"{UNSUPPORTED_MD.name} lists cases that are not selected (renamed, or their operator " \
                      f"is no longer registered): {', '.join(stale)}"


def test_listed_op_column_matches_the_case():
    ops = {c.name: c.op for c in CASES}
    wrong = [f"{n} ({r.op}, is {ops[n]})" for n, r in LISTED.items() if n in ops and r.op != ops[n]]
    assert not wrong, f"{UNSUPPORTED_MD.name} names the wrong op for: {', '.join(wrong)}"


def test_every_listed_case_has_a_reason():
    assert all(r.reason for r in LISTED.values())
