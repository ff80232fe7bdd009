/* Interrupt masking and the NVIC, for the drivers that wait for an interrupt (Armv6-M, Armv7-M
 * and Armv8-M Mainline share these addresses and instructions). */
#ifndef MCUD_IRQ_H
#define MCUD_IRQ_H

#include <stdint.h>

#if defined(__riscv)
#include "mcud_irq_riscv.h" /* the same functions for a RISC-V core (boards whose arch is riscv) */
#else

#define MCUD_NVIC_ISER(n) (*(volatile uint32_t *)(0xE000E100u + 4u * (n)))
#define MCUD_NVIC_ICER(n) (*(volatile uint32_t *)(0xE000E180u + 4u * (n)))
#define MCUD_NVIC_ICPR(n) (*(volatile uint32_t *)(0xE000E280u + 4u * (n)))

/* Masks every configurable interrupt (PRIMASK) and returns the previous mask. */
static inline uint32_t mcud_irq_save(void)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask) : : "memory");
    return primask;
}

static inline void mcud_irq_restore(uint32_t primask)
{
    __asm__ volatile("msr primask, %0" : : "r"(primask) : "memory");
}

/* With PRIMASK set an enabled interrupt that becomes pending ends a WFI without its handler
 * running, so a driver can sleep until its peripheral has news without a vector of its own. */
static inline void mcud_nvic_enable(uint32_t irq)
{
    MCUD_NVIC_ISER(irq / 32u) = 1u << (irq % 32u);
}

static inline void mcud_nvic_disable_and_clear(uint32_t irq)
{
    MCUD_NVIC_ICER(irq / 32u) = 1u << (irq % 32u);
    MCUD_NVIC_ICPR(irq / 32u) = 1u << (irq % 32u);
    __asm__ volatile("dsb\n\tisb" : : : "memory");
}

static inline void mcud_wait_for_interrupt(void)
{
    __asm__ volatile("dsb\n\twfi" : : : "memory");
}

#endif /* __riscv */

#endif /* MCUD_IRQ_H */
