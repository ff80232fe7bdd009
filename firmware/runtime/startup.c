/* Cortex-M start-up: the vector table, copying .data from flash, clearing .bss (and the arenas
 * of other memory regions), turning on the FPU when the build uses it, then main(). Symbols
 * come from the generated link.ld. */
#include <stdint.h>

#include "mcud_fw.h"

typedef void (*mcud_handler)(void);

extern uint32_t _sstack, _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern const uint32_t __mcud_zero_table_start[], __mcud_zero_table_end[]; /* (address, bytes) pairs */
int main(void);

void Reset_Handler(void);
void mcud_fault_handler(void);
void mcud_unused_handler(void);
void NMI_Handler(void) __attribute__((weak, alias("mcud_unused_handler")));
void SVC_Handler(void) __attribute__((weak, alias("mcud_unused_handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("mcud_unused_handler")));
void PendSV_Handler(void) __attribute__((weak, alias("mcud_unused_handler")));
void SysTick_Handler(void) __attribute__((weak, alias("mcud_unused_handler")));

__attribute__((section(".isr_vector"), used)) const mcud_handler mcud_vectors[16] = {
    (mcud_handler)(uintptr_t)&_estack,
    Reset_Handler,
    NMI_Handler,
    mcud_fault_handler, /* HardFault */
    mcud_fault_handler, /* MemManage */
    mcud_fault_handler, /* BusFault */
    mcud_fault_handler, /* UsageFault */
    0, 0, 0, 0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
};

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define MCUD_STACK_PAINT 0xC5A5C5A5u /* a word the stack's unused part holds (mcud_fw_stack_used) */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void Reset_Handler(void)
{
#if defined(__ARM_FP)
    SCB_CPACR |= 0xFu << 20; /* CP10 and CP11: full access to the FPU */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
#endif
    SCB_VTOR = (uint32_t)(uintptr_t)mcud_vectors;
    volatile uint32_t *src = &_sidata;
    for (volatile uint32_t *dst = &_sdata; dst < &_edata;) {
        *dst++ = *src++;
    }
    for (volatile uint32_t *dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0;
    }
    for (const uint32_t *entry = __mcud_zero_table_start; entry < __mcud_zero_table_end; entry += 2) {
        volatile uint8_t *dst = (volatile uint8_t *)(uintptr_t)entry[0];
        for (uint32_t i = 0; i < entry[1]; i++) {
            dst[i] = 0;
        }
    }
    /* the stack below this frame (64 bytes spare) painted, for mcud_fw_stack_used; no interrupt is on yet */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (volatile uint32_t *p = &_sstack; p < sp - 16;) {
        *p++ = MCUD_STACK_PAINT;
    }
    main();
    mcud_sys_exit(0);
}

uint32_t mcud_fw_stack_bytes(void)
{
    return (uint32_t)((uintptr_t)&_estack - (uintptr_t)&_sstack);
}

uint32_t mcud_fw_stack_used(void)
{
    const volatile uint32_t *p = &_sstack;
    while (p < &_estack && *p == MCUD_STACK_PAINT) {
        p++;
    }
    return (uint32_t)((uintptr_t)&_estack - (uintptr_t)p);
}

void mcud_fault_handler(void)
{
    mcud_sys_fault();
}

void mcud_unused_handler(void)
{
    mcud_sys_fault();
}
