/* A QEMU TCG plugin (host C, built by mcudeploy/estimate/flash.py): per operator of a traced run, the data
 * reads the guest makes from its flash (the weights) and how many of them miss a data cache of the target
 * board's geometry (fully associative, least recently used), so that the cycle estimate can charge the
 * flash wait states each miss pays.
 *
 * Arguments: lo, hi (the flash's address range), begin, end (the addresses of mcud_fw_op_begin and
 * mcud_fw_op_end: a run of begin starts an operator's span, of end closes it), cache=LINES:BYTES (a cache
 * of LINES lines of BYTES bytes, a power of two; LINES 0: none, every read misses each line it touches;
 * given up to 4 times, each cache counted on its own), out (the file that gets a line "reads misses..."
 * per span, one figure per cache, in the order the spans ran).
 *
 * QEMU 7.2 as Debian ships it installs no qemu-plugin.h, so the few entries of its version-1 API used here
 * are declared below as that header declares them. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            void (*cb)(unsigned int vcpu_index, void *userdata),
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
                                      void (*cb)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                                 uint64_t vaddr, void *userdata),
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t id, void *userdata),
                                    void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_LINES 4096
#define MAX_CACHES 4

struct cache {
    uint64_t line_bytes;
    unsigned lines, used;
    uint64_t misses;
    uint64_t tags[MAX_LINES];  /* line addresses, the most recently used first */
};

static uint64_t lo, hi, begin_pc, end_pc;
static struct cache caches[MAX_CACHES];
static unsigned n_caches;
static FILE *out;
static bool in_span;
static uint64_t reads;

static void on_begin(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    in_span = true;
    reads = 0;
    for (unsigned c = 0; c < n_caches; c++) caches[c].misses = 0;
}

static void on_end(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    if (in_span) {
        fprintf(out, "%" PRIu64, reads);
        for (unsigned c = 0; c < n_caches; c++) fprintf(out, " %" PRIu64, caches[c].misses);
        fputc('\n', out);
        fflush(out);
    }
    in_span = false;
}

/* a hit moves the line to the front; a miss puts it there and drops the least recently used */
static void touch(struct cache *c, uint64_t tag)
{
    unsigned k;
    for (k = 0; k < c->used; k++) {
        if (c->tags[k] == tag) {
            memmove(&c->tags[1], &c->tags[0], k * sizeof c->tags[0]);
            c->tags[0] = tag;
            return;
        }
    }
    c->misses++;
    if (c->lines == 0) return;
    if (c->used < c->lines) c->used++;
    memmove(&c->tags[1], &c->tags[0], (c->used - 1) * sizeof c->tags[0]);
    c->tags[0] = tag;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
    (void)vcpu; (void)u;
    if (!in_span || qemu_plugin_mem_is_store(info) || vaddr < lo || vaddr >= hi) return;
    uint64_t last = vaddr + (1u << qemu_plugin_mem_size_shift(info)) - 1;
    reads++;
    for (unsigned c = 0; c < n_caches; c++) {
        struct cache *k = &caches[c];
        for (uint64_t tag = vaddr / k->line_bytes; tag <= last / k->line_bytes; tag++) touch(k, tag);
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        if (pc == begin_pc) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
        if (pc == end_pc) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        /* reads alone register no callback on this QEMU: both are asked for, stores are skipped above */
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
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
        uint64_t v = strtoull(value, NULL, 0);
        if (!strcmp(key, "lo")) lo = v;
        else if (!strcmp(key, "hi")) hi = v;
        else if (!strcmp(key, "begin")) begin_pc = v;
        else if (!strcmp(key, "end")) end_pc = v;
        else if (!strcmp(key, "cache")) {
            char *colon = strchr(value, ':');
            if (!colon || n_caches == MAX_CACHES) return -1;
            struct cache *c = &caches[n_caches++];
            c->lines = (unsigned)v;
            c->line_bytes = strtoull(colon + 1, NULL, 0);
            if (c->lines > MAX_LINES || c->line_bytes == 0 || (c->line_bytes & (c->line_bytes - 1))) return -1;
        }
        else if (!strcmp(key, "out")) path = value;
        else return -1;
    }
    if (!path || hi <= lo) return -1;
    out = fopen(path, "w");
    if (!out) return -1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_quit, NULL);
    return 0;
}
