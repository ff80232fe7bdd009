"""Issue 37: a model with several unsupported nodes names every one of them in one sentence (ONNX and
TFLite), grouped by operator and capped for a huge model; one unsupported node keeps its own sentence."""
from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from mcudeploy.cli import main
from mcudeploy.errors import UnsupportedError
from mcudeploy.frontend import import_model
from mcudeploy.frontend.refusals import Refusals
from tflite_build import OPS, Model, Op, T


def _onnx(nodes, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=opsets)
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_onnx_every_unsupported_node_at_once(tmp_path, capsys):
    nodes = [helper.make_node("Sin", ["x"], ["a"], name="s1"),
             helper.make_node("Relu", ["a"], ["b"], name="after_sin"),  # supported, but reads a refused node
             helper.make_node("Cos", ["x"], ["c"], name="c1"),
             helper.make_node("Cos", ["b"], ["d"], name="c2"),  # unknown, and downstream of one: named too
             helper.make_node("Add", ["c", "d"], ["e"], name="add"),
             helper.make_node("Relu", ["e"], ["f"], name="relu"),
             helper.make_node("FusedThing", ["f"], ["y"], name="ms", domain="com.example")]
    path = _onnx(nodes, tmp_path)
    assert main(["plan", str(path), "-b", "host"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{path}: 4 unsupported nodes: Sin (node 's1'), Cos (nodes 'c1', 'c2'), com.example.FusedThing " \
           f"(node 'ms')" in err, err
    assert "after_sin" not in err and "'add'" not in err and "mcudeploy ops" in err


def test_onnx_one_unsupported_node_keeps_its_sentence(tmp_path):
    path = _onnx([helper.make_node("Relu", ["x"], ["a"], name="r"), helper.make_node("Sin", ["a"], ["y"], name="s")],
                 tmp_path)
    with pytest.raises(UnsupportedError, match=r"node s \(Sin\) uses operator Sin, which mcudeploy does not support"):
        import_model(path)


def test_tflite_every_unsupported_operator_at_once(tmp_path):
    q = dict(scale=(0.05,), zero_point=(0,))
    tensors = [T(n, (1, 8), "int8", **q) for n in ("x", "a", "b", "c", "y")]
    ops = [Op(OPS.GELU, ("x",), ("a",)),  # no handler
           Op(OPS.RELU, ("a",), ("b",)),  # reads a refused operator: not imported, not named
           Op(OPS.GELU, ("x",), ("c",)),
           Op(OPS.HARD_SWISH, ("b", ), ("y",))]  # downstream, but has a handler: not named
    path = tmp_path / "m.tflite"
    path.write_bytes(Model(tensors, ops, ("x",), ("y",)).build())
    with pytest.raises(UnsupportedError) as exc:
        import_model(path)
    assert str(exc.value).startswith(f"{path}: 2 unsupported operators: GELU on int8 (operators 0, 2) "), exc.value


def test_a_huge_list_is_capped():
    refused = Refusals("big.onnx")
    for i in range(40):
        refused.note(f"Op{i % 12}", f"n{i}", UnsupportedError("x"), [f"t{i}"])
    text = refused.sentence()
    assert text.startswith("big.onnx: 40 unsupported nodes: Op0 (nodes 'n0', 'n12', 'n24' and 1 more), "), text
    assert text.count("(node") == 8 and "and 4 other operators (12 nodes)" in text, text
