/* Arm PrimeCell UART PL011 (Arm DDI 0183; the RP2040's and RP2350's UART0 and UART1), polled. The board's init
 * writes release its reset and route its pins; here the divisor, 8N1 with the FIFOs on, then enable.
 * port->brr holds the divisor in 64ths (build.py: round(4 * clock / baud)): IBRD its upper bits, FBRD its lower six.
 * A receive interrupt is not used (mcud_uart_port_wait returns at once: the measurer polls). */
#include <stdint.h>

#include "mcud_fw.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define UARTDR 0x000u
#define UARTFR 0x018u
#define UARTIBRD 0x024u
#define UARTFBRD 0x028u
#define UARTLCR_H 0x02Cu
#define UARTCR 0x030u
#define FR_TXFF (1u << 5)
#define FR_RXFE (1u << 4)
#define LCR_H_WLEN8 (3u << 5)
#define LCR_H_FEN (1u << 4)
#define CR_UARTEN (1u << 0)
#define CR_TXE (1u << 8)
#define CR_RXE (1u << 9)

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(UARTCR) = 0u;
    REG(UARTIBRD) = port->brr >> 6;
    REG(UARTFBRD) = port->brr & 0x3Fu;
    REG(UARTLCR_H) = LCR_H_WLEN8 | LCR_H_FEN; /* also latches IBRD and FBRD */
    REG(UARTCR) = CR_UARTEN | CR_TXE | CR_RXE;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (REG(UARTFR) & FR_TXFF) {
        return 0;
    }
    REG(UARTDR) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    if (REG(UARTFR) & FR_RXFE) {
        return -1;
    }
    return (int32_t)(REG(UARTDR) & 0xFFu);
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    (void)port;
}
