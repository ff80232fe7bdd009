/* RISC-V start-up (machine mode, boards whose arch is riscv): _start sets the global and stack pointers
 * and the trap vector, then mcud_reset copies .data from its load address, clears .bss (and the arenas of
 * other memory regions, the zero table), paints the stack, guards its bottom and calls main(). Symbols
 * come from the generated link.ld (templates/firmware/link_riscv.ld.j2).
 *
 * As on the Cortex-M (startup.c) the stack sits at the bottom of RAM, above a guard (_sguard to _sstack) as large
 * as the firmware's largest frame (a power of two aligned to its size, from the build: link.ld):
 * PMP entry 0 makes it read-only (locked, so machine mode is held to it too). Every trap is a fault here (no interrupt is ever enabled): the
 * handler reports MCUD_EXIT_STACK for a store into the guard, else MCUD_EXIT_FAULT, through the same
 * exit as the Arm firmware (semihosting under QEMU: the host sees the same exit status). */
#include <stdint.h>

#include "mcud_fw.h"

extern uint8_t __mcud_stack_guard_bytes[]; /* an absolute symbol: its address is the guard's size */
extern uint32_t _sguard, _sstack, _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern const uint32_t __mcud_zero_table_start[], __mcud_zero_table_end[]; /* (address, bytes) pairs */
int main(void);

void _start(void);
void mcud_reset(void);
void mcud_trap_entry(void);
void mcud_fault_report(void);

#define MCUD_STACK_PAINT 0xC5A5C5A5u /* a word the stack's unused part holds (mcud_fw_stack_used) */
#define MCUD_STACK_GUARD ((uint32_t)(uintptr_t)__mcud_stack_guard_bytes) /* a power of two: a PMP NAPOT region */
#define MCAUSE_STORE_ACCESS 7u
#define PMPCFG_LOCKED_NAPOT_R 0x99u /* L | A=NAPOT | R */

__attribute__((naked, section(".text.start"))) void _start(void)
{
    __asm__ volatile(".option push\n\t"
                     ".option norelax\n\t"
                     "la gp, __global_pointer$\n\t"
                     ".option pop\n\t"
                     "la sp, _estack\n\t"
                     "la t0, mcud_trap_entry\n\t"
                     "csrw mtvec, t0\n\t"
                     "j mcud_reset");
}

static uintptr_t mcud_stack_guard(void)
{
    return (uintptr_t)&_sguard;
}

static void mcud_stack_guard_on(void)
{
    const uintptr_t guard = mcud_stack_guard();
    const uint32_t napot = (uint32_t)(guard >> 2) | ((MCUD_STACK_GUARD / 8u) - 1u);
    __asm__ volatile("csrw pmpaddr0, %0\n\t"
                     "csrw pmpcfg0, %1" : : "r"(napot), "r"(PMPCFG_LOCKED_NAPOT_R) : "memory");
}

void mcud_reset(void)
{
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
    /* the stack below this frame (64 bytes spare) painted, for mcud_fw_stack_used */
    uint32_t *sp;
    __asm__ volatile("mv %0, sp" : "=r"(sp));
    for (volatile uint32_t *p = &_sstack; p < sp - 16;) {
        *p++ = MCUD_STACK_PAINT;
    }
    mcud_stack_guard_on();
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

/* Why the board last restarted, kept across a restart in RAM start-up neither loads nor clears (.noinit, just below
 * the stack), as on the Cortex-M: mcause takes the place of the CFSR, mtval the fault address. */
typedef struct {
    uint32_t code, cause, addr, check;
} mcud_fault_note;
static volatile mcud_fault_note fault_note __attribute__((section(".noinit"), aligned(32)));
#define MCUD_FAULT_KEY 0x4D435544u

uint32_t mcud_fw_take_fault(uint32_t *cause, uint32_t *addr)
{
    const uint32_t code = fault_note.code;
    *cause = fault_note.cause;
    *addr = fault_note.addr;
    const int noted = (code == MCUD_EXIT_FAULT || code == MCUD_EXIT_STACK) &&
                      fault_note.check == (code ^ *cause ^ *addr ^ MCUD_FAULT_KEY);
    fault_note.code = 0u;
    fault_note.check = 0u;
    return noted ? code : 0u;
}

void mcud_fault_report(void)
{
    uint32_t cause, addr;
    __asm__ volatile("csrr %0, mcause" : "=r"(cause));
    __asm__ volatile("csrr %0, mtval" : "=r"(addr));
    const uintptr_t guard = mcud_stack_guard();
    const int stack = cause == MCAUSE_STORE_ACCESS && addr >= guard && addr < guard + MCUD_STACK_GUARD;
    const uint32_t code = stack ? MCUD_EXIT_STACK : MCUD_EXIT_FAULT;
    fault_note.code = code;
    fault_note.cause = cause;
    fault_note.addr = addr;
    fault_note.check = code ^ cause ^ addr ^ MCUD_FAULT_KEY;
    __asm__ volatile("fence" : : : "memory");
    mcud_sys_exit((int32_t)code);
}

/* Every trap: the stack pointer back to the top of the stack first, since a fault of the stack's guard
 * leaves it at the guard (whatever the stack held is not needed: the handler never returns). */
__attribute__((naked, aligned(4))) void mcud_trap_entry(void)
{
    __asm__ volatile("la sp, _estack\n\t"
                     "j mcud_fault_report");
}
