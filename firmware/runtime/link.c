/* Framed, checksummed transfers between the chips of a chain, over a UART per neighbour, resent on loss.
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
 * The receiver asks for each tensor with a want message on the same UART, the other way:
 *   0  2  magic 0xA5 0xC3
 *   2  4  frame number
 *   6  2  tensor index wanted (the number of linked inputs: every one arrived)
 *   8  4  CRC-32 of bytes 2 .. 7
 * (stop and wait). The receiver wants tensor t when it starts, when tensor t - 1 arrived whole, when a
 * frame arrives damaged (its header, length or CRC-32 does not match, or it stopped half-way: thrown
 * away), when a copy of a frame it already has arrives (its want was lost: said again), and after every
 * `wait` ticks of silence. The sender sends tensor t when it is wanted (not again within `wait` of the
 * last time: wants queued while it computed), and again when no answer comes (after `wait`, then
 * twice as long each time). After
 * the last tensor the receiver lingers, saying again that it has everything to a sender whose last
 * answer was lost. A receiver takes only a whole, checked frame: the stage never runs on damaged
 * bytes. A link silent for longer than `timeout`, or a tensor damaged LINK_TRIES times in a row, is an
 * error the caller reports to the host. */
#include <stdint.h>
#include <string.h>

#include "mcud_bytes.h"
#include "mcud_fw.h"
#include "mcud_model.h"

#define LINK_MAGIC0 0xA5u
#define LINK_MAGIC1 0x5Au
#define LINK_WANT1 0xC3u
#define LINK_HEADER 14u
#define LINK_WANT 12u
#define LINK_TRIES 16u  /* sends of one tensor, or damaged arrivals of it in a row, before the link is given up */
#define LINK_LINGER 4u  /* the receiver's silence after its last want, in waits */

static uint32_t resent;  /* this run: tensors sent again on the down link */
static uint32_t refused; /* this run: damaged or repeated frames thrown away from the up link */

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

/* A byte from `port` within `wait` ticks, or -1. */
static int32_t byte_within(const mcud_fw_link *link, const mcud_uart_port *port, uint64_t wait)
{
    uint8_t c;
    return move(link, port, &c, 1, wait, 0) ? (int32_t)c : -1;
}

/* Skips bytes up to the next `magic0 magic1`; 1 when found, 0 when no byte came within `wait` (`*skipped`
 * counts the bytes thrown away). */
static int32_t find_magic(const mcud_fw_link *link, const mcud_uart_port *port, uint8_t magic1, uint64_t wait,
                          uint32_t *skipped)
{
    int32_t c = byte_within(link, port, wait);
    for (;;) {
        if (c < 0) {
            return 0;
        }
        if (c != (int32_t)LINK_MAGIC0) {
            (*skipped)++;
            c = byte_within(link, port, wait);
            continue;
        }
        c = byte_within(link, port, wait);
        if (c == (int32_t)magic1) {
            return 1;
        }
        (*skipped)++; /* not the second magic byte: it may start the next magic */
    }
}

/* Reads and drops bytes until `port` is silent for `wait` ticks. */
static void drain(const mcud_fw_link *link, const mcud_uart_port *port, uint64_t wait)
{
    while (byte_within(link, port, wait) >= 0) {
    }
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

void mcud_link_counts(uint32_t *resends, uint32_t *refusals)
{
    *resends = resent;
    *refusals = refused;
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

/* Says on the up link that tensor `t` of frame `frame` is wanted. */
static void want(const mcud_fw_link *link, uint32_t frame, uint32_t t, uint64_t timeout)
{
    uint8_t m[LINK_WANT];
    m[0] = LINK_MAGIC0;
    m[1] = LINK_WANT1;
    put32(m + 2, frame);
    put16(m + 6, t);
    put32(m + 8, mcud_fw_crc32(0, m + 2, 6));
    (void)move(link, link->up, m, LINK_WANT, timeout, 1); /* a want that cannot leave is said again later */
}

/* A want from the down link within `wait`: 1 with its frame and tensor, 0 when none came whole. */
static int32_t wanted(const mcud_fw_link *link, uint32_t *frame, uint32_t *t, uint64_t wait)
{
    uint8_t m[LINK_WANT];
    uint32_t skipped = 0;
    if (!find_magic(link, link->down, LINK_WANT1, wait, &skipped) || !move(link, link->down, m + 2, LINK_WANT - 2, wait, 0) ||
        mcud_fw_crc32(0, m + 2, 6) != get32(m + 8)) {
        return 0;
    }
    *frame = get32(m + 2);
    *t = get16(m + 6);
    return 1;
}

typedef enum { LINK_GOT, LINK_AGAIN, LINK_DAMAGED, LINK_SILENT } link_arrival;

/* One frame from the up link, tensor `t` of frame `frame` being due: LINK_GOT when it arrived whole into
 * its input, LINK_AGAIN for a whole copy of a tensor already taken (dropped), LINK_DAMAGED for anything
 * else that came (dropped), LINK_SILENT when nothing came within `wait`. */
static link_arrival arrive(const mcud_fw_link *link, uint32_t frame, uint32_t t, uint64_t wait)
{
    uint8_t head[LINK_HEADER], tail[4], scrap[32];
    uint32_t skipped = 0;
    if (!find_magic(link, link->up, LINK_MAGIC1, wait, &skipped)) {
        return skipped ? LINK_DAMAGED : LINK_SILENT;
    }
    head[0] = LINK_MAGIC0;
    head[1] = LINK_MAGIC1;
    if (!move(link, link->up, head + 2, LINK_HEADER - 2, wait, 0)) {
        return LINK_DAMAGED;
    }
    const uint32_t src = get16(head + 2), f = get32(head + 4), k = get16(head + 8), n = get32(head + 10);
    const int32_t due = f == frame && k == t, old = f < frame || (f == frame && k < t);
    if (src + 1u != link->stage || k >= link->receive_count || (!due && !old) ||
        n != (uint32_t)mcud_model_input_bytes(link->receive[k])) {
        drain(link, link->up, wait);
        return LINK_DAMAGED;
    }
    uint32_t crc;
    if (due) { /* straight into the input: taken only if its CRC-32 holds, else sent again whole */
        uint8_t *dst = (uint8_t *)mcud_model_input(link->receive[k]);
        if (!move(link, link->up, dst, n, wait, 0)) {
            return LINK_DAMAGED;
        }
        crc = frame_crc(head, dst, n);
    } else {
        crc = mcud_fw_crc32(0, head + 2, LINK_HEADER - 2);
        for (uint32_t done = 0; done < n;) {
            const uint32_t part = n - done < sizeof scrap ? n - done : (uint32_t)sizeof scrap;
            if (!move(link, link->up, scrap, part, wait, 0)) {
                return LINK_DAMAGED;
            }
            crc = mcud_fw_crc32(crc, scrap, part);
            done += part;
        }
    }
    if (!move(link, link->up, tail, 4, wait, 0) || crc != get32(tail)) {
        return LINK_DAMAGED;
    }
    return due ? LINK_GOT : LINK_AGAIN;
}

const char *mcud_link_receive(const mcud_fw_link *link, uint32_t frame, uint64_t timeout, uint64_t wait)
{
    uint32_t t = 0, damaged = 0;
    uint64_t since = mcud_timer_now();
    resent = 0;
    refused = 0;
    if (link->receive_count == 0) {
        return 0;
    }
    want(link, frame, t, timeout);
    while (t < link->receive_count) {
        const link_arrival a = arrive(link, frame, t, wait);
        if (a == LINK_GOT) {
            t++;
            damaged = 0;
            since = mcud_timer_now();
        } else if (a == LINK_SILENT && mcud_timer_now() - since > timeout) {
            return "no link frame arrived on the up link within the timeout";
        } else if (a != LINK_SILENT) {
            refused++;
            if (a == LINK_DAMAGED && ++damaged >= LINK_TRIES) {
                return "every frame of one tensor arrived damaged on the up link, 16 times in a row";
            }
        }
        want(link, frame, t, timeout);
    }
    for (uint32_t i = 0; i < LINK_TRIES; i++) { /* the sender may not have heard that everything came */
        if (arrive(link, frame, t, LINK_LINGER * wait) == LINK_SILENT) {
            break;
        }
        refused++;
        want(link, frame, t, timeout);
    }
    return 0;
}

/* Sends tensor `t` of frame `frame` on the down link; 0 when the next chip took no byte of it in time. */
static int32_t send_tensor(const mcud_fw_link *link, uint32_t frame, uint32_t t, uint64_t timeout)
{
    uint8_t head[LINK_HEADER], tail[4];
    const uint32_t n = (uint32_t)mcud_model_output_bytes(link->send[t]);
    uint8_t *src = (uint8_t *)mcud_model_output(link->send[t]); /* only read */
    make_head(head, link->stage, frame, t, n);
    put32(tail, frame_crc(head, src, n));
    return move(link, link->down, head, LINK_HEADER, timeout, 1) && move(link, link->down, src, n, timeout, 1) &&
           move(link, link->down, tail, 4, timeout, 1);
}

const char *mcud_link_send(const mcud_fw_link *link, uint32_t frame, uint64_t timeout, uint64_t wait)
{
    uint32_t t = 0, sends = 0; /* the tensor the next chip wants, and how often it was sent */
    uint64_t since = mcud_timer_now(), last = 0;
    if (link->send_count == 0) {
        return 0;
    }
    for (;;) {
        uint32_t f, k;
        /* unanswered, a tensor goes again after `wait`, then twice as long each time (up to 64 waits): a
         * next chip whose emulator is held up a while is not given up on */
        const int32_t heard = wanted(link, &f, &k, sends > 0 ? wait << (sends < 7u ? sends - 1u : 6u) : wait);
        const uint64_t now = mcud_timer_now();
        if (heard && f == frame && k == link->send_count && t + 1u == link->send_count && sends > 0) {
            return 0; /* everything arrived */
        }
        if (heard && f == frame && k > t && k < link->send_count && sends > 0 && k == t + 1u) {
            t = k; /* the tensor before arrived */
            sends = 0;
            since = now;
        } else if (heard && (f != frame || k != t || (sends > 0 && now - last < wait))) {
            continue; /* a want of another frame or tensor, or queued while this one was on its way */
        } else if (!heard && sends == 0) {
            if (now - since > timeout) {
                return "the next chip wanted no link frame on the down link within the timeout";
            }
            continue;
        }
        if (sends >= LINK_TRIES) {
            return "a tensor sent 16 times on the down link was not taken whole";
        }
        resent += sends > 0;
        sends++;
        last = mcud_timer_now();
        if (!send_tensor(link, frame, t, timeout)) {
            return "the next chip took no byte of a link frame on the down link within the timeout";
        }
    }
}
