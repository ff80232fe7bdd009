/* Nordic nRF51 UART (nRF51 Series Reference Manual v3.0, chapter 29), polled; sleeps on its receive interrupt
 * between frames. Its pins and BAUDRATE are register writes of the board file (uart.init), written before ENABLE as the
 * manual asks; port->brr is not used (BAUDRATE is not a divisor). Tasks are started by writing 1, events are cleared
 * by writing 0: an event is cleared before the access that may raise it again (TXD, RXD). */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define TASKS_STARTRX 0x000u
#define TASKS_STARTTX 0x008u
#define EVENTS_RXDRDY 0x108u
#define EVENTS_TXDRDY 0x11Cu
#define INTENSET 0x304u
#define INTENCLR 0x308u
#define ENABLE 0x500u
#define RXD 0x518u
#define TXD 0x51Cu
#define ENABLE_UART 4u
#define INT_RXDRDY (1u << 2)

/* A byte written to TXD whose TXDRDY event has not come yet. One flag: the nRF51822 has one UART. */
static uint32_t tx_in_flight;

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(ENABLE) = ENABLE_UART;
    REG(EVENTS_RXDRDY) = 0u;
    REG(EVENTS_TXDRDY) = 0u;
    REG(TASKS_STARTRX) = 1u;
    REG(TASKS_STARTTX) = 1u;
    tx_in_flight = 0u;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (tx_in_flight && !REG(EVENTS_TXDRDY)) {
        return 0;
    }
    REG(EVENTS_TXDRDY) = 0u;
    REG(TXD) = byte;
    tx_in_flight = 1u;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    if (!REG(EVENTS_RXDRDY)) {
        return -1;
    }
    REG(EVENTS_RXDRDY) = 0u; /* before RXD: reading it raises the event again when more bytes wait */
    return (int32_t)(REG(RXD) & 0xFFu);
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    if (port->irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(INTENSET) = INT_RXDRDY;
    mcud_nvic_enable((uint32_t)port->irq);
    while (!REG(EVENTS_RXDRDY)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(INTENCLR) = INT_RXDRDY;
    mcud_nvic_disable_and_clear((uint32_t)port->irq);
    mcud_irq_restore(primask);
}
