"""mcudeploy/data/ops.json, what `mcudeploy ops` lists: per format, the operators mcudeploy runs and at which
types, as the conformance suites show them (no hand-kept list).

- TFLite: per builtin, the types of the TFLite conformance cases (tests/conformance/tflite/cases.json, TensorFlow
  Lite Micro their reference) that hold it and are not listed in mcudeploy/ops/UNSUPPORTED.md ("types"), beside
  the types TFLite Micro runs it at in those cases ("tflm"). A type counts where some case passes: a listed case
  says one configuration is refused, not the type (UNSUPPORTED.md says which).
- ONNX: per op type, the element types of the inputs and outputs of the single-operator ONNX node test cases
  (tests/conformance/cases.py) that are not listed, and "int8 (QDQ)" for the operators of the int8 QDQ cases
  (tests/conformance/test_int8_cases.py: each checks its operator is int8 after lowering, and all pass), "int16
  (QDQ)" for the operators the int16 QDQ corpus checks to run on int16 tensors (tests/test_onnx16_corpus.py's
  IN_INT16; every fixture passes against onnxruntime).

``python -m tests.conformance.ops_table`` prints where the file differs from the suites; ``--write`` rewrites it.
tests/test_ops_cli.py keeps the file exact.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx

OPS_JSON = Path(__file__).resolve().parents[2] / "mcudeploy" / "data" / "ops.json"
QDQ_TYPE = "int8 (QDQ)"
QDQ16_TYPE = "int16 (QDQ)"


def tflite_table() -> dict[str, dict]:
    from tests.conformance import tflite_cases

    listed = tflite_cases.listed_unsupported()
    tflm, ours = defaultdict(set), defaultdict(set)
    for case in tflite_cases.cases():
        if case.reference != "tflm":
            continue
        for op in {*case.operators, case.builtin}:
            tflm[op].add(case.dtype)
            if case.name not in listed:
                ours[op].add(case.dtype)
    return {op: {"types": sorted(ours[op]), "tflm": sorted(tflm[op])} for op in sorted(tflm)}


def _elem_type(value_info) -> str:
    return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(value_info.type.tensor_type.elem_type)))


def onnx_table() -> dict[str, dict]:
    from tests.conformance import cases
    from tests.conformance.test_int8_cases import CASES
    from tests.test_onnx16_corpus import IN_INT16

    listed = cases.listed_unsupported()
    types = defaultdict(set)
    for case in cases.selected():
        if case.name in listed or " " in case.op:
            continue
        graph = case.model.graph
        types[case.op].update(_elem_type(v) for v in (*graph.input, *graph.output))
    for _, op in CASES.values():  # the operator each case checks is int8 after lowering
        types[op].add(QDQ_TYPE)
    for ops in IN_INT16.values():  # the operators each int16 QDQ fixture checks to run on int16 tensors
        for op in ops:
            types[op].add(QDQ16_TYPE)
    return {op: {"types": sorted(types[op], key=lambda t: (t in (QDQ_TYPE, QDQ16_TYPE), t))} for op in sorted(types)}


def table() -> dict:
    return {"generated_by": "python -m tests.conformance.ops_table --write",
            "tflite": tflite_table(), "onnx": onnx_table()}


def text(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fresh = text(table())
    if "--write" in argv:
        OPS_JSON.write_text(fresh)
        print(f"wrote {OPS_JSON}")
        return 0
    if OPS_JSON.is_file() and OPS_JSON.read_text() == fresh:
        print(f"{OPS_JSON} is up to date")
        return 0
    print(f"{OPS_JSON} differs from the conformance suites; rewrite it with --write")
    return 1


if __name__ == "__main__":
    sys.exit(main())
