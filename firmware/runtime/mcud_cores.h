/* One inference on the two cores of a chip sharing its memory (mcudeploy/cores): the generated model.c's
 * NAME_run_core(core) makes a core's calls of each phase, then calls mcud_cores_barrier(core, phase), which
 * returns once both cores have finished that phase.
 *
 * Core 0 serves the protocol. Its RUN (mcud_cores_run) publishes a new run (DMB, runs++, DSB, SEV) and runs
 * core 0's steps; core 1 waits for the run (WFE), runs its steps and goes back to waiting. At a barrier each core
 * publishes how many phases it has finished in all runs so far (its own counter: one writer each), then waits
 * until the other core's counter is as far. Core 0 waits at most stall_ticks: a core 1 that does not come ends
 * the run with one sentence naming the core and the phase (mcud_cores_error), and the rest of the run skips its
 * barriers.
 *
 * Core 1 is held at reset by the SSE-200 system control (CPUWAIT bit 1) until core 0 points INITSVTOR1 at core
 * 1's vector table and clears the bit (mcud_cores_start). */
#ifndef MCUD_CORES_H
#define MCUD_CORES_H

#include <stdint.h>

typedef struct {
    uint32_t sysctl_base;          /* SSE-200 system control element (INITSVTOR1 +0x114, CPUWAIT +0x118) */
    uint64_t stall_ticks;          /* a wait of core 0 at a barrier longer than this is a stall */
    uint32_t core1_stops;          /* tests: core 1 stops instead of running its steps (0: it runs them) */
    void (*run_core)(uint32_t core); /* the model's NAME_run_core */
} mcud_cores_config;

/* Core 0 at start-up: resets the counters and releases core 1. */
void mcud_cores_start(const mcud_cores_config *config);
/* One inference on both cores (core 0's side; returns when both finished, or core 1 stalled). */
void mcud_cores_run(void);
/* What stopped the last run (core 1 that never reached a barrier), or 0. */
const char *mcud_cores_error(void);
/* Called by model.c after each phase. */
void mcud_cores_barrier(uint32_t core, uint32_t phase);

#endif /* MCUD_CORES_H */
