/* Arm CMSDK APB UART (MPS2 boards), polled. */
#include <stdint.h>

#include "mcud_fw.h"

#define REG(off) (*(volatile uint32_t *)(base + (off)))
#define DATA 0x00u
#define STATE 0x04u
#define CTRL 0x08u
#define BAUDDIV 0x10u
#define STATE_TX_FULL 1u
#define STATE_RX_FULL 2u

static uint32_t base;

void mcud_uart_init(const mcud_fw_config *config)
{
    base = config->uart_base;
    REG(BAUDDIV) = config->uart_brr < 16u ? 16u : config->uart_brr;
    REG(CTRL) = 3u; /* TX and RX enabled, no interrupts */
}

void mcud_uart_write(const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        while (REG(STATE) & STATE_TX_FULL) {
        }
        REG(DATA) = data[i];
    }
}

int32_t mcud_uart_read(void)
{
    if (REG(STATE) & STATE_RX_FULL) {
        return (int32_t)(REG(DATA) & 0xFFu);
    }
    return -1;
}
