/* One inference on two cores (mcud_cores.h): the start of core 1, its loop, and the barrier. Each counter has
 * one writer; a writer makes its work visible (DMB), moves the counter, DSB and SEV; a reader sees the counter
 * move, then DMB before it reads what the counter guards. */
#include <stddef.h>
#include <stdint.h>

#include "mcud_cores.h"
#include "mcud_fw.h"

#define SYSCTL(off) (*(volatile uint32_t *)(uintptr_t)(cfg->sysctl_base + (off)))
#define INITSVTOR1 0x114u
#define CPUWAIT 0x118u
#define CPUWAIT_CPU1 2u
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define PAUSE 64u /* plain instructions between two looks at a counter (see wait_step) */

extern const uint32_t mcud_cores_core1_vectors[];
extern uint32_t mcud_cores_core1_stack[];
extern const uint32_t mcud_cores_core1_stack_words;

static const mcud_cores_config *cfg;
static volatile uint32_t runs;        /* runs core 0 started (core 0 writes) */
static volatile uint32_t finished[2]; /* phases each core finished, all runs together (core k writes its own) */
static const char *error;
static uint32_t skip_barriers;        /* core 0, after a stall: the rest of the run does not wait */
static char message[96];

static void publish(void)
{
    __asm__ volatile("dsb\n\tsev" : : : "memory");
}

static void acquire(void)
{
    __asm__ volatile("dmb" : : : "memory");
}

/* One look-away while waiting: WFE (on hardware it sleeps until the other core's SEV; QEMU treats it as a
 * yield to the other core), then a few plain instructions. */
static void wait_step(void)
{
    __asm__ volatile("wfe" : : : "memory");
    for (volatile uint32_t i = 0; i < PAUSE; i++) {
    }
}

uint32_t mcud_sys_core(void)
{
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    const uintptr_t lo = (uintptr_t)mcud_cores_core1_stack;
    return cfg != NULL && sp > lo && sp <= lo + 4u * mcud_cores_core1_stack_words ? 1u : 0u;
}

/* A core begins a phase's steps (its first, or after a barrier): a mark for the plugin that counts each core's
 * instructions per phase (firmware/qemu/core_phases.c), which watches this function's address. */
void mcud_cores_phase_start(uint32_t core);

__attribute__((noinline)) void mcud_cores_phase_start(uint32_t core)
{
    __asm__ volatile("" : : "r"(core) : "memory");
}

static void put_number(char *at, uint32_t value)
{
    char digits[10];
    uint32_t n = 0;
    do {
        digits[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (n > 0u) {
        *at++ = digits[--n];
    }
    *at = '\0';
}

static void stalled_at(uint32_t phase)
{
    static const char text[] = "core 1 did not reach the barrier after phase ";
    uint32_t k = 0;
    for (; text[k] != '\0'; k++) {
        message[k] = text[k];
    }
    put_number(message + k, phase);
    error = message;
    skip_barriers = 1;
}

void mcud_cores_barrier(uint32_t core, uint32_t phase)
{
    if (core == 0u && skip_barriers) {
        return;
    }
    acquire(); /* this core's writes of the phase come before its counter moves */
    const uint32_t mine = finished[core] + 1u;
    finished[core] = mine;
    publish();
    const uint32_t other = core ^ 1u;
    const uint64_t since = core == 0u ? mcud_timer_now() : 0u;
    while ((int32_t)(finished[other] - mine) < 0) {
        wait_step();
        if (core == 0u && mcud_timer_now() - since > cfg->stall_ticks) {
            stalled_at(phase);
            return;
        }
    }
    acquire(); /* the other core's writes of the phase are seen after its counter */
    mcud_cores_phase_start(core);
}

static void core1_loop(void)
{
    for (uint32_t run = 0;; run++) {
        while (runs == run) {
            wait_step();
        }
        acquire();
        mcud_cores_phase_start(1u);
        if (cfg->core1_stops != 0u) {
            for (;;) { /* tests: a core that stops */
                __asm__ volatile("wfi");
            }
        }
        cfg->run_core(1u);
    }
}

void mcud_cores_core1_reset(void);

void mcud_cores_core1_reset(void)
{
#if defined(__ARM_FP)
    SCB_CPACR |= 0xFu << 20; /* each core has its own FPU enable */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
#endif
    acquire();
    core1_loop();
}

void mcud_cores_start(const mcud_cores_config *config)
{
    cfg = config;
    runs = 0;
    finished[0] = finished[1] = 0;
    __asm__ volatile("dsb" : : : "memory"); /* all of the above is in memory before core 1 runs */
    SYSCTL(INITSVTOR1) = (uint32_t)(uintptr_t)mcud_cores_core1_vectors;
    SYSCTL(CPUWAIT) &= ~CPUWAIT_CPU1;
    publish();
}

void mcud_cores_run(void)
{
    error = 0;
    if (skip_barriers) { /* core 1 stalled before: its counter no longer follows core 0's */
        error = "core 1 stalled in an earlier run; restart the board";
        return;
    }
    acquire(); /* the inputs are in memory before core 1 may read them */
    runs = runs + 1u;
    publish();
    mcud_cores_phase_start(0u);
    cfg->run_core(0u);
}

const char *mcud_cores_error(void)
{
    return error;
}
