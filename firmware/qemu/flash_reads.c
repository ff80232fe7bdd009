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
 * With icache=SETS:WAYS:BYTES the target board runs its code from this flash in place (its xip): every
 * translation block run is fetched through an instruction cache of SETS sets of WAYS lines of BYTES (least
 * recently used within a set), a miss filling the whole line, and every flash access, a line fill or a data
 * read, goes over one serial flash interface that continues an open read when the access starts at the byte
 * after the previous one's last (sifive-blocks' SPIFlashMap merges such a read) and sends a read command
 * otherwise. The caches and the interface keep their state between spans; the line of a span then ends
 * with three more figures: the line fills, the read commands and the bytes moved. With unified=1 the data reads go
 * through the same cache as the code (the RP2040's XIP cache holds both), a miss filling its line over the interface;
 * with merge=0 the interface never continues an open read (the RP2040's SSI sends a command for every access).
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
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, void (*cb)(unsigned int vcpu_index, void *userdata),
                                          enum qemu_plugin_cb_flags flags, void *userdata);
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

/* xip: the instruction cache (tags[set * ways + k], the most recently used first; ~0: empty) and the interface */
#define MAX_ICACHE_LINES 4096
static unsigned icache_sets, icache_ways;
static uint64_t icache_line;
static uint64_t icache_tags[MAX_ICACHE_LINES];
static uint64_t spi_next = ~(uint64_t)0, fills, commands, moved;
static bool unified, merge = true;

struct block { uint64_t start, end; };

static void on_begin(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    in_span = true;
    reads = fills = commands = moved = 0;
    for (unsigned c = 0; c < n_caches; c++) caches[c].misses = 0;
}

static void on_end(unsigned int vcpu, void *u)
{
    (void)vcpu; (void)u;
    if (in_span) {
        fprintf(out, "%" PRIu64, reads);
        for (unsigned c = 0; c < n_caches; c++) fprintf(out, " %" PRIu64, caches[c].misses);
        if (icache_sets) fprintf(out, " %" PRIu64 " %" PRIu64 " %" PRIu64, fills, commands, moved);
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

/* one access of n bytes at addr over the serial flash interface */
static void serial_read(uint64_t addr, uint64_t n)
{
    if ((!merge || addr != spi_next) && in_span) commands++;
    if (in_span) moved += n;
    spi_next = addr + n;
}

/* the bytes [start, end) through the instruction cache (the whole cache, with unified) */
static void icache_read(uint64_t start, uint64_t end)
{
    for (uint64_t line = start / icache_line; line <= (end - 1) / icache_line; line++) {
        uint64_t *set = &icache_tags[(line % icache_sets) * icache_ways];
        unsigned k;
        for (k = 0; k < icache_ways && set[k] != line; k++) {}
        if (k == icache_ways) {  /* a miss: the line fills the least recently used way */
            k = icache_ways - 1;
            if (in_span) fills++;
            serial_read(line * icache_line, icache_line);
        }
        memmove(&set[1], &set[0], k * sizeof set[0]);
        set[0] = line;
    }
}

static void on_block(unsigned int vcpu, void *u)
{
    (void)vcpu;
    const struct block *b = u;
    icache_read(b->start, b->end);
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
    (void)vcpu; (void)u;
    if (qemu_plugin_mem_is_store(info) || vaddr < lo || vaddr >= hi) return;
    uint64_t size = 1u << qemu_plugin_mem_size_shift(info);
    if (icache_sets && unified) icache_read(vaddr, vaddr + size);
    else if (icache_sets) serial_read(vaddr, size);
    if (!in_span) return;
    uint64_t last = vaddr + size - 1;
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
    if (icache_sets && n) {
        struct qemu_plugin_insn *first = qemu_plugin_tb_get_insn(tb, 0), *final = qemu_plugin_tb_get_insn(tb, n - 1);
        uint64_t start = qemu_plugin_insn_vaddr(first);
        if (start >= lo && start < hi) {
            struct block *b = malloc(sizeof *b);  /* kept while QEMU may run the block: never freed */
            if (b) {
                b->start = start;
                b->end = qemu_plugin_insn_vaddr(final) + qemu_plugin_insn_size(final);
                qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
            }
        }
    }
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
        else if (!strcmp(key, "icache")) {
            char *end;
            icache_sets = (unsigned)strtoul(value, &end, 0);
            if (*end != ':') return -1;
            icache_ways = (unsigned)strtoul(end + 1, &end, 0);
            if (*end != ':') return -1;
            icache_line = strtoull(end + 1, NULL, 0);
            if (!icache_sets || !icache_ways || icache_sets * icache_ways > MAX_ICACHE_LINES || icache_line == 0
                || (icache_line & (icache_line - 1)))
                return -1;
            memset(icache_tags, 0xff, sizeof icache_tags);
        }
        else if (!strcmp(key, "unified")) unified = v != 0;
        else if (!strcmp(key, "merge")) merge = v != 0;
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
