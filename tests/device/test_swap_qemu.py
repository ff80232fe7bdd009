"""A plan under a fast-memory budget on qemu-m4, whose PSRAM (mps2-an386's 16 MB at 0x21000000)
is its slow region: the firmware puts that arena there, and the outputs are the unconstrained
plan's, bit for bit."""
import numpy as np
import pytest

from mcudeploy.boards import load_board
from mcudeploy.device.elfsize import read_sections
from mcudeploy.device.host import run_compiled_on_host
from mcudeploy.device.runner import run_on_board
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from shared_models import MODELS, need_models

pytestmark = pytest.mark.qemu


@pytest.mark.parametrize("model", ["ic_resnet8_int8", "kws_dscnn_int8"])
def test_half_the_fast_memory_on_qemu_m4_with_psram(model, need_qemu, tmp_path):
    need_models()
    path = MODELS / "onnx" / f"{model}.onnx"
    plain = compile_model(path, "host")
    fitted = compile_model(path, "qemu-m4", options=CompileOptions(fast_memory="50%"))
    psram = next(r for r in load_board("qemu-m4").regions if r.name == "psram")
    assert fitted.placement.arenas["psram"] > 0 and fitted.placement.arenas["sram"] <= fitted.offload.budget_bytes
    x = plain.graph[plain.graph.inputs[0]]
    rng = np.random.default_rng(2)
    samples = [{x.name: rng.standard_normal(x.shape).astype(np.float32)} for _ in range(3)]
    got = run_on_board(fitted, samples, workdir=tmp_path / "fw")
    want = run_compiled_on_host(plain, samples, tmp_path / "host")
    for g, w in zip(got.outputs, want):
        assert all(np.array_equal(a, b) for a, b in zip(g, w))
    sections = {s.name: s for s in read_sections(got.firmware.elf)[0]}
    arena = sections[psram.section]
    assert arena.addr == psram.origin and arena.size >= fitted.placement.arenas["psram"]
