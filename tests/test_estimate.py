"""The cycle estimate's pieces on their own: instruction classes from QEMU's disassembly, and cycles from
class counts with the core's timings and the board's flash wait states (mcudeploy/estimate)."""
from __future__ import annotations

import dataclasses

from collections import Counter

import pytest

from mcudeploy.boards import load_board
from mcudeploy.errors import MCUDeployError
from mcudeploy.estimate.cores import CORES, FLASH_CACHE_HIT
from mcudeploy.estimate.cycles import estimate_cycles, estimate_range, target_for
from mcudeploy.estimate.trace import _overlap, classify


@pytest.mark.parametrize("mnemonic, operands, cls", [
    ("ldr.w", "r3, [r1, #0xd88]", "load"), ("ldrsb", "r2, [r0]", "load"), ("strb.w", "r1, [r2], #1", "store"),
    ("ldrd", "r4, r5, [r0]", "ldst_double"), ("smlad", "r0, r1, r2, r0", "mul"), ("mla", "r0, r1, r2, r3", "mul"),
    ("sxtb16", "r1, r2", "dsp"), ("ssat", "r0, #8, r0", "dsp"), ("bne.n", "#0x1234", "branch"),
    ("bls", "#0x10", "branch"), ("bl", "#0x800", "branch"), ("cbz", "r0, #0x40", "branch"),
    ("pop", "{r4, r5, pc}", "branch"), ("push", "{r4, r5, lr}", "multi"), ("sdiv", "r0, r1, r2", "div"),
    ("vmla.f32", "s0, s1, s2", "fpu_mac"), ("vldr", "s0, [r0]", "fpu_ldst"), ("vdiv.f32", "s0, s1, s2", "fpu_div"),
    ("vadd.f32", "s0, s1, s2", "fpu"), ("ite", "eq", "it"), ("addeq", "r0, #1", "alu"), ("bics", "r0, r1", "alu"),
    ("blx", "r3", "branch"), ("movs", "r0, #0", "alu"),
    # MVE (objdump's names): the pipe of ARMScheduleM55.td; low-overhead loops
    ("vldrb.s32", "q0, [r0, #16]", "mve_ls"), ("vstrw.32", "q1, [r2]", "mve_ls"), ("vld40.8", "{q0, q1, q2, q3}, [r1]", "mve_ls"),
    ("vmlava.s8", "r0, q1, q2", "mve_mul"), ("vqrdmulh.s32", "q0, q0, r3", "mve_mul"), ("vaddv.s32", "r0, q0", "mve_mul"),
    ("vadd.i32", "q0, q1, q2", "mve_int"), ("vmax.s8", "q0, q0, q1", "mve_int"), ("vdup.32", "q0, r1", "mve_int"),
    ("vpst", "", "mve_sys"), ("vctp.8", "r2", "mve_sys"), ("vadd.f32", "s0, s1, s2", "fpu"), ("le", "lr, 0x1100", "lob"),
    ("dlstp.8", "lr, r2", "lob"),
])
def test_instructions_fall_in_their_class(mnemonic, operands, cls):
    assert classify(mnemonic, operands)[0] == cls


def test_cycles_are_the_classes_weighted_plus_flash_stalls_on_taken_branches_and_data_misses():
    counts = Counter({"alu": 100, "load": 10, "ldst_pipelined": 10, "mul": 50, "branch": 20, "branch_taken": 15,
                      "flash_reads": 40, "flash_misses": 7, "flash_misses_words": 12})
    target = target_for(load_board("nucleo-l4r5zi"), load_board("qemu-m4"))
    cost = CORES["cortex-m4"]["cost"]
    by_hand = 100 * cost["alu"] + 10 * cost["load"] + 10 * cost["ldst_pipelined"] + 50 * cost["mul"] + \
        20 * cost["branch"] + 15 * cost["branch_taken"] + 15 * 5 * (1 - FLASH_CACHE_HIT) + 7 * 5
    assert estimate_cycles(counts, target) == pytest.approx(by_hand)
    low, high = estimate_range(counts, target)
    assert low < by_hand < high
    assert high - estimate_range(counts - Counter({"flash_misses_words": 12}), target)[1] == pytest.approx(12 * 5)
    assert target.describe() == ("nucleo-l4r5zi (cortex-m4 at 120 MHz, 5 flash wait states, flash accelerator on, "
                                 "weights through a 256 B data cache of 32 B lines)")


@pytest.mark.parametrize("classes, saved", [
    (["mve_ls", "mve_mul", "mve_ls", "mve_mul"], 3),  # every first beat under the previous one's second
    (["mve_ls", "mve_ls"], 0),  # one pipe: the second waits for the first
    (["mve_ls", "alu", "mve_mul"], 1),  # a scalar instruction issues during a vector one's second beat
    (["mve_sys", "mve_ls"], 0),  # VPST takes one cycle
])
def test_vector_instructions_overlap_across_pipes(classes, saved):
    assert _overlap(classes) == saved


def at_reset_clock(tmp_path, name: str, hz: int, wait_states: int):
    """Board ``name`` as it was before its clock tree (now "at-reset" in ``tmp_path``): at its reset clock ``hz``,
    its flash latency register's reset ``wait_states``, every cache off."""
    import json

    from mcudeploy.resources import boards_dir

    data = json.loads((boards_dir() / f"{name}.json").read_text())
    del data["clock_tree"]
    data.update(name="at-reset", clock_hz=hz, reset_clock="the board as it was before its clock tree")
    data["flash_data"]["wait_states"] = wait_states
    data["uart"]["clock_hz"] = data["timer"]["hz"] = hz
    (tmp_path / "at-reset.json").write_text(json.dumps(data))
    return load_board("at-reset", tmp_path)


def test_a_board_at_its_reset_clock_is_estimated_with_its_reset_wait_states_and_no_cache(tmp_path):
    """Without a clock tree the firmware leaves the clock, the flash latency and the caches as reset left them:
    the estimate takes the reset clock and flash_data's reset wait states, with no accelerator or data cache (the
    NUCLEO-H7A3ZI-Q before its clock tree: HSI 64 MHz, FLASH_ACR's reset 3 wait states)."""
    h7 = target_for(at_reset_clock(tmp_path, "nucleo-h7a3zi-q", 64_000_000, 3), load_board("qemu-m7"))
    assert (h7.clock_hz, h7.wait_states, h7.flash_cache, h7.data_cache) == (64_000_000, 3, False, False)
    assert h7.caches.line == (0, 32)  # no lines: every read of a weight from flash misses
    assert h7.describe() == ("at-reset (cortex-m7 at 64 MHz, 3 flash wait states, no flash accelerator, "
                             "weights read from flash with no data cache)")


def test_the_h7a3_and_u575_are_estimated_at_their_clock_trees():
    """Their clock trees (boards/*.json clock_tree): the clock, the flash wait states and the caches they turn on;
    the H7A3's Cortex-M7 L1 data cache of 16 KB, the U575's 8 KB ICACHE on the code bus (flash_cache)."""
    from mcudeploy.offload.tiles import cache_bytes

    h7 = target_for(load_board("nucleo-h7a3zi-q"), load_board("qemu-m7"))
    assert (h7.clock_hz, h7.wait_states, h7.flash_cache, h7.data_cache) == (280_000_000, 6, True, True)
    u5 = target_for(load_board("nucleo-u575zi-q"), load_board("qemu-an505"))
    assert (u5.clock_hz, u5.wait_states, u5.flash_cache, u5.data_cache) == (160_000_000, 4, True, True)
    assert cache_bytes(load_board("nucleo-h7a3zi-q")) == 16384 and cache_bytes(load_board("nucleo-u575zi-q")) == 8192


def _cycles_bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "cycles_bench.py"
    spec = importlib.util.spec_from_file_location("cycles_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_gives_tflite_micros_arena_to_print_beside_its_own():
    """Issue 42 asks for each plan's arena beside TensorFlow Lite Micro's: cycles_bench.tflm_arena finds the smallest
    arena its interpreter runs the model with (a Keras-made classifier here), activations a part of it."""
    from pathlib import Path

    model = Path(__file__).resolve().parent / "keras_corpus" / "conv1d_classifier-int8.tflite"
    arena = _cycles_bench().tflm_arena(model)
    if "error" in arena:
        pytest.skip(f"TensorFlow Lite Micro: {arena['error']}")
    assert 0 < arena["activations"] < arena["arena"]


def _benchmark(name):
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_estimate_check_has_a_second_board_on_another_core():
    """estimate_check weighs CMSIS-NN's traces for NUCLEO-L4R5ZI (a board file) and for EK-RA6M4 (a Cortex-M33 at 200
    MHz, as data: three flash wait states), refusing a trace of another core; the harness's buffers go in
    qemu-an505's SSRAM, its 32 KB SRAM left out, and an emulator with room is taken as it is."""
    from mcudeploy.memory import areas

    check = _benchmark("estimate_check")
    assert {"nucleo-l4r5zi", "ek-ra6m4"} <= set(check.OUTSIDE)
    ra = check.target_of("ek-ra6m4", "qemu-an505")
    assert (ra.core, ra.clock_hz, ra.wait_states, ra.flash_cache, ra.flash_data) == ("cortex-m33", 200_000_000, 3,
                                                                                     True, None)
    assert check.target_of("nucleo-l4r5zi", "qemu-m4").wait_states == 5
    with pytest.raises(SystemExit, match="another core"):
        check.target_of("ek-ra6m4", "qemu-m4")
    an505 = check.harness_board("qemu-an505")
    assert (an505.regions[0].name, an505.regions[0].size, areas(an505)[0].name) == ("ssram", 4 << 20, "ssram")
    assert [r.name for r in an505.regions if r.excluded] == ["sram"]
    assert check.harness_board("qemu-m4") == load_board("qemu-m4")


def test_the_emulator_of_a_published_board_has_its_first_region():
    """cycles_bench plans on the emulator of the real board's core; a plan is bounded by the emulator's first region
    too, so that region must hold the real board's: qemu-an505's 32 KB SRAM gives way to its SSRAM, cut to the
    NUCLEO-U575ZI-Q's 768 KB less the stack; an emulator with room is taken as it is. Each takes the real board's
    flash data cache, which decides the latency plan's tiles (none where the real board runs with its caches off)."""
    from mcudeploy.device.stand_in import emulator_for
    from mcudeploy.memory import areas
    from mcudeploy.offload.tiles import cache_bytes

    bench = _cycles_bench()
    for name in bench.PUBLISHED:
        real = load_board(name)
        emulated = emulator_for(real)
        assert emulated.core == real.core and areas(emulated)[0].capacity >= areas(real)[0].capacity, name
        # the real board's data cache, or none where it runs with its caches off (its reset clock: no tiles)
        assert (emulated.flash_data == real.flash_data) if real.data_cache_on else (cache_bytes(emulated) == 0), name
    u5 = load_board("nucleo-u575zi-q")
    an505 = emulator_for(u5)
    first = areas(an505)[0]
    assert (first.name, first.capacity, first.section) == ("ssram", areas(u5)[0].capacity, None)
    assert an505.regions[0].origin == 0x38000000 and [r.name for r in an505.regions if r.excluded] == ["sram"]
    f7 = load_board("nucleo-f746zg")
    assert emulator_for(f7) == dataclasses.replace(load_board("qemu-m7"), flash_data=f7.flash_data)


def test_a_board_running_with_its_caches_off_gets_no_tiles(tmp_path):
    """offload/tiles.py: a real board without a clock tree runs at its reset clock with every cache off, so its
    latency plan takes no tiles however small the cache its board file names; with the cache on, that cache; an
    emulator, the cache of its core (the Cortex-M7's smallest L1)."""
    from mcudeploy.offload.tiles import CORE_CACHES, cache_bytes

    h7a3 = at_reset_clock(tmp_path, "nucleo-h7a3zi-q", 64_000_000, 3)
    f7, l4 = (load_board(n) for n in ("nucleo-f746zg", "nucleo-l4r5zi"))
    assert h7a3.flash_data is not None and not h7a3.data_cache_on and cache_bytes(h7a3) == 0
    assert f7.data_cache_on and cache_bytes(f7) == f7.flash_data.cache_lines * f7.flash_data.line_bytes
    assert l4.data_cache_on and cache_bytes(l4) == 256
    assert cache_bytes(load_board("qemu-m7")) == CORE_CACHES["cortex-m7"] and cache_bytes(load_board("qemu-m4")) == 0


@pytest.mark.parametrize("mnemonic, operands, cls", [
    ("muls", "r0, r1, r0", "mul"), ("ldrb", "r3, [r1, r2]", "load"), ("strh", "r1, [r2, #2]", "store"),
    ("ldmia", "r0!, {r1, r2, r3}", "multi"), ("stmia", "r1!, {r2, r3}", "multi"), ("pop", "{r4, r5, r6, pc}", "branch"),
    ("bl", "#0x1f4", "branch"), ("bcc.n", "#0x96", "branch"), ("sxtb", "r0, r0", "alu"), ("lsls", "r0, r0, #2", "alu"),
])
def test_armv6m_instructions_fall_in_their_class(mnemonic, operands, cls):
    """The instructions of qemu-m0's traces (ARMv6-M, as QEMU names them) in the classes of the M0 and M0+ tables."""
    assert classify(mnemonic, operands)[0] == cls


def test_the_m0_boards_are_estimated_from_qemu_m0s_traces():
    """The micro:bit's Cortex-M0 at 16 MHz from reset, its flash 0 wait states, no cache; the Pico's Cortex-M0+ (the
    same ARMv6-M instructions: traced on qemu-m0, cores.py traced_on) at the 12 MHz its firmware runs, its XIP cache
    of 2048 lines of 8 B on from reset, a miss 384 core cycles (an 03h line fill of 96 SCK at clk_sys / 4); neither
    is traced on another core."""
    from mcudeploy.offload.tiles import cache_bytes

    microbit = target_for(load_board("microbit"), load_board("qemu-m0"))
    assert (microbit.core, microbit.clock_hz, microbit.wait_states, microbit.flash_cache, microbit.caches) == (
        "cortex-m0", 16_000_000, 0, False, None)
    pico = target_for(load_board("pico"), load_board("qemu-m0"))
    assert (pico.core, pico.clock_hz, pico.wait_states, pico.flash_cache, pico.data_cache) == (
        "cortex-m0plus", 12_000_000, 384, True, True)
    assert (pico.caches.line, pico.caches.word) == ((2048, 8), (4096, 4))
    assert pico.describe() == ("pico (cortex-m0plus at 12 MHz, 384 flash wait states, flash accelerator on, "
                               "weights through a 16384 B data cache of 8 B lines)")
    assert cache_bytes(load_board("pico")) == 16384 and cache_bytes(load_board("microbit")) == 0
    for name in ("pico", "microbit"):
        with pytest.raises(MCUDeployError, match="the instructions traced would be another core's"):
            target_for(load_board(name), load_board("qemu-m4"))


def test_the_m0_takes_three_cycles_a_taken_branch_the_m0plus_two_and_both_1_plus_n_a_multiple_load():
    """The Cortex-M0 and M0+ TRMs' instruction set summaries: a load or store 2 cycles whatever precedes it,
    LDM/STM/PUSH/POP 1 + N, MULS 1 with the fast multiplier; a taken branch 3 on the M0, 2 on the M0+. The range:
    MULS 32 (the small multiplier) and a taken branch one cycle more (BL, POP {pc})."""
    counts = Counter({"alu": 100, "load": 10, "ldst_pipelined": 10, "store": 5, "mul": 20, "multi": 4,
                      "multi_regs": 12, "branch": 30, "branch_taken": 25})
    microbit = target_for(load_board("microbit"), load_board("qemu-m0"))
    by_hand = 100 + 2 * (10 + 10 + 5) + 20 + (4 + 12) + 30 + 2 * 25  # 0 wait states: no flash stalls
    assert estimate_cycles(counts, microbit) == by_hand
    assert estimate_range(counts, microbit) == (by_hand, by_hand + 31 * 20 + 25)
    pico = target_for(load_board("pico"), load_board("qemu-m0"))
    fetches = 25 * 384 * (1 - FLASH_CACHE_HIT)  # a fetch after a taken branch that the XIP cache misses
    assert estimate_cycles(counts, pico) == pytest.approx(by_hand - 25 + fetches)
    low, high = estimate_range(counts, pico)
    assert low == by_hand - 25 and high == by_hand + 31 * 20 + 25 * 384  # the cache hitting always, never


def test_the_hifive1_is_still_refused_in_one_sentence():
    """RISC-V runs are not traced: the E31 has no timings, whatever the emulated board."""
    with pytest.raises(MCUDeployError, match=r"^no instruction timings are modelled for the rv32imac of board "
                                             r"hifive1-revb \(mcudeploy/estimate/cores.py\), so no cycles can be "
                                             r"estimated for it$"):
        target_for(load_board("hifive1-revb"), load_board("qemu-m0"))


def test_the_picos_stand_in_takes_qemu_m0s_sram_beyond_the_microbits():
    """qemu-m0 plans in the micro:bit's 16 KB; a stand-in for the Pico (264 KB) takes the SRAM QEMU maps after it
    (sram_stand_in: excluded from qemu-m0's own plans), cut to the Pico's first region with the stack, the 16 KB left
    out; the micro:bit's stand-in is qemu-m0 as it is, without a data cache."""
    from mcudeploy.device.stand_in import emulator_for
    from mcudeploy.memory import areas

    m0 = load_board("qemu-m0")
    assert [r.name for r in m0.regions if not r.excluded] == ["sram"] and areas(m0)[0].capacity < 16384
    pico = load_board("pico")
    stand_in = emulator_for(pico)
    first = areas(stand_in)[0]
    assert (first.name, first.capacity, stand_in.regions[0].origin) == ("sram_stand_in", areas(pico)[0].capacity,
                                                                         0x20004000)
    assert [r.name for r in stand_in.regions if r.excluded] == ["sram"] and stand_in.flash_data == pico.flash_data
    assert emulator_for(load_board("microbit")).regions == m0.regions
