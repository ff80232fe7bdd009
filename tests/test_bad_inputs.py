"""Damaged models and output paths end in exit status 1 and one sentence naming the tensor, node or
path at fault, before any long work; a bug ends in one sentence and exit status 3."""
import builtins
import errno
import io
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.boards import all_boards
from mcudeploy.cli import INTERNAL_ERROR, main
from mcudeploy.errors import MCUDeployError
from mcudeploy.ir import MAX_TENSOR_BYTES
from mcudeploy.files import writing


def _value(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(dims))


def _save(tmp_path, nodes, inits=(), inputs=None, outputs=None, name="m.onnx", opset=13):
    graph = helper.make_graph(nodes, "g", inputs or [_value("x", (1, 4))], outputs or [_value("y", (1, 4))],
                              list(inits))
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return str(path)


def _qdq(tmp_path, scale, zero_point, axis=None, dims=(1, 4)):
    attrs = {} if axis is None else {"axis": axis}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant", **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant", **attrs)]
    inits = [numpy_helper.from_array(np.asarray(scale, np.float32), "s"), zero_point]
    return _save(tmp_path, nodes, inits, [_value("x", dims)], [_value("y", dims)])


def _error(capsys, argv, status=1):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == status, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert err.startswith("mcudeploy: error: " if status == 1 else "mcudeploy: internal error: "), err
    return err


def _plan(capsys, path):
    return _error(capsys, ["plan", path, "-b", "host", "--schedule", "rpo"])


# ----------------------------------------------------------------------------- weights


def test_nan_weight_names_the_tensor_and_the_node(tmp_path, capsys):
    w = np.ones((2, 1, 1, 1), np.float32)
    w[1] = np.nan
    path = _save(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [numpy_helper.from_array(w, "w")],
                 [_value("x", (1, 1, 4, 4))], [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert "constant w" in err and "node conv (Conv)" in err and "NaN or infinite values (1 of 2)" in err


def test_nan_read_by_a_node_folded_at_compile_time(tmp_path, capsys):
    w = np.ones((1, 1, 1, 2), np.float32)
    w[0, 0, 0, 1] = np.nan
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], name="turn", perm=[3, 2, 1, 0]),
             helper.make_node("Conv", ["x", "wt"], ["y"], name="conv")]
    path = _save(tmp_path, nodes, [numpy_helper.from_array(w, "w")], [_value("x", (1, 1, 4, 4))],
                 [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert "node turn (Transpose) reads constant w, which holds NaN values (1 of 2)" in err


def test_infinite_bias(tmp_path, capsys):
    path = _save(tmp_path, [helper.make_node("Add", ["x", "b"], ["y"], name="bias")],
                 [numpy_helper.from_array(np.array([0, -np.inf, 1, 2], np.float32), "b")])
    err = _plan(capsys, path)
    assert "constant b" in err and "node bias (Add)" in err


def test_negative_variance(tmp_path, capsys):
    params = [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in (("gamma", [1, 1]), ("beta", [0, 0]), ("mean", [0, 0]), ("var", [1, -1]))]
    node = helper.make_node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["y"], name="bn")
    path = _save(tmp_path, [node], params, [_value("x", (1, 2, 4, 4))], [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert "node bn (BatchNormalization) has variance plus epsilon -0.99999 in var" in err


# ----------------------------------------------------------------------------- quantization


def test_zero_scale(tmp_path, capsys):
    err = _plan(capsys, _qdq(tmp_path, 0.0, helper.make_tensor("z", TensorProto.INT8, [], [0])))
    assert "node quant (QuantizeLinear)" in err and "scale 0 in s" in err and "positive and finite" in err


def test_weights_quantized_at_compile_time_with_a_zero_scale(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w")
    scale, zp = numpy_helper.from_array(np.float32(0), "ws"), numpy_helper.from_array(np.int8(0), "wz")
    nodes = [helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], name="q_w"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="dq_w"),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv")]
    path = _save(tmp_path, nodes, [w, scale, zp], [_value("x", (1, 1, 4, 4))], [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert "node q_w (QuantizeLinear) has scale 0 in ws" in err


@pytest.mark.parametrize("big", [-np.inf, 1e20])
def test_weights_quantized_at_compile_time_beyond_int32(tmp_path, capsys, big):
    w = numpy_helper.from_array(np.array([1.0, big], np.float32).reshape(2, 1, 1, 1), "w")
    scale, zp = numpy_helper.from_array(np.float32(0.1), "ws"), numpy_helper.from_array(np.int8(0), "wz")
    nodes = [helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], name="q_w"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="dq_w"),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv")]
    path = _save(tmp_path, nodes, [w, scale, zp], [_value("x", (1, 1, 4, 4))], [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert f"node q_w (QuantizeLinear) quantizes w to {abs(big) / 0.1:.3g} steps of its scale, beyond the int32" in err


def test_negative_per_channel_scale(tmp_path, capsys):
    zp = numpy_helper.from_array(np.zeros(4, np.int8), "z")
    err = _plan(capsys, _qdq(tmp_path, [0.1, 0.2, -0.3, 0.4], zp, axis=1))
    assert "node quant (QuantizeLinear)" in err and "scale -0.3" in err


def test_weights_whose_float_values_overflow(tmp_path, capsys):
    w = numpy_helper.from_array(np.full((2, 1, 1, 1), 100, np.int8), "w")
    scale, zp = numpy_helper.from_array(np.float32(1e37), "ws"), numpy_helper.from_array(np.int8(0), "wz")
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dq_w"),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv")]
    path = _save(tmp_path, nodes, [w, scale, zp], [_value("x", (1, 1, 4, 4))], [_value("y", (1, 2, 4, 4))])
    err = _plan(capsys, path)
    assert "node dq_w (DequantizeLinear) dequantizes w beyond what a float holds" in err


def test_zero_point_300_on_int8(tmp_path, capsys):
    zp = TensorProto(name="z", data_type=TensorProto.INT8, int32_data=[300])  # an int8 stored widened
    err = _plan(capsys, _qdq(tmp_path, 0.1, zp))
    assert "initializer z holds 300, outside the range of int8" in err


def test_per_channel_zero_point_outside_the_input_type(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((4, 1, 1, 1), np.int8), "w")
    zp = numpy_helper.from_array(np.array([0, 0, 200, 0], np.uint8), "wz")  # 200 is no int8
    scale = numpy_helper.from_array(np.full(4, 0.1, np.float32), "ws")
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dq_w", axis=0),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv")]
    path = _save(tmp_path, nodes, [w, zp, scale], [_value("x", (1, 1, 4, 4))], [_value("y", (1, 4, 4, 4))])
    err = _plan(capsys, path)
    assert "node dq_w (DequantizeLinear)" in err and "zero point 200, outside the range of int8" in err


def test_per_channel_scales_that_do_not_match_the_channels(tmp_path, capsys):
    zp = numpy_helper.from_array(np.zeros(3, np.int8), "z")
    err = _plan(capsys, _qdq(tmp_path, [0.1, 0.2, 0.3], zp, axis=1))
    assert "node quant (QuantizeLinear)" in err and "3 scales for the 4 channels" in err


# ----------------------------------------------------------------------------- shapes


def test_dimension_of_2_to_the_40(tmp_path, capsys):
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], (),
                 [_value("x", (1, 2 ** 40))], [_value("y", (1, 2 ** 40))])
    err = _plan(capsys, path)
    assert "input x has shape (1, 1099511627776)" in err and f"{MAX_TENSOR_BYTES:,} bytes" in err


def test_padding_to_an_absurd_shape_names_the_node(tmp_path, capsys):
    pads = numpy_helper.from_array(np.array([0, 0, 0, 2 ** 40], np.int64), "pads")
    path = _save(tmp_path, [helper.make_node("Pad", ["x", "pads"], ["y"], name="grow")], [pads])
    err = _plan(capsys, path)
    assert "y, the output of node grow (Pad), has shape (1, 1099511627780)" in err and "about 2^42 bytes" in err


def test_folding_that_would_allocate_terabytes_is_refused_first(tmp_path, capsys):
    shape = numpy_helper.from_array(np.array([2 ** 21, 2 ** 21], np.int64), "shape")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["big"], name="fill"),
             helper.make_node("Add", ["x", "big"], ["y"], name="add")]
    path = _save(tmp_path, nodes, [shape])
    err = _plan(capsys, path)
    assert "big, which node fill (ConstantOfShape) would make at compile time" in err


def test_negative_initializer_dimension(tmp_path, capsys):
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-4], float_data=[1, 2, 3, 4])
    path = _save(tmp_path, [helper.make_node("Add", ["x", "w"], ["y"], name="add")], [w])
    err = _plan(capsys, path)
    assert "tensor name: w" in err and "Negative dimension" in err


def test_empty_activation(tmp_path, capsys):
    starts, ends = (numpy_helper.from_array(np.array([v], np.int64), n) for v, n in ((2, "starts"), (2, "ends")))
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    path = _save(tmp_path, [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="cut")],
                 [starts, ends, axes], outputs=[_value("y", (1, 0))])
    err = _plan(capsys, path)
    assert "y, the output of node cut (Slice)" in err and "size 0" in err


def test_infinite_resize_scale(tmp_path, capsys):
    scales = numpy_helper.from_array(np.array([1, 1, np.inf, 2], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="nearest")
    path = _save(tmp_path, [node], [scales], [_value("x", (1, 1, 4, 4))], [_value("y", (1, 1, 8, 8))])
    err = _plan(capsys, path)
    assert "node up (Resize) has scale inf for axis 2" in err


def test_no_board_has_a_region_bigger_than_a_tensor_may_be():
    """MAX_TENSOR_BYTES is the largest region of any board: a tensor above it fits nowhere."""
    largest = max(r.size for b in all_boards() for r in b.regions)
    assert largest == MAX_TENSOR_BYTES


# ----------------------------------------------------------------------------- wiring


def test_cycle_names_its_nodes(tmp_path, capsys):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Relu", ["b"], ["y"], name="out")]
    err = _plan(capsys, _save(tmp_path, nodes))
    assert "cycle: node relu (Relu) -> node add (Add) -> node relu (Relu)" in err


def test_dangling_input(tmp_path, capsys):
    err = _plan(capsys, _save(tmp_path, [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]))
    assert "node add (Add) reads ghost" in err and "dangling" in err


def test_two_producers(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first"),
             helper.make_node("Sigmoid", ["x"], ["y"], name="second")]
    err = _plan(capsys, _save(tmp_path, nodes))
    assert "tensor y is produced twice, by node first (Relu) and by node second (Sigmoid)" in err


def test_nodes_out_of_order(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="late"), helper.make_node("Relu", ["x"], ["a"], name="early")]
    err = _plan(capsys, _save(tmp_path, nodes))
    assert "node late (Relu) reads a before node early (Relu) produces it" in err


# ----------------------------------------------------------------------------- output paths


def _model(tmp_path):
    return _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], name="ok.onnx")


def test_output_folder_that_is_a_file(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("not a folder")
    err = _error(capsys, ["compile", _model(tmp_path), "-b", "host", "-o", str(out)])
    assert f"{out} is a file, not a folder" in err


def test_output_folder_inside_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    err = _error(capsys, ["compile", _model(tmp_path), "-b", "host", "-o", str(tmp_path / "file" / "out")])
    assert f"{tmp_path / 'file'} is a file" in err


def test_unwritable_output_folder_is_refused_before_compiling(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) else real(p, mode, **kw))
    monkeypatch.setattr("mcudeploy.compile.compile_model", lambda *a, **k: pytest.fail("compiled before the check"))
    err = _error(capsys, ["compile", _model(tmp_path), "-b", "host", "-o", str(locked / "out")])
    assert f"the folder {locked} is not writable" in err


def test_permission_denied_while_writing(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(out / "model.c"))

    monkeypatch.setattr("mcudeploy.codegen.write_project", denied)
    err = _error(capsys, ["compile", _model(tmp_path), "-b", "host", "-o", str(out)])
    assert f"cannot write {out / 'model.c'}: Permission denied" in err


def _full_disk(monkeypatch):
    """Every file opened for writing, and every rename, fails as on a full disk (the errors carry
    no file name, as a failing write() or close() does)."""
    def refuse(real):
        def opener(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(file, mode, *args, **kwargs)
        return opener

    monkeypatch.setattr(builtins, "open", refuse(builtins.open))
    monkeypatch.setattr(io, "open", refuse(io.open))
    monkeypatch.setattr(os, "replace", lambda src, dst, **kw: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), src, None, dst)))


def test_full_disk_while_writing_the_project(tmp_path, capsys, monkeypatch):
    model, out = _model(tmp_path), tmp_path / "out"
    _full_disk(monkeypatch)
    err = _error(capsys, ["compile", model, "-b", "host", "-o", str(out)])
    assert f"cannot write {out}" in err and "No space left on device" in err


def test_a_failed_rename_names_the_final_file(tmp_path):
    temporary, final = tmp_path / ".model.c.tmp", tmp_path / "model.c"
    with pytest.raises(MCUDeployError) as info:
        with writing(tmp_path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(temporary), None, str(final))
    assert str(info.value) == f"cannot write {final}: No space left on device"


# ----------------------------------------------------------------------------- bugs


def test_internal_error_is_one_sentence_with_its_own_status(tmp_path, capsys, monkeypatch):
    def bug(*args, **kwargs):
        raise ZeroDivisionError("integer division or modulo by zero\nsecond line")

    monkeypatch.setattr("mcudeploy.compile.compile_model", bug)
    err = _error(capsys, ["plan", _model(tmp_path), "-b", "host"], status=INTERNAL_ERROR)
    assert "internal error: ZeroDivisionError: integer division or modulo by zero; please report it" in err
    kept = Path(err.split(" and this command and ")[1].split(" (-v")[0])  # the whole text, for the report
    assert "second line" in kept.read_text() and "Traceback" in kept.read_text() and "plan" in kept.read_text()
    assert main(["-v", "plan", _model(tmp_path), "-b", "host"]) == INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err
