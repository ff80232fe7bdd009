/* The host's UART: the board's port for the protocol, served by its driver (uart_*.c). */
#include <stdint.h>

#include "mcud_fw.h"

static mcud_uart_port host;

void mcud_uart_init(const mcud_fw_config *config)
{
    host.base = config->uart_base;
    host.irq = config->uart_irq;
    host.brr = config->uart_brr;
    mcud_uart_port_init(&host);
}

void mcud_uart_write(const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        while (!mcud_uart_port_put(&host, data[i])) {
        }
    }
}

int32_t mcud_uart_read(void)
{
    return mcud_uart_port_read(&host);
}

void mcud_uart_wait(void)
{
    mcud_uart_port_wait(&host);
}
