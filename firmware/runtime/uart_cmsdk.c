/* Arm CMSDK APB UART (MPS2 boards), polled; sleeps on its receive interrupt between frames. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define DATA 0x00u
#define STATE 0x04u
#define CTRL 0x08u
#define INTCLEAR 0x0Cu
#define BAUDDIV 0x10u
#define CTRL_RX_INTEN 8u
#define INT_RX 2u
#define STATE_TX_FULL 1u
#define STATE_RX_FULL 2u

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(BAUDDIV) = port->brr < 16u ? 16u : port->brr;
    REG(CTRL) = 3u; /* TX and RX enabled, no interrupts */
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (REG(STATE) & STATE_TX_FULL) {
        return 0;
    }
    REG(DATA) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    if (REG(STATE) & STATE_RX_FULL) {
        return (int32_t)(REG(DATA) & 0xFFu);
    }
    return -1;
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    if (port->irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(CTRL) |= CTRL_RX_INTEN;
    mcud_nvic_enable((uint32_t)port->irq);
    while (!(REG(STATE) & STATE_RX_FULL)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(CTRL) &= ~CTRL_RX_INTEN;
    REG(INTCLEAR) = INT_RX;
    mcud_nvic_disable_and_clear((uint32_t)port->irq);
    mcud_irq_restore(primask);
}
