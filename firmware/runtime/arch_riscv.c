/* The RISC-V side of system.c. Semihosting is RISC-V's (the same operations as Arm's, a0 the
 * operation, a1 the block): an EBREAK between the two marker instructions, uncompressed and in one
 * page, which QEMU (-semihosting-config enable=on) serves. A reset restarts the firmware at _start:
 * RISC-V has no architectural system reset (QEMU virt's test device has one, a real core its own). */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

void _start(void);

void mcud_sys_reset(void)
{
    (void)mcud_irq_save();
    _start();
    for (;;) {
    }
}

int32_t mcud_semihosting(uint32_t op, const uint32_t *block)
{
    register uint32_t a0 __asm__("a0") = op;
    register uint32_t a1 __asm__("a1") = (uint32_t)(uintptr_t)block;
    __asm__ volatile(".option push\n\t"
                     ".option norvc\n\t"
                     ".balign 16\n\t"
                     "slli x0, x0, 0x1f\n\t"
                     "ebreak\n\t"
                     "srai x0, x0, 7\n\t"
                     ".option pop"
                     : "+r"(a0)
                     : "r"(a1)
                     : "memory");
    return (int32_t)a0;
}
