/* Cortex-M start-up: the vector table, copying .data from flash, clearing .bss (and the arenas
 * of other memory regions), turning on the FPU when the build uses it, painting the stack and
 * guarding its bottom, then main(). Symbols come from the generated link.ld.
 *
 * The stack sits at the bottom of RAM, below .data and .bss, so an overflow runs off the region's start rather than
 * over the arena and the firmware's state (a wrong answer or a hang). The build refuses a stack smaller than the firmware's worst case
 * (mcudeploy/device/stack_bound.py), and below the stack lies a guard (_sguard to _sstack, link.ld): on an
 * ARMv8-M main core the stack limit register MSPLIM sits at its top, on an ARMv7-M core with an MPU a region
 * makes it read-only. An ARMv7-M region catches only a frame that opens inside it, so the build sizes the
 * guard (__mcud_stack_guard_bytes, a power of two of at least 32 bytes, aligned to its size) to the largest
 * frame of the call graph and the exception frame: no frame can open below it. (An ARMv6-M core, as the
 * nRF51's Cortex-M0, has no MPU there: its stack is only as safe as the bound.) A push into it faults, and the fault handler, seeing
 * the stack's fault status, reports MCUD_EXIT_STACK instead of MCUD_EXIT_FAULT: QEMU exits with it, a real board
 * resets, its next BOOT frame saying which fault (noted in .noinit RAM, which the reset keeps). */
#include <stdint.h>

#include "mcud_fw.h"

typedef void (*mcud_handler)(void);

extern uint32_t _sguard, _sstack, _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern uint8_t __mcud_stack_guard_bytes[]; /* an absolute symbol: its address is the guard's size */
extern const uint32_t __mcud_zero_table_start[], __mcud_zero_table_end[]; /* (address, bytes) pairs */
int main(void);

void Reset_Handler(void);
void mcud_stack_guard_on(void);
void mcud_fault_report(void);
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
#if !defined(__ARM_ARCH_6M__) /* ARMv6-M: no VTOR (the Cortex-M0 reads its table at 0; the M0+'s is optional) */
    SCB_VTOR = (uint32_t)(uintptr_t)mcud_vectors;
#endif
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
    mcud_stack_guard_on();
    main();
    mcud_sys_exit(0);
}

#define MCUD_STACK_GUARD ((uint32_t)(uintptr_t)__mcud_stack_guard_bytes) /* bytes: a power of two, >= 32 */

/* The guarded bytes' bottom, aligned to their size by link.ld. */
static inline uintptr_t mcud_stack_guard(void)
{
    return (uintptr_t)&_sguard;
}

#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_SHCSR (*(volatile uint32_t *)0xE000ED24u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)
#define SCB_DCCMVAC (*(volatile uint32_t *)0xE000EF68u)
#define MPU_TYPE (*(volatile uint32_t *)0xE000ED90u)
#define MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define MPU_RNR (*(volatile uint32_t *)0xE000ED98u)
#define MPU_RBAR (*(volatile uint32_t *)0xE000ED9Cu)
#define MPU_RASR (*(volatile uint32_t *)0xE000EDA0u)
#define CFSR_DACCVIOL (1u << 1)
#define CFSR_MSTKERR (1u << 4)
#define CFSR_MMARVALID (1u << 7)
#define CFSR_BFARVALID (1u << 15)
#define CFSR_STKOF (1u << 20) /* ARMv8-M: the stack limit */

#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
#define MCUD_STACK_LIMIT 1
#elif defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
#define MCUD_STACK_MPU 1
#endif

void mcud_stack_guard_on(void)
{
#if defined(MCUD_STACK_LIMIT) || defined(MCUD_STACK_MPU)
    const uintptr_t guard = mcud_stack_guard();
#endif
#if defined(MCUD_STACK_LIMIT)
    __asm__ volatile("msr msplim, %0\n\tisb" : : "r"(guard + MCUD_STACK_GUARD) : "memory");
#elif defined(MCUD_STACK_MPU)
    if (((MPU_TYPE >> 8) & 0xFFu) == 0u || (MPU_CTRL & 1u) != 0u) {
        return; /* no MPU, or one a board's code already set up */
    }
    MPU_RNR = 0u;
    MPU_RBAR = (uint32_t)guard;
    /* XN; AP 0b110, read-only; TEX 0b001 C B, normal write-back memory as the default map's SRAM; SIZE: 2^(SIZE+1)
       = MCUD_STACK_GUARD bytes; enabled */
    const uint32_t size = 30u - (uint32_t)__builtin_clz(MCUD_STACK_GUARD);
    MPU_RASR = (1u << 28) | (6u << 24) | (1u << 19) | (1u << 17) | (1u << 16) | (size << 1) | 1u;
    MPU_CTRL = (1u << 2) | 1u; /* PRIVDEFENA: the default memory map everywhere else */
    SCB_SHCSR |= 1u << 16;     /* MemManage faults taken as themselves */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
#endif
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

/* Whether the fault being handled is a push into the stack's guarded bytes (mcud_stack_guard_on). */
static int mcud_fault_is_stack(void)
{
#if defined(MCUD_STACK_LIMIT) || defined(MCUD_STACK_MPU)
    const uint32_t cfsr = SCB_CFSR;
    const uintptr_t guard = mcud_stack_guard();
    if ((cfsr & (CFSR_STKOF | CFSR_MSTKERR)) != 0u) {
        return 1;
    }
    return (cfsr & (CFSR_MMARVALID | CFSR_DACCVIOL)) == (CFSR_MMARVALID | CFSR_DACCVIOL) && SCB_MMFAR >= guard &&
           SCB_MMFAR < guard + MCUD_STACK_GUARD;
#else
    return 0;
#endif
}

/* Why the board last restarted, kept across the reset in RAM that start-up neither loads nor clears (.noinit, just
 * below the stack): the fault handler notes the fault before a real board resets (QEMU exits with its code instead),
 * and BOOT reports it once (mcud_fw_take_fault). A power-on's random bytes fail the check word. */
typedef struct {
    uint32_t code, cfsr, addr, check;
} mcud_fault_note;
static volatile mcud_fault_note fault_note __attribute__((section(".noinit"), aligned(32)));
#define MCUD_FAULT_KEY 0x4D435544u

static void mcud_note_fault(uint32_t code)
{
    uint32_t cfsr = 0u, addr = 0u;
#if defined(MCUD_STACK_LIMIT) || defined(MCUD_STACK_MPU)
    cfsr = SCB_CFSR;
    addr = (cfsr & CFSR_MMARVALID) != 0u ? SCB_MMFAR : (cfsr & CFSR_BFARVALID) != 0u ? SCB_BFAR : 0u;
#endif
    fault_note.code = code;
    fault_note.cfsr = cfsr;
    fault_note.addr = addr;
    fault_note.check = code ^ cfsr ^ addr ^ MCUD_FAULT_KEY;
    __asm__ volatile("dsb" : : : "memory");
#if defined(MCUD_STACK_LIMIT) || defined(MCUD_STACK_MPU)
    if ((SCB_CCR & (1u << 16)) != 0u) { /* a data cache on (Cortex-M7, M55): the note's line written to the RAM */
        SCB_DCCMVAC = (uint32_t)(uintptr_t)&fault_note;
        __asm__ volatile("dsb" : : : "memory");
    }
#endif
}

uint32_t mcud_fw_take_fault(uint32_t *cfsr, uint32_t *addr)
{
    const uint32_t code = fault_note.code;
    *cfsr = fault_note.cfsr;
    *addr = fault_note.addr;
    const int noted = (code == MCUD_EXIT_FAULT || code == MCUD_EXIT_STACK) &&
                      fault_note.check == (code ^ *cfsr ^ *addr ^ MCUD_FAULT_KEY);
    fault_note.code = 0u;
    fault_note.check = 0u;
    return noted ? code : 0u;
}

void mcud_fault_report(void)
{
    const uint32_t code = mcud_fault_is_stack() ? MCUD_EXIT_STACK : MCUD_EXIT_FAULT;
    mcud_note_fault(code);
    mcud_sys_exit((int32_t)code);
}

/* Every fault: the stack pointer back to the top of the stack first, since a fault of the stack's guard
 * leaves it at the guard (whatever the stack held is not needed: the handler never returns). */
__attribute__((naked)) void mcud_fault_handler(void)
{
#if defined(__ARM_ARCH_6M__) /* Thumb-1's B reaches 2 KB only: through a register */
    __asm__ volatile("ldr r0, =_estack\n\t"
                     "mov sp, r0\n\t"
                     "ldr r0, =mcud_fault_report\n\t"
                     "bx r0\n\t"
                     ".ltorg");
#else
    __asm__ volatile("ldr r0, =_estack\n\t"
                     "mov sp, r0\n\t"
                     "b mcud_fault_report\n\t"
                     ".ltorg");
#endif
}

void mcud_unused_handler(void)
{
    mcud_note_fault(MCUD_EXIT_FAULT);
    mcud_sys_fault();
}
