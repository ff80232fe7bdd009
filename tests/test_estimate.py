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
    ("lw", "a1,0(a5)", "load"), ("lbu", "a4,0(a3)", "load_narrow"), ("lh", "a2,2(a0)", "load_narrow"),
    ("sw", "ra,12(sp)", "store"), ("sb", "a5,0(a4)", "store"), ("mul", "a6,a5,a4", "mul"), ("mulh", "a0,a0,a1", "mul"),
    ("divu", "a7,a5,a1", "div"), ("remu", "a0,a0,a1", "div"), ("csrrs", "a1,mcycle,zero", "csr"),
    ("bleu", "a5,a2,46 # 0x8000499e", "branch"), ("bnez", "a5,-12", "branch"), ("j", "-1222 # 0x800055ee", "branch"),
    ("jal", "ra,-126 # 0x80004c68", "branch"), ("ret", "", "branch"), ("jr", "t0", "branch"),
    ("addi", "sp,sp,-16", "alu"), ("lui", "a4,-2143285248", "alu"), ("mv", "a0,a1", "alu"), ("srai", "a5,a5,8", "alu"),
])
def test_riscv_instructions_fall_in_their_class(mnemonic, operands, cls):
    """The instructions of qemu-rv32's traces (RV32IMAC as QEMU 7.2 prints them, compressed ones expanded) in the
    classes of the E31's timings (mcudeploy/estimate/e31.py)."""
    from mcudeploy.estimate import e31

    assert e31.classify(mnemonic, operands) == cls


@pytest.mark.parametrize("kind, mnemonic, operands", [
    ("cond", "bne", "a4,a3,-12"), ("jump", "j", "-38 # 0x80004c0c"), ("call", "jal", "ra,-144 # 0x80004b60"),
    ("ret", "ret", ""), ("ret", "jr", "ra"), ("indirect", "jr", "t0"), ("call", "jalr", "a5"), ("", "add", "a0,a0,a1"),
])
def test_riscv_control_flow_is_told_apart_for_the_predictor(kind, mnemonic, operands):
    from mcudeploy.estimate import e31

    assert e31.branch_kind(mnemonic, operands) == kind


def _e31_block(*lines: str):
    from mcudeploy.estimate import e31

    return [e31.decode(*(line.split(" ", 1) + [""])[:2]) for line in lines]


@pytest.mark.parametrize("block, cycles, again", [
    (["lw a5,0(a4)", "add a0,a0,a5"], 3, 3),  # LW: a two-cycle result latency, one cycle waited
    (["lbu a5,0(a4)", "add a0,a0,a5"], 4, 4),  # LB, LBU, LH, LHU: three
    (["lw a5,0(a4)", "addi a4,a4,4", "add a0,a0,a5"], 3, 3),  # an independent instruction fills the wait
    (["mul a5,a5,a4", "mul a6,a3,a2", "add a0,a0,a5"], 7, 10),  # MUL: five, one multiply at a time
    (["mul a0,a1,a2", "addi a3,a3,1"], 2, 5),  # a loop of one multiply: five cycles a turn once it follows itself
    (["csrrs a1,mcycle,zero", "add a0,a0,a1"], 4, 4),  # a CSR read: three
    (["sw a0,0(a1)", "addi a1,a1,4", "bne a1,a2,-8"], 3, 3),  # stores and branches: one cycle each
])
def test_the_e31_issues_one_instruction_a_cycle_waiting_for_its_operands(block, cycles, again):
    """The FE310-G000 Manual's E31 pipeline (e31.py): single issue, in order, interlocked on read-after-write with
    the published result latencies, the multiplier blocking until its previous multiply completes. ``again``: the
    block's cycles when it follows itself, as a loop's body does (the second mul waits for the first's 5 cycles)."""
    from mcudeploy.estimate import e31

    insns = _e31_block(*block)
    assert (e31.issue_cycles(insns), e31.issue_cycles(insns, again=True)) == (cycles, again)


def test_the_e31_predictor_misses_a_loops_first_turn_and_its_exit_and_returns_past_two_calls():
    """One two-bit counter a branch, starting weakly not taken; the BTB learns a target once taken; a RAS of two
    entries (the FE310-G000 Manual's E31: 3.2 Instruction Fetch Unit)."""
    from mcudeploy.estimate.e31 import Predictor

    p = Predictor()
    turns = [p.mispredicted("cond", 0x100, 0x100, 0x80) for _ in range(9)] + [p.mispredicted("cond", 0x100, 0x100,
                                                                                            0x100)]
    assert turns == [True] + [False] * 8 + [True]  # taken 9 times (the first mispredicted), then out of the loop
    assert [p.mispredicted("jump", 0x200, 0x200, 0x40) for _ in range(2)] == [True, False]  # the BTB, cold then warm
    calls = [p.mispredicted("call", site, site, target) for site, target in ((0x304, 0x400), (0x404, 0x500),
                                                                            (0x504, 0x600))]
    returns = [p.mispredicted("ret", site, site, target) for site, target in ((0x602, 0x504), (0x502, 0x404),
                                                                             (0x402, 0x304))]
    assert calls == [True, True, True] and returns == [False, False, True]  # the oldest return fell off the RAS


def test_the_hifive1_is_estimated_from_qemu_rv32s_traces():
    """The HiFive1 Rev B's E31 (core_timings sifive-e31; its core rv32imac, as qemu-rv32's) at the 16 MHz its
    firmware runs, code and weights in place from the SPI flash (the board file's xip): a 16 KiB instruction cache
    of 128 sets of two 64-byte lines, 8 core cycles a serial clock (sckdiv's reset 3), 2 at the fastest (sckdiv 0);
    a read command 35 serial clocks (03h 8, address 24, chip-select delays 3), a byte 8. Not run on silicon."""
    real = load_board("hifive1-revb")
    t = target_for(real, load_board("qemu-rv32"))
    assert (t.core, t.clock_hz, t.wait_states, t.flash_cache, t.caches, t.silicon) == ("sifive-e31", 16_000_000, 0,
                                                                                     False, None, False)
    x = t.xip
    assert (x.icache_sets, x.icache_ways, x.line_bytes, x.icache_bytes) == (128, 2, 64, 16384)
    assert (x.sck_cycles, x.fastest_sck_cycles, x.command_sck, x.byte_sck) == (8, 2, 35, 8)
    assert t.describe() == ("hifive1-revb (sifive-e31 at 16 MHz, code and weights read in place from serial flash at "
                            "8 core cycles a serial clock: code through a 16 KiB 2-way instruction cache of 64 B "
                            "lines, weights with no cache; assumed: SPI0 left at its reset settings by the boot "
                            "loader (not checked), the instruction cache least recently used; sources: the board "
                            "file's xip)")
    with pytest.raises(MCUDeployError, match=r"^board qemu-m0 runs a cortex-m0, but --estimate-for hifive1-revb has a "
                                             r"sifive-e31 \(traced on a board with the rv32imac\): the instructions traced "
                                             r"would be another core's$"):
        target_for(real, load_board("qemu-m0"))


def test_the_hifive1s_cycles_are_its_issue_cycles_mispredictions_divides_and_serial_flash():
    """By hand: the E31's issue cycles, a divide 33 cycles (32 on top of its issue), a misprediction 3; the serial
    flash's commands of 35 serial clocks and bytes of 8, at 8 core cycles a serial clock. The range: divides of 2,
    no misprediction and the flash at 2 core cycles a serial clock; every taken branch and every fall-through the
    predictor missed costing 3, and every line fill and read of a constant a command of its own."""
    from mcudeploy.estimate.cycles import serial_cycles

    counts = Counter({"e31_issue": 1000, "div": 2, "mispredict": 10, "mispredict_nt": 4, "branch_taken": 20,
                      "flash_reads": 100, "icache_fills": 3, "spi_commands": 40, "spi_bytes": 300})
    t = target_for(load_board("hifive1-revb"), load_board("qemu-rv32"))
    serial = (40 * 35 + 300 * 8) * 8
    assert serial_cycles(counts, t.xip, 8) == serial == 30_400
    assert estimate_cycles(counts, t) == 1000 + 2 * 32 + 10 * 3 + serial
    low, high = estimate_range(counts, t)
    assert low == 1000 + 2 * 1 + (40 * 35 + 300 * 8) * 2
    assert high == 1000 + 2 * 32 + 3 * (20 + 4) + ((3 + 100) * 35 + 300 * 8) * 8


@pytest.mark.parametrize("mnemonic, operands, cls", [
    ("muls", "r0, r1, r0", "mul"), ("ldrb", "r3, [r1, r2]", "load"), ("strh", "r1, [r2, #2]", "store"),
    ("ldmia", "r0!, {r1, r2, r3}", "multi"), ("stmia", "r1!, {r2, r3}", "multi"), ("pop", "{r4, r5, r6, pc}", "branch"),
    ("bl", "#0x1f4", "branch"), ("bcc.n", "#0x96", "branch"), ("sxtb", "r0, r0", "alu"), ("lsls", "r0, r0, #2", "alu"),
])
def test_armv6m_instructions_fall_in_their_class(mnemonic, operands, cls):
    """The instructions of qemu-m0's traces (ARMv6-M, as QEMU names them) in the classes of the M0 and M0+ tables."""
    assert classify(mnemonic, operands)[0] == cls


ARMV6M_COUNTS = Counter({"alu": 100, "load": 10, "ldst_pipelined": 10, "store": 5, "mul": 20, "multi": 4,
                         "multi_regs": 12, "branch": 30, "branch_taken": 25})
# the Cortex-M0 TRM by hand: a load or store 2 cycles whatever precedes it, LDM/STM/PUSH/POP 1 + N, MULS 1 (the fast
# multiplier), a branch 1 and 2 more when taken (3 in all)
M0_BY_HAND = 100 + 2 * (10 + 10 + 5) + 20 + (4 + 12) + 30 + 2 * 25


def test_the_microbit_is_estimated_from_qemu_m0s_traces_with_the_cortex_m0s_timings():
    """The micro:bit's Cortex-M0 at the 16 MHz it runs from reset, its flash at 0 wait states with no cache (board
    file), so its cycles are the TRM's alone. The range: MULS 32 cycles (the small multiplier) and a taken branch a
    cycle more (BL 4, POP {pc} 4 + N). Traced on qemu-m0, the same core; another core's trace is refused."""
    t = target_for(load_board("microbit"), load_board("qemu-m0"))
    assert (t.core, t.clock_hz, t.wait_states, t.flash_cache, t.caches, t.xip, t.silicon) == (
        "cortex-m0", 16_000_000, 0, False, None, None, False)
    assert estimate_cycles(ARMV6M_COUNTS, t) == M0_BY_HAND
    assert estimate_range(ARMV6M_COUNTS, t) == (M0_BY_HAND, M0_BY_HAND + 31 * 20 + 25)
    assert t.describe() == ("microbit (cortex-m0 at 16 MHz, 0 flash wait states, no flash accelerator, weights read "
                            "from flash charged as SRAM)")
    with pytest.raises(MCUDeployError, match="^board qemu-m4 runs a cortex-m4, but --estimate-for microbit has a "
                                             "cortex-m0: the instructions traced would be another core's$"):
        target_for(load_board("microbit"), load_board("qemu-m4"))


def test_the_pico_is_estimated_from_qemu_m0_264ks_traces_through_its_xip_cache():
    """The Pico's Cortex-M0+ (the M0's instructions: traced on QEMU's M0, with the Pico's 264 KB in qemu-m0-264k) at
    the 12 MHz its firmware runs; code and weights from the QSPI flash through one 16 KB two-way cache of 8-byte lines
    (RP2040 Datasheet 2.6.3), every access a command of its own at SCK = clk_sys / 4 (the board's boot2). By hand: the
    M0+'s cycles (a taken branch 2), and a line fill of 8 + 24 command clocks and 64 data clocks, 96 x 4 = 384 core
    cycles; the range's high end a command for each 32-bit frame, 2 x (32 + 32) x 4 = 512."""
    from mcudeploy.estimate.cycles import serial_cycles

    t = target_for(load_board("pico"), load_board("qemu-m0-264k"))
    assert (t.core, t.clock_hz, t.wait_states, t.flash_cache, t.caches, t.silicon) == (
        "cortex-m0plus", 12_000_000, 0, False, None, False)
    x = t.xip
    assert (x.icache_sets, x.icache_ways, x.line_bytes, x.unified, x.merge, x.frame_bytes) == (1024, 2, 8, True,
                                                                                            False, 4)
    assert t.describe() == ("pico (cortex-m0plus at 12 MHz, code and weights read in place from serial flash at 4 core "
                            "cycles a serial clock: code and weights through one 16 KiB 2-way cache of 8 B lines; "
                            "assumed: a line fill taken as one 03h read (two of 32 bits: the range's high end), the "
                            "XIP cache least recently used; sources: the board file's xip)")
    # the plugin with merge=0: a command for every fill, 8 bytes each; flash_reads (through the cache) cost nothing
    counts = ARMV6M_COUNTS + Counter({"flash_reads": 500, "icache_fills": 7, "spi_commands": 7, "spi_bytes": 56})
    core = M0_BY_HAND - 25  # a taken branch 2, not 3
    assert serial_cycles(counts, x, 4) == 7 * 384
    assert estimate_cycles(counts, t) == core + 7 * 384
    assert estimate_range(counts, t) == (core + 7 * 384, core + 31 * 20 + 25 + 7 * 512)
    with pytest.raises(MCUDeployError, match="the instructions traced would be another core's"):
        target_for(load_board("pico"), load_board("qemu-an505"))


def test_the_picos_plans_run_on_a_board_of_their_own_and_qemu_m0_keeps_the_microbits_16_kb():
    """QEMU 7.2's only ARMv6-M machine is the microbit (nRF51822, 16 KB): qemu-m0-264k is that machine with
    nrf51-soc's sram-size at the Pico's 264 KB, the Pico's emulator (stand_in.EMULATED), and holds the Pico's first
    region as it is. qemu-m0 stays the micro:bit's 16 KB, SRAM QEMU maps included, so its runs fault past it; asked
    to stand for the Pico it refuses in one sentence with the figures and the board that can."""
    from mcudeploy.device.stand_in import emulator_for, stand_in
    from mcudeploy.memory import areas

    m0, big, pico = load_board("qemu-m0"), load_board("qemu-m0-264k"), load_board("pico")
    assert [(r.origin, r.size) for r in m0.regions] == [(0x20000000, 16384)]
    assert not any("sram-size" in a for a in m0.qemu.extra_args)
    assert (big.core, big.qemu.machine, big.uart, big.timer) == (m0.core, m0.qemu.machine, m0.uart, m0.timer)
    assert "nrf51-soc.sram-size=270336" in big.qemu.extra_args and big.regions[0].size == 270336 == pico.regions[0].size
    stood = emulator_for(pico)
    assert stood.name == "qemu-m0-264k" and areas(stood)[0].capacity == areas(pico)[0].capacity == 266_240
    assert emulator_for(load_board("microbit")).regions == m0.regions
    with pytest.raises(MCUDeployError, match=r"^board qemu-m0 has no region of full speed of 266,240 B, the first "
                                             r"region of pico less its stack: its traces cannot stand for that "
                                             r"board's plans \(-b qemu-m0-264k can\)$"):
        stand_in(m0, pico)


def test_the_pico2_is_estimated_through_its_xip_cache_as_the_boot_rom_leaves_the_qmi():
    """The Pico 2's Cortex-M33 (the M4's timings) at the 12 MHz its firmware runs, traced on qemu-an505; code and
    weights from the QSPI flash through one 16 KB two-way cache of 8-byte lines (RP2350 Datasheet 4.4.1), the QMI
    chaining sequential reads (4.4.2) at SCK = clk_sys / 3, the boot ROM's first mode (5.2.7: EBh quad). By hand: an
    EBh command 8 + 6 + 2 + 4 = 20 serial clocks, a byte 2; the plugin's commands (fills that do not continue the
    one before) and bytes at 3 core cycles a clock; the range's high end a command for every fill."""
    from mcudeploy.estimate.cycles import serial_cycles

    t = target_for(load_board("pico2"), load_board("qemu-an505"))
    assert (t.core, t.clock_hz, t.wait_states, t.flash_cache, t.caches, t.silicon) == (
        "cortex-m33", 12_000_000, 0, False, None, False)
    x = t.xip
    assert (x.icache_sets, x.icache_ways, x.line_bytes, x.unified, x.merge, x.frame_bytes) == (1024, 2, 8, True,
                                                                                            True, 0)
    assert (x.sck_cycles, x.fastest_sck_cycles, x.command_sck, x.byte_sck) == (3, 3, 20, 2)
    assert t.describe().startswith("pico2 (cortex-m33 at 12 MHz, code and weights read in place from serial flash "
                                   "at 3 core cycles a serial clock: code and weights through one 16 KiB 2-way "
                                   "cache of 8 B lines; assumed: the flash answering the boot ROM's first mode")
    cost = CORES["cortex-m33"]["cost"]
    counts = Counter({"alu": 100, "load": 10, "branch": 20, "branch_taken": 15, "flash_reads": 300,
                      "icache_fills": 9, "spi_commands": 2, "spi_bytes": 72})
    core = 100 * cost["alu"] + 10 * cost["load"] + 20 * cost["branch"] + 15 * cost["branch_taken"]
    assert serial_cycles(counts, x, 3) == (2 * 20 + 72 * 2) * 3 == 552
    assert estimate_cycles(counts, t) == pytest.approx(core + 552)
    low, high = estimate_range(counts, t)
    assert low < core + 552 < high
    assert serial_cycles(counts, x, 3, merged=False) == (9 * 20 + 72 * 2) * 3  # every fill a command: 108 cycles


@pytest.mark.parametrize("name", ["nano33ble", "microbit-v2"])
def test_the_nrf52_boards_are_estimated_from_qemu_m4s_traces_at_64_mhz_with_no_flash_stall(name):
    """The Nano 33 BLE Sense (nRF52840) and the micro:bit v2 (nRF52833): a Cortex-M4F at 64 MHz, traced on qemu-m4;
    their flash at 0 wait states with its cache off at reset (the board files' flash_data: no latency register is
    documented, an assumption they name), so the cycles are the M4's timings alone. Not run on silicon."""
    t = target_for(load_board(name), load_board("qemu-m4"))
    assert (t.core, t.clock_hz, t.wait_states, t.flash_cache, t.xip, t.silicon) == (
        "cortex-m4", 64_000_000, 0, False, None, False)
    assert (t.caches.line, t.caches.word) == ((0, 4), (0, 4))  # no cache lines: every read of a weight a word's
    cost = CORES["cortex-m4"]["cost"]
    counts = Counter({"alu": 100, "load": 10, "mul": 50, "branch": 20, "branch_taken": 15, "flash_reads": 40,
                      "flash_misses": 7})
    by_hand = 100 * cost["alu"] + 10 * cost["load"] + 50 * cost["mul"] + 20 * cost["branch"] + \
        15 * cost["branch_taken"]
    assert estimate_cycles(counts, t) == pytest.approx(by_hand)
    assert t.describe() == (f"{name} (cortex-m4 at 64 MHz, 0 flash wait states, no flash accelerator, weights read "
                            f"from flash with no data cache)")
    with pytest.raises(MCUDeployError, match=f"^board qemu-m0 runs a cortex-m0, but --estimate-for {name} has a "
                                             f"cortex-m4: the instructions traced would be another core's$"):
        target_for(load_board(name), load_board("qemu-m0"))
