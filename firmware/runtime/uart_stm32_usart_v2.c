/* STM32 USART / LPUART with the ISR/RDR/TDR register layout (STM32F0, F3, F7, H7, L4), polled. */
#include <stdint.h>

#include "mcud_fw.h"

#define REG(off) (*(volatile uint32_t *)(base + (off)))
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
#define CR1_TE (1u << 3)

static uint32_t base;

void mcud_uart_init(const mcud_fw_config *config)
{
    base = config->uart_base;
    REG(CR1) = 0;
    REG(BRR) = config->uart_brr;
    REG(CR1) = CR1_UE | CR1_TE | CR1_RE;
}

void mcud_uart_write(const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        while (!(REG(ISR) & ISR_TXE)) {
        }
        REG(TDR) = data[i];
    }
}

int32_t mcud_uart_read(void)
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
