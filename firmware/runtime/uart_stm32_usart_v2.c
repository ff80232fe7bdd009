/* STM32 USART / LPUART with the ISR/RDR/TDR register layout (STM32F0, F3, F7, H7, L4), polled; sleeps on its receive interrupt between frames. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define CR1 0x00u
#define BRR 0x0Cu
#define ISR 0x1Cu
#define ICR 0x20u
#define RDR 0x24u
#define TDR 0x28u
#define ISR_ORE (1u << 3)
#define ISR_RXNE (1u << 5)
#define ISR_TXE (1u << 7)
#define CR1_UE (1u << 0)
#define CR1_RE (1u << 2)
#define CR1_RXNEIE (1u << 5)
#define CR1_TE (1u << 3)

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(CR1) = 0;
    REG(BRR) = port->brr;
    REG(CR1) = CR1_UE | CR1_TE | CR1_RE;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (!(REG(ISR) & ISR_TXE)) {
        return 0;
    }
    REG(TDR) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    uint32_t isr = REG(ISR);
    if (isr & ISR_RXNE) {
        return (int32_t)(REG(RDR) & 0xFFu);
    }
    if (isr & ISR_ORE) { /* a byte was lost; the frame's CRC reports it */
        REG(ICR) = ISR_ORE;
    }
    return -1;
}

void mcud_uart_port_wait(const mcud_uart_port *port)
{
    if (port->irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(CR1) |= CR1_RXNEIE;
    mcud_nvic_enable((uint32_t)port->irq);
    while (!(REG(ISR) & ISR_RXNE)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(CR1) &= ~CR1_RXNEIE; /* the interrupt line falls: RXNE alone no longer raises it */
    mcud_nvic_disable_and_clear((uint32_t)port->irq);
    mcud_irq_restore(primask);
}
