/* The start-up's clock set-up (firmware/clock.c, generated from templates/firmware/clock.c.j2 and the
 * board file's clock_tree): what it leaves the board running at, and how it reaches registers.
 *
 * Every register access goes through MCUD_RD / MCUD_WR, so a host build (-DMCUD_CLOCK_FAKE) can
 * run the same C against a model of the chip's RCC, PWR and FLASH (tests/clock_fake.py). */
#ifndef MCUD_CLOCK_H
#define MCUD_CLOCK_H

#include <stdint.h>

#define MCUD_CLOCK_RESET 0u    /* the board has no clock tree: it runs at its reset clock */
#define MCUD_CLOCK_SET 1u      /* the clock tree is applied */
#define MCUD_CLOCK_FALLBACK 2u /* a ready flag never came: back on the reset clock (note names the wait) */

typedef struct {
    uint32_t core_hz;  /* the core clock now */
    uint32_t uart_brr; /* the UART's baud-rate register for that clock */
    uint32_t status;   /* MCUD_CLOCK_* */
    const char *note;  /* the wait that timed out, "" when none did */
} mcud_clock_state;

void mcud_clock_init(mcud_clock_state *state);

#ifndef MCUD_CLOCK_SPIN
#define MCUD_CLOCK_SPIN 1000000u /* reads of a ready flag before giving up: about 0.3 s at 16 MHz */
#endif

#ifdef MCUD_CLOCK_FAKE
extern uint32_t (*mcud_fake_read)(uint32_t addr);
extern void (*mcud_fake_write)(uint32_t addr, uint32_t value);
#define MCUD_RD(addr) mcud_fake_read(addr)
#define MCUD_WR(addr, value) mcud_fake_write((addr), (value))
#define MCUD_BARRIER() ((void)0)
#else
#define MCUD_RD(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define MCUD_WR(addr, value) (*(volatile uint32_t *)(uintptr_t)(addr) = (value))
#define MCUD_BARRIER() __asm__ volatile("dsb\n\tisb" : : : "memory")
#endif

#endif /* MCUD_CLOCK_H */
