/*
 * profile.c - see profile.h. Hints are Markdown (the pages render them with
 * server/markdown.c): code in backticks.
 */
#include "runner/feedback/profile.h"
#include "runner/config.h"
#include "runner/gpu/share.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"
#include "runner/run/run.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Launch and device attributes (no pass), the speed of light, occupancy,
 * global access (sectors per request, bytes the threads asked for), shared
 * memory (bank conflicts per instruction) and divergence. */
const char PROFILE_METRICS[] =
    "gpu__time_duration.sum,"
    "launch__grid_size,launch__block_size,launch__registers_per_thread,"
    "launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,"
    "launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,"
    "launch__occupancy_limit_warps,launch__occupancy_limit_blocks,"
    "launch__waves_per_multiprocessor,device__attribute_multiprocessor_count,"
    "sm__maximum_warps_per_active_cycle_pct,"
    "sm__warps_active.avg.pct_of_peak_sustained_active,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
    "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,"
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,"
    "sm__sass_data_bytes_mem_global_op_ld.sum,"
    "sm__sass_data_bytes_mem_global_op_st.sum,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,"
    "smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,"
    "smsp__thread_inst_executed_per_inst_executed.ratio,"
    "smsp__sass_average_branch_targets_threads_uniform.pct";

#define PROFILE_MIN_SECTORS 1024.0 /* fewer global sectors: too little traffic to matter */
#define PROFILE_MIN_SHARED 1024.0  /* fewer shared-memory instructions: likewise */

void profile_report_init(struct profile_report *r)
{
    memset(r, 0, sizeof *r);
}

void profile_report_free(struct profile_report *r)
{
    for (size_t i = 0; i < r->nkernels; i++) {
        free(r->kernels[i].name);
        json_decref(r->kernels[i].metrics);
    }
    free(r->kernels);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------- */
/* CSV: ncu quotes every field ("a","b,c",""); a quote inside is doubled. */

/* Split one line into at most max fields, unquoted into one buffer of the
 * line's size (out[0] owns it: profile_csv_fields_free). Returns the number of
 * fields, or -ENOMEM. */
int profile_csv_fields(const char *line, size_t len, char **out, int max)
{
    char *buf = malloc(len + 1), *w = buf;
    int n = 0;
    size_t i = 0;
    if (!buf)
        return -ENOMEM;
    while (i <= len && n < max) {
        out[n++] = w;
        if (i < len && line[i] == '"') {
            i++;
            while (i < len) {
                if (line[i] == '"' && i + 1 < len && line[i + 1] == '"') {
                    *w++ = '"';
                    i += 2;
                } else if (line[i] == '"') {
                    i++;
                    break;
                } else {
                    *w++ = line[i++];
                }
            }
            while (i < len && line[i] != ',')
                i++;
        } else {
            while (i < len && line[i] != ',')
                *w++ = line[i++];
        }
        /* Each field's text plus its NUL fits in what it used of the line
         * (at least its comma or the line's end). */
        *w++ = '\0';
        i++; /* past the comma (or the end) */
    }
    assert((size_t)(w - buf) <= len + 1);
    return n;
}

void profile_csv_fields_free(char **f, int n)
{
    if (n > 0)
        free(f[0]);
}

/* A metric value as a number: "1,024.5" -> 1024.5; NAN for text, "n/a". */
double profile_csv_number(const char *s)
{
    char buf[64];
    size_t k = 0;
    for (; *s && k < sizeof buf - 1; s++)
        if (*s != ',' && *s != ' ')
            buf[k++] = *s;
    buf[k] = '\0';
    if (!k)
        return NAN;
    char *end;
    double v = strtod(buf, &end);
    return *end == '\0' && isfinite(v) ? v : NAN;
}

static int name_in(const char *name, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

/* "k(float *, int)" or "void k<32>(...)" -> "k" / "k<32>": the function's
 * name as the student wrote it (ncu prints the base name with
 * --print-kernel-base function; older ones print the demangled one). */
static char *kernel_base_name(const char *s)
{
    const char *p = s, *open = strchr(s, '(');
    size_t n = open ? (size_t)(open - s) : strlen(s);
    while (n > 0 && s[n - 1] == ' ')
        n--;
    /* Drop a return type ("void "): the last space outside <>. */
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>')
            depth--;
        else if (s[i] == ' ' && depth == 0)
            p = s + i + 1;
    }
    return strndup(p, n - (size_t)(p - s));
}

static int report_add(struct profile_report *r, const char *name, json_t *metrics)
{
    struct profile_kernel *k = realloc(r->kernels, (r->nkernels + 1) * sizeof *k);
    if (!k)
        return -ENOMEM;
    r->kernels = k;
    k[r->nkernels].name = kernel_base_name(name);
    k[r->nkernels].metrics = metrics;
    if (!k[r->nkernels].name)
        return -ENOMEM;
    r->nkernels++;
    return 0;
}

/* ncu's raw page has a column per device attribute and per rollup of every
 * metric asked for (~600 on an H100 with PROFILE_METRICS). */
#define CSV_MAX_FIELDS 4096

/* The metric list in use. */
static const char *metric_list(void)
{
    return PROFILE_METRICS;
}

/* Is name one of the metrics asked for? The raw page also carries every
 * device attribute and each rollup (.avg .min .max): only the asked-for
 * ones are kept. */
static int metric_wanted(const char *name)
{
    const char *list = metric_list();
    size_t n = strlen(name);
    if (n == 0)
        return 0; /* strstr would find "" everywhere, and never move on */
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* One data row under header hdr (nh fields, the name in column kcol). */
static int csv_row(struct profile_report *r, char **hdr, const char *want, int nh, int kcol,
                   char **f, int nf, const char *const *skip)
{
    if (nf <= kcol || !f[0][0]) /* the units row has no ID */
        return 0;
    char *base = kernel_base_name(f[kcol]);
    if (!base)
        return -ENOMEM;
    int harness = name_in(base, skip);
    free(base);
    if (harness) {
        r->skipped++;
        return 0;
    }
    json_t *m = json_object();
    if (!m)
        return -ENOMEM;
    for (int c = 0; c < nf && c < nh; c++) {
        if (!want[c])
            continue;
        double v = profile_csv_number(f[c]);
        if (!isnan(v) && json_object_set_new(m, hdr[c], json_real(v)) < 0) {
            json_decref(m);
            return -ENOMEM;
        }
    }
    int rc = report_add(r, f[kcol], m);
    if (rc < 0)
        json_decref(m);
    return rc;
}

int profile_csv_parse(const char *text, const char *const *skip, struct profile_report *r)
{
    char **hdr = calloc(2 * CSV_MAX_FIELDS, sizeof *hdr), **f = hdr + CSV_MAX_FIELDS;
    char *want = calloc(CSV_MAX_FIELDS, 1); /* the header's columns that are kept */
    int nh = 0, kcol = -1, rc = 0;
    if (!hdr || !want) {
        free(hdr);
        free(want);
        return -ENOMEM;
    }
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *line = p;
        p = nl ? nl + 1 : NULL;
        if (len && line[len - 1] == '\r')
            len--;
        if (len < 2 || line[0] != '"')
            continue; /* ==PROF== lines, the program's prints */
        if (strncmp(line, "\"ID\",", 5) == 0) {
            profile_csv_fields_free(hdr, nh);
            nh = profile_csv_fields(line, len, hdr, CSV_MAX_FIELDS);
            if (nh < 0) {
                nh = 0;
                rc = -ENOMEM;
                break;
            }
            kcol = -1;
            for (int c = 0; c < nh; c++) {
                if (strcmp(hdr[c], "Kernel Name") == 0)
                    kcol = c;
                /* The leading columns ("ID", "Block Size", ...) are not
                 * metrics; of the rest only those asked for are kept. */
                want[c] = (char)metric_wanted(hdr[c]);
            }
            if (kcol < 0) {
                rc = -EBADMSG;
                break;
            }
            continue;
        }
        if (nh == 0)
            continue;
        int nf = profile_csv_fields(line, len, f, CSV_MAX_FIELDS);
        if (nf < 0) {
            rc = -ENOMEM;
            break;
        }
        rc = csv_row(r, hdr, want, nh, kcol, f, nf, skip);
        profile_csv_fields_free(f, nf);
        if (rc < 0)
            break;
    }
    profile_csv_fields_free(hdr, nh);
    free(hdr);
    free(want);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The hint rules. Each looks at one kernel's metrics and adds at most one
 * hint; a metric ncu did not give (older GPU, older ncu) silences its rule. */

static double metric(const struct profile_kernel *k, const char *name)
{
    json_t *v = json_object_get(k->metrics, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A count to add up: 0 when ncu gave none. */
static double metric0(const struct profile_kernel *k, const char *name)
{
    double v = metric(k, name);
    return isnan(v) ? 0 : v;
}

/* Append {id, text, kernel, value}; text is printf-formatted. */
static void hint_add(json_t *hints, const char *id, const struct profile_kernel *k, double value,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void hint_add(json_t *hints, const char *id, const struct profile_kernel *k, double value,
                     const char *fmt, ...)
{
    char text[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(hints, json_pack("{s:s, s:s, s:s, s:f}", "id", id, "text", text, "kernel",
                                           k->name, "value", value));
}

/* Global loads or stores whose warps fetch more 32-byte sectors than the
 * bytes they asked for need: used bytes / fetched bytes under
 * PROFILE_COALESCE_EFF. Without the byte count (a GPU whose ncu lacks the
 * SASS metric), sectors per request past PROFILE_SECTORS_FALLBACK: a warp
 * of 4-byte accesses needs 4, of 16-byte (float4) accesses 16. */
static int rule_uncoalesced(json_t *hints, const struct profile_kernel *k)
{
    static const char *const op[2] = {"ld", "st"};
    static const char *const what[2] = {"loads", "stores"};
    double all = metric0(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") +
                 metric0(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum");
    for (int i = 0; i < 2; i++) {
        char m[128];
        snprintf(m, sizeof m, "l1tex__t_sectors_pipe_lsu_mem_global_op_%s.sum", op[i]);
        double sectors = metric(k, m);
        snprintf(m, sizeof m, "l1tex__t_requests_pipe_lsu_mem_global_op_%s.sum", op[i]);
        double req = metric(k, m);
        snprintf(m, sizeof m, "sm__sass_data_bytes_mem_global_op_%s.sum", op[i]);
        double bytes = metric(k, m);
        /* A reduction's one store per block is 1 sector for 4 bytes, but
         * a sliver of the traffic: only accesses that are a real share of
         * the kernel's global sectors count. */
        if (!(sectors >= PROFILE_MIN_SECTORS) || !(req > 0) ||
            !(sectors >= PROFILE_COALESCE_SHARE * all))
            continue;
        double spr = sectors / req;
        if (bytes > 0) {
            double eff = bytes / (sectors * 32.0), ideal = fmax(1.0, bytes / req / 32.0);
            if (eff >= PROFILE_COALESCE_EFF)
                continue;
            hint_add(hints, "uncoalesced_global", k, spr,
                     "Uncoalesced global %s in `%s`: each warp request fetches %.1f sectors "
                     "of 32 bytes where %.1f would do, so only %.0f%% of the bytes moved are "
                     "used. Let consecutive threads (`threadIdx.x`) touch consecutive "
                     "addresses: index with `[row * n + threadIdx.x]`, not "
                     "`[threadIdx.x * n + col]`, or stage a tile through shared memory.",
                     what[i], k->name, spr, ideal, 100.0 * eff);
            return 1;
        }
        if (spr > PROFILE_SECTORS_FALLBACK) {
            hint_add(hints, "uncoalesced_global", k, spr,
                     "Uncoalesced global %s in `%s`: each warp request fetches %.1f sectors "
                     "of 32 bytes (4 for a warp reading consecutive floats). Let consecutive "
                     "threads (`threadIdx.x`) touch consecutive addresses.",
                     what[i], k->name, spr);
            return 1;
        }
    }
    return 0;
}

/* Shared-memory bank conflicts: extra wavefronts per shared-memory
 * instruction of at least PROFILE_BANK_EXTRA (a 2-way conflict on average). */
static int rule_bank_conflicts(json_t *hints, const struct profile_kernel *k)
{
    double c = metric0(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") +
               metric0(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum");
    double n = metric0(k, "smsp__inst_executed_op_shared_ld.sum") +
               metric0(k, "smsp__inst_executed_op_shared_st.sum");
    if (!(n >= PROFILE_MIN_SHARED) || !(c / n >= PROFILE_BANK_EXTRA))
        return 0;
    double ways = 1.0 + c / n;
    hint_add(hints, "bank_conflicts", k, ways,
             "Shared-memory bank conflicts in `%s`: its shared-memory accesses are %.1f-way "
             "conflicted on average (%.0f extra wavefronts for %.0f instructions), so threads "
             "of a warp wait for each other on the same bank. Pad the array (`[32][33]` "
             "instead of `[32][32]`) or let consecutive threads read consecutive 4-byte words.",
             k->name, ways, c, n);
    return 1;
}

/* Achieved occupancy under PROFILE_OCCUPANCY_PCT, with what limits it: the
 * smallest of the per-SM block limits (registers, shared memory, warps of
 * the block size, the block count). A high theoretical occupancy with a low
 * achieved one is the grid's doing (rule_small_grid says so). */
static int rule_occupancy(json_t *hints, const struct profile_kernel *k)
{
    double ach = metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active");
    double theo = metric(k, "sm__maximum_warps_per_active_cycle_pct");
    if (!(ach < PROFILE_OCCUPANCY_PCT))
        return 0;
    static const struct {
        const char *metric, *why;
    } lim[] = {
        {"launch__occupancy_limit_registers", "registers"},
        {"launch__occupancy_limit_shared_mem", "shared memory"},
        {"launch__occupancy_limit_warps", "block size"},
        {"launch__occupancy_limit_blocks", "block size"},
    };
    int best = -1;
    double bv = INFINITY;
    for (int i = 0; i < 4; i++) {
        double v = metric(k, lim[i].metric);
        if (v < bv) {
            bv = v;
            best = i;
        }
    }
    double block = metric(k, "launch__block_size");
    char why[400];
    if (!(theo < 80.0) && (theo >= 0)) {
        snprintf(why, sizeof why,
                 "the limits allow %.0f%%, so the launch leaves SMs short "
                 "of warps: launch more blocks (or more threads per block)",
                 theo);
    } else if (best == 0) {
        snprintf(why, sizeof why,
                 "limited by registers: %.0f per thread leave room for %.0f "
                 "block(s) of %.0f threads per SM. Keep fewer values live, or cap them with "
                 "`__launch_bounds__(threads, minBlocks)`",
                 metric(k, "launch__registers_per_thread"), bv, block);
    } else if (best == 1) {
        double smem = metric(k, "launch__shared_mem_per_block_static") +
                      fmax(0, metric(k, "launch__shared_mem_per_block_dynamic"));
        snprintf(why, sizeof why,
                 "limited by shared memory: %.1f KiB per block leave room "
                 "for %.0f block(s) per SM. Use smaller tiles or fewer shared arrays",
                 smem / 1024.0, bv);
    } else if (best >= 2) {
        snprintf(why, sizeof why,
                 "limited by the block size: blocks of %.0f threads, at most "
                 "%.0f per SM. Use 128 to 512 threads per block",
                 block, bv);
    } else {
        snprintf(why, sizeof why, "theoretical %.0f%%", theo);
    }
    hint_add(hints, "low_occupancy", k, ach,
             "Low occupancy in `%s`: %.0f%% of the SM's warp slots are in use on average "
             "(theoretical %.0f%%), too few warps to hide memory latency; %s.",
             k->name, ach, theo, why);
    return 1;
}

/* Divergence: fewer than PROFILE_THREADS_PER_WARP active threads per
 * executed instruction, or under PROFILE_BRANCH_UNIFORM %% uniform branches. */
static int rule_divergence(json_t *hints, const struct profile_kernel *k)
{
    double tpw = metric(k, "smsp__thread_inst_executed_per_inst_executed.ratio");
    double uni = metric(k, "smsp__sass_average_branch_targets_threads_uniform.pct");
    if (!(tpw < PROFILE_THREADS_PER_WARP) && !(uni < PROFILE_BRANCH_UNIFORM))
        return 0;
    char u[64] = "";
    if (uni >= 0)
        snprintf(u, sizeof u, "; %.0f%% of its branches are uniform", uni);
    hint_add(hints, "divergence", k, tpw,
             "Warp divergence in `%s`: on average %.1f of 32 threads are active per executed "
             "instruction%s. Threads of one warp that take different paths run them one after "
             "the other: give whole warps the same branch (e.g. `if (tid < s)` over a "
             "contiguous range instead of `if (tid %% (2 * s) == 0)`).",
             k->name, tpw, u);
    return 1;
}

/* Fewer blocks than SMs: some SMs idle for the whole kernel. */
static int rule_small_grid(json_t *hints, const struct profile_kernel *k)
{
    double grid = metric(k, "launch__grid_size");
    double sms = metric(k, "device__attribute_multiprocessor_count");
    if (!(grid > 0) || !(sms > 0) || grid >= sms)
        return 0;
    hint_add(hints, "small_grid", k, grid,
             "Grid too small in `%s`: %.0f block(s) on a GPU with %.0f SMs, so %.0f SMs have "
             "nothing to do. Launch at least a few blocks per SM, e.g. `(n + 255) / 256` "
             "blocks of 256 threads, or a grid-stride loop over 2 to 4 blocks per SM.",
             k->name, grid, sms, sms - grid);
    return 1;
}

/* Where the kernel sits against the roofline: memory-bound when DRAM (or
 * the memory system) runs at PROFILE_BOUND_PCT %% of its peak or more,
 * compute-bound when the SMs do, latency-bound when both are under
 * PROFILE_IDLE_PCT %%. */
static int rule_roofline(json_t *hints, const struct profile_kernel *k)
{
    double dram = metric(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    double mem =
        fmax(dram, metric(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
    double sm = metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    if (isnan(mem) || isnan(sm))
        return 0;
    if (isnan(dram))
        dram = mem;
    if (mem >= PROFILE_BOUND_PCT && mem >= sm && dram >= PROFILE_BOUND_PCT) {
        hint_add(hints, "memory_bound", k, mem,
                 "`%s` is memory-bound: DRAM throughput at %.0f%% of peak against %.0f%% "
                 "for the SMs. Its time goes into moving bytes: move each byte once (reuse "
                 "it from shared memory or registers), and use wide loads (`float4`).",
                 k->name, dram, sm);
        return 1;
    }
    if (mem >= PROFILE_BOUND_PCT && mem >= sm) {
        /* Busy memory pipelines with little DRAM traffic: L1, shared
         * memory or L2 (bank conflicts and uncoalesced access show here). */
        hint_add(hints, "memory_bound", k, mem,
                 "`%s` is bound by the on-chip memory pipelines: %.0f%% of their peak (L1, "
                 "shared memory, L2) while DRAM runs at %.0f%% and the SMs at %.0f%%. Fewer, "
                 "wider and conflict-free accesses to shared memory and cache help more "
                 "than fewer DRAM bytes.",
                 k->name, mem, dram, sm);
        return 1;
    }
    if (sm >= PROFILE_BOUND_PCT && sm > mem) {
        hint_add(hints, "compute_bound", k, sm,
                 "`%s` is compute-bound: the SMs run at %.0f%% of peak against %.0f%% for "
                 "memory. Do less work per result: fewer instructions in the inner loop, "
                 "`fmaf`, no recomputed indices.",
                 k->name, sm, mem);
        return 1;
    }
    if (mem < PROFILE_IDLE_PCT && sm < PROFILE_IDLE_PCT) {
        hint_add(hints, "latency_bound", k, fmax(mem, sm),
                 "`%s` is latency-bound: neither memory (%.0f%% of peak) nor the SMs (%.0f%%) "
                 "are busy, so its warps mostly wait. Put more independent work in flight: "
                 "more blocks, several elements per thread, fewer `__syncthreads()` per "
                 "element.",
                 k->name, mem, sm);
        return 1;
    }
    return 0;
}

static double kernel_time(const struct profile_kernel *k)
{
    double t = metric(k, "gpu__time_duration.sum");
    return t > 0 ? t : 0;
}

/* The distinct kernels of r, longest first: a kernel launched several times
 * stands for its longest launch. Returns a new array of indices (caller
 * frees) with *n set, or NULL on out of memory. */
static size_t *kernel_order(const struct profile_report *r, size_t *n)
{
    size_t *order = calloc(r->nkernels + 1, sizeof *order);
    *n = 0;
    if (!order)
        return NULL;
    for (size_t i = 0; i < r->nkernels; i++) {
        size_t j;
        for (j = 0; j < *n; j++)
            if (strcmp(r->kernels[order[j]].name, r->kernels[i].name) == 0)
                break;
        if (j < *n) {
            if (kernel_time(&r->kernels[i]) > kernel_time(&r->kernels[order[j]]))
                order[j] = i;
            continue;
        }
        order[(*n)++] = i;
    }
    for (size_t a = 1; a < *n; a++)
        for (size_t b = a;
             b > 0 && kernel_time(&r->kernels[order[b]]) > kernel_time(&r->kernels[order[b - 1]]);
             b--) {
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    return order;
}

json_t *profile_hints(const struct profile_report *r)
{
    json_t *hints = json_array();
    size_t n, *order = kernel_order(r, &n);
    if (!hints || !order) {
        json_decref(hints);
        free(order);
        return NULL;
    }
    double total = 0;
    for (size_t i = 0; i < r->nkernels; i++)
        total += kernel_time(&r->kernels[i]);
    int (*const rules[])(json_t *, const struct profile_kernel *) = {
        rule_uncoalesced, rule_bank_conflicts, rule_occupancy,
        rule_divergence,  rule_small_grid,     rule_roofline,
    };
    for (size_t i = 0; i < n; i++) {
        const struct profile_kernel *k = &r->kernels[order[i]];
        if (i > 0 && total > 0 && kernel_time(k) < PROFILE_MIN_SHARE * total)
            continue;
        for (size_t q = 0; q < sizeof rules / sizeof *rules; q++)
            if (json_array_size(hints) < PROFILE_MAX_HINTS)
                rules[q](hints, k);
    }
    free(order);
    return hints;
}

json_t *profile_json(const struct profile_report *r, double seconds)
{
    json_t *kernels = json_array(), *hints = profile_hints(r);
    size_t n, *order = kernel_order(r, &n);
    if (!kernels || !hints || !order)
        goto fail;
    /* Distinct kernels only, at most PROFILE_MAX_KERNELS: a loop of 24
     * launches of one kernel is one row. */
    for (size_t i = 0; i < n && i < PROFILE_MAX_KERNELS; i++) {
        const struct profile_kernel *k = &r->kernels[order[i]];
        if (json_array_append_new(
                kernels, json_pack("{s:s, s:O}", "name", k->name, "metrics", k->metrics)) < 0)
            goto fail;
    }
    free(order);
    return json_pack("{s:s, s:o, s:o, s:f}", "status", "ok", "kernels", kernels, "hints", hints,
                     "seconds", seconds);
fail:
    free(order);
    json_decref(kernels);
    json_decref(hints);
    return NULL;
}

json_t *profile_json_unavailable(const char *message, double seconds)
{
    return json_pack("{s:s, s:s, s:f, s:[], s:[]}", "status", "unavailable", "message",
                     message ? message : "", "seconds", seconds, "kernels", "hints");
}

/* ---------------------------------------------------------------------- */
/* The harness's kernels, ncu's command line. */

static int names_scan(const char *path, char ***names, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        char *g = strstr(line, "__global__ void ");
        if (!g)
            continue;
        g += strlen("__global__ void ");
        size_t len = 0;
        while (isalnum((unsigned char)g[len]) || g[len] == '_')
            len++;
        if (!len || g[len] != '(')
            continue;
        char **nn = realloc(*names, (*n + 2) * sizeof *nn);
        if (!nn) {
            rc = -ENOMEM;
            break;
        }
        *names = nn;
        if (!(nn[*n] = strndup(g, len))) {
            rc = -ENOMEM;
            break;
        }
        nn[++*n] = NULL;
    }
    fclose(f);
    return rc;
}

char **profile_harness_kernels(const char *root, const char *lab)
{
    char path[PATH_MAX];
    char **names = calloc(1, sizeof *names);
    size_t n = 0;
    if (!names)
        return NULL;
    snprintf(path, sizeof path, "%s/labs/common/harness_common.cu", root);
    if (names_scan(path, &names, &n) < 0)
        goto fail;
    snprintf(path, sizeof path, "%s/labs/%s/harness.cu", root, lab);
    if (names_scan(path, &names, &n) < 0)
        goto fail;
    return names;
fail:
    profile_names_free(names);
    return NULL;
}

void profile_names_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

int profile_off(void)
{
    return strcmp(runner_cfg()->ncu, "none") == 0;
}

const char *profile_ncu_path(void)
{
    const char *p = runner_cfg()->ncu;
    return access(p, X_OK) == 0 ? p : NULL;
}

/* --kernel-name regex:^(?!(a|b)$).*: every kernel but the harness's, so
 * that its input generation and verification are not replayed. */
static void kernel_filter(const char *const *skip, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "regex:^(?!(");
    for (size_t i = 0; skip && skip[i] && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "|" : "", skip[i]);
    if (k < len)
        snprintf(buf + k, len - k, ")$).*");
}

int profile_argv(const char *ncu, const char *log, const char *const *skip,
                 const char *const *target, const char **argv, size_t n, char *filter,
                 size_t filter_len)
{
    /* With source lines: the source counters in the same pass (profile.h),
     * and its report saved for the source page. */
    static __thread char metrics[8192];
    int src = (size_t)snprintf(metrics, sizeof metrics, "%s,%s", metric_list(),
                               PROFILE_SOURCE_METRICS) < sizeof metrics;
    const char *head[28] = {
        ncu,
        "--csv",
        "--page",
        "raw",
        "--metrics",
        src ? metrics : metric_list(),
        /* The student's program and everything it starts (a Python
         * owner starts the student's interpreter in a child). */
        "--target-processes",
        "all",
        /* No locked clocks: that needs the GPU to itself and would
         * change the clocks under other jobs' runs. */
        "--clock-control",
        "none",
        "--print-kernel-base",
        "function",
        "--launch-count",
        PROFILE_LAUNCH_COUNT,
        "--log-file",
        log,
    };
    size_t nh = 16;
    if (src) {
        head[nh++] = "-f"; /* a report left by the student's own run is replaced */
        head[nh++] = "-o";
        head[nh++] = PROFILE_REPORT;
    }
    if (skip && skip[0]) {
        kernel_filter(skip, filter, filter_len);
        head[nh++] = "--kernel-name-base";
        head[nh++] = "function";
        head[nh++] = "--kernel-name";
        head[nh++] = filter;
    }
    size_t k = 0;
    for (size_t i = 0; i < nh; i++) {
        if (k + 1 >= n)
            return -ENOSPC;
        argv[k++] = head[i];
    }
    for (size_t i = 0; target[i]; i++) {
        if (k + 1 >= n)
            return -ENOSPC;
        argv[k++] = target[i];
    }
    argv[k] = NULL;
    return (int)k;
}
