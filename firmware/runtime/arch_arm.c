/* The Cortex-M side of system.c: a system reset through the SCB, and Arm semihosting's call (BKPT 0xAB). */
#include <stdint.h>

#include "mcud_fw.h"

#define SCB_AIRCR (*(volatile uint32_t *)0xE000ED0Cu)

void mcud_sys_reset(void)
{
    __asm__ volatile("dsb" : : : "memory");
    SCB_AIRCR = 0x05FA0004u; /* VECTKEY | SYSRESETREQ */
    __asm__ volatile("dsb" : : : "memory");
    for (;;) {
    }
}

int32_t mcud_semihosting(uint32_t op, const uint32_t *block)
{
    register uint32_t r0 __asm__("r0") = op;
    register uint32_t r1 __asm__("r1") = (uint32_t)(uintptr_t)block;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int32_t)r0;
}
