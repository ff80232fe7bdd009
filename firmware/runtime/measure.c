/* Per-operator timing. The generated model.c brackets every kernel call with
 * MCUD_OP_BEGIN(i) / MCUD_OP_END(i); the firmware's mcud_measure.h turns them into
 * `if (mcud_fw_op_enabled(i)) { mcud_fw_op_begin(i); ... mcud_fw_op_end(i); }`, so one
 * operator can run alone and its ticks exclude everything but its own call. */
#include <stdint.h>

#include "mcud_fw.h"
#include "mcud_model.h"

static const mcud_fw_config *cfg;
static int32_t selected = -1; /* -1: every operator runs */
static uint64_t started;

void mcud_fw_measure_init(const mcud_fw_config *config)
{
    cfg = config;
}

int32_t mcud_fw_op_enabled(int32_t op)
{
    return selected < 0 || selected == op;
}

/* Only core 0's operators are timed: on two cores (dual.c) core 1 runs another stage's operators,
 * whose indices are not this model's. */
void mcud_fw_op_begin(int32_t op)
{
    (void)op;
    if (mcud_sys_core() != 0) {
        return;
    }
    started = mcud_timer_now();
}

void mcud_fw_op_end(int32_t op)
{
    uint64_t now = mcud_timer_now(); /* first: the check below is not the operator's time */
    if (mcud_sys_core() != 0) {
        return;
    }
    cfg->op_ticks[op] += now - started;
}

uint64_t mcud_fw_run_model(void)
{
    for (uint32_t i = 0; i < cfg->num_ops; i++) {
        cfg->op_ticks[i] = 0;
    }
    selected = -1;
    mcud_timer_restart();
    uint64_t t0 = mcud_timer_now();
    mcud_model_run();
    return mcud_timer_now() - t0;
}

void mcud_fw_run_op(uint32_t op, uint32_t repeat, uint64_t *total, uint64_t *min, uint64_t *max)
{
    *total = 0;
    *min = UINT64_MAX;
    *max = 0;
    selected = (int32_t)op;
    for (uint32_t r = 0; r < repeat; r++) {
        cfg->op_ticks[op] = 0;
        mcud_timer_restart();
        mcud_model_run();
        uint64_t t = cfg->op_ticks[op];
        *total += t;
        *min = t < *min ? t : *min;
        *max = t > *max ? t : *max;
    }
    selected = -1;
}

uint64_t mcud_fw_calibrate(uint32_t iterations)
{
    mcud_timer_restart();
    uint64_t t0 = mcud_timer_now();
#if defined(__riscv)
    __asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(iterations));
#else
    __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(iterations) : : "cc");
#endif
    return mcud_timer_now() - t0;
}
