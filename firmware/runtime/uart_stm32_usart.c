/* STM32 USART with the SR/DR register layout (STM32F1, F2, F4), polled; sleeps on its receive interrupt between frames. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_irq.h"

#define REG(off) (*(volatile uint32_t *)(base + (off)))
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

static uint32_t base;
static int32_t irq = -1;

void mcud_uart_init(const mcud_fw_config *config)
{
    base = config->uart_base;
    irq = config->uart_irq;
    REG(CR1) = 0;
    REG(BRR) = config->uart_brr;
    REG(CR1) = CR1_UE | CR1_TE | CR1_RE;
}

void mcud_uart_write(const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        while (!(REG(SR) & SR_TXE)) {
        }
        REG(DR) = data[i];
    }
}

int32_t mcud_uart_read(void)
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

void mcud_uart_wait(void)
{
    if (irq < 0) {
        return;
    }
    uint32_t primask = mcud_irq_save();
    REG(CR1) |= CR1_RXNEIE;
    mcud_nvic_enable((uint32_t)irq);
    while (!(REG(SR) & SR_RXNE)) { /* a byte that came before the WFI leaves it pending */
        mcud_wait_for_interrupt();
    }
    REG(CR1) &= ~CR1_RXNEIE; /* the interrupt line falls: RXNE alone no longer raises it */
    mcud_nvic_disable_and_clear((uint32_t)irq);
    mcud_irq_restore(primask);
}
