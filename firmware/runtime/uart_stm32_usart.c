/* STM32 USART with the SR/DR register layout (STM32F1, F2, F4), polled; sleeps on its receive interrupt between frames. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(port->base + (off)))
#define SR 0x00u
#define DR 0x04u
#define BRR 0x08u
#define CR1 0x0Cu
#define SR_ORE (1u << 3)
#define SR_RXNE (1u << 5)
#define SR_TXE (1u << 7)
#define CR1_UE (1u << 13)
#define CR1_TE (1u << 3)
#define CR1_RE (1u << 2)
#define CR1_RXNEIE (1u << 5)

void mcud_uart_port_init(const mcud_uart_port *port)
{
    REG(CR1) = 0;
    REG(BRR) = port->brr;
    REG(CR1) = CR1_UE | CR1_TE | CR1_RE;
}

int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte)
{
    if (!(REG(SR) & SR_TXE)) {
        return 0;
    }
    REG(DR) = byte;
    return 1;
}

int32_t mcud_uart_port_read(const mcud_uart_port *port)
{
    uint32_t sr = REG(SR);
    if (sr & SR_RXNE) {
        return (int32_t)(REG(DR) & 0xFFu);
    }
    if (sr & SR_ORE) { /* a byte was lost; reading DR clears the flag, the frame's CRC reports it */
        (void)REG(DR);
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
    while (!(REG(SR) & SR_RXNE)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(CR1) &= ~CR1_RXNEIE; /* the interrupt line falls: RXNE alone no longer raises it */
    mcud_nvic_disable_and_clear((uint32_t)port->irq);
    mcud_irq_restore(primask);
}
