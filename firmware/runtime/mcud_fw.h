/* mcudeploy measurer firmware: what the generated main.c hands to the runtime, and the small
 * port interface (UART, timer, system) that each board's drivers implement.
 *
 * The runtime is plain C99 and board independent; which UART and timer driver is linked in,
 * and every address, comes from the board file through the generated main.c. */
#ifndef MCUD_FW_H
#define MCUD_FW_H

#include <stdint.h>

/* One read-modify-write of a memory-mapped register, run before the UART starts
 * (clock enables, pin multiplexing): *addr = (*addr & ~clear) | set; then, when wait is not 0, until
 * (*addr & wait) == wait (a reset released, an oscillator stable), for a bounded number of reads. */
typedef struct {
    uint32_t addr;
    uint32_t clear;
    uint32_t set;
    uint32_t wait;
} mcud_fw_reg_write;

/* A UART: the host's port, or a link port to a neighbouring chip. */
typedef struct {
    uint32_t base;
    int32_t irq;  /* its receive interrupt (NVIC number), -1: none known, poll */
    uint32_t brr; /* baud-rate register value (ignored by QEMU's models) */
} mcud_uart_port;

/* A chip's place in a chain of chips (link.c): its link ports and what crosses them per frame.
 * Received tensors are model inputs, sent ones model outputs, in the order of the link's tensor
 * indices (mcudeploy/stages/chain.py frames them the same way). */
typedef struct {
    uint32_t stage;
    const mcud_uart_port *up;   /* 0: the first stage (its inputs come from the host) */
    const mcud_uart_port *down; /* 0: the last stage (the host reads its outputs) */
    const uint8_t *receive;     /* input indices taken from the up link */
    uint32_t receive_count;
    const uint8_t *send;        /* output indices sent on the down link */
    uint32_t send_count;
    uint32_t idle_pause; /* empty loop turns between polls: emulated boards (see protocol.c's serve loop) */
} mcud_fw_link;

typedef struct {
    const char *board;            /* board name, as in boards/NAME.json */
    const char *firmware_version; /* mcudeploy version that generated the firmware */
    uint32_t model_id;            /* CRC-32 of the generated model.c (0: no model) */
    uint32_t uart_base;
    uint32_t uart_brr;            /* baud-rate register value (ignored by QEMU's models) */
    int32_t uart_irq;             /* the UART's receive interrupt (NVIC number), -1: none known, poll */
    uint32_t timer_hz;            /* ticks per second of mcud_timer_now() (a cycle counter's: core_hz) */
    uint32_t core_hz;             /* the core clock the start-up left (mcud_clock.h) */
    uint32_t clock_status;        /* MCUD_CLOCK_RESET, _SET or _FALLBACK */
    const char *clock_note;       /* after a fallback, the wait that timed out */
    uint32_t emulated;            /* 1: semihosting is available (QEMU), 0: real hardware */
    const mcud_fw_reg_write *init;
    uint32_t init_count;
    uint64_t *op_ticks;           /* MCUD_NUM_OPS counters, owned by main.c */
    uint32_t num_ops;
    uint32_t arena_bytes;
    uint32_t dma_base;            /* the board's DMA engine (dma_*.c), 0: none */
    uint32_t dma_channels;        /* channels the firmware may use */
    const mcud_fw_link *link;     /* a chip of a chain: its link ports (link.c), 0: none */
} mcud_fw_config;

/* ---- the measurer (protocol.c, measure.c) ---- */
void mcud_fw_serve(const mcud_fw_config *config); /* never returns */
void mcud_fw_measure_init(const mcud_fw_config *config);
/* Run the whole model once; fills config->op_ticks, returns the total ticks. */
uint64_t mcud_fw_run_model(void);
/* Run operator `op` alone `repeat` times; the ticks of each repetition are summarised. */
void mcud_fw_run_op(uint32_t op, uint32_t repeat, uint64_t *total, uint64_t *min, uint64_t *max);
/* A fixed loop of 2 instructions per iteration, to relate ticks to instructions. */
uint64_t mcud_fw_calibrate(uint32_t iterations);
/* startup.c: the stack's bytes (the link script's _sstack to _estack) and the most of them used since reset, found by the
 * paint Reset_Handler left below its frame; all of them where the paint is gone to the bottom (an overflow, likely). */
uint32_t mcud_fw_stack_bytes(void);
uint32_t mcud_fw_stack_used(void);
/* What MCUD_OP_BEGIN / MCUD_OP_END call (see mcud_measure.h, generated). */
int32_t mcud_fw_op_enabled(int32_t op);
void mcud_fw_op_begin(int32_t op);
void mcud_fw_op_end(int32_t op);

/* ---- CRC-32 (IEEE 802.3, as zlib.crc32) ---- */
uint32_t mcud_fw_crc32(uint32_t crc, const uint8_t *data, uint32_t n);

/* ---- port: UART (uart_*.c, one driver for every port of a board) ---- */
void mcud_uart_port_init(const mcud_uart_port *port);
int32_t mcud_uart_port_put(const mcud_uart_port *port, uint8_t byte); /* 1: taken, 0: the transmitter is full */
int32_t mcud_uart_port_read(const mcud_uart_port *port);              /* a received byte, or -1 when none is waiting */
/* Sleeps (WFI) until a byte has arrived; returns at once when port->irq < 0. */
void mcud_uart_port_wait(const mcud_uart_port *port);

/* ---- the host's UART (uart.c: the port of config->uart_*) ---- */
void mcud_uart_init(const mcud_fw_config *config);
void mcud_uart_write(const uint8_t *data, uint32_t n);
int32_t mcud_uart_read(void);
void mcud_uart_wait(void);

/* ---- links between chips (link.c) ---- */
void mcud_link_init(const mcud_fw_link *link);
/* Frame `frame`'s inputs from the up link and outputs to the down link, resent after `wait` ticks
 * without an answer, given up after `timeout` ticks of silence; 0 on success, else what went wrong
 * in a few words. mcud_link_receive starts a run's counts of resends and refused frames. */
const char *mcud_link_receive(const mcud_fw_link *link, uint32_t frame, uint64_t timeout, uint64_t wait);
const char *mcud_link_send(const mcud_fw_link *link, uint32_t frame, uint64_t timeout, uint64_t wait);
/* This run's tensors sent again on the down link, and damaged or repeated frames refused from the up link. */
void mcud_link_counts(uint32_t *resends, uint32_t *refusals);
/* Whether input `index` comes from the up link. */
int32_t mcud_link_receives(const mcud_fw_link *link, uint32_t index);

/* ---- port: timer (timer_*.c) ---- */
void mcud_timer_init(void);
void mcud_timer_restart(void); /* aligns the tick phase to this instruction (deterministic under QEMU -icount) */
uint64_t mcud_timer_now(void);
void mcud_timer_suspend(void); /* before the device sleeps: nothing of the timer's may wake it */
void mcud_timer_resume(void);  /* after: running again (the count restarts) */

/* ---- port: DMA engine (dma_*.c, boards whose data name one; the copies are mcud_dma.h's) ---- */
void mcud_dma_init(const mcud_fw_config *config);

/* ---- port: system (system.c) ---- */
void mcud_sys_init(const mcud_fw_config *config); /* runs the register writes of config->init */
void mcud_sys_reset(void);                        /* never returns */
void mcud_sys_exit(int32_t code);                 /* QEMU: ends the emulator with `code`; hardware: resets */
uint32_t mcud_sys_core(void);                     /* the core running the caller: 0, or 1 on two cores (dual.c) */
void mcud_sys_fault(void);                        /* a CPU fault: QEMU exits with MCUD_EXIT_FAULT, hardware resets */
/* Emulated boards: read n bytes at `offset` of the host file `path` (Arm semihosting); 0 on success. */
int32_t mcud_sys_read_host_file(const char *path, uint32_t offset, uint8_t *dst, uint32_t n);
/* The architecture's semihosting call (arch_arm.c, arch_riscv.c): operation `op` on `block`, its result. */
int32_t mcud_semihosting(uint32_t op, const uint32_t *block);

/* QEMU's exit status when the firmware takes a fault (HardFault, MemManage, BusFault, UsageFault). */
#define MCUD_EXIT_FAULT 3
/* ... when the fault is a push into the stack's guarded bottom (startup.c): the stack overflowed. */
#define MCUD_EXIT_STACK 4
/* The fault that last reset a real board (MCUD_EXIT_FAULT or MCUD_EXIT_STACK; 0: none), its CFSR and fault address
 * (MMFAR or BFAR where valid, else 0), kept across the reset by startup.c; cleared once taken (BOOT reports it). */
uint32_t mcud_fw_take_fault(uint32_t *cfsr, uint32_t *addr);

#endif /* MCUD_FW_H */
