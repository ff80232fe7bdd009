"""Damaged .tflite files, one per class of damage the fuzzer found, built here from committed models by
corrupting one real field in place (its position from the schema walk): each is refused in one
sentence that names the file and what is wrong (mcudeploy/frontend/tflite/verify.py, the importer)."""
import struct
from pathlib import Path

import pytest

from fuzz.mutate_tflite import _get, _put
from fuzz.target import plan
from mcudeploy.errors import MCUDeployError
from mcudeploy.frontend.tflite.verify import walk

TESTS = Path(__file__).resolve().parent.parent
CONV = TESTS / "field_corpus" / "shared_bias-conv-depthwise-int8.tflite"  # int8 CONV_2D then DEPTHWISE_CONV_2D
RING = TESTS / "conformance" / "tflite" / "var_handle-ring-float32.tflite"  # CALL_ONCE of subgraph 1
WHILE = TESTS / "conformance" / "tflite" / "while-loop-float32.tflite"


def refusal(tmp_path, source: Path, change) -> str:
    """The error of planning ``source`` with ``change(data, fields)`` applied; one line starting with the path."""
    data = bytearray(source.read_bytes())
    change(data, walk(bytes(data), record=True).fields)
    path = tmp_path / "damaged.tflite"
    path.write_bytes(bytes(data))
    with pytest.raises(MCUDeployError) as caught:
        plan(path)
    text = str(caught.value)
    assert text.startswith(str(path)) and "\n" not in text, text
    return text


def first(fields, name, where=lambda f: True):
    return next(f for f in fields if f.name == name and where(f))


def test_an_offset_out_of_the_file(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "uoffset SubGraph.tensors"), len(b))
    assert "truncated or damaged (subgraph 0, tensors points past the end of the file)" in refusal(
        tmp_path, CONV, change)


def test_a_vector_longer_than_the_file(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "length Tensor.shape"), 2 ** 31 - 1)
    text = refusal(tmp_path, CONV, change)
    assert "subgraph 0, tensor 0, shape holds 2,147,483,647 elements, more than the file's" in text, text


def test_a_shape_whose_product_overflows(tmp_path):
    def change(b, fields):
        shape = first(fields, "length Tensor.shape")
        for k in range(_get(b, shape)):
            _put(b, shape.__class__(shape.name, shape.offset + 4 + 4 * k, 4, "i32"), 2 ** 31 - 1)
    text = refusal(tmp_path, CONV, change)
    assert "tensor 0" in text and "(2147483647, 2147483647" in text and "more than 2,147,483,648 bytes" in text, text


def test_constant_data_shorter_than_its_shape(tmp_path):
    def change(b, fields):
        data = first(fields, "length Buffer.data", lambda f: _get(b, f) > 8)
        _put(b, data, _get(b, data) // 2)
    text = refusal(tmp_path, CONV, change)
    assert "bytes of data where its shape" in text and "needs" in text, text


def test_an_operator_code_out_of_range(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "Operator.opcode_index"), 7)  # operator 1's (operator 0's is 0, the default, not stored)
    assert "not a valid TFLite model: operator 1 has operator code 7, past the file's 2" in refusal(tmp_path, CONV, change)


def test_an_input_that_is_no_tensor(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "Operator.inputs[]"), 99)
    assert "not a valid TFLite model: operator 0 has input 99, which is no tensor of the" in refusal(tmp_path, CONV, change)


def test_an_operator_reading_its_own_output(tmp_path):
    def change(b, fields):
        out = first(fields, "Operator.outputs[]")
        _put(b, first(fields, "Operator.inputs[]"), _get(b, out))
    assert "operator 0 reads its own output, tensor" in refusal(tmp_path, CONV, change)


def test_a_subgraph_running_itself(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "CallOnceOptions.init_subgraph_index"), 0)
    assert "not a valid TFLite model: subgraph 0 runs itself, through subgraphs 0 -> 0" in refusal(tmp_path, RING, change)


def test_a_while_loop_whose_body_runs_the_loop(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "WhileOptions.body_subgraph_index"), 0)
    assert "subgraph 0 runs itself" in refusal(tmp_path, WHILE, change)


def test_options_of_the_wrong_union_type(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "Operator.builtin_options_type"), 5)  # Pool2DOptions on a CONV_2D
    assert "operator 0 (CONV_2D) has builtin options of type Pool2DOptions where it takes Conv2DOptions" in refusal(
        tmp_path, CONV, change)


def test_a_nan_quantization_scale(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "QuantizationParameters.scale[]"), float("nan"))
    assert "has a quantization scale that is not positive and finite" in refusal(tmp_path, CONV, change)


def test_per_channel_scales_fewer_than_the_channels(tmp_path):
    def change(b, fields):
        scales = first(fields, "length QuantizationParameters.scale", lambda f: _get(b, f) > 1)
        zero_points = next(f for f in fields[fields.index(scales):]  # the same table's, walked next
                           if f.name == "length QuantizationParameters.zero_point")
        _put(b, scales, _get(b, scales) - 1)
        _put(b, zero_points, _get(b, zero_points) - 1)
    assert "quantization scales along its dimension 0, which does not have as many elements" in refusal(
        tmp_path, CONV, change)


def test_a_buffer_index_out_of_range(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "Tensor.buffer"), 1000)  # tensor 1's (tensor 0's is 0, the default, not stored)
    assert "not a valid TFLite model: tensor 1 (wc) names buffer 1000, past the file's 4" in refusal(tmp_path, CONV, change)


def test_a_tensor_made_twice(tmp_path):
    def change(b, fields):
        first_out, second_out = [f for f in fields if f.name == "Operator.outputs[]"][:2]
        _put(b, first_out, _get(b, second_out))  # operator 0 makes operator 1's output
    assert "not a valid TFLite model: operator 1 makes tensor" in (text := refusal(tmp_path, CONV, change)) and \
        "which operator 0 makes too" in text, text


def test_a_graph_input_made_by_an_operator(tmp_path):
    def change(b, fields):
        _put(b, first(fields, "SubGraph.inputs[]"), _get(b, first(fields, "Operator.outputs[]")))
    assert "not a valid TFLite model: operator 0 makes tensor" in (text := refusal(tmp_path, CONV, change)) and \
        "which is an input of the subgraph" in text, text


def test_an_initial_value_from_no_tensor(tmp_path):
    def change(b, fields):
        value = [f for f in fields if f.name == "Operator.inputs[]"][-1]  # subgraph 1's last ASSIGN_VARIABLE's value
        _put(b, value, -1)
    assert "(CALL_ONCE) assigns a variable from no tensor (index -1) in its initialisation subgraph" in refusal(
        tmp_path, RING, change)


def test_an_operator_making_a_constant(tmp_path):
    def change(b, fields):
        _put(b, [f for f in fields if f.name == "Operator.outputs[]"][1], 1)  # operator 1 makes wc, the weights
    assert "not a valid TFLite model: operator 1 makes tensor 1, which holds constant data in the file" in refusal(
        tmp_path, CONV, change)


def test_buffer_0_holding_data(tmp_path):
    def change(b, fields):
        vector, first_buffer, second_buffer = [f for f in fields if f.name == "uoffset Model.buffers"][:3]
        _put(b, first_buffer, second_buffer.offset + _get(b, second_buffer) - first_buffer.offset)
    assert "not a valid TFLite model: buffer 0, which the tensors without data name, holds data" in refusal(
        tmp_path, CONV, change)


def test_a_leaky_relu_whose_alpha_is_nan(tmp_path):
    """Found by the sanitized campaign (seed 1, case 1038): it planned, and its C's generator then stopped on a NaN
    multiplier with a ValueError."""
    def change(b, fields):
        struct.pack_into("<f", b, first(fields, "LeakyReluOptions@4").offset, float("nan"))  # the walk knows no name
    assert "operator 0 (LEAKY_RELU) has alpha nan, not a finite number" in refusal(
        tmp_path, TESTS / "conformance" / "tflite" / "leaky_relu-alpha0.2-int8.tflite", change)
