"""A plan that does not fit its board is refused before anything is written (mcudeploy/fit.py): one sentence
naming each region over and by how many bytes, exit 1; --allow-overflow goes on with a warning. The board's
totals are given per region and for flash, never summed across regions."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcudeploy.cli import main
from mcudeploy.device.flash import flash
from mcudeploy.fit import FitError, fit
from mcudeploy.compile import compile_model
from tests.shared_models import MODELS, need_models

F446_SRAM, F446_FLASH, F446_STACK = 131_072, 524_288, 4_096  # boards/nucleo-f446re.json


def _matmul(tmp_path, n_in: int, n_out: int, name: str = "m.onnx"):
    """y = x @ W: an arena of 4 * (n_in + n_out) bytes, 4 * n_in * n_out bytes of weights."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n_in])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n_out])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((n_in, n_out)).astype(np.float32), "w")
    model = helper.make_model(helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                                                [x], [y], [w]), opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _relu(tmp_path, n: int, name: str = "wide.onnx"):
    """y = relu(x) on n floats: no weights."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _one_error(capsys, argv) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcudeploy: error: ") and len(err.splitlines()) == 1, err
    return err


# The float VWW (MLPerf Tiny): its arena is its 1x96x96x3 float input (110,592 B) and the NCHW copy the
# first Transpose makes of it (110,592 B), 221,184 B, plus the board's 4,096 B stack = 225,280 B of SRAM's
# 131,072 B: 94,208 B over; its weights (the graph's constants) are 843,400 B of flash's 524,288 B:
# 319,112 B over.
VWW_SRAM_OVER = 221_184 + F446_STACK - F446_SRAM
VWW_FLASH_OVER = 843_400 - F446_FLASH


@pytest.mark.parametrize("command", ["compile", "plan"])
def test_float_vww_refused_on_f446re(tmp_path, capsys, command):
    need_models()
    out = tmp_path / "out"
    argv = [command, str(MODELS / "onnx" / "vww_mobilenetv1_float.onnx"), "-b", "nucleo-f446re"]
    err = _one_error(capsys, argv + (["-o", str(out)] if command == "compile" else []))
    assert VWW_SRAM_OVER == 94_208 and VWW_FLASH_OVER == 319_112
    assert ("vww_mobilenetv1_float.onnx does not fit nucleo-f446re: the arena and the stack need 225,280 B of "
            "sram's 131,072 B (94,208 B over) and the weights need 843,400 B of flash's 524,288 B (319,112 B over); "
            "--allow-overflow ") in err
    assert not out.exists()
    assert capsys.readouterr().out == ""


def test_a_model_that_fits_passes(tmp_path, capsys):
    model = _matmul(tmp_path, 64, 32)  # arena 384 B, weights 8,192 B
    assert main(["compile", str(model), "-b", "nucleo-f446re", "-o", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "does not fit" not in err and (tmp_path / "out" / "model.c").is_file()
    line = next(x for x in out.splitlines() if x.startswith("board nucleo-f446re: "))
    assert f"sram {384 + F446_STACK:,} of {F446_SRAM:,} bytes" in line
    assert f"flash 8,192 of {F446_FLASH:,} bytes" in line


def test_allow_overflow_writes_and_warns(tmp_path, capsys):
    model = _matmul(tmp_path, 400, 400)  # weights 640,000 B: 115,712 B over the flash; the arena fits
    out = tmp_path / "out"
    err = _one_error(capsys, ["compile", str(model), "-b", "nucleo-f446re", "-o", str(out)])
    assert "the weights need 640,000 B of flash's 524,288 B (115,712 B over)" in err and "sram" not in err
    assert not out.exists()
    assert main(["compile", str(model), "-b", "nucleo-f446re", "-o", str(out), "--allow-overflow"]) == 0
    captured = capsys.readouterr()
    assert "mcudeploy: warning: m.onnx does not fit nucleo-f446re: the weights need 640,000 B" in captured.err
    assert (out / "model.c").is_file() and (out / "plan.json").is_file()
    assert f"flash 640,000 of {F446_FLASH:,} bytes (122.1%" in captured.out


def test_the_arena_over_names_sram_only(tmp_path, capsys):
    model = _relu(tmp_path, 36_000)  # computed in place: an arena of 144,000 B, no weights
    err = _one_error(capsys, ["plan", str(model), "-b", "nucleo-f446re"])
    assert (f"the arena and the stack need {144_000 + F446_STACK:,} B of sram's 131,072 B "
            f"({144_000 + F446_STACK - F446_SRAM:,} B over)") in err
    assert "shows the plan anyway" in err


def test_totals_per_region_never_summed(tmp_path):
    """qemu-m4: 4 MB of SRAM and 16 MB of PSRAM, each against its own size; no 20 MB anywhere."""
    from mcudeploy.report.text import summary

    compiled = compile_model(_matmul(tmp_path, 64, 32), "qemu-m4")
    line = next(x for x in summary(compiled).splitlines() if x.startswith("board "))
    assert line.startswith(f"board qemu-m4: sram {384 + F446_STACK:,} of 4,194,304 bytes (0.1%: arena 384, "
                           f"stack 4,096); psram 0 of 16,777,216 bytes (0.0%); flash 8,192 of 4,194,304 bytes")
    assert "20,971,520" not in summary(compiled)
    assert [(u.region, u.size) for u in fit(compiled).uses] == [("sram", 4_194_304), ("psram", 16_777_216),
                                                                  ("flash", 4_194_304)]


def test_host_has_no_limits(tmp_path, capsys):
    model = _relu(tmp_path, 36_000)
    assert fit(compile_model(model, "host")) is None
    assert main(["plan", str(model), "-b", "host"]) == 0
    out, err = capsys.readouterr()
    assert "does not fit" not in err and "\nboard " not in out


def test_flash_refuses_before_writing_the_project(tmp_path):
    model = _matmul(tmp_path, 400, 400)
    project = tmp_path / "pio"
    with pytest.raises(FitError, match=r"flash's 524,288 B \(115,712 B over\); --allow-overflow leaves it to the "
                                       r"firmware build"):
        flash(str(model), "nucleo-f446re", project=project, upload_firmware=False)
    assert not project.exists()
