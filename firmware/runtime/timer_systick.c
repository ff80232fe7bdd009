/* Timer on SysTick (every Cortex-M; the one QEMU models, where DWT_CYCCNT reads 0).
 * The 24-bit down-counter is extended to 64 bits by counting wraps in its interrupt.
 * Under QEMU -icount shift=0 one tick is a fixed number of guest instructions
 * (1e9 / clock: 40 at 25 MHz), so ticks are exact and reproducible. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define ICSR_PENDSTSET (1u << 26)
#define ICSR_PENDSTCLR (1u << 25)
#define RELOAD 0xFFFFFFu

static volatile uint32_t wraps;

void SysTick_Handler(void);

void SysTick_Handler(void)
{
    wraps++;
}

void mcud_timer_init(void)
{
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 7u; /* processor clock, interrupt on wrap, enabled */
    mcud_timer_restart();
}

void mcud_timer_restart(void)
{
    uint32_t primask = mcud_irq_save();
    /* Writing CVR restarts the count at this instruction: from here on every reading is a
     * fixed function of the instructions executed, whatever the UART traffic before. The
     * counter reads 0 until its next clock edge reloads it; wait for that, then start. */
    SYST_CVR = 0;
    while (SYST_CVR == 0) {
    }
    SCB_ICSR = ICSR_PENDSTCLR;
    wraps = 0;
    mcud_irq_restore(primask);
}

uint64_t mcud_timer_now(void)
{
    uint32_t primask = mcud_irq_save();
    uint32_t high = wraps, value = SYST_CVR;
    if (SCB_ICSR & ICSR_PENDSTSET) { /* wrapped, interrupt not taken yet: value may be either side */
        value = SYST_CVR;
        high++;
    }
    mcud_irq_restore(primask);
    return ((uint64_t)high << 24) + (RELOAD - value);
}

/* Stopped while the device sleeps between frames: a running SysTick would wake it at every wrap,
 * and under QEMU -icount (sleep=off) the virtual clock jumps to each wrap at once, so an idle
 * emulator would spin through them on a host core. */
void mcud_timer_suspend(void)
{
    SYST_CSR = 0;
    SCB_ICSR = ICSR_PENDSTCLR;
}

void mcud_timer_resume(void)
{
    mcud_timer_init();
}
