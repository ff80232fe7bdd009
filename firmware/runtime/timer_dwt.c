/* Timer on the DWT cycle counter (real Cortex-M3/M4/M7): one tick is one core clock cycle.
 * The 32-bit counter is extended to 64 bits on reading; an operator that runs longer than
 * 2^32 cycles between two readings (about 9 s at 480 MHz) would be under-counted. */
#include <stdint.h>

#include "mcud_fw.h"

#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define DWT_LAR (*(volatile uint32_t *)0xE0001FB0u)

static uint32_t last;
static uint64_t high;

void mcud_timer_init(void)
{
    DEMCR |= 1u << 24;     /* TRCENA: turn on the DWT */
    DWT_LAR = 0xC5ACCE55u; /* unlock (Cortex-M7; ignored elsewhere) */
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1u;        /* CYCCNTENA */
    mcud_timer_restart();
}

void mcud_timer_restart(void)
{
    DWT_CYCCNT = 0;
    last = 0;
    high = 0;
}

uint64_t mcud_timer_now(void)
{
    uint32_t now = DWT_CYCCNT;
    if (now < last) {
        high += (uint64_t)1 << 32;
    }
    last = now;
    return high + now;
}

/* The cycle counter raises no interrupt: nothing to stop while the device sleeps. */
void mcud_timer_suspend(void)
{
}

void mcud_timer_resume(void)
{
}
