"""The ONNX node test cases mcudeploy is held to, and how one is checked.

Cases come from ``onnx.backend.test.case.node`` (the ``expect(...)`` registrations behind the
official backend tests), generated in memory when the suite is collected. A case is selected
when every node of its model is an operator mcudeploy registers (or a Constant, which the
frontend folds) and it has no subgraph.

A microcontroller model holds weights and shape-like operands as initializers, whereas the
ONNX cases often feed them as graph inputs. Before compiling, those inputs are frozen into
initializers (with the case's own values): the operands listed in ``FROZEN``. What a case then
tests is unchanged; only where an operand lives.

``python -m tests.conformance.cases [--write] [CASE or OP ...]`` runs the selected cases and
prints the failures as rows of mcudeploy/ops/UNSUPPORTED.md (``--write`` updates the file), and
apart from them the failures that look like bugs (crashes, C build errors, wrong results),
which belong in a bug report, not in the list.
"""
from __future__ import annotations

import functools
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import onnx
from onnx import numpy_helper

from mcudeploy.errors import MCUDeployError, UnsupportedError

UNSUPPORTED_MD = Path(__file__).resolve().parents[2] / "mcudeploy" / "ops" / "UNSUPPORTED.md"

# op type -> indices of the node inputs that a deployed model holds as initializers
FROZEN: dict[str, tuple[int, ...]] = {
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (1, 2),
    "BatchNormalization": (1, 2, 3, 4),
    "LayerNormalization": (1, 2),
    "Gather": (1,),
    "PRelu": (1,),
    "Clip": (1, 2),
    "Pad": (1, 2, 3),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "Reshape": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Split": (1,),
    "Slice": (1, 2, 3, 4),
    "Expand": (1,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceL2": (1,),
    "Tile": (1,),
    "QuantizeLinear": (1, 2),
    "DequantizeLinear": (1, 2),
}
# Ops the frontend evaluates itself whatever the registry holds.
FRONTEND_OPS = {"Constant"}

# Float tolerances against the expected outputs (the C and the numpy reference must agree more
# tightly: FLOAT_C_VS_REF). Per-case overrides, with the reason, go in TOLERANCE.
FLOAT_TOL = (1e-4, 1e-4)
FLOAT_C_VS_REF = (1e-5, 1e-5)
TOLERANCE: dict[str, tuple[float, float]] = {}


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    op: str  # the operator types of the model, in order of first appearance
    model: onnx.ModelProto  # with the frozen operands as initializers
    inputs: dict  # graph input name -> array
    outputs: tuple  # expected output arrays, in graph order

    def __repr__(self) -> str:
        return self.name


@functools.lru_cache(maxsize=None)
def _all_testcases() -> tuple:
    from onnx.backend.test.case.node import collect_testcases

    state = np.random.get_state()  # the case generators reseed numpy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            found = tuple(collect_testcases(None))
    np.random.set_state(state)
    return found


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def _array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return value


def _freeze(test) -> Case:
    model = onnx.ModelProto()
    model.CopyFrom(test.model)
    graph = model.graph
    given, expected = test.data_sets[0]
    values = {vi.name: _array(v) for vi, v in zip(graph.input, given)}
    frozen = set()
    for node in graph.node:
        for index in FROZEN.get(node.op_type, ()):
            if index < len(node.input) and isinstance(values.get(node.input[index]), (np.ndarray, np.generic)):
                frozen.add(node.input[index])
    kept = [vi for vi in graph.input if vi.name not in frozen]
    for name in sorted(frozen):
        graph.initializer.append(numpy_helper.from_array(np.asarray(values[name]), name))
    del graph.input[:]
    graph.input.extend(kept)
    ops = list(dict.fromkeys(n.op_type for n in graph.node if n.op_type not in FRONTEND_OPS))
    return Case(test.name, " ".join(ops) or "Constant", model,
                {vi.name: values[vi.name] for vi in kept}, tuple(_array(v) for v in expected))


@functools.lru_cache(maxsize=None)
def selected() -> tuple[Case, ...]:
    """Cases whose model consists only of operators mcudeploy registers, sorted by name."""
    from mcudeploy.ops import registry

    known = set(registry.onnx_types()) | FRONTEND_OPS
    chosen = []
    for test in _all_testcases():
        nodes = test.model.graph.node
        if test.kind != "node" or not nodes or len(test.data_sets) != 1:
            continue
        if all(n.op_type in known and n.domain in ("", "ai.onnx") and not _has_subgraph(n) for n in nodes):
            chosen.append(_freeze(test))
    return tuple(sorted(chosen, key=lambda c: c.name))


# --------------------------------------------------------------------------- the list of exceptions

_ROW = re.compile(r"^\|\s*(test_\w+)\s*\|([^|]*)\|(.*)\|\s*$")


@dataclass(frozen=True)
class Listed:
    case: str
    op: str
    reason: str


def listed_unsupported(path: Path = UNSUPPORTED_MD) -> dict[str, Listed]:
    """Rows ``| test_... | op | reason |`` of UNSUPPORTED.md, by case name."""
    rows: dict[str, Listed] = {}
    for line in path.read_text().splitlines():
        m = _ROW.match(line.strip())
        if m:
            if m.group(1) in rows:
                raise ValueError(f"{path.name} lists {m.group(1)} twice")
            rows[m.group(1)] = Listed(m.group(1), m.group(2).strip(), m.group(3).strip())
    return rows


# --------------------------------------------------------------------------- checking one case


class Mismatch(AssertionError):
    """The generated C, the numpy reference and the expected outputs disagree."""


def _compare(what: str, got: np.ndarray, want: np.ndarray, tol: tuple[float, float]) -> None:
    if got.shape != want.shape:
        raise Mismatch(f"{what}: shape {got.shape}, expected {want.shape}")
    if got.dtype != want.dtype:
        raise Mismatch(f"{what}: dtype {got.dtype}, expected {want.dtype}")
    if np.issubdtype(want.dtype, np.floating):
        try:
            np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1])
        except AssertionError as exc:
            raise Mismatch(f"{what}: {exc}") from None
    elif not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise Mismatch(f"{what}: {len(bad)} of {want.size} elements differ, first at {tuple(bad[0])}: "
                       f"{got[tuple(bad[0])]} != {want[tuple(bad[0])]}")


def check(case: Case, workdir: Optional[Path] = None) -> None:
    """Compile the case to C, build and run it; raise unless C, reference and expected agree."""
    from mcudeploy.device.host import run_compiled_on_host
    from mcudeploy.compile import compile_model
    from mcudeploy.reference import run_reference

    compiled = compile_model(case.model, "host")
    graph = compiled.graph
    missing = set(graph.inputs) - set(case.inputs)
    if missing:
        raise Mismatch(f"the compiled graph has inputs {sorted(missing)} the case does not give")
    if len(graph.outputs) != len(case.outputs):
        raise Mismatch(f"{len(graph.outputs)} outputs, expected {len(case.outputs)}")
    c_outputs = run_compiled_on_host(compiled, [case.inputs], workdir)[0]
    ref_outputs = run_reference(graph, case.inputs)
    tol = TOLERANCE.get(case.name, FLOAT_TOL)
    for name, c, ref, want in zip(graph.outputs, c_outputs, ref_outputs, case.outputs):
        want = np.asarray(want)
        _compare(f"output {name} of the C", c, want, tol)
        _compare(f"output {name} of the numpy reference", ref, want, tol)
        _compare(f"output {name}, C against the numpy reference", c, ref, FLOAT_C_VS_REF)


def outcome(case: Case) -> tuple[str, str]:
    """("pass" | "unsupported" | "bug", one-line reason)."""
    try:
        check(case)
    except UnsupportedError as exc:
        return "unsupported", short_reason(str(exc))
    except MCUDeployError as exc:
        return "unsupported", short_reason(str(exc))
    except Mismatch as exc:
        return "bug", "wrong result: " + str(exc).splitlines()[0]
    except Exception as exc:  # a crash or a C build failure
        return "bug", f"{type(exc).__name__}: " + (str(exc).strip().splitlines() or [""])[0]
    return "pass", ""


def short_reason(message: str) -> str:
    """The reason of a frontend error without the "the model: node X (Op) is not supported:" prefix."""
    message = message.strip().splitlines()[0] if message.strip() else "unsupported"
    message = re.sub(r"^the model: ", "", message)
    message = re.sub(r"^node \S+ \(\w+\) is not supported: ", "", message)
    return message.replace("|", "/").rstrip(".")


def table_rows(rows: list[Listed]) -> str:
    return "\n".join(f"| {r.case} | {r.op} | {r.reason} |" for r in sorted(rows, key=lambda r: r.case))


def write_table(rows: list[Listed], path: Path = UNSUPPORTED_MD) -> None:
    """Replace the case rows of UNSUPPORTED.md (the other tables are kept as they are)."""
    lines = path.read_text().splitlines()
    kept = [line for line in lines if not _ROW.match(line.strip())]
    header = next(i for i, line in enumerate(kept) if line.strip().startswith("| case |"))
    kept[header + 2:header + 2] = table_rows(rows).splitlines()
    path.write_text("\n".join(kept) + "\n")


def main(argv=None) -> int:
    """Run every selected case; print the failures as UNSUPPORTED.md rows and the bugs apart.

    ``--write`` puts the rows into UNSUPPORTED.md: a case listed there keeps its (hand-written)
    reason as long as it still fails without crashing; bugs are never written.
    """
    import os
    import tempfile

    args = list(sys.argv[1:] if argv is None else argv)
    write = "--write" in args
    only = set(args) - {"--write"}
    os.environ.setdefault("MCUDEPLOY_CACHE", tempfile.mkdtemp(prefix="mcud-conformance-"))
    listed = listed_unsupported()
    rows, bugs, passed, skipped = [], [], 0, []
    for case in selected():
        if only and case.name not in only and case.op not in only:
            if case.name in listed:
                skipped.append(listed[case.name])
            continue
        status, reason = outcome(case)
        if status == "pass":
            passed += 1
        elif case.name in listed and (status == "unsupported" or reason.startswith("wrong result")):
            rows.append(Listed(case.name, case.op, listed[case.name].reason))
        elif status == "unsupported":
            rows.append(Listed(case.name, case.op, reason))
        else:
            bugs.append(f"{case.name} ({case.op}): {reason}")
    print(f"{passed} pass, {len(rows)} unsupported, {len(bugs)} bugs")
    if write:
        write_table(rows + skipped)
        print(f"wrote {len(rows)} rows to {UNSUPPORTED_MD}")
    else:
        print("| case | op | reason |\n|---|---|---|")
        print(table_rows(rows))
    if bugs:
        print("\nfailures that look like bugs (not listed):")
        print("\n".join(bugs))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
