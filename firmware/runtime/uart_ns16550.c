/* A 16550-compatible UART with 32-bit register spacing (Synopsys DW_apb_uart: Alif Ensemble), polled;
 * sleeps on its receive interrupt between frames. port->brr is clock / baud (as for the STM32 USART);
 * the divisor latch takes clock / (16 * baud). */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define RBR_THR_DLL 0x00u
#define IER_DLH 0x04u
#define FCR 0x08u
#define LCR 0x0Cu
#define LSR 0x14u
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
