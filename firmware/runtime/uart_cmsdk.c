/* Arm CMSDK APB UART (MPS2 boards), polled; sleeps on its receive interrupt between frames. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(base + (off)))
#define DATA 0x00u
#define STATE 0x04u
#define CTRL 0x08u
#define INTCLEAR 0x0Cu
#define BAUDDIV 0x10u
#define CTRL_RX_INTEN 8u
#define INT_RX 2u
#define STATE_TX_FULL 1u
#define STATE_RX_FULL 2u

static uint32_t base;
static int32_t irq = -1;

void mcud_uart_init(const mcud_fw_config *config)
{
    base = config->uart_base;
    irq = config->uart_irq;
    REG(BAUDDIV) = config->uart_brr < 16u ? 16u : config->uart_brr;
    REG(CTRL) = 3u; /* TX and RX enabled, no interrupts */
}

void mcud_uart_write(const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        while (REG(STATE) & STATE_TX_FULL) {
        }
        REG(DATA) = data[i];
    }
}

int32_t mcud_uart_read(void)
{
    if (REG(STATE) & STATE_RX_FULL) {
        return (int32_t)(REG(DATA) & 0xFFu);
    }
    return -1;
}

void mcud_uart_wait(void)
{
    if (irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(CTRL) |= CTRL_RX_INTEN;
    mcud_nvic_enable((uint32_t)irq);
    while (!(REG(STATE) & STATE_RX_FULL)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(CTRL) &= ~CTRL_RX_INTEN;
    REG(INTCLEAR) = INT_RX;
    mcud_nvic_disable_and_clear((uint32_t)irq);
    mcud_irq_restore(primask);
}
