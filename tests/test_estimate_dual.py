"""The Cortex-M7 issue model (mcudeploy/estimate/dual.py, after LLVM's ARMScheduleM7.td) on short blocks whose
cycles follow from the model's rules by hand: two instructions a cycle within the pipes, operand latencies,
instructions issued alone."""
from __future__ import annotations

import pytest

from mcudeploy.estimate.dual import issue_cycles
from mcudeploy.estimate.trace import classify


def cycles(block: str, load_pipes: int = 2) -> int:
    lines = []
    for line in block.strip().splitlines():
        mnemonic, _, operands = line.strip().partition(" ")
        cls, regs = classify(mnemonic, operands.strip())
        lines.append((cls, mnemonic, operands.strip(), regs))
    return issue_cycles(lines, load_pipes)


@pytest.mark.parametrize("block, expected", [
    ("add r0, r1, r2\nadd r3, r4, r5", 1),                  # two ALU pipes
    ("add r0, r1, r2\nadd r3, r0, r5", 2),                  # the second waits a cycle for r0
    ("bic r0, r1, #3\nadd r2, r0, #1", 2),                  # bic is no branch: it writes r0
    ("ldr r0, [r4]\nldr.w r1, [r4, #4]", 1),                # two load pipes
    ("ldr r0, [r1]\nldr r2, [r0]", 3),                      # a loaded address: latency 1, read a cycle early
    ("ldrb r0, [r1]\nadd r2, r0, #1", 3),                   # a byte load's result takes 2
    ("ldrd r0, r1, [r2]\nadd r3, r4, r5", 2),               # LDRD issues alone
    ("smlad r0, r1, r2, r0\nsmlad r0, r1, r2, r0\nsmlad r0, r1, r2, r0", 3),  # accumulator read late; one MAC
    ("smlad r0, r1, r2, r0\nadd r3, r0, #1", 3),            # a MAC's result takes 2
    ("add r0, r1, r2\nsxtb16 r3, r4", 2),                   # SIMD only first of a pair
    ("sxtb16 r3, r4\nadd r0, r1, r2", 1),
    ("add r0, r1, r2\nstr r0, [r3]", 1),                    # a stored register is read late
    ("str r0, [r3]\nstr r1, [r3, #4]", 2),                  # one store pipe
    ("pop {r4, r5, r6, pc}", 2),                            # alone, two registers a cycle
    ("sdiv r0, r1, r2\nadd r3, r4, r5", 8),                 # a divide stalls 7 cycles
])
def test_issue_cycles(block, expected):
    assert cycles(block) == expected


def test_one_load_pipe_is_the_high_end():
    assert cycles("ldr r0, [r4]\nldr.w r1, [r4, #4]", load_pipes=1) == 2


def test_loads_in_a_row_against_ldrd():
    """Sixteen multiply-accumulates from four loads (the int8 convolution's group): the loads pair with each other
    and with the MACs, where each LDRD takes its cycle alone."""
    words = "ldr.w ip, [r3]\nldr.w r8, [r3, #8]\nldr.w lr, [r2]\nldr.w sl, [r2, #8]\n"
    doubles = "ldrd ip, r8, [r3]\nldrd lr, sl, [r2]\n"
    macs = "smlad r1, ip, lr, r1\nsmlad r5, r8, sl, r5\nsmlad r6, r8, lr, r6\nsmlad r7, ip, sl, r7\n"
    assert cycles((words + macs) * 4) < cycles((doubles + macs) * 4)
