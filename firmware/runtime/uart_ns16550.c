/* A 16550-compatible UART, polled; sleeps on its receive interrupt between frames. Its registers are
 * 1 << MCUD_UART_REG_SHIFT bytes apart (the board's uart.reg_shift, a -D of the build): 32-bit registers
 * 4 bytes apart on a Synopsys DW_apb_uart (Alif Ensemble), bytes one apart on QEMU virt's NS16550A.
 * port->brr is clock / baud (as for the STM32 USART); the divisor latch takes clock / (16 * baud). */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#ifndef MCUD_UART_REG_SHIFT
#define MCUD_UART_REG_SHIFT 2
#endif
#if MCUD_UART_REG_SHIFT == 0
typedef uint8_t mcud_ns16550_reg;
#else
typedef uint32_t mcud_ns16550_reg;
#endif

#define REG(index) (*(volatile mcud_ns16550_reg *)(port->base + ((index) << MCUD_UART_REG_SHIFT)))
#define RBR_THR_DLL 0u /* register indices */
#define IER_DLH 1u
#define FCR 2u
#define LCR 3u
#define LSR 5u
#define LCR_8N1 0x03u
#define LCR_DLAB 0x80u
#define FCR_FIFO 0x07u /* enable, clear both FIFOs */
#define IER_RX 0x01u
#define LSR_DR 0x01u
#define LSR_THRE 0x20u

void mcud_uart_port_init(const mcud_uart_port *port)
{
    uint32_t div = (port->brr + 8u) / 16u;
    REG(IER_DLH) = 0;
    REG(LCR) = LCR_DLAB;
    REG(RBR_THR_DLL) = div & 0xFFu;
    REG(IER_DLH) = (div >> 8) & 0xFFu;
    REG(LCR) = LCR_8N1;
    REG(FCR) = FCR_FIFO;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (!(REG(LSR) & LSR_THRE)) {
        return 0;
    }
    REG(RBR_THR_DLL) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    if (REG(LSR) & LSR_DR) {
        return (int32_t)(REG(RBR_THR_DLL) & 0xFFu);
    }
    return -1;
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    if (port->irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(IER_DLH) = IER_RX;
    mcud_nvic_enable((uint32_t)port->irq);
    while (!(REG(LSR) & LSR_DR)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(IER_DLH) = 0;
    mcud_nvic_disable_and_clear((uint32_t)port->irq);
    mcud_irq_restore(primask);
}
