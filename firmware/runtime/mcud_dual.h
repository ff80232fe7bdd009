/* Two cores, one model: core 0 serves the protocol and runs the first stage, core 1 runs the
 * second, and the boundary tensors of every frame cross a ring of slots in shared memory.
 *
 * Core 0 (RUN of frame n): waits for a free slot, copies what stage 1 reads of the model's inputs
 * into it, runs stage 0, copies stage 0's outputs for stage 1 into it, and publishes the slot
 * (DMB, head++, DSB, SEV). Core 1 takes slot after slot (WFE until head moves, DMB, copy out,
 * tail++), runs stage 1 and puts the model's outputs into an output slot (done++), so it works on
 * frame n-1 while core 0 works on frame n. The host reads frame n-1's outputs after RUN n; that
 * read gives the output slots of earlier frames back (freed). Every wait of core 0 ends after
 * stall_ticks with a sentence, so a core that stops is an error, never another frame's numbers.
 *
 * Core 1 is held at reset by the SSE-200 system control (CPUWAIT bit 1) until core 0 points
 * INITSVTOR1 at core 1's vector table and clears the bit. */
#ifndef MCUD_DUAL_H
#define MCUD_DUAL_H

#include <stdint.h>

#define MCUD_DUAL_FRAMES 8u /* run ids kept: more than the frames that can be in flight */

typedef struct {
    uint32_t sysctl_base;  /* SSE-200 system control element (INITSVTOR1 +0x114, CPUWAIT +0x118) */
    uint64_t stall_ticks;  /* a wait of core 0 longer than this is a stall */
    uint32_t stall_after;  /* tests: core 1 stops after this many frames (0: never) */
    uint8_t *ring;         /* slots x slot_bytes, in shared memory */
    uint32_t slots;
    uint32_t slot_bytes;
    uint8_t *out;          /* out_slots x out_bytes: the model's outputs per frame */
    uint32_t out_slots;
    uint32_t out_bytes;
    void (*pack_inputs)(uint8_t *slot);        /* core 0, before stage 0: model inputs stage 1 reads */
    void (*first)(void);                       /* core 0: stage 0 */
    void (*pack_sent)(uint8_t *slot);          /* core 0, after stage 0: what it sends */
    void (*unpack)(const uint8_t *slot);       /* core 1: the slot into stage 1's inputs */
    void (*second)(void);                      /* core 1: stage 1 */
    void (*pack_outputs)(uint8_t *out);        /* core 1: the model's outputs into an output slot */
} mcud_dual_config;

/* Core 0 at start-up: resets the ring and releases core 1. */
void mcud_dual_start(const mcud_dual_config *config);
/* The RUN of one frame under the host's run id (stage 0, then the hand-over). */
void mcud_dual_begin(uint32_t run_id);
void mcud_dual_run(void);
/* What stopped the last RUN (a ring that stayed full), or 0. */
const char *mcud_dual_error(void);
/* Waits until core 1 finished the frame of run_id and selects its outputs (mcud_dual_output); 0 when
 * ready, else why not (no such frame, or core 1 stalled). */
const char *mcud_dual_select(uint32_t run_id);
/* 1 when the frame of run_id is not finished yet: a READ_OUTPUT will wait (the host is told first). */
int32_t mcud_dual_pending(uint32_t run_id);
uint8_t *mcud_dual_output(void);

#endif /* MCUD_DUAL_H */
