/* mcud_irq.h for a RISC-V core in machine mode: interrupts masked by mstatus.MIE, WFI.
 * The RISC-V boards poll their UART (uart.irq -1): routing a UART's interrupt through a PLIC is not
 * done, so the "NVIC" calls only switch the machine external interrupt (mie.MEIE) for a driver that
 * is compiled for both architectures (uart_ns16550.c). Included by mcud_irq.h, not by itself. */
#ifndef MCUD_IRQ_RISCV_H
#define MCUD_IRQ_RISCV_H

#include <stdint.h>

#define MCUD_MSTATUS_MIE 0x8u
#define MCUD_MIE_MEIE 0x800u

/* Clears mstatus.MIE and returns the previous mstatus (only its MIE bit is given back). */
static inline uint32_t mcud_irq_save(void)
{
    uint32_t mstatus;
    __asm__ volatile("csrrci %0, mstatus, 8" : "=r"(mstatus) : : "memory");
    return mstatus;
}

static inline void mcud_irq_restore(uint32_t mstatus)
{
    if (mstatus & MCUD_MSTATUS_MIE) {
        __asm__ volatile("csrsi mstatus, 8" : : : "memory");
    }
}

static inline void mcud_nvic_enable(uint32_t irq)
{
    (void)irq;
    __asm__ volatile("csrs mie, %0" : : "r"(MCUD_MIE_MEIE) : "memory");
}

static inline void mcud_nvic_disable_and_clear(uint32_t irq)
{
    (void)irq;
    __asm__ volatile("csrc mie, %0\n\tfence" : : "r"(MCUD_MIE_MEIE) : "memory");
}

/* With mstatus.MIE clear a pending enabled interrupt still ends a WFI, without a trap. */
static inline void mcud_wait_for_interrupt(void)
{
    __asm__ volatile("fence\n\twfi" : : : "memory");
}

#endif /* MCUD_IRQ_RISCV_H */
