/* Framed, checksummed transfers between the chips of a chain, over a UART per neighbour.
 *
 * Per frame, every tensor that crosses the link travels as one link frame, the format of
 * mcudeploy/stages/chain.py (all integers little-endian):
 *   0  2  magic 0xA5 0x5A
 *   2  2  source stage
 *   4  4  frame number
 *   8  2  tensor index (in the order of the receiving stage's linked inputs)
 *  10  4  payload length n
 *  14  n  payload
 *  14+n 4 CRC-32 (zlib's) of bytes 2 .. 14+n-1
 * A receiver takes the payload straight into the model's input; a frame whose CRC-32 fails, that
 * comes out of order or with another length, or a link silent for longer than the timeout, is an
 * error the caller reports to the host: the stage never runs on such bytes. */
#include <stdint.h>
#include <string.h>

#include "mcud_bytes.h"
#include "mcud_fw.h"
#include "mcud_model.h"

#define LINK_MAGIC0 0xA5u
#define LINK_MAGIC1 0x5Au
#define LINK_HEADER 14u

static void pause(const mcud_fw_link *link)
{
    for (volatile uint32_t i = 0; i < link->idle_pause; i++) {
    }
}

/* n bytes from (`out` 0) or to (`out` 1) `port`, each within `timeout` ticks of the one before; 0 when
 * the link fell silent or stalled. */
static int32_t move(const mcud_fw_link *link, const mcud_uart_port *port, uint8_t *buf, uint32_t n, uint64_t timeout,
                    int32_t out)
{
    uint64_t last = mcud_timer_now();
    for (uint32_t i = 0; i < n;) {
        int32_t c = out ? (mcud_uart_port_put(port, buf[i]) ? 0 : -1) : mcud_uart_port_read(port);
        if (c >= 0) {
            if (!out) {
                buf[i] = (uint8_t)c;
            }
            i++;
            last = mcud_timer_now();
        } else if (mcud_timer_now() - last > timeout) {
            return 0;
        } else {
            pause(link);
        }
    }
    return 1;
}

void mcud_link_init(const mcud_fw_link *link)
{
    if (link->up != 0) {
        mcud_uart_port_init(link->up);
    }
    if (link->down != 0) {
        mcud_uart_port_init(link->down);
    }
}

int32_t mcud_link_receives(const mcud_fw_link *link, uint32_t index)
{
    for (uint32_t t = 0; t < link->receive_count; t++) {
        if (link->receive[t] == index) {
            return 1;
        }
    }
    return 0;
}

/* The header of tensor `t` of frame `frame` from stage `stage`: `n` bytes of payload. */
static void make_head(uint8_t *head, uint32_t stage, uint32_t frame, uint32_t t, uint32_t n)
{
    head[0] = LINK_MAGIC0;
    head[1] = LINK_MAGIC1;
    put16(head + 2, stage);
    put32(head + 4, frame);
    put16(head + 8, t);
    put32(head + 10, n);
}

static uint32_t frame_crc(const uint8_t *head, const uint8_t *payload, uint32_t n)
{
    return mcud_fw_crc32(mcud_fw_crc32(0, head + 2, LINK_HEADER - 2), payload, n);
}

const char *mcud_link_receive(const mcud_fw_link *link, uint32_t frame, uint64_t timeout)
{
    for (uint32_t t = 0; t < link->receive_count; t++) {
        uint8_t head[LINK_HEADER], due[LINK_HEADER], tail[4];
        const uint32_t n = (uint32_t)mcud_model_input_bytes(link->receive[t]);
        uint8_t *dst = (uint8_t *)mcud_model_input(link->receive[t]);
        make_head(due, link->stage - 1u, frame, t, n);
        if (!move(link, link->up, head, LINK_HEADER, timeout, 0)) {
            return "no link frame arrived from the upstream chip within the timeout";
        }
        if (memcmp(head, due, 2) != 0 || memcmp(head + 10, due + 10, 4) != 0) {
            return "a corrupt link frame arrived from the upstream chip (its header does not match)";
        }
        if (!move(link, link->up, dst, n, timeout, 0) || !move(link, link->up, tail, 4, timeout, 0)) {
            return "a link frame from the upstream chip stopped half-way (the link fell silent)";
        }
        if (frame_crc(head, dst, n) != get32(tail)) {
            return "a corrupt link frame arrived from the upstream chip (its CRC-32 does not match)";
        }
        if (memcmp(head, due, LINK_HEADER) != 0) {
            return "a link frame of another stage, frame or tensor arrived from the upstream chip";
        }
    }
    return 0;
}

const char *mcud_link_send(const mcud_fw_link *link, uint32_t frame, uint64_t timeout)
{
    for (uint32_t t = 0; t < link->send_count; t++) {
        uint8_t head[LINK_HEADER], tail[4];
        const uint32_t n = (uint32_t)mcud_model_output_bytes(link->send[t]);
        uint8_t *src = (uint8_t *)mcud_model_output(link->send[t]); /* only read */
        make_head(head, link->stage, frame, t, n);
        put32(tail, frame_crc(head, src, n));
        if (!move(link, link->down, head, LINK_HEADER, timeout, 1) || !move(link, link->down, src, n, timeout, 1) ||
            !move(link, link->down, tail, 4, timeout, 1)) {
            return "the downstream chip took no byte of a link frame within the timeout";
        }
    }
    return 0;
}
