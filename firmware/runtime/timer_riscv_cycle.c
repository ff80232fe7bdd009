/* Timer on the RISC-V cycle counter (mcycle, mcycleh: 64 bits, machine mode). Under QEMU -icount shift=0
 * QEMU 7.2 returns the instruction count for it (as for minstret), one instruction a nanosecond of virtual
 * time: the board's timer hz is 1e9, a tick one instruction. The counter needs no interrupt, so
 * suspending it leaves nothing that could wake the core. */
#include <stdint.h>

#include "mcud_fw.h"

static uint64_t start;

static uint64_t cycles(void)
{
    uint32_t high, low, again;
    do { /* mcycleh read on both sides of mcycle: a carry between the reads is seen */
        __asm__ volatile("csrr %0, mcycleh" : "=r"(high));
        __asm__ volatile("csrr %0, mcycle" : "=r"(low));
        __asm__ volatile("csrr %0, mcycleh" : "=r"(again));
    } while (high != again);
    return ((uint64_t)high << 32) | low;
}

void mcud_timer_init(void)
{
    mcud_timer_restart();
}

void mcud_timer_restart(void)
{
    start = cycles();
}

uint64_t mcud_timer_now(void)
{
    return cycles() - start;
}

void mcud_timer_suspend(void)
{
}

void mcud_timer_resume(void)
{
    mcud_timer_init();
}
