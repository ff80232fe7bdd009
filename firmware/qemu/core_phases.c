/* A QEMU TCG plugin (host C, built by mcudeploy/cores/measure.py): the guest instructions each core of a plan on
 * several cores (mcudeploy/cores) runs in each phase, and in each barrier, counted per vCPU (under -icount QEMU
 * runs the cores on one clock, so the firmware's timer cannot tell them apart).
 *
 * Arguments: start (the address of mcud_cores_phase_start: a core begins a phase's steps), barrier (of
 * mcud_cores_barrier: it has finished them), out (the file that gets a line per event, in the order they ran:
 * "W vcpu n", the n instructions the vCPU ran since it last began a phase, at each barrier; "B vcpu n", the n it
 * ran in the barrier, waiting included, when it begins the next phase).
 *
 * Instructions are counted a translation block at a time, when the block starts (an exception in the middle of a
 * block counts the block whole). QEMU 7.2 as Debian ships it installs no qemu-plugin.h: the few entries of its
 * version-1 API used here are declared below as that header declares them. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, void (*cb)(unsigned int vcpu_index, void *userdata),
                                          enum qemu_plugin_cb_flags flags, void *userdata);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            void (*cb)(unsigned int vcpu_index, void *userdata),
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t id, void *userdata),
                                    void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 8

static uint64_t start_pc, barrier_pc;
static uint64_t count[MAX_VCPUS];   /* instructions run, per vCPU */
static uint64_t began[MAX_VCPUS];   /* count when the vCPU last began a phase */
static uint64_t arrived[MAX_VCPUS]; /* count when it last reached a barrier */
static bool waiting[MAX_VCPUS];     /* between a barrier and the next phase */
static FILE *out;

static void on_block(unsigned int vcpu, void *n)
{
    if (vcpu < MAX_VCPUS) count[vcpu] += (uint64_t)(uintptr_t)n;
}

static void on_start(unsigned int vcpu, void *u)
{
    (void)u;
    if (vcpu >= MAX_VCPUS || !out) return;
    if (waiting[vcpu]) fprintf(out, "B %u %" PRIu64 "\n", vcpu, count[vcpu] - arrived[vcpu]);
    waiting[vcpu] = false;
    began[vcpu] = count[vcpu];
}

static void on_barrier(unsigned int vcpu, void *u)
{
    (void)u;
    if (vcpu >= MAX_VCPUS || !out) return;
    fprintf(out, "W %u %" PRIu64 "\n", vcpu, count[vcpu] - began[vcpu]);
    waiting[vcpu] = true;
    arrived[vcpu] = count[vcpu];
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        if (pc == start_pc) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS, NULL);
        if (pc == barrier_pc) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_barrier, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
}

static void on_quit(qemu_plugin_id_t id, void *u)
{
    (void)id; (void)u;
    if (out) fclose(out);
    out = NULL;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) return -1;
        *eq = '\0';
        const char *key = argv[i], *value = eq + 1;
        if (!strcmp(key, "start")) start_pc = strtoull(value, NULL, 0);
        else if (!strcmp(key, "barrier")) barrier_pc = strtoull(value, NULL, 0);
        else if (!strcmp(key, "out")) path = value;
        else return -1;
    }
    if (!path || !start_pc || !barrier_pc) return -1;
    out = fopen(path, "w");
    if (!out) return -1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_quit, NULL);
    return 0;
}
