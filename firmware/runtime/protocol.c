/* The measurer's command loop: receive a frame, check it, act, answer. A frame that fails
 * its checksum, is too long, or stops half-way is never acted on; the device answers
 * ERROR and keeps serving. Every command but RESET and EXIT is safe to receive twice, so the
 * host may simply resend a request whose answer it did not get: a RUN is keyed by its run id
 * (a repeated id is answered from the result, not run again over inputs the run overwrote),
 * and inputs, outputs and ticks belong to one run id. Between frames the device sleeps until
 * the UART has a byte, where the board names the UART's interrupt. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcud_bytes.h"
#include "mcud_fw.h"
#include "mcud_protocol.h"
#include "mcud_model.h"
#if defined(MCUD_CORES_FIRMWARE)
#include "mcud_cores.h"
#endif

#define FRAME_BYTES (MCUD_PROTO_HEADER + MCUD_PROTO_MAX_PAYLOAD + MCUD_PROTO_TRAILER)

/* One buffer for the request and its reply: every handler reads all of its request before it
 * writes the reply, so they can share it (2 KB of SRAM less for the model). */
static uint8_t frame[FRAME_BYTES];
#define rx frame
#define tx frame
static const mcud_fw_config *cfg;

/* The run the host is preparing (inputs loaded under load_id) and the last run made. */
static uint32_t load_id;
static const uint32_t num_inputs = MCUD_NUM_INPUTS; /* a variable: the measurer alone has none */
static uint8_t loaded[MCUD_NUM_INPUTS > 0 ? MCUD_NUM_INPUTS : 1];
static uint32_t run_id;
static uint32_t run_valid;
static uint64_t run_total;

/* The last RUN_OP or CALIBRATE, by its frame's checksum, and its reply: the same frame again (the
 * host resends when an answer is lost) is answered without measuring again. */
static uint32_t long_crc;
static uint32_t long_valid;
static uint8_t long_reply[24];
static uint32_t long_len;


static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* The payload of the reply being built lives at tx + MCUD_PROTO_HEADER. */
#define OUT (tx + MCUD_PROTO_HEADER)

static void send_frame(uint32_t cmd, uint32_t seq, uint32_t n)
{
    tx[0] = MCUD_PROTO_MAGIC0;
    tx[1] = MCUD_PROTO_MAGIC1;
    tx[2] = MCUD_PROTO_VERSION;
    tx[3] = (uint8_t)cmd;
    put16(tx + 4, seq);
    put16(tx + 6, n);
    put32(tx + MCUD_PROTO_HEADER + n, mcud_fw_crc32(0, tx + 2, MCUD_PROTO_HEADER - 2 + n));
    mcud_uart_write(tx, MCUD_PROTO_HEADER + n + MCUD_PROTO_TRAILER);
}

static uint32_t put_string(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    if (n > 255) {
        n = 255;
    }
    p[0] = (uint8_t)n;
    memcpy(p + 1, s, n);
    return (uint32_t)n + 1;
}

static void send_error(uint32_t seq, uint32_t code, const char *message)
{
    OUT[0] = (uint8_t)code;
    send_frame(MCUD_CMD_ERROR, seq, 1 + put_string(OUT + 1, message));
}

static void send_boot(void)
{
    uint32_t cfsr, addr;
    OUT[0] = MCUD_PROTO_VERSION;
    uint32_t n = 1 + put_string(OUT + 1, cfg->board);
    OUT[n++] = (uint8_t)mcud_fw_take_fault(&cfsr, &addr); /* why the board restarted: a fault, the stack, or 0 */
    put32(OUT + n, cfsr);
    put32(OUT + n + 4, addr);
    send_frame(MCUD_CMD_BOOT, 0, n + 8);
}

static uint32_t identify(void)
{
    uint32_t n = 0;
    OUT[n++] = MCUD_PROTO_VERSION;
    OUT[n++] = MCUD_NUM_INPUTS;
    OUT[n++] = MCUD_NUM_OUTPUTS;
    OUT[n++] = (uint8_t)(cfg->emulated ? 1 : 0);
    put16(OUT + n, MCUD_PROTO_MAX_PAYLOAD);
    n += 2;
    put16(OUT + n, cfg->num_ops);
    n += 2;
    put32(OUT + n, cfg->arena_bytes);
    n += 4;
    put32(OUT + n, cfg->timer_hz);
    n += 4;
    put32(OUT + n, cfg->model_id);
    n += 4;
    for (int32_t i = 0; i < MCUD_NUM_INPUTS; i++, n += 4) {
        put32(OUT + n, (uint32_t)mcud_model_input_bytes(i));
    }
    for (int32_t i = 0; i < MCUD_NUM_OUTPUTS; i++, n += 4) {
        put32(OUT + n, (uint32_t)mcud_model_output_bytes(i));
    }
    n += put_string(OUT + n, cfg->board);
    n += put_string(OUT + n, cfg->firmware_version);
    put32(OUT + n, cfg->core_hz); /* appended: an older host reads no further */
    n += 4;
    OUT[n++] = (uint8_t)cfg->clock_status;
    n += put_string(OUT + n, cfg->clock_note != 0 ? cfg->clock_note : "");
    return n;
}

/* Checks an (index, offset, length) access to a model input or output. */
static uint8_t *io_span(int input, uint32_t index, uint32_t offset, uint32_t length)
{
    const uint32_t count = input ? (uint32_t)MCUD_NUM_INPUTS : (uint32_t)MCUD_NUM_OUTPUTS;
    if (index >= count) {
        return NULL;
    }
    size_t size = input ? mcud_model_input_bytes((int32_t)index) : mcud_model_output_bytes((int32_t)index);
    if (offset > size || length > size - offset) {
        return NULL;
    }
    return (uint8_t *)(input ? mcud_model_input((int32_t)index) : mcud_model_output((int32_t)index)) + offset;
}

/* The arena is about to change under the inputs and outputs: no run result stays readable and
 * every input must be loaded again. */
static void forget_run(void)
{
    run_valid = 0;
    for (uint32_t i = 0; i < num_inputs; i++) {
        loaded[i] = 0;
    }
}

static void note_load(uint32_t id, uint32_t index)
{
    if (id != load_id) {
        forget_run();
        load_id = id;
    }
    run_valid = 0; /* the bytes just written may lie where the last run's outputs are */
    loaded[index] = 1;
}

static int32_t inputs_loaded(uint32_t id)
{
    if (num_inputs == 0) {
        return 1;
    }
    if (id != load_id) {
        return 0;
    }
    for (uint32_t i = 0; i < num_inputs; i++) {
        if (!loaded[i]) {
            return 0;
        }
    }
    return 1;
}

/* The inputs of run `id` the host gives (not the up link's, on a chip of a chain) are all loaded. */
static int32_t host_inputs_loaded(uint32_t id)
{
    for (uint32_t i = 0; i < num_inputs; i++) {
        if (!mcud_link_receives(cfg->link, i) && (id != load_id || !loaded[i])) {
            return 0;
        }
    }
    return 1;
}

static int32_t run_readable(uint32_t id)
{
    return run_valid && id == run_id;
}

/* Whether READ_OUTPUT may read the outputs of run `id`; if not, the error is sent. On two cores
 * (mcud_dual.h) the outputs of a frame are core 1's: wait for them (telling the host first: ACK),
 * and a core that stalls is an error. */
static int32_t outputs_held(uint32_t id, uint32_t seq)
{
#if defined(MCUD_MODEL_PIPELINED)
    if (mcud_dual_pending(id)) {
        send_frame(MCUD_CMD_ACK, seq, 0);
    }
    const char *why = mcud_dual_select(id);
    if (why != 0) {
        send_error(seq, MCUD_ERR_STALLED, why);
        return 0;
    }
    return 1;
#else
    if (!run_readable(id)) {
        send_error(seq, MCUD_ERR_BAD_STATE, "READ_OUTPUT of a run whose outputs the board no longer holds");
        return 0;
    }
    return 1;
#endif
}

static void send_run_reply(uint32_t cmd, uint32_t seq)
{
    put64(OUT, run_total);
    put16(OUT + 8, cfg->num_ops);
    if (cmd != MCUD_CMD_RUN_LINKED) {
        send_frame(cmd | MCUD_PROTO_REPLY, seq, 10);
        return;
    }
    uint32_t resends, refusals;
    mcud_link_counts(&resends, &refusals);
    put32(OUT + 10, resends);
    put32(OUT + 14, refusals);
    send_frame(cmd | MCUD_PROTO_REPLY, seq, 18);
}

/* Answers a repeated RUN or RUN_LINKED of run `id` (its answer was lost on the way) from its result; 0 if
 * the run is new. */
static int32_t replay_run(uint32_t cmd, uint32_t seq, uint32_t id)
{
    if (!run_readable(id)) {
        return 0;
    }
    send_frame(MCUD_CMD_ACK, seq, 0);
    send_run_reply(cmd, seq);
    return 1;
}

/* Answers a repeated RUN_OP or CALIBRATE frame from its stored reply; 0 if the frame is new. */
static int32_t replay_long(uint32_t cmd, uint32_t seq, uint32_t crc)
{
    if (!long_valid || crc != long_crc) {
        return 0;
    }
    send_frame(MCUD_CMD_ACK, seq, 0);
    memcpy(OUT, long_reply, long_len);
    send_frame(cmd | MCUD_PROTO_REPLY, seq, long_len);
    return 1;
}

static void keep_long(uint32_t crc, uint32_t len)
{
    memcpy(long_reply, OUT, len);
    long_len = len;
    long_crc = crc;
    long_valid = 1;
}

static void handle(uint32_t cmd, uint32_t seq, const uint8_t *in, uint32_t n, uint32_t crc)
{
    uint32_t reply = cmd | MCUD_PROTO_REPLY;
    switch (cmd) {
    case MCUD_CMD_IDENTIFY:
        send_frame(reply, seq, identify());
        return;
    case MCUD_CMD_ECHO:
        memmove(OUT, in, n);
        send_frame(reply, seq, n);
        return;
    case MCUD_CMD_LOAD_INPUT: {
        /* u32 run id, u8 index, u32 offset, data */
        uint8_t *dst = n >= 9 ? io_span(1, in[4], get32(in + 5), n - 9) : NULL;
        if (dst == NULL) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "LOAD_INPUT outside the model's inputs");
            return;
        }
        note_load(get32(in), in[4]);
        memmove(dst, in + 9, n - 9);
        send_frame(reply, seq, 0);
        return;
    }
    case MCUD_CMD_LOAD_INPUT_FILE: {
        /* u32 run id, u8 index, u32 offset in the input, u32 length, u32 offset in the file, str path */
        uint32_t length = n >= 18 ? get32(in + 9) : 0;
        uint8_t *dst = n >= 18 ? io_span(1, in[4], get32(in + 5), length) : NULL;
        char path[256];
        uint32_t path_len = n >= 18 ? in[17] : 0;
        if (!cfg->emulated) {
            send_error(seq, MCUD_ERR_UNSUPPORTED, "LOAD_INPUT_FILE is only for emulated boards");
            return;
        }
        if (dst == NULL || n < 18 + path_len) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "LOAD_INPUT_FILE outside the model's inputs");
            return;
        }
        memcpy(path, in + 18, path_len);
        path[path_len] = '\0';
        note_load(get32(in), in[4]);
        if (mcud_sys_read_host_file(path, get32(in + 13), dst, length) != 0) {
            loaded[in[4]] = 0;
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "LOAD_INPUT_FILE could not read the host file");
            return;
        }
        send_frame(reply, seq, 0);
        return;
    }
    case MCUD_CMD_READ_OUTPUT: {
        /* u32 run id, u8 index, u32 offset, u16 length */
        const uint32_t length = n >= 11 ? get16(in + 9) : 0, id = n >= 11 ? get32(in) : 0;
        const uint32_t which = n >= 11 ? in[4] : 0, offset = n >= 11 ? get32(in + 5) : 0;
        if (!outputs_held(id, seq)) {
            return;
        }
        const uint8_t *src = n >= 11 ? io_span(0, which, offset, length) : NULL;
        if (src == NULL || length > MCUD_PROTO_MAX_PAYLOAD) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "READ_OUTPUT outside the model's outputs");
            return;
        }
        memcpy(OUT, src, length);
        send_frame(reply, seq, length);
        return;
    }
    case MCUD_CMD_RUN: {
        const uint32_t id = n >= 4 ? get32(in) : 0;
        if (n < 4) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "RUN needs a run id");
            return;
        }
        if (replay_run(cmd, seq, id)) {
            return;
        }
        if (!inputs_loaded(id)) {
            send_error(seq, MCUD_ERR_BAD_STATE, "RUN before every input of this run id was loaded");
            return;
        }
        send_frame(MCUD_CMD_ACK, seq, 0);
        forget_run(); /* the run consumes its inputs: the arena holds them no longer */
#if defined(MCUD_MODEL_STATE)
        if (n >= 5 && (in[4] & 1u) != 0) { /* the first run of a sequence: the state starts afresh */
            mcud_model_reset();
        }
#endif
#if defined(MCUD_MODEL_PIPELINED)
        mcud_dual_begin(id);
        run_total = mcud_fw_run_model();
        if (mcud_dual_error() != 0) {
            send_error(seq, MCUD_ERR_STALLED, mcud_dual_error());
            return;
        }
#elif defined(MCUD_CORES_FIRMWARE)
        run_total = mcud_fw_run_model();
        if (mcud_cores_error() != 0) {
            send_error(seq, MCUD_ERR_STALLED, mcud_cores_error());
            return;
        }
#else
        run_total = mcud_fw_run_model();
#endif
        run_id = id;
        run_valid = 1;
        send_run_reply(cmd, seq);
        return;
    }
    case MCUD_CMD_RUN_LINKED: {
        /* u32 run id, u32 frame, u32 link timeout (ms), u32 resend wait (us): the up link's inputs, RUN, the
         * down link's outputs (link.c) */
        const uint32_t id = n >= 16 ? get32(in) : 0, number = n >= 16 ? get32(in + 4) : 0;
        const uint64_t timeout = n >= 16 ? (uint64_t)cfg->timer_hz * get32(in + 8) / 1000u : 0;
        const uint64_t wait = n >= 16 ? (uint64_t)cfg->timer_hz * get32(in + 12) / 1000000u + 1u : 0;
        const char *why;
        if (n < 16) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "RUN_LINKED needs a run id, a frame, a timeout and a resend wait");
            return;
        }
        if (cfg->link == 0) {
            send_error(seq, MCUD_ERR_UNSUPPORTED, "RUN_LINKED on a firmware without links to other chips");
            return;
        }
        if (replay_run(cmd, seq, id)) {
            return;
        }
        if (!host_inputs_loaded(id)) {
            send_error(seq, MCUD_ERR_BAD_STATE, "RUN_LINKED before every input the host gives was loaded");
            return;
        }
        send_frame(MCUD_CMD_ACK, seq, 0);
        forget_run();
        why = mcud_link_receive(cfg->link, number, timeout, wait);
        if (why != 0) {
            send_error(seq, MCUD_ERR_LINK, why);
            return;
        }
        run_total = mcud_fw_run_model();
        why = mcud_link_send(cfg->link, number, timeout, wait);
        if (why != 0) {
            send_error(seq, MCUD_ERR_LINK, why);
            return;
        }
        run_id = id;
        run_valid = 1;
        send_run_reply(cmd, seq);
        return;
    }
    case MCUD_CMD_READ_TICKS: {
        /* u32 run id, u16 first, u16 count */
        uint32_t first = n >= 8 ? get16(in + 4) : 0, count = n >= 8 ? get16(in + 6) : 0;
        if (n < 8 || first > cfg->num_ops || count > cfg->num_ops - first || count * 8 > MCUD_PROTO_MAX_PAYLOAD) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "READ_TICKS outside the model's operators");
            return;
        }
        if (!run_readable(get32(in))) {
            send_error(seq, MCUD_ERR_BAD_STATE, "READ_TICKS of a run whose ticks the board no longer holds");
            return;
        }
        for (uint32_t i = 0; i < count; i++) {
            put64(OUT + 8 * i, cfg->op_ticks[first + i]);
        }
        send_frame(reply, seq, 8 * count);
        return;
    }
    case MCUD_CMD_RUN_OP: {
        uint64_t total, lo, hi;
        if (n < 6 || get16(in) >= cfg->num_ops || get32(in + 2) == 0) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "RUN_OP needs an operator index of the model and a repeat of 1 or more");
            return;
        }
#if defined(MCUD_MODEL_PIPELINED)
        send_error(seq, MCUD_ERR_UNSUPPORTED, "RUN_OP on a pipeline of two cores: time each stage on its own board");
        return;
#endif
        const uint32_t op = get16(in), repeat = get32(in + 2); /* read before the ACK overwrites them */
        if (replay_long(cmd, seq, crc)) {
            return;
        }
        send_frame(MCUD_CMD_ACK, seq, 0);
        forget_run(); /* the operator writes into the arena */
        mcud_fw_run_op(op, repeat, &total, &lo, &hi);
        put64(OUT, total);
        put64(OUT + 8, lo);
        put64(OUT + 16, hi);
        keep_long(crc, 24);
        send_frame(reply, seq, 24);
        return;
    }
    case MCUD_CMD_CALIBRATE:
        if (n < 4 || get32(in) == 0) {
            send_error(seq, MCUD_ERR_BAD_ARGUMENT, "CALIBRATE needs a number of iterations");
            return;
        }
        if (!replay_long(cmd, seq, crc)) {
            const uint32_t iterations = get32(in);
            send_frame(MCUD_CMD_ACK, seq, 0);
            put64(OUT, mcud_fw_calibrate(iterations));
            keep_long(crc, 8);
            send_frame(reply, seq, 8);
        }
        return;
    case MCUD_CMD_READ_STACK: /* -> u32 the stack's bytes, u32 the most used since reset */
        put32(OUT, mcud_fw_stack_bytes());
        put32(OUT + 4, mcud_fw_stack_used());
        send_frame(reply, seq, 8);
        return;
    case MCUD_CMD_RESET:
        send_frame(reply, seq, 0);
        mcud_sys_reset();
        return;
    case MCUD_CMD_EXIT: {
        const int32_t code = n >= 1 ? in[0] : 0; /* read before the reply overwrites it */
        if (!cfg->emulated) {
            send_error(seq, MCUD_ERR_UNSUPPORTED, "EXIT is only for emulated boards");
            return;
        }
        send_frame(reply, seq, 0);
        mcud_sys_exit(code);
        return;
    }
    default:
        send_error(seq, MCUD_ERR_UNKNOWN_COMMAND, "unknown command");
        return;
    }
}

/* Acts on a complete frame in rx[0 .. total-1]. */
static void dispatch(uint32_t total)
{
    uint32_t n = get16(rx + 6), seq = get16(rx + 4);
    uint32_t crc = mcud_fw_crc32(0, rx + 2, total - 2 - MCUD_PROTO_TRAILER);
    if (crc != get32(rx + total - MCUD_PROTO_TRAILER)) {
        send_error(seq, MCUD_ERR_BAD_CRC, "bad checksum");
    } else if (rx[2] != MCUD_PROTO_VERSION) {
        send_error(seq, MCUD_ERR_BAD_VERSION, "protocol version mismatch");
    } else {
        handle(rx[3], seq, rx + MCUD_PROTO_HEADER, n, crc);
    }
}

void mcud_fw_serve(const mcud_fw_config *config)
{
    cfg = config;
    const uint64_t frame_timeout = (uint64_t)config->timer_hz * MCUD_PROTO_FRAME_TIMEOUT_MS / 1000u;
    uint32_t got = 0, want = MCUD_PROTO_HEADER;
    uint64_t started = 0;
    const uint32_t idle_pause = config->emulated ? 128u : 0u;
    send_boot();
    for (;;) {
        int32_t c = mcud_uart_read();
        if (c < 0) {
            if (got == 0 && cfg->uart_irq >= 0) { /* between frames: sleep until a byte comes */
                mcud_timer_suspend();
                mcud_uart_wait();
                mcud_timer_resume();
                continue;
            }
            /* Emulated boards idle a little between polls: under QEMU -icount every register read
             * ends a translation block, so a loop of reads alone ran guest time ~50x slower than real
             * time (the 100 ms frame timeout took 6 s); plain instructions keep it near real time.
             * Real boards poll flat out: at 4 MHz a pause would overrun the UART at 115200 baud. */
            for (volatile uint32_t pause = 0; pause < idle_pause; pause++) {
            }
            if (got > 0 && mcud_timer_now() - started > frame_timeout) {
                send_error(got >= 6 ? get16(rx + 4) : 0, MCUD_ERR_TRUNCATED, "frame truncated");
                got = 0;
            }
            continue;
        }
        if (got == 0) {
            if ((uint32_t)c == MCUD_PROTO_MAGIC0) { /* anything else before a frame is line noise */
                rx[got++] = (uint8_t)c;
                started = mcud_timer_now();
                want = MCUD_PROTO_HEADER;
            }
            continue;
        }
        if (got == 1 && (uint32_t)c != MCUD_PROTO_MAGIC1) {
            got = (uint32_t)c == MCUD_PROTO_MAGIC0 ? 1 : 0;
            continue;
        }
        rx[got++] = (uint8_t)c;
        started = mcud_timer_now(); /* the timeout is a gap between bytes, whatever the baud rate */
        if (got == MCUD_PROTO_HEADER) {
            uint32_t n = get16(rx + 6);
            if (n > MCUD_PROTO_MAX_PAYLOAD) {
                send_error(get16(rx + 4), MCUD_ERR_TOO_LONG, "payload too long");
                got = 0;
                continue;
            }
            want = MCUD_PROTO_HEADER + n + MCUD_PROTO_TRAILER;
        }
        if (got == want) {
            dispatch(got);
            got = 0;
        }
    }
}
