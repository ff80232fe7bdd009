/* The measurer's serial protocol, device side. mcudeploy/device/protocol.py is the host side
 * and documents every command; the two must agree on every number below.
 *
 * Frame (all integers little-endian):
 *   0  2  magic 0xA5 0x5A
 *   2  1  protocol version (MCUD_PROTO_VERSION)
 *   3  1  command: a request (< 0x80), its reply (request | 0x80), BOOT or ERROR
 *   4  2  sequence number: a reply echoes its request's
 *   6  2  payload length n (at most MCUD_PROTO_MAX_PAYLOAD)
 *   8  n  payload
 *   8+n 4 CRC-32 (zlib's) of bytes 2 .. 8+n-1
 *
 * LOAD_INPUT, LOAD_INPUT_FILE, RUN, RUN_LINKED, READ_TICKS and READ_OUTPUT carry a run id: a RUN acts only on
 * inputs loaded under its id, a RUN whose id the device has just run is answered from its result
 * (not run again: the run may have overwritten its inputs in the arena), and outputs and ticks
 * are read only under the id of the run that made them.
 */
#ifndef MCUD_PROTOCOL_H
#define MCUD_PROTOCOL_H

#define MCUD_PROTO_MAGIC0 0xA5u
#define MCUD_PROTO_MAGIC1 0x5Au
#define MCUD_PROTO_VERSION 2u
#define MCUD_PROTO_HEADER 8u
#define MCUD_PROTO_TRAILER 4u
#define MCUD_PROTO_MAX_PAYLOAD 2048u
#define MCUD_PROTO_REPLY 0x80u

enum {
    MCUD_CMD_IDENTIFY = 0x01,
    MCUD_CMD_LOAD_INPUT = 0x02,
    MCUD_CMD_RUN = 0x03,
    MCUD_CMD_READ_TICKS = 0x04,
    MCUD_CMD_READ_OUTPUT = 0x05,
    MCUD_CMD_RUN_OP = 0x06,
    MCUD_CMD_CALIBRATE = 0x07,
    MCUD_CMD_ECHO = 0x08,
    MCUD_CMD_RESET = 0x09,
    MCUD_CMD_EXIT = 0x0A,
    MCUD_CMD_LOAD_INPUT_FILE = 0x0B, /* emulated boards: read input bytes from a host file (semihosting) */
    MCUD_CMD_RUN_LINKED = 0x0C, /* a chip of a chain: take the linked inputs, run, send the linked outputs (link.c) */
    MCUD_CMD_READ_STACK = 0x0D, /* the stack's size and the most of it used since reset (startup.c's paint) */
    MCUD_CMD_ACK = 0xFD,  /* "working on it": sent before a command that takes long (RUN, RUN_OP, CALIBRATE) */
    MCUD_CMD_BOOT = 0xFE, /* unsolicited, sent once at start-up */
    MCUD_CMD_ERROR = 0xFF
};

enum {
    MCUD_ERR_BAD_CRC = 1,
    MCUD_ERR_TRUNCATED = 2,
    MCUD_ERR_TOO_LONG = 3,
    MCUD_ERR_BAD_VERSION = 4,
    MCUD_ERR_UNKNOWN_COMMAND = 5,
    MCUD_ERR_BAD_ARGUMENT = 6,
    MCUD_ERR_UNSUPPORTED = 7,
    MCUD_ERR_BAD_STATE = 8, /* a run id the device holds no inputs or results for */
    MCUD_ERR_STALLED = 9,   /* two cores: the other core took or finished no frame in time */
    MCUD_ERR_LINK = 10      /* a chain: a link frame failed its check or did not arrive, or the next chip took none */
};

/* A frame that stops for this long (ms) between two of its bytes is dropped and answered with
 * MCUD_ERR_TRUNCATED. */
#define MCUD_PROTO_FRAME_TIMEOUT_MS 100u

#endif /* MCUD_PROTOCOL_H */
