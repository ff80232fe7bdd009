/* SiFive UART (FE310-G002 Manual v1.5, chapter 18), polled. txdata's bit 31 says the transmit FIFO is full;
 * reading rxdata pops a byte, its bit 31 saying there was none. port->brr is the divisor register: the baud rate
 * is the bus clock / (div + 1) (build.py). The board's init writes give the pins to the UART (GPIO iof_en). */
#include <stdint.h>

#include "mcud_fw.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define TXDATA 0x00u
#define RXDATA 0x04u
#define TXCTRL 0x08u
#define RXCTRL 0x0Cu
#define DIV 0x18u
#define FULL_OR_EMPTY (1u << 31)
#define ENABLE 1u

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(DIV) = port->brr;
    REG(TXCTRL) = ENABLE; /* one stop bit, watermark 0 */
    REG(RXCTRL) = ENABLE;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (REG(TXDATA) & FULL_OR_EMPTY) {
        return 0;
    }
    REG(TXDATA) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    uint32_t data = REG(RXDATA); /* the read pops: keep it */
    if (data & FULL_OR_EMPTY) {
        return -1;
    }
    return (int32_t)(data & 0xFFu);
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    (void)port;
}
