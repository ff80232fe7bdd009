/* Board bring-up from data (register writes listed in the board file) and, on emulated boards,
 * semihosting: leaving the emulator, and reading inputs from a host file (the UART model of QEMU
 * moves one byte per main-loop turn, some 50 us; a 110 KB input took seconds). The reset and the
 * semihosting call itself are the architecture's (arch_arm.c, arch_riscv.c); the operations and
 * their blocks are the same on both (QEMU implements Arm's semihosting for RISC-V too). */
#include <stdint.h>
#include <string.h>

#include "mcud_fw.h"

#define SEMIHOSTING_SYS_OPEN 0x01u
#define SEMIHOSTING_SYS_CLOSE 0x02u
#define SEMIHOSTING_SYS_READ 0x06u
#define SEMIHOSTING_SYS_SEEK 0x0Au
#define SEMIHOSTING_SYS_EXIT_EXTENDED 0x20u
#define SEMIHOSTING_MODE_RB 1u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

/* A flag an init write waits for that never comes (an oscillator that does not start) gives up after this many
 * reads rather than hanging the board before its UART speaks: about 10 ms at 100 MHz. */
#define MCUD_INIT_WAIT_READS 1000000u

static uint32_t emulated;

void mcud_sys_init(const mcud_fw_config *config)
{
    emulated = config->emulated;
    for (uint32_t i = 0; i < config->init_count; i++) {
        volatile uint32_t *reg = (volatile uint32_t *)(uintptr_t)config->init[i].addr;
        *reg = (*reg & ~config->init[i].clear) | config->init[i].set;
        (void)*reg; /* read back: a peripheral clock enable takes effect before the next access */
        for (uint32_t n = 0; n < MCUD_INIT_WAIT_READS && (*reg & config->init[i].wait) != config->init[i].wait; n++) {
        }
    }
}

static void semihosting_exit(int32_t code)
{
    const uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code};
    (void)mcud_semihosting(SEMIHOSTING_SYS_EXIT_EXTENDED, block);
}

int32_t mcud_sys_read_host_file(const char *path, uint32_t offset, uint8_t *dst, uint32_t n)
{
    if (!emulated) {
        return -1;
    }
    const uint32_t open_block[3] = {(uint32_t)(uintptr_t)path, SEMIHOSTING_MODE_RB, (uint32_t)strlen(path)};
    int32_t handle = mcud_semihosting(SEMIHOSTING_SYS_OPEN, open_block);
    if (handle < 0) {
        return -1;
    }
    const uint32_t seek_block[2] = {(uint32_t)handle, offset};
    const uint32_t read_block[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)dst, n};
    int32_t status = mcud_semihosting(SEMIHOSTING_SYS_SEEK, seek_block) == 0 && mcud_semihosting(SEMIHOSTING_SYS_READ, read_block) == 0
                         ? 0 : -1; /* SYS_READ returns the number of bytes it could NOT read */
    const uint32_t close_block[1] = {(uint32_t)handle};
    (void)mcud_semihosting(SEMIHOSTING_SYS_CLOSE, close_block);
    return status;
}

void mcud_sys_exit(int32_t code)
{
    if (emulated) {
        semihosting_exit(code);
    }
    mcud_sys_reset();
}

/* One core; dual.c, linked into a two-core firmware, tells the cores apart. */
__attribute__((weak)) uint32_t mcud_sys_core(void)
{
    return 0;
}

void mcud_sys_fault(void)
{
    mcud_sys_exit(MCUD_EXIT_FAULT);
}
