/* Nordic nRF52 UARTE, the UART with EasyDMA (nRF52840 PS v1.7 6.34, nRF52833 PS v1.6 6.33), polled. Pins,
 * BAUDRATE and CONFIG are register writes of the board file (uart.init), written before ENABLE; port->brr is not
 * used. EasyDMA reads and writes RAM only, so each byte goes through a buffer here. Transmit: one byte a transfer
 * (TXD.PTR, MAXCNT 1, STARTTX), the next one waiting for ENDTX. Receive: one byte a transfer into one of two
 * buffers: RXD.PTR is double-buffered, so after RXSTARTED the next buffer is set and the ENDRX_STARTRX short starts
 * it the moment a byte ends, leaving no gap between bytes. ENDRX is a flag, not a count: each byte must be read
 * before the next one ends (87 us at 115200 baud), which the measurer's polling while a frame comes in does.
 * One port: the measurer's. */
#include <stdint.h>

#include "mcud_fw.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define TASKS_STARTRX 0x000u
#define TASKS_STARTTX 0x008u
#define EVENTS_ENDRX 0x110u
#define EVENTS_ENDTX 0x120u
#define EVENTS_RXSTARTED 0x14Cu
#define SHORTS 0x200u
#define ENABLE 0x500u
#define RXD_PTR 0x534u
#define RXD_MAXCNT 0x538u
#define TXD_PTR 0x544u
#define TXD_MAXCNT 0x548u
#define ENABLE_UARTE 8u
#define SHORT_ENDRX_STARTRX (1u << 5)

static volatile uint8_t rx_buffer[2];
static uint32_t rx_next; /* the buffer the next ENDRX fills */
static volatile uint8_t tx_buffer;
static uint32_t tx_in_flight;

static void point_rx(const mcud_uart_port *port, uint32_t which)
{
    REG(RXD_PTR) = (uint32_t)(uintptr_t)&rx_buffer[which];
    REG(RXD_MAXCNT) = 1u;
}

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(ENABLE) = ENABLE_UARTE;
    REG(EVENTS_ENDRX) = 0u;
    REG(EVENTS_ENDTX) = 0u;
    REG(EVENTS_RXSTARTED) = 0u;
    REG(SHORTS) = SHORT_ENDRX_STARTRX;
    rx_next = 0u;
    tx_in_flight = 0u;
    point_rx(port, 0u);
    REG(TASKS_STARTRX) = 1u;
    while (!REG(EVENTS_RXSTARTED)) {
    }
    REG(EVENTS_RXSTARTED) = 0u;
    point_rx(port, 1u); /* latched: the short starts the next transfer into buffer 1 */
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (tx_in_flight && !REG(EVENTS_ENDTX)) {
        return 0;
    }
    REG(EVENTS_ENDTX) = 0u;
    tx_buffer = byte;
    REG(TXD_PTR) = (uint32_t)(uintptr_t)&tx_buffer;
    REG(TXD_MAXCNT) = 1u;
    REG(TASKS_STARTTX) = 1u;
    tx_in_flight = 1u;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    if (!REG(EVENTS_ENDRX)) {
        return -1;
    }
    REG(EVENTS_ENDRX) = 0u;
    uint32_t got = rx_next;
    rx_next ^= 1u;
    /* the short has started the transfer into buffer rx_next; once it has, the one after goes back to this one */
    while (!REG(EVENTS_RXSTARTED)) {
    }
    REG(EVENTS_RXSTARTED) = 0u;
    point_rx(port, got);
    return (int32_t)rx_buffer[got];
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    (void)port;
}
