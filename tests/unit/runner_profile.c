/*
 * runner_profile.c - unit tests for runner/feedback/profile.c: ncu's `--csv --page
 * raw` report as captured on the H100 host (tests/runner/fixtures/ncu/, one
 * per GPU test solution: an uncoalesced embedding, a bank-conflicted
 * matmul, a low-occupancy reduction and the naive reduction), the CSV
 * corner cases, each hint rule on both sides of its threshold, the ncu
 * command line and the result document. Prints TAP lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/gpu/admit.h"
#include "runner/config.h"
#include "runner/feedback/profile.h"
#include "runner/run/run.h"

#include "tests/unit/tap.h"

/* Set (v) or unset (NULL) the environment variable k and parse the
 * runner's switches again (runner/config.h): 0, or -EINVAL with the
 * parser's sentence in env_err. */
static char env_err[512];
static int env_switch(const char *k, const char *v)
{
    if (v)
        setenv(k, v, 1);
    else
        unsetenv(k);
    return runner_config_reload(env_err, sizeof env_err);
}

static const char *root;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

static double kmetric(const struct profile_kernel *k, const char *name)
{
    json_t *v = json_object_get(k->metrics, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The first hint with id, or NULL. */
static json_t *hint_find(json_t *hints, const char *id)
{
    size_t i;
    json_t *h;
    json_array_foreach(hints, i, h) if (strcmp(json_string_value(json_object_get(h, "id")), id) ==
                                        0) return h;
    return NULL;
}

static double hint_value(json_t *h)
{
    return json_number_value(json_object_get(h, "value"));
}

static const char *hint_text(json_t *h)
{
    return h ? json_string_value(json_object_get(h, "text")) : "";
}

/* Parse fixture tests/runner/fixtures/ncu/<name>.raw.csv with the lab's
 * harness kernels skipped. */
static int load_fixture(const char *name, const char *lab, struct profile_report *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/runner/fixtures/ncu/%s.raw.csv", root, name);
    char *text = slurp(path);
    if (!text)
        return -ENOENT;
    char **skip = profile_harness_kernels(root, lab);
    profile_report_init(r);
    int rc = profile_csv_parse(text, (const char *const *)skip, r);
    profile_names_free(skip);
    free(text);
    return rc;
}

static void test_fixtures(void)
{
    struct profile_report r;
    json_t *hints, *h;

    /* embedding: one thread per row, a warp reads 32 rows at once. */
    check(load_fixture("profile_uncoalesced", "embedding", &r) == 0, "uncoalesced: parsed");
    ok(r.nkernels == 1 && strcmp(r.kernels[0].name, "row_per_thread") == 0,
       "uncoalesced: the student's kernel alone (%zu kept, name %s)", r.nkernels,
       r.nkernels ? r.kernels[0].name : "-");
    ok(r.skipped >= 4, "uncoalesced: the harness's kernels left out (%zu)", r.skipped);
    ok(isnan(kmetric(&r.kernels[0], "device__attribute_clock_rate")) &&
           isnan(kmetric(&r.kernels[0], "gpu__time_duration.avg")),
       "uncoalesced: only the metrics asked for are kept (%zu)",
       json_object_size(r.kernels[0].metrics));
    ok(kmetric(&r.kernels[0], "device__attribute_multiprocessor_count") == 132,
       "uncoalesced: the H100's 132 SMs read");
    double spr = kmetric(&r.kernels[0], "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") /
                 kmetric(&r.kernels[0], "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
    ok(spr > 28 && spr <= 32, "uncoalesced: ~32 sectors per load request (%.2f)", spr);
    hints = profile_hints(&r);
    h = hint_find(hints, "uncoalesced_global");
    ok(h && hint_value(h) > 28 && strstr(hint_text(h), "where 4.0 would do"),
       "uncoalesced: hint with the number and the ideal: %s", hint_text(h));
    check(hint_find(hints, "small_grid") != NULL,
          "uncoalesced: 64 blocks on 132 SMs is a small grid");
    check(hint_find(hints, "bank_conflicts") == NULL, "uncoalesced: no bank-conflict hint");
    json_decref(hints);
    profile_report_free(&r);

    /* matmul: B's tile stored transposed, read down a column. */
    check(load_fixture("profile_bank_conflicts", "matmul", &r) == 0, "bank conflicts: parsed");
    ok(r.nkernels == 1 && strcmp(r.kernels[0].name, "mm_bank") == 0,
       "bank conflicts: the student's kernel alone");
    hints = profile_hints(&r);
    h = hint_find(hints, "bank_conflicts");
    ok(h && hint_value(h) > 8 && strstr(hint_text(h), "-way"),
       "bank conflicts: hint with the ways: %s", hint_text(h));
    check(hint_find(hints, "uncoalesced_global") == NULL,
          "bank conflicts: its global loads are coalesced: no hint");
    h = hint_find(hints, "memory_bound");
    ok(h && strstr(hint_text(h), "on-chip"),
       "bank conflicts: bound by the on-chip pipelines, not DRAM: %s", hint_text(h));
    json_decref(hints);
    profile_report_free(&r);

    /* reduction: 64-thread blocks with 48 KiB of shared memory each. */
    check(load_fixture("profile_low_occupancy", "reduction", &r) == 0, "low occupancy: parsed");
    hints = profile_hints(&r);
    h = hint_find(hints, "low_occupancy");
    ok(h && hint_value(h) < 20 && strstr(hint_text(h), "limited by shared memory") &&
           strstr(hint_text(h), "KiB per block"),
       "low occupancy: hint names shared memory as the limiter: %s", hint_text(h));
    json_decref(hints);
    profile_report_free(&r);

    /* The naive reduction: none of the three. */
    check(load_fixture("naive", "reduction", &r) == 0, "naive reduction: parsed");
    hints = profile_hints(&r);
    ok(!hint_find(hints, "uncoalesced_global") && !hint_find(hints, "bank_conflicts") &&
           !hint_find(hints, "low_occupancy") && !hint_find(hints, "divergence"),
       "naive reduction: no coalescing, bank, occupancy or divergence hint (its modulo "
       "branch is predicated: 31.9 threads per instruction) (%zu hints)",
       json_array_size(hints));
    json_decref(hints);
    profile_report_free(&r);
}

static void test_csv(void)
{
    struct profile_report r;
    const char *text =
        "==PROF== Connected to process 7 (/work/prog)\n"
        "program output, \"quoted\"\n"
        "\"ID\",\"Kernel Name\",\"Block Size\",\"launch__grid_size\",\"gpu__time_duration.sum\","
        "\"launch__block_size\"\r\n"
        "\"\",\"\",\"\",\"\",\"nsecond\",\"\"\r\n"
        "\"0\",\"k(float *, int)\",\"(256, 1, 1)\",\"1,024\",\"2,500.5\",\"n/a\"\r\n"
        "\"1\",\"void tmpl<32, \"\"x\"\">(float *)\",\"(1, 1, 1)\",\"7\",\"1\",\"32\"\n"
        "\"2\",\"hc_fill_u32\",\"(1, 1, 1)\",\"7\",\"1\",\"32\"\n";
    const char *skip[] = {"hc_fill_u32", NULL};
    profile_report_init(&r);
    check(profile_csv_parse(text, skip, &r) == 0, "csv: parsed past ncu's and the program's lines");
    ok(r.nkernels == 2 && r.skipped == 1, "csv: two kernels, the harness's skipped (%zu, %zu)",
       r.nkernels, r.skipped);
    if (r.nkernels == 2) {
        ok(strcmp(r.kernels[0].name, "k") == 0, "csv: the base name of a demangled one (%s)",
           r.kernels[0].name);
        ok(strcmp(r.kernels[1].name, "tmpl<32, \"x\">") == 0,
           "csv: a doubled quote and a return type (%s)", r.kernels[1].name);
        ok(kmetric(&r.kernels[0], "launch__grid_size") == 1024 &&
               kmetric(&r.kernels[0], "gpu__time_duration.sum") == 2500.5,
           "csv: thousands separators dropped");
        check(isnan(kmetric(&r.kernels[0], "launch__block_size")), "csv: n/a left out");
    }
    profile_report_free(&r);

    profile_report_init(&r);
    check(profile_csv_parse("\"ID\",\"Name\"\n\"0\",\"x\"\n", NULL, &r) == -EBADMSG,
          "csv: a header without Kernel Name is refused");
    profile_report_free(&r);
    profile_report_init(&r);
    check(profile_csv_parse(
              "\"ID\",\"Kernel Name\",\"\",\"launch__grid_size\"\n\"0\",\"k\",\"1\",\"2\"\n", NULL,
              &r) == 0 &&
              r.nkernels == 1 && kmetric(&r.kernels[0], "launch__grid_size") == 2,
          "csv: an empty column name is no metric (it hung once: found by the fuzzer)");
    profile_report_free(&r);
    profile_report_init(&r);
    check(profile_csv_parse("==ERROR== ERR_NVGPUCTRPERM\n", NULL, &r) == 0 && r.nkernels == 0,
          "csv: no report, no kernels");
    profile_report_free(&r);
}

/* One kernel named k with the given "metric=value" pairs, through the CSV
 * parser (so the rules see what a report would give them). */
static json_t *hints_for(const char *const *kv, size_t n)
{
    char text[8192];
    size_t k = (size_t)snprintf(text, sizeof text, "\"ID\",\"Kernel Name\"");
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, ",\"%.*s\"",
                              (int)(strchr(kv[i], '=') - kv[i]), kv[i]);
    k += (size_t)snprintf(text + k, sizeof text - k, "\n\"0\",\"k\"");
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, ",\"%s\"", strchr(kv[i], '=') + 1);
    snprintf(text + k, sizeof text - k, "\n");
    struct profile_report r;
    profile_report_init(&r);
    json_t *h = profile_csv_parse(text, NULL, &r) == 0 ? profile_hints(&r) : NULL;
    profile_report_free(&r);
    return h;
}

#define HINTS(...)                                                                                 \
    hints_for((const char *const[]){__VA_ARGS__},                                                  \
              sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static int fires(json_t *hints, const char *id)
{
    int f = hint_find(hints, id) != NULL;
    json_decref(hints);
    return f;
}

static void test_rules(void)
{
    /* Coalescing: used bytes over fetched bytes, against 50 %. */
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=10000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=1000",
                      "sm__sass_data_bytes_mem_global_op_ld.sum=160000"),
                "uncoalesced_global") == 0,
          "coalescing: 50% of the fetched bytes used: no hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=10000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=1000",
                      "sm__sass_data_bytes_mem_global_op_ld.sum=150000"),
                "uncoalesced_global"),
          "coalescing: 47% used: hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum=16000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum=1000",
                      "sm__sass_data_bytes_mem_global_op_st.sum=512000"),
                "uncoalesced_global") == 0,
          "coalescing: float4 stores, 16 sectors per request, all used: no hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=17000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=1000"),
                "uncoalesced_global"),
          "coalescing without byte counts: 17 sectors per request: hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=16000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=1000"),
                "uncoalesced_global") == 0,
          "coalescing without byte counts: 16 sectors per request: no hint");
    /* Modelled on the fast reduction, which got this hint on the H100 in
     * profile_bench.sh before the traffic share was asked for: float4
     * loads, one float stored per block (1 sector for 4 bytes). */
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=33554432",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=2097152",
                      "sm__sass_data_bytes_mem_global_op_ld.sum=1073741824",
                      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum=2112",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum=2112",
                      "sm__sass_data_bytes_mem_global_op_st.sum=8448"),
                "uncoalesced_global") == 0,
          "coalescing: one store per block, a sliver of the traffic: no hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=40000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=10000",
                      "sm__sass_data_bytes_mem_global_op_ld.sum=1280000",
                      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum=10000",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum=1000",
                      "sm__sass_data_bytes_mem_global_op_st.sum=64000"),
                "uncoalesced_global"),
          "coalescing: strided stores with 20% of the sectors: hint");
    check(fires(HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=320",
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=10",
                      "sm__sass_data_bytes_mem_global_op_ld.sum=1280"),
                "uncoalesced_global") == 0,
          "coalescing: too little traffic to matter: no hint");

    /* Bank conflicts: extra wavefronts per shared-memory instruction. */
    check(fires(HINTS("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum=1999",
                      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum=0",
                      "smsp__inst_executed_op_shared_ld.sum=1000",
                      "smsp__inst_executed_op_shared_st.sum=1000"),
                "bank_conflicts") == 0,
          "bank conflicts: under one extra wavefront per instruction: no hint");
    check(fires(HINTS("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum=1500",
                      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum=500",
                      "smsp__inst_executed_op_shared_ld.sum=1000",
                      "smsp__inst_executed_op_shared_st.sum=1000"),
                "bank_conflicts"),
          "bank conflicts: 2-way: hint");

    /* Occupancy: achieved under 40 %, the smallest block limit named. */
    json_t *h = HINTS("sm__warps_active.avg.pct_of_peak_sustained_active=25",
                      "sm__maximum_warps_per_active_cycle_pct=25",
                      "launch__occupancy_limit_registers=1", "launch__occupancy_limit_shared_mem=8",
                      "launch__occupancy_limit_warps=2", "launch__occupancy_limit_blocks=32",
                      "launch__registers_per_thread=255", "launch__block_size=512");
    ok(strstr(hint_text(hint_find(h, "low_occupancy")), "limited by registers: 255 per thread"),
       "occupancy: registers named: %s", hint_text(hint_find(h, "low_occupancy")));
    json_decref(h);
    check(fires(HINTS("sm__warps_active.avg.pct_of_peak_sustained_active=40"), "low_occupancy") ==
              0,
          "occupancy: 40% achieved: no hint");

    /* Divergence: active threads per instruction, uniform branches. */
    check(fires(HINTS("smsp__thread_inst_executed_per_inst_executed.ratio=23.9"), "divergence"),
          "divergence: 23.9 threads per instruction: hint");
    check(fires(HINTS("smsp__thread_inst_executed_per_inst_executed.ratio=24",
                      "smsp__sass_average_branch_targets_threads_uniform.pct=85"),
                "divergence") == 0,
          "divergence: 24 threads, 85% uniform: no hint");
    check(fires(HINTS("smsp__thread_inst_executed_per_inst_executed.ratio=31",
                      "smsp__sass_average_branch_targets_threads_uniform.pct=60"),
                "divergence"),
          "divergence: 60% uniform branches: hint");

    /* Grid: fewer blocks than SMs. */
    check(fires(HINTS("launch__grid_size=131", "device__attribute_multiprocessor_count=132"),
                "small_grid"),
          "grid: 131 blocks on 132 SMs: hint");
    check(fires(HINTS("launch__grid_size=132", "device__attribute_multiprocessor_count=132"),
                "small_grid") == 0,
          "grid: 132 blocks on 132 SMs: no hint");

    /* Roofline. */
    check(fires(HINTS("dram__throughput.avg.pct_of_peak_sustained_elapsed=85",
                      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed=85",
                      "sm__throughput.avg.pct_of_peak_sustained_elapsed=20"),
                "memory_bound"),
          "roofline: DRAM at 85%: memory-bound");
    check(fires(HINTS("dram__throughput.avg.pct_of_peak_sustained_elapsed=10",
                      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed=20",
                      "sm__throughput.avg.pct_of_peak_sustained_elapsed=75"),
                "compute_bound"),
          "roofline: SMs at 75%: compute-bound");
    check(fires(HINTS("dram__throughput.avg.pct_of_peak_sustained_elapsed=10",
                      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed=20",
                      "sm__throughput.avg.pct_of_peak_sustained_elapsed=25"),
                "latency_bound"),
          "roofline: both under 30%: latency-bound");
    h = HINTS("dram__throughput.avg.pct_of_peak_sustained_elapsed=45",
              "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed=45",
              "sm__throughput.avg.pct_of_peak_sustained_elapsed=45");
    ok(json_array_size(h) == 0, "roofline: 45%% and 45%%: no verdict (%zu hints)",
       json_array_size(h));
    json_decref(h);

    /* Everything at once: at most PROFILE_MAX_HINTS. */
    h = HINTS("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum=32000",
              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum=1000",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum=9000",
              "smsp__inst_executed_op_shared_ld.sum=2000",
              "sm__warps_active.avg.pct_of_peak_sustained_active=5",
              "smsp__thread_inst_executed_per_inst_executed.ratio=4", "launch__grid_size=2",
              "device__attribute_multiprocessor_count=132",
              "dram__throughput.avg.pct_of_peak_sustained_elapsed=1",
              "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed=1",
              "sm__throughput.avg.pct_of_peak_sustained_elapsed=1");
    ok(json_array_size(h) == PROFILE_MAX_HINTS, "every rule trips: %zu hints kept",
       json_array_size(h));
    json_decref(h);
}

static void test_minor_kernel(void)
{
    /* A second kernel with 5 % of the time gets no hints; the main one does. */
    const char *text = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"launch__grid_size\","
                       "\"device__attribute_multiprocessor_count\"\n"
                       "\"0\",\"tail\",\"50\",\"1\",\"132\"\n"
                       "\"1\",\"main\",\"950\",\"2\",\"132\"\n"
                       "\"2\",\"main\",\"900\",\"2\",\"132\"\n";
    struct profile_report r;
    profile_report_init(&r);
    profile_csv_parse(text, NULL, &r);
    json_t *h = profile_hints(&r);
    ok(json_array_size(h) == 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(h, 0), "kernel")), "main") == 0,
       "a kernel under 10%% of the time gets no hint, a relaunched kernel counts once (%zu hints)",
       json_array_size(h));
    json_t *doc = profile_json(&r, 2.5);
    ok(doc && strcmp(json_string_value(json_object_get(doc, "status")), "ok") == 0 &&
           json_array_size(json_object_get(doc, "kernels")) == 2 &&
           json_array_size(json_object_get(doc, "hints")) == 1 &&
           json_number_value(json_object_get(doc, "seconds")) == 2.5,
       "profile_json: status, kernels (a relaunched kernel once), hints, seconds");
    json_decref(doc);
    json_decref(h);
    profile_report_free(&r);
    doc = profile_json_unavailable("ERR_NVGPUCTRPERM", 0.5);
    ok(doc && strcmp(json_string_value(json_object_get(doc, "status")), "unavailable") == 0 &&
           strcmp(json_string_value(json_object_get(doc, "message")), "ERR_NVGPUCTRPERM") == 0 &&
           json_array_size(json_object_get(doc, "hints")) == 0,
       "profile_json_unavailable: status, message, no hints");
    json_decref(doc);
}

static void test_argv(void)
{
    char **skip = profile_harness_kernels(root, "matmul");
    int has_fill = 0, has_gen = 0;
    for (size_t i = 0; skip && skip[i]; i++) {
        has_fill |= strcmp(skip[i], "hc_fill_u32") == 0;
        has_gen |= strcmp(skip[i], "mm_gen") == 0;
    }
    ok(has_fill && has_gen, "harness kernels of matmul found (hc_fill_u32, mm_gen)");
    const char *target[] = {"/work/prog", "check", "--cases", "4096^3", NULL};
    const char *argv[64];
    char filter[1024];
    int n = profile_argv("/opt/ncu/ncu", "/work/p.csv", (const char *const *)skip, target, argv, 64,
                         filter, sizeof filter);
    int clock = 0, procs = 0, filt = 0;
    for (int i = 0; i + 1 < n; i++) {
        clock |= strcmp(argv[i], "--clock-control") == 0 && strcmp(argv[i + 1], "none") == 0;
        procs |= strcmp(argv[i], "--target-processes") == 0 && strcmp(argv[i + 1], "all") == 0;
        filt |= strcmp(argv[i], "--kernel-name") == 0 && strstr(argv[i + 1], "regex:^(?!(") &&
                strstr(argv[i + 1], "|mm_gen|");
    }
    ok(n > 5 && strcmp(argv[0], "/opt/ncu/ncu") == 0 && clock && procs && filt,
       "ncu argv: clock control off, all processes, the harness filtered out (%s)", filter);
    ok(n > 5 && strcmp(argv[n - 5], "/opt/ncu/ncu") != 0 &&
           strcmp(argv[n - 4], "/work/prog") == 0 && argv[n] == NULL,
       "ncu argv: the target last, NULL-terminated");
    int report = 0, srcm = 0;
    for (int i = 0; i + 1 < n; i++) {
        report |= strcmp(argv[i], "-o") == 0 && strcmp(argv[i + 1], "/work/.cugrade-profile") == 0;
        srcm |= strcmp(argv[i], "--metrics") == 0 &&
                strstr(argv[i + 1], ",smsp__branch_targets_threads_divergent,") &&
                strstr(argv[i + 1], "gpu__time_duration.sum,");
    }
    ok(report && srcm, "ncu argv: the source counters in the same pass, its report saved");
    check(profile_argv("/opt/ncu/ncu", "/work/p.csv", NULL, target, argv, 8, filter,
                       sizeof filter) == -ENOSPC,
          "ncu argv: too little room is -ENOSPC");
    profile_names_free(skip);
}

/* Parse tests/runner/fixtures/ncu/source/<name>.<kind>.csv (the standalone
 * captures: the student's files were in /tmp/capw). */
static char *source_fixture(const char *name, const char *kind)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/runner/fixtures/ncu/source/%s.%s.csv", root, name, kind);
    return slurp(path);
}

/* The hints of capture name (raw page, driver kernels "fill" skipped) with
 * the lines of its source page; NULL when a fixture is missing. */
static json_t *located_hints(const char *name, int *located)
{
    static const char *const skip[] = {"fill", NULL};
    char *raw = source_fixture(name, "raw"), *page = source_fixture(name, "source");
    json_t *hints = NULL;
    struct profile_report r;
    struct profile_source src;
    profile_report_init(&r);
    profile_source_init(&src);
    if (raw && page && profile_csv_parse(raw, skip, &r) == 0 &&
        profile_source_parse(page, "/tmp/capw", &src) == 0) {
        hints = profile_hints(&r);
        *located = profile_hints_locate(hints, &src);
    }
    profile_report_free(&r);
    profile_source_free(&src);
    free(raw);
    free(page);
    return hints;
}

static const char *hint_str(json_t *h, const char *key)
{
    const char *v = h ? json_string_value(json_object_get(h, key)) : NULL;
    return v ? v : "";
}

static long hint_line(json_t *h)
{
    return h ? (long)json_integer_value(json_object_get(h, "line")) : 0;
}

static void test_source_lines(void)
{
    int located = 0;
    json_t *hints, *h;

    /* embedding: `out[i * dim + j] = src[j];` reads and writes a row per
     * thread: 8x the sectors of coalesced access on that line. */
    hints = located_hints("profile_uncoalesced", &located);
    h = hint_find(hints, "uncoalesced_global");
    ok(h && hint_line(h) == 12 && strcmp(hint_str(h, "file"), "profile_uncoalesced.cu") == 0 &&
           strcmp(hint_str(h, "source"), "out[i * dim + j] = src[j];") == 0 &&
           strstr(hint_text(h), "`profile_uncoalesced.cu:12`") &&
           strstr(hint_text(h),
                  "33554432 sectors where coalesced access would take 4194304 (8.0x)"),
       "uncoalesced: the line, its text and its sectors against the ideal: %s", hint_text(h));
    ok(located == 1 && !json_object_get(hint_find(hints, "small_grid"), "line"),
       "uncoalesced: only hints a line explains get one (%d located)", located);
    json_decref(hints);

    /* matmul: line 19 reads bt[threadIdx.x][k] down a column (the worst,
     * 5.7-way); line 15's transposed store is 32-way but 7x fewer. */
    hints = located_hints("profile_bank_conflicts", &located);
    h = hint_find(hints, "bank_conflicts");
    ok(h && hint_line(h) == 19 && strstr(hint_str(h, "source"), "bt[threadIdx.x][k]") &&
           strstr(hint_text(h),
                  "2281701376 shared-memory wavefronts where 402653184 would do (5.7-way)"),
       "bank conflicts: the line with the most excess wavefronts: %s", hint_text(h));
    json_decref(hints);

    /* reduction: lanes 16-31 of every warp idle; the branch at line 17. */
    hints = located_hints("profile_divergence", &located);
    h = hint_find(hints, "divergence");
    ok(h && hint_value(h) > 16 && hint_value(h) < 18,
       "divergence: ~17 of 32 threads active per instruction (%.2f)", h ? hint_value(h) : 0.0);
    ok(h && hint_line(h) == 17 && strcmp(hint_str(h, "source"), "if (lane < 16) {") == 0 &&
           strstr(hint_text(h), "16384 divergent branch targets"),
       "divergence: the branch that splits the warps, with its count: %s", hint_text(h));
    check(!hint_find(hints, "uncoalesced_global") && !hint_find(hints, "bank_conflicts"),
          "divergence: its half-warp loads are coalesced: no other line hint");
    json_decref(hints);

    /* Only the student's file: CUDA's headers (sm_30_intrinsics.hpp) and
     * files elsewhere are left out. */
    char *page = source_fixture("profile_divergence", "source");
    struct profile_source src;
    profile_source_init(&src);
    check(page && profile_source_parse(page, "/work", &src) == 0 && src.n == 0,
          "source page: no line outside the student's directory");
    profile_source_free(&src);
    profile_source_init(&src);
    int others = 0, has19 = 0;
    check(page && profile_source_parse(page, "/tmp/capw", &src) == 0, "source page: parsed");
    for (size_t i = 0; i < src.n; i++) {
        others += strcmp(src.lines[i].file, "profile_divergence.cu") != 0 ||
                  strcmp(src.lines[i].kernel, "sum_half_warps") != 0;
        if (src.lines[i].line == 19)
            has19 = src.lines[i].sectors == 2097152 && src.lines[i].inst == 4227072;
    }
    ok(src.n >= 10 && !others && has19,
       "source page: %zu lines of profile_divergence.cu, kernel sum_half_warps, line 19's counts",
       src.n);
    profile_source_free(&src);
    free(page);

    /* Numba (lineinfo on): ncu names the .py line; the kernel is
     * "__main__::half_warps[abi:...]", the hints' "half_warps". */
    page = source_fixture("numba_half_warps", "source");
    profile_source_init(&src);
    hints = json_pack("[{s:s, s:s, s:s, s:f}]", "id", "divergence", "text", "Warp divergence.",
                      "kernel", "half_warps", "value", 17.0);
    check(page && profile_source_parse(page, "/tmp/capw", &src) == 0, "numba: parsed");
    h = json_array_get(hints, 0);
    ok(profile_hints_locate(hints, &src) == 1 && hint_line(h) == 10 &&
           strcmp(hint_str(h, "file"), "nb_div.py") == 0 &&
           strcmp(hint_str(h, "source"), "if lane < 16:") == 0,
       "numba: the .py line of the divergent branch: %s", hint_text(h));
    json_decref(hints);
    /* another kernel's hint gets none of its lines... unless the page has
     * one kernel only (a Numba name ncu spells otherwise) */
    hints = json_pack("[{s:s, s:s, s:s}]", "id", "divergence", "text", "x", "kernel", "other");
    ok(profile_hints_locate(hints, &src) == 1,
       "numba: a page of one kernel explains the hint whatever its name");
    json_decref(hints);
    /* ...but not when the hints are about two kernels */
    hints = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "id", "uncoalesced_global", "text", "x",
                      "kernel", "other", "id", "divergence", "text", "y", "kernel", "half_warps");
    ok(profile_hints_locate(hints, &src) == 1 &&
           !json_object_get(json_array_get(hints, 0), "line") &&
           hint_line(json_array_get(hints, 1)) == 10,
       "numba: hints of two kernels: only the one named in the page gets its line (%ld)",
       hint_line(json_array_get(hints, 1)));
    json_decref(hints);
    profile_source_free(&src);
    free(page);
}

/* Hostile pages: bounded, cleaned, never past the text. */
static void test_source_hostile(void)
{
    struct profile_source src;
    const char *page =
        "\"Line No\",\"Source\",\"Address\",\"Source\",\"inst_executed\"\n"
        "\"3\",\"before any file\",\"-\",\"-\",\"5\"\n"
        "\"File Path\",\"/work/k.cu\"\n"
        "\"Function Name\",\"void k<3>(int)\"\n"
        "\"Line No\",\"Source\",\"Address\",\"Source\",\"smsp__branch_targets_threads_divergent\","
        "\"inst_executed\",\"thread_inst_executed\"\n"
        "\"7\",\"  if (x) { `rm` \xc3\xa9\t\t y; }  \",\"-\",\"-\",\"1,024\",\"10\",\"160\"\r\n"
        "\"\",\"\",\"0x10\",\"BRA\",\"99\",\"1\",\"1\"\n"
        "\"0\",\"zero\",\"-\",\"-\",\"1\"\n"
        "\"-4\",\"negative\",\"-\",\"-\",\"1\"\n"
        "\"12abc\",\"junk\",\"-\",\"-\",\"1\"\n"
        "\"7\",\"again\",\"-\",\"-\",\"1\",\"n/a\"\n"
        "\"File Path\",\"/work/sub/h.cuh\"\n"
        "\"8\",\"in a subfolder\",\"-\",\"-\",\"1\"\n"
        "\"File Path\",\"/lab/harness.cu\"\n"
        "\"9\",\"the harness\",\"-\",\"-\",\"1\"\n"
        "\"7\"";
    profile_source_init(&src);
    check(profile_source_parse(page, "/work", &src) == 0, "hostile page: parsed");
    ok(src.n == 1 && src.lines[0].line == 7 && src.lines[0].divergent == 1025 &&
           strcmp(src.lines[0].kernel, "k<3>") == 0 &&
           strcmp(src.lines[0].text, "if (x) { 'rm' ?? y; }") == 0,
       "hostile page: one line (7, summed, template kernel), text without backticks or "
       "non-ASCII (%zu: %s)",
       src.n, src.n ? src.lines[0].text : "-");
    profile_source_free(&src);

    /* more lines than kept: capped, the rest dropped */
    size_t cap = 64u * (PROFILE_SOURCE_MAX_LINES + 100) + 200;
    char *big = malloc(cap), *w = big;
    w += sprintf(w, "\"File Path\",\"/work/k.cu\"\n\"Function Name\",\"k()\"\n"
                    "\"Line No\",\"Source\",\"Address\",\"Source\",\"inst_executed\"\n");
    for (int i = 1; i <= PROFILE_SOURCE_MAX_LINES + 100; i++)
        w += sprintf(w, "\"%d\",\"x\",\"-\",\"-\",\"%d\"\n", i, i);
    profile_source_init(&src);
    ok(profile_source_parse(big, "/work", &src) == 0 && src.n == PROFILE_SOURCE_MAX_LINES,
       "a page of %d lines: %zu kept", PROFILE_SOURCE_MAX_LINES + 100, src.n);
    profile_source_free(&src);
    free(big);

    /* a long line's text is cut */
    char longp[2048];
    snprintf(longp, sizeof longp,
             "\"File Path\",\"/work/k.cu\"\n\"Function Name\",\"k()\"\n"
             "\"Line No\",\"Source\",\"inst_executed\"\n\"5\",\"%0300d\",\"1\"\n",
             7);
    profile_source_init(&src);
    ok(profile_source_parse(longp, "/work", &src) == 0 && src.n == 1 &&
           strlen(src.lines[0].text) <= PROFILE_SOURCE_TEXT + 3 && strstr(src.lines[0].text, "..."),
       "a 300-character line: cut to %zu bytes", src.n ? strlen(src.lines[0].text) : 0);
    profile_source_free(&src);
}

/* Without ncu the profile is "unavailable", before anything runs. */
static void test_no_ncu(void)
{
    env_switch("CUGRADE_NCU", "/nonexistent/ncu");
    const char *target[] = {"/work/prog", NULL};
    json_t *doc = profile_run(NULL, target, -1, NULL, 0);
    ok(doc && strcmp(json_string_value(json_object_get(doc, "status")), "unavailable") == 0 &&
           strstr(json_string_value(json_object_get(doc, "message")), "not installed"),
       "no ncu on the runner: unavailable, not a failure (%s)",
       doc ? json_string_value(json_object_get(doc, "message")) : "NULL");
    json_decref(doc);
    env_switch("CUGRADE_NCU", NULL);
}

/* The GPU's profile lock and its queue: free, taken at once; held by
 * another, a bounded wait then busy; with PROFILE_QUEUE_MAX waiting
 * already, busy at once. */
static void test_profile_lock(void)
{
    char dir[] = "/tmp/cugrade-proflock.XXXXXX", lk[256], q[256];
    if (!mkdtemp(dir)) {
        ok(0, "a temporary directory");
        return;
    }
    snprintf(lk, sizeof lk, "%s/gpu-0.profile", dir);
    snprintf(q, sizeof q, "%s/gpu-0.profileq", dir);
    int fd = profile_lock_at(lk, q, 5);
    ok(fd >= 0, "a free profile lock is taken at once");
    double t0 = run_now();
    int fd2 = profile_lock_at(lk, q, 0.3);
    double waited = run_now() - t0;
    ok(fd2 == -2 && waited >= 0.29 && waited < 3 && admit_count(q) == 0,
       "held by another: waits its bound (%.2f s), then busy, and leaves the queue", waited);
    long long tok[PROFILE_QUEUE_MAX];
    for (int i = 0; i < PROFILE_QUEUE_MAX; i++)
        admit_reserve(q, ~0ULL, 0, 0, &tok[i], NULL);
    t0 = run_now();
    fd2 = profile_lock_at(lk, q, 5);
    waited = run_now() - t0;
    ok(fd2 == -2 && waited < 1, "with %d already waiting: busy at once (%.2f s), not after 5 s",
       PROFILE_QUEUE_MAX, waited);
    admit_release(q, tok[0]);
    t0 = run_now();
    fd2 = profile_lock_at(lk, q, 0.2);
    ok(fd2 == -2 && run_now() - t0 >= 0.19, "one fewer waiting: it waits its turn again");
    for (int i = 1; i < PROFILE_QUEUE_MAX; i++)
        admit_release(q, tok[i]);
    close(fd);
    fd2 = profile_lock_at(lk, q, 1);
    ok(fd2 >= 0, "let go: the next one takes it");
    if (fd2 >= 0)
        close(fd2);
    unlink(lk);
    unlink(q);
    rmdir(dir);
}

int main(void)
{
    root = getenv("CUGRADE_ROOT");
    if (!root)
        root = ".";
    test_fixtures();
    test_csv();
    test_rules();
    test_minor_kernel();
    test_argv();
    test_source_lines();
    test_source_hostile();
    test_no_ncu();
    test_profile_lock();
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
