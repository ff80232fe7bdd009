/* The two-core pipeline of mcud_dual.h: the ring's indices, core 0's side of every hand-over,
 * and core 1's loop. Each index has one writer; a writer fills what the index guards, DMB, moves
 * the index, DSB and SEV; a reader sees the index move, DMB, then reads what it guards. */
#include <stddef.h>
#include <stdint.h>

#include "mcud_dual.h"
#include "mcud_fw.h"

#define SYSCTL(off) (*(volatile uint32_t *)(uintptr_t)(cfg->sysctl_base + (off)))
#define INITSVTOR1 0x114u
#define CPUWAIT 0x118u
#define CPUWAIT_CPU1 2u
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define PAUSE 1024u /* plain instructions between two looks at the ring (see wait_step) */

extern const uint32_t mcud_dual_core1_vectors[];
extern uint32_t mcud_dual_core1_stack[];
extern const uint32_t mcud_dual_core1_stack_words;

static const mcud_dual_config *cfg;

static struct {
    volatile uint32_t head;  /* frames core 0 put in the ring (core 0 writes) */
    volatile uint32_t tail;  /* frames core 1 took out of it (core 1 writes) */
    volatile uint32_t done;  /* frames whose outputs core 1 wrote (core 1 writes) */
    volatile uint32_t freed; /* frames below this may lose their output slot (core 0 writes) */
} ring;

static uint32_t run_ids[MCUD_DUAL_FRAMES]; /* core 0's: the host's run id of frame f at f % MCUD_DUAL_FRAMES */
static uint32_t begun_id;
static const char *error;
static uint8_t *selected;

static void publish(void)
{
    __asm__ volatile("dsb\n\tsev" : : : "memory");
}

static void acquire(void)
{
    __asm__ volatile("dmb" : : : "memory");
}

/* One look-away while waiting: WFE (on hardware it sleeps until the other core's SEV or an
 * interrupt; QEMU treats it as a yield to the other core), then a few plain instructions, so that
 * under -icount a wait advances the shared clock by instructions rather than by register reads. */
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
    const uintptr_t lo = (uintptr_t)mcud_dual_core1_stack;
    return cfg != NULL && sp > lo && sp <= lo + 4u * mcud_dual_core1_stack_words ? 1u : 0u;
}

static void core1_loop(void)
{
    for (uint32_t frame = 0;; frame++) {
        if (cfg->stall_after != 0 && frame >= cfg->stall_after) {
            for (;;) { /* tests: a core that stops taking frames */
                __asm__ volatile("wfi");
            }
        }
        while (ring.head == frame) {
            wait_step();
        }
        acquire();
        cfg->unpack(cfg->ring + (frame % cfg->slots) * cfg->slot_bytes);
        __asm__ volatile("dmb" : : : "memory"); /* the slot is read before core 0 may refill it */
        ring.tail = frame + 1;
        publish();
        cfg->second();
        while (frame >= ring.freed + cfg->out_slots) { /* its output slot still holds an unread frame */
            wait_step();
        }
        acquire();
        cfg->pack_outputs(cfg->out + (frame % cfg->out_slots) * cfg->out_bytes);
        __asm__ volatile("dmb" : : : "memory");
        ring.done = frame + 1;
        publish();
    }
}

void mcud_dual_core1_reset(void);

void mcud_dual_core1_reset(void)
{
#if defined(__ARM_FP)
    SCB_CPACR |= 0xFu << 20; /* each core has its own FPU enable */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
#endif
    acquire();
    core1_loop();
}

void mcud_dual_start(const mcud_dual_config *config)
{
    cfg = config;
    ring.head = ring.tail = ring.done = ring.freed = 0;
    __asm__ volatile("dsb" : : : "memory"); /* all of the above is in memory before core 1 runs */
    SYSCTL(INITSVTOR1) = (uint32_t)(uintptr_t)mcud_dual_core1_vectors;
    SYSCTL(CPUWAIT) &= ~CPUWAIT_CPU1;
    publish();
}

/* 1 once core 0 has waited stall_ticks since `since`. */
static int32_t stalled(uint64_t since)
{
    wait_step();
    return mcud_timer_now() - since > cfg->stall_ticks;
}

void mcud_dual_begin(uint32_t run_id)
{
    begun_id = run_id;
}

void mcud_dual_run(void)
{
    const uint32_t frame = ring.head;
    error = 0;
    const uint64_t since = mcud_timer_now();
    while (frame - ring.tail >= cfg->slots) {
        if (stalled(since)) {
            error = "the ring stalled: core 1 took no frame from the full ring within the stall timeout";
            return;
        }
    }
    acquire();
    uint8_t *slot = cfg->ring + (frame % cfg->slots) * cfg->slot_bytes;
    cfg->pack_inputs(slot);
    cfg->first();
    cfg->pack_sent(slot);
    run_ids[frame % MCUD_DUAL_FRAMES] = begun_id;
    __asm__ volatile("dmb" : : : "memory");
    ring.head = frame + 1;
    publish();
}

const char *mcud_dual_error(void)
{
    return error;
}

/* The frame of run_id among those whose outputs are still kept, or -1. */
static int32_t frame_of(uint32_t run_id)
{
    for (uint32_t f = ring.freed; f < ring.head; f++) {
        if (run_ids[f % MCUD_DUAL_FRAMES] == run_id) {
            return (int32_t)f;
        }
    }
    return -1;
}

int32_t mcud_dual_pending(uint32_t run_id)
{
    const int32_t f = frame_of(run_id);
    return f >= 0 && (uint32_t)f >= ring.done;
}

const char *mcud_dual_select(uint32_t run_id)
{
    const int32_t f = frame_of(run_id);
    if (f < 0) {
        return "no frame of this run id is in the pipeline (or its outputs were given back)";
    }
    const uint64_t since = mcud_timer_now();
    while ((uint32_t)f >= ring.done) {
        if (stalled(since)) {
            return "the ring stalled: core 1 did not finish the frame within the stall timeout";
        }
    }
    acquire();
    ring.freed = (uint32_t)f; /* the host reads this frame: every earlier one is done with */
    publish();
    selected = cfg->out + ((uint32_t)f % cfg->out_slots) * cfg->out_bytes;
    return 0;
}

uint8_t *mcud_dual_output(void)
{
    return selected;
}
