/*
 * runner_hint.c - unit tests for runner/feedback/hint.c, the classic-bug catalogue:
 * each recognizer on the judge's records (as the judge prints them), the
 * harness's launch errors, a device assert's stderr, sanitizer findings,
 * the cases' sizes (the real labs/<lab>/lab.json) and source text -- the
 * bug it names, and the look-alike it must not name. Then the hints in
 * the result document (score.c) and the static scans kept silent on every
 * correct solution of tests/gpu/solutions*. Prints TAP lines.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "rubric.h"
#include "runner/grade/grade.h"
#include "runner/feedback/hint.h"
#include "runner/grade/score.h"

#include "tests/unit/tap.h"

static const char *root;
static struct lab red, emb, mm;

/* The judge's document for the reduction lab: every case passed but the
 * ones given as "name:got:expected" (got "nan" for NaN). */
static json_t *red_doc(const char *bad1, const char *bad2)
{
    static const char *names[] = {"1", "1000", "2^20+7", "2^26", "2^28", "2.5e9"};
    json_t *cases = json_array();
    for (size_t i = 0; i < 6; i++) {
        json_t *c = json_pack("{s:s, s:b, s:f, s:f}", "name", names[i], "passed", 1,
                              "max_abs_err", 0.0, "max_rel_err", 0.0);
        const char *bads[2] = {bad1, bad2};
        for (size_t k = 0; k < 2; k++) {
            char nm[32];
            double got, exp;
            char gs[32];
            if (!bads[k] || sscanf(bads[k], "%31[^:]:%31[^:]:%lf", nm, gs, &exp) != 3 ||
                strcmp(nm, names[i]) != 0)
                continue;
            got = strcmp(gs, "nan") == 0 ? NAN : atof(gs);
            json_object_set_new(c, "passed", json_false());
            json_object_set_new(c, "got", isfinite(got) ? json_real(got) : json_null());
            json_object_set_new(c, "expected", json_real(exp));
            json_object_set_new(c, "message", json_string("d_out[0] is wrong"));
        }
        json_array_append_new(cases, c);
    }
    return json_pack("{s:o}", "cases", cases);
}

struct run {
    struct score_case *cases;
    size_t ncases;
    struct hint_list hl;
};

/* The catalogue over a judge document (+ optional facts). */
static const struct hint_list *recognize(struct run *r, const struct lab *lab, json_t *doc,
                                         struct hint_facts *extra)
{
    struct hint_facts f;
    memset(&f, 0, sizeof f);
    if (extra)
        f = *extra;
    f.lab = lab;
    r->cases = NULL;
    r->ncases = 0;
    if (doc && score_cases_from_judge(doc, &r->cases, &r->ncases) < 0)
        fprintf(stderr, "bad judge document\n");
    json_decref(doc);
    f.cases = r->cases;
    f.ncases = r->ncases;
    hint_recognize(&f, &r->hl);
    return &r->hl;
}

static void run_free(struct run *r)
{
    score_cases_free(r->cases, r->ncases);
}

static const char *text_of(const struct hint_list *l, const char *id)
{
    const struct hint *h = hint_find(l, id);
    return h ? h->text : "";
}

static const char *case_of(const struct hint_list *l, const char *id)
{
    const struct hint *h = hint_find(l, id);
    return h ? h->case_name : "(none)";
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *b = calloc(1, 1 << 20);
    size_t n = b ? fread(b, 1, (1 << 20) - 1, fp) : 0;
    (void)n;
    fclose(fp);
    return b;
}

static void test_saturation(void)
{
    struct run r;
    /* n = 2^26 summed one atomicAdd at a time: exactly 2^25 (issue 11). */
    const struct hint_list *l = recognize(&r, &red, red_doc("2^26:33554432:50331777.5",
                                                            "2^28:33554432:201330000"), NULL);
    ok(hint_find(l, "float32-saturation") && strcmp(case_of(l, "float32-saturation"), "2^26") == 0,
       "float32-saturation: a sum stuck at 33554432 = 2^25 for n = 2^26 (case %s)",
       case_of(l, "float32-saturation"));
    ok(strstr(text_of(l, "float32-saturation"), "33554432") &&
           strstr(text_of(l, "float32-saturation"), "2^25") &&
           strstr(text_of(l, "float32-saturation"), "partial"),
       "...its hint names the value, the power of two and partial sums: %s",
       text_of(l, "float32-saturation"));
    ok(!hint_find(l, "grid-coverage"), "...and does not ask whether the grid covers the input");
    run_free(&r);

    /* Captured on the H100 (solutions-py/reduction/bug_atomic_total.py):
     * the same one-float total drifts past the tolerance at 2^20+7. */
    l = recognize(&r, &red, red_doc("2^20+7:786135.125:786155.8", "2^26:33554432:50335189.5"),
                  NULL);
    ok(hint_find(l, "float32-saturation") && !hint_find(l, "grid-coverage"),
       "a saturated total's drift at 2^20+7 is not called a grid that misses elements");
    run_free(&r);

    l = recognize(&r, &red, red_doc("2^26:-16777216:-50331777.5", NULL), NULL);
    ok(hint_find(l, "float32-saturation") != NULL, "float32-saturation: a negative sum at -2^24");
    run_free(&r);

    l = recognize(&r, &red, red_doc("2^26:33000000:50331777.5", NULL), NULL);
    ok(!hint_find(l, "float32-saturation") && hint_find(l, "grid-coverage") &&
           strstr(text_of(l, "grid-coverage"), "34.4"),
       "a sum 34.4%% short but not at a power of two: grid-coverage, not saturation: %s",
       text_of(l, "grid-coverage"));
    run_free(&r);
}

static void test_overflow(void)
{
    struct run r;
    /* reduction overflow32.cu: n passed as an int, the 2.5e9 case sums nothing */
    const struct hint_list *l =
        recognize(&r, &red, red_doc("2.5e9:0:-1.87e9", NULL), NULL);
    ok(hint_find(l, "index-overflow-32") && strcmp(case_of(l, "index-overflow-32"), "2.5e9") == 0,
       "index-overflow-32: only the 2.5e9-element case fails (case %s)",
       case_of(l, "index-overflow-32"));
    ok(strstr(text_of(l, "index-overflow-32"), "2147483647") &&
           strstr(text_of(l, "index-overflow-32"), "size_t") &&
           strstr(text_of(l, "index-overflow-32"), "n = 2500000000"),
       "...its hint says 2^31-1, the case's n and size_t: %s", text_of(l, "index-overflow-32"));
    ok(!hint_find(l, "grid-coverage"), "...and not grid-coverage for the same case");
    run_free(&r);

    l = recognize(&r, &red, red_doc("2.5e9:0:-1.87e9", "2^20+7:5:7"), NULL);
    ok(!hint_find(l, "index-overflow-32"),
       "no index-overflow-32 when a small case fails too (another bug)");
    run_free(&r);

    /* the embedding judge's own evidence: the row offset read in 32 bits */
    json_t *doc = json_pack(
        "{s:[{s:s, s:b}, {s:s, s:b, s:s}]}", "cases", "name", "1x1", "passed", 1, "name",
        "8192x4096-bigvocab", "passed", 0, "message",
        "out[3][0] = 0.5 but expected weight[indices[3] = 1100000][0] = 0.25: indices[i]*dim "
        "does not fit in 32 bits here; compute the offset in int64_t");
    l = recognize(&r, &emb, doc, NULL);
    ok(hint_find(l, "index-overflow-32") &&
           strstr(text_of(l, "index-overflow-32"), "vocab = 1200000"),
       "index-overflow-32: the embedding judge saw the 32-bit row offset: %s",
       text_of(l, "index-overflow-32"));
    run_free(&r);
}

/* Captured on the H100 (tests/gpu/solutions/embedding/bug_grid_y.cu): grid
 * y = num_indices, refused past 65535; a refused launch is not an
 * overflow, though 1000000x1 is a big case. */
static void test_launch_not_overflow(void)
{
    static const char *msg = "CUDA error: invalid argument. an invalid argument: a kernel "
                             "launch with more than 1024 threads per block (or a grid or "
                             "shared-memory size out of range";
    json_t *doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b}, {s:s, s:b, s:s}, {s:s, s:b, s:s}]}",
                            "cases", "name", "1x1", "passed", 1, "name", "1000x33", "passed", 1,
                            "name", "1000000x1", "passed", 0, "message", msg, "name",
                            "100003x33", "passed", 0, "message", msg);
    struct run r;
    const struct hint_list *l = recognize(&r, &emb, doc, NULL);
    ok(hint_find(l, "launch-limits") && !hint_find(l, "index-overflow-32") &&
           strstr(text_of(l, "launch-limits"), "num_indices = 1000000"),
       "a launch refused in case 1000000x1: launch-limits with the case's sizes, no "
       "index-overflow-32: %s", text_of(l, "launch-limits"));
    run_free(&r);

    /* the bigvocab case alone fails, no judge wording: its weight table is
     * 1200000 x 4096 > 2^31 elements; 100003x33's table is not */
    doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b}, {s:s, s:b, s:s}]}", "cases", "name", "1x1",
                    "passed", 1, "name", "100003x33", "passed", 1, "name",
                    "8192x4096-bigvocab", "passed", 0, "message", "out[0][0] = 1 but expected 2");
    l = recognize(&r, &emb, doc, NULL);
    ok(hint_find(l, "index-overflow-32") &&
           strcmp(case_of(l, "index-overflow-32"), "8192x4096-bigvocab") == 0,
       "index-overflow-32 from the sizes: only the 4.9e9-element weight table's case fails");
    run_free(&r);
}

static void test_launch(void)
{
    struct run r;
    struct hint_facts f;
    memset(&f, 0, sizeof f);
    json_t *errs = json_pack("{s:s}", "1",
                             "launch_error: invalid configuration argument: invalid "
                             "configuration argument: a block may have at most 1024 threads");
    const char *src = "// x\n#define T 2048\n__global__ void k(float *o) {}\n"
                      "extern \"C\" void reduce_sum(const float *i, float *o, size_t n)\n{\n"
                      "    k<<<(unsigned)((n + T - 1) / T), T>>>(o);\n}\n";
    f.case_errors = errs;
    f.source = src;
    f.source_len = strlen(src);
    json_t *doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1", "passed", 0,
                            "message", "CUDA error: invalid configuration argument. a block");
    const struct hint_list *l = recognize(&r, &red, doc, &f);
    ok(hint_find(l, "launch-limits") && strstr(text_of(l, "launch-limits"), "2048 threads") &&
           strstr(text_of(l, "launch-limits"), "line 6") &&
           strstr(text_of(l, "launch-limits"), "invalid configuration"),
       "launch-limits: invalid configuration, and the source's <<<..., 2048>>> at line 6: %s",
       text_of(l, "launch-limits"));
    run_free(&r);
    json_decref(errs);

    /* matmul threads2048.cu: dim3 block(64, 32); CUDA 13's invalid argument */
    const char *mm_src = "__global__ void mm(){}\nvoid f(int M, int N) {\n"
                         "    dim3 block(64, 32), grid((N + 63) / 64, (M + 31) / 32);\n"
                         "    mm<<<grid, block>>>();\n}\n";
    memset(&f, 0, sizeof f);
    f.source = mm_src;
    f.source_len = strlen(mm_src);
    doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1x1x1", "passed", 0, "message",
                    "CUDA error: invalid argument. an invalid argument: a kernel launch with "
                    "more than 1024 threads per block");
    l = recognize(&r, &mm, doc, &f);
    ok(hint_find(l, "launch-limits") && strstr(text_of(l, "launch-limits"), "2048 threads") &&
           strstr(text_of(l, "launch-limits"), "line 4"),
       "launch-limits: dim3 block(64, 32) is 2048 threads (CUDA 13 says invalid argument): %s",
       text_of(l, "launch-limits"));
    run_free(&r);

    /* Numba: CUDA_ERROR_INVALID_VALUE from cuLaunchKernel, kernel[grid, (32, 64)] */
    const char *py = "from numba import cuda\nTPB = (32, 64)\n@cuda.jit\ndef k(o):\n    pass\n"
                     "def reduce_sum(d_in, d_out):\n    k[4, TPB](d_out)\n";
    memset(&f, 0, sizeof f);
    f.python = 1;
    f.source = py;
    f.source_len = strlen(py);
    doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1", "passed", 0, "message",
                    "your code raised CudaAPIError: [1] Call to cuLaunchKernel results in "
                    "CUDA_ERROR_INVALID_VALUE (at kernel.py line 7)");
    l = recognize(&r, &red, doc, &f);
    ok(hint_find(l, "launch-limits") && strstr(text_of(l, "launch-limits"), "2048 threads") &&
           strstr(text_of(l, "launch-limits"), "Numba"),
       "launch-limits (Python): CUDA_ERROR_INVALID_VALUE and k[4, (32, 64)]: %s",
       text_of(l, "launch-limits"));
    run_free(&r);

    doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1", "passed", 0, "message",
                    "d_out[0] = 3 but expected 4");
    l = recognize(&r, &red, doc, NULL);
    ok(!hint_find(l, "launch-limits"), "no launch-limits for a plain wrong answer");
    run_free(&r);
}

static struct score_finding finding(const char *msg, int line)
{
    struct score_finding fd = {(char *)"kernel.cu", line, (char *)msg, NULL};
    return fd;
}

static void test_sanitizer_entries(void)
{
    struct run r;
    struct hint_facts f;
    struct score_finding mem = finding("Invalid __global__ read of size 4 bytes", 8);
    struct score_finding race = finding(
        "Race reported between Write access at block_sum+0x1c0 in kernel.cu:12 and Read access",
        13);
    struct score_finding mis = finding("Misaligned Shared or Local Address", 20);
    mis.hint = (char *)"A misaligned access: vector loads (`float4`) need 16-byte aligned "
                       "addresses.";
    struct score_sanitizer sans[2];
    memset(sans, 0, sizeof sans);
    sans[0].tool = "memcheck";
    sans[0].ran = 1;
    sans[0].findings = &mem;
    sans[0].nfindings = 1;
    sans[1].tool = "racecheck";
    sans[1].ran = 1;
    sans[1].findings = &race;
    sans[1].nfindings = 1;
    memset(&f, 0, sizeof f);
    f.sanitizers = sans;
    f.nsanitizers = 2;
    const struct hint_list *l = recognize(&r, &red, red_doc("1000:nan:500", NULL), &f);
    ok(hint_find(l, "bounds-check") && strstr(text_of(l, "bounds-check"), "line 8") &&
           strstr(text_of(l, "bounds-check"), "if (i < n)"),
       "bounds-check: memcheck's invalid read at kernel.cu line 8: %s", text_of(l, "bounds-check"));
    ok(hint_find(l, "missing-syncthreads") &&
           strstr(text_of(l, "missing-syncthreads"), "line 13"),
       "missing-syncthreads: racecheck's race at line 13: %s", text_of(l, "missing-syncthreads"));
    ok(!hint_find(l, "sanitizer-finding"), "...no leftover finding");
    run_free(&r);

    /* Captured on the H100 (reduction/no_sync.cu): the race loses 7.26% of
     * the sum; that is the race's doing, not a grid's. */
    sans[0].nfindings = 0;
    l = recognize(&r, &red, red_doc("2^20+7:-729378.375:-786515.957", NULL), &f);
    ok(hint_find(l, "missing-syncthreads") && !hint_find(l, "grid-coverage"),
       "a race and a sum 7.26%% short: missing-syncthreads only, not grid-coverage");
    run_free(&r);
    sans[0].nfindings = 1;

    sans[0].findings = &mis;
    sans[1].nfindings = 0;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(hint_find(l, "sanitizer-finding") && strstr(text_of(l, "sanitizer-finding"), "float4") &&
           strstr(text_of(l, "sanitizer-finding"), "line 20") && !hint_find(l, "bounds-check"),
       "sanitizer-finding: a misaligned access keeps its own hint and line: %s",
       text_of(l, "sanitizer-finding"));
    run_free(&r);

    /* Ours: a sanitizer that could not run says nothing about the student. */
    sans[0].findings = NULL;
    sans[0].nfindings = 0;
    sans[0].ran = 0;
    sans[0].infra_failed = 1;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(l->n == 0, "a sanitizer that failed for our reasons and a correct file: no hint (%zu)",
       l->n);
    run_free(&r);

    /* Captured on the H100 (compute-sanitizer memcheck, a float4 load from
     * d_in + 1: tests/gpu/solutions/reduction/bug_misaligned.cu): memcheck
     * calls it an "Invalid __global__ read" whose address "is misaligned".
     * No missing bounds check: the generic entry, its line and hint. */
    {
        char fx[1024];
        snprintf(fx, sizeof fx, "%s/tests/runner/fixtures/memcheck-misaligned.txt", root);
        char *text = slurp(fx);
        struct score_sanitizer mc;
        memset(&mc, 0, sizeof mc);
        mc.tool = "memcheck";
        mc.ran = 1;
        if (text)
            grade_sanitizer_parse(text, &mc);
        free(text);
        memset(&f, 0, sizeof f);
        f.sanitizers = &mc;
        f.nsanitizers = 1;
        l = recognize(&r, &red, red_doc(NULL, NULL), &f);
        ok(mc.nfindings > 0 && hint_find(l, "sanitizer-finding") &&
               strstr(text_of(l, "sanitizer-finding"), "misaligned") &&
               strstr(text_of(l, "sanitizer-finding"), "line 13") && !hint_find(l, "bounds-check"),
           "memcheck's misaligned float4 read (H100 capture): sanitizer-finding at line 13, "
           "no bounds-check: %s",
           text_of(l, "sanitizer-finding"));
        run_free(&r);
        score_sanitizer_clear(&mc);
    }

    /* without sanitizers: the answer NaN (read into the harness's NaN guard) */
    l = recognize(&r, &red, red_doc("1000:nan:500", NULL), NULL);
    ok(hint_find(l, "bounds-check") && strcmp(case_of(l, "bounds-check"), "1000") == 0 &&
           strstr(text_of(l, "bounds-check"), "n = 1000"),
       "bounds-check: a NaN sum in case 1000 (Python: no sanitizer): %s",
       text_of(l, "bounds-check"));
    run_free(&r);
}

static void test_device_assert(void)
{
    struct run r;
    struct hint_facts f;
    memset(&f, 0, sizeof f);
    f.program_err =
        "/work/kernel.cu:9: void block_sum(const float *, float *, unsigned long): block: "
        "[3,0,0], thread: [64,0,0] Assertion `i < n` failed.\n"
        "/work/kernel.cu:9: void block_sum(const float *, float *, unsigned long): block: "
        "[3,0,0], thread: [65,0,0] Assertion `i < n` failed.\n";
    json_t *doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1000", "passed", 0,
                            "message", "your kernel crashed: device-side assert triggered. a "
                                       "device-side assert() failed");
    const struct hint_list *l = recognize(&r, &red, doc, &f);
    const char *t = text_of(l, "device-assert");
    ok(hint_find(l, "device-assert") && strstr(t, "assert(i < n)") &&
           strstr(t, "kernel.cu line 9") && strstr(t, "block [3,0,0]") &&
           strstr(t, "thread [64,0,0]") && strstr(t, "2 threads") && !strstr(t, "/work"),
       "device-assert: condition, file:line, block, thread and count from stderr: %s", t);
    ok(strcmp(case_of(l, "device-assert"), "1000") == 0, "...in case 1000");
    run_free(&r);

    doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1", "passed", 0, "message",
                    "your code raised CudaAPIError: [710] Call to cuCtxSynchronize results in "
                    "CUDA_ERROR_ASSERT");
    l = recognize(&r, &red, doc, NULL);
    ok(hint_find(l, "device-assert") != NULL,
       "device-assert: Numba's CUDA_ERROR_ASSERT without stderr still names it");
    run_free(&r);
}

static void test_grid_and_sync_static(void)
{
    struct run r;
    struct hint_facts f;
    json_t *doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b, s:i, s:s}]}", "cases", "name", "1x1x1",
                            "passed", 1, "name", "17x31x13", "passed", 0, "unwritten", 40,
                            "message", "40 outputs still NaN");
    const struct hint_list *l = recognize(&r, &mm, doc, NULL);
    ok(hint_find(l, "grid-coverage") && strstr(text_of(l, "grid-coverage"), "never written") &&
           strstr(text_of(l, "grid-coverage"), "40 outputs") &&
           strstr(text_of(l, "grid-coverage"), "M = 17"),
       "grid-coverage: 40 outputs of 17x31x13 never written: %s", text_of(l, "grid-coverage"));
    run_free(&r);

    const char *py_nosync = "from numba import cuda, float32\n@cuda.jit\ndef k(x, out):\n"
                            "    s = cuda.shared.array(256, dtype=float32)\n"
                            "    t = cuda.threadIdx.x\n    s[t] = x[t]\n"
                            "    out[t] = s[255 - t]\n";
    memset(&f, 0, sizeof f);
    f.python = 1;
    f.source = py_nosync;
    f.source_len = strlen(py_nosync);
    l = recognize(&r, &red, red_doc("1000:3:500", NULL), &f);
    ok(hint_find(l, "missing-syncthreads") &&
           strstr(text_of(l, "missing-syncthreads"), "cuda.syncthreads()"),
       "missing-syncthreads (Python, no racecheck): shared array, no barrier, a wrong case: %s",
       text_of(l, "missing-syncthreads"));
    run_free(&r);
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(!hint_find(l, "missing-syncthreads"), "...not when every case passes");
    run_free(&r);
}

static void test_divergent_barrier(void)
{
    struct run r;
    struct hint_facts f;
    static const struct {
        int python, want;
        const char *name, *src;
    } t[] = {
        {0, 1, "barrier inside if (tid < k) { }",
         "__global__ void k(float *s) {\n  int tid = threadIdx.x;\n"
         "  for (int k = 128; k > 0; k /= 2) {\n    if (tid < k) {\n"
         "      s[tid] += s[tid + k];\n      __syncthreads();\n    }\n  }\n}\n"},
        {0, 1, "barrier in a grid-stride loop",
         "__global__ void k(const float *in, size_t n) {\n  __shared__ float s[256];\n"
         "  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
         "  for (; i < n; i += gridDim.x * blockDim.x) {\n    s[threadIdx.x] = in[i];\n"
         "    __syncthreads();\n  }\n}\n"},
        {0, 0, "the tree with the barrier after the if",
         "__global__ void k(float *s) {\n  for (int k = 128; k > 0; k /= 2) {\n"
         "    if (threadIdx.x < k)\n      s[threadIdx.x] += s[threadIdx.x + k];\n"
         "    __syncthreads();\n  }\n}\n"},
        {0, 0, "a tile loop on a uniform bound",
         "__global__ void k(int K) {\n  int row = blockIdx.y * 16 + threadIdx.y;\n"
         "  for (int t = 0; t < (K + 15) / 16; t++) {\n    __syncthreads();\n  }\n"
         "  if (row < K) { /* __syncthreads() in a comment */ }\n}\n"},
        {1, 1, "Python: cuda.syncthreads() under if t < k",
         "@cuda.jit\ndef k(s):\n    t = cuda.threadIdx.x\n    k = 128\n    while k > 0:\n"
         "        if t < k:\n            s[t] += s[t + k]\n            cuda.syncthreads()\n"
         "        k //= 2\n"},
        {1, 0, "Python: the barrier after the if",
         "@cuda.jit\ndef k(s):\n    t = cuda.threadIdx.x\n    k = 128\n    while k > 0:\n"
         "        if t < k:\n            s[t] += s[t + k]\n        cuda.syncthreads()\n"
         "        k //= 2\n"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        memset(&f, 0, sizeof f);
        f.python = t[i].python;
        f.source = t[i].src;
        f.source_len = strlen(t[i].src);
        const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
        ok(!!hint_find(l, "divergent-barrier") == t[i].want, "divergent-barrier %s: %s (%s)",
           t[i].want ? "found" : "not found", t[i].name, text_of(l, "divergent-barrier"));
        run_free(&r);
    }
}

/* Hostile sources: the scans are bounded (the runner reads the file
 * outside any sandbox). */
static void test_hostile_source(void)
{
    struct run r;
    struct hint_facts f;
    size_t n = 250u << 10;
    char *src = malloc(n + 1);
    if (!src)
        return;
    /* nested ifs on the thread, then a=a=a=... then unbalanced parens */
    size_t o = 0;
    while (o + 40 < n / 3)
        o += (size_t)sprintf(src + o, "if (threadIdx.x < k) { ");
    while (o + 4 < 2 * n / 3)
        o += (size_t)sprintf(src + o, "a=");
    while (o + 4 < n)
        o += (size_t)sprintf(src + o, "((<<<");
    src[o] = '\0';
    memset(&f, 0, sizeof f);
    f.source = src;
    f.source_len = o;
    const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(l->n == 0, "a 250 KiB hostile source (nested ifs, a=a=..., unbalanced parens): scanned, "
                  "no hint (%zu)", l->n);
    run_free(&r);
    free(src);

    const char *div = "__global__ void k(float *s) {\n  if (threadIdx.x < 64) {\n"
                      "    __syncthreads();\n  }\n}\n";
    size_t big = (300u << 10) + strlen(div);
    src = malloc(big + 1);
    if (!src)
        return;
    memset(src, ' ', big);
    memcpy(src, div, strlen(div));
    src[big] = '\0';
    f.source = src;
    f.source_len = big;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(!hint_find(l, "divergent-barrier"), "a source over 256 KiB gets no source-based hint");
    f.source_len = strlen(div);
    run_free(&r);
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(hint_find(l, "divergent-barrier") != NULL, "...the same kernel alone does");
    run_free(&r);
    free(src);
}

/* Issue 26 item 5a: the source scanner reads Python's strings (single,
 * triple-quoted, prefixed), its comments, and CUDA C's comments and
 * strings: a barrier named in a docstring is no barrier. */
static void test_source_strings(void)
{
    struct run r;
    struct hint_facts f;
    static const struct {
        int python, want;
        const char *name, *src;
    } t[] = {
        {1, 0, "Python: a docstring shows cuda.syncthreads() under if cuda.threadIdx.x < 32",
         "@cuda.jit\ndef k(s):\n    \"\"\"Tree sum. Never write:\n\n"
         "    if cuda.threadIdx.x < 32:\n        cuda.syncthreads()\n    \"\"\"\n"
         "    t = cuda.threadIdx.x\n    cuda.syncthreads()\n    if t < 32:\n        s[t] += 1\n"},
        {1, 0, "Python: the same in r''' ''' and f\"\"\" \"\"\" strings",
         "X = r'''\nif cuda.threadIdx.x < 32:\n    cuda.syncthreads()\n'''\n"
         "Y = f\"\"\"{X}\nif cuda.threadIdx.x < 32:\n    cuda.syncthreads()\n\"\"\"\n"},
        {1, 0, "Python: a one-line string and a comment",
         "t = cuda.threadIdx.x\nif t < 3: print('cuda.syncthreads()')  # cuda.syncthreads()\n"
         "if t < 3:\n    s = \"a \\\" quote, then cuda.syncthreads()\"\n"},
        {1, 1, "Python: after a docstring and a '#' in a string, the real barrier is found",
         "\"\"\"doc\n\"\"\"\nh = '#'\n@cuda.jit\ndef k(s):\n    t = cuda.threadIdx.x\n"
         "    if t < 32:\n        s[t] += 1\n        cuda.syncthreads()\n"},
        {0, 0, "C: a block comment and strings show the barrier under a condition",
         "/* if (threadIdx.x < 32) { __syncthreads(); } */\n__global__ void k(float *s) {\n"
         "  const char *m = \"if (threadIdx.x < 32) { __syncthreads(); }\";\n"
         "  const char *r = R\"x(\nif (threadIdx.x < 32) { __syncthreads(); }\n)x\";\n"
         "  __syncthreads();\n}\n"},
        {0, 1, "C: after a comment holding a quote, the real barrier is found",
         "// it's here\n__global__ void k(float *s) {\n  char c = '\\'';\n"
         "  if (threadIdx.x < 32) {\n    __syncthreads();\n  }\n}\n"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        memset(&f, 0, sizeof f);
        f.python = t[i].python;
        f.source = t[i].src;
        f.source_len = strlen(t[i].src);
        const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
        ok(!!hint_find(l, "divergent-barrier") == t[i].want, "divergent-barrier %s: %s (%s)",
           t[i].want ? "found" : "not found", t[i].name, text_of(l, "divergent-barrier"));
        run_free(&r);
    }
    /* hostile: unterminated strings and comments stay linear */
    static const char *unit[] = {"/*", "//", "R\"", "'''"};
    size_t n = 200u << 10;
    char *src = malloc(n + 1);
    for (size_t k = 0; src && k < 4; k++) {
        size_t u = strlen(unit[k]), o = 0;
        for (; o + u <= n; o += u)
            memcpy(src + o, unit[k], u);
        src[o] = '\0';
        memset(&f, 0, sizeof f);
        f.python = k == 3;
        f.source = src;
        f.source_len = o;
        const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
        ok(l->n == 0, "200 KiB of unterminated %s: scanned, no hint", unit[k]);
        run_free(&r);
    }
    free(src);
}

/* Issue 26 item 5b: a NaN sum with a clean memcheck (which runs without the
 * NaN guard past the inputs) is an output never set, not a bounds check. */
static void test_unset_output(void)
{
    struct run r;
    struct hint_facts f;
    struct score_sanitizer sans[2];
    memset(sans, 0, sizeof sans);
    sans[0].tool = "memcheck";
    sans[0].ran = sans[0].clean = 1;
    sans[1].tool = "racecheck";
    sans[1].ran = sans[1].clean = 1;
    memset(&f, 0, sizeof f);
    f.sanitizers = sans;
    f.nsanitizers = 2;
    const struct hint_list *l =
        recognize(&r, &red, red_doc("1000:nan:500", "2^26:nan:33554432"), &f);
    ok(hint_find(l, "unset-output") && !hint_find(l, "bounds-check") &&
           !hint_find(l, "grid-coverage") && strcmp(case_of(l, "unset-output"), "1000") == 0 &&
           strstr(text_of(l, "unset-output"), "cudaMemset(d_out, 0") &&
           strstr(text_of(l, "unset-output"), "n = 1000"),
       "unset-output: a NaN sum, memcheck clean: the output was never set, no bounds-check: %s",
       text_of(l, "unset-output"));
    run_free(&r);
    f.python = 1;
    l = recognize(&r, &red, red_doc("1000:nan:500", NULL), &f);
    ok(hint_find(l, "unset-output") && strstr(text_of(l, "unset-output"), "cuda.atomic.add") &&
           !strstr(text_of(l, "unset-output"), "cudaMemset"),
       "...in Python words: %s", text_of(l, "unset-output"));
    run_free(&r);
    sans[0].ran = 0;
    l = recognize(&r, &red, red_doc("1000:nan:500", NULL), &f);
    ok(!hint_find(l, "unset-output") && hint_find(l, "bounds-check"),
       "...memcheck not run: a NaN sum stays a bounds-check");
    run_free(&r);
}

/* Issue 26 item 5c: a device allocation that failed is not a grid that
 * misses outputs. */
static void test_device_memory(void)
{
    struct run r;
    struct hint_facts f;
    memset(&f, 0, sizeof f);
    f.program_err = "harness: refused your cudaMalloc of 79872 MiB: your code may hold at most "
                    "2048 MiB of device memory at once (it holds 0 MiB)\n";
    json_t *doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b, s:i, s:s}]}", "cases", "name", "1",
                            "passed", 1, "name", "1000", "passed", 0, "unwritten", 1, "message",
                            "d_out[0] was never written");
    const struct hint_list *l = recognize(&r, &red, doc, &f);
    ok(hint_find(l, "device-memory") && !hint_find(l, "grid-coverage") &&
           strstr(text_of(l, "device-memory"), "refused your cudaMalloc") &&
           strcmp(case_of(l, "device-memory"), "1000") == 0,
       "device-memory: the harness refused the allocation, not grid-coverage: %s",
       text_of(l, "device-memory"));
    run_free(&r);
    f.program_err = NULL;
    doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b, s:i, s:s}]}", "cases", "name", "1", "passed", 1,
                    "name", "1000", "passed", 0, "unwritten", 1, "message",
                    "d_out[0] was never written");
    l = recognize(&r, &red, doc, &f);
    ok(!hint_find(l, "device-memory") && hint_find(l, "grid-coverage"),
       "...no allocation failed: grid-coverage as before");
    run_free(&r);
    /* test-gpu on an H200: a Numba race (wrong sums from 2^20+7 on), then
     * the owner's allocation of the 2.5e9 case failed. The hint named
     * 2^20+7, which had an answer, "not your grid" beside the race. */
    f.program_err = "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating "
                    "10,005,512,192 bytes (allocated so far: 0 bytes).\n";
    doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b, s:i, s:s}, {s:s, s:b, s:i, s:s}]}", "cases",
                    "name", "1", "passed", 1, "name", "1000", "passed", 0, "unwritten", 0,
                    "message", "d_out[0] = -784372.25 but expected -786797.646", "name",
                    "2^20+7", "passed", 0, "unwritten", 0, "message",
                    "no result: the program stopped before this case (it crashed, was killed, "
                    "or ran out of time)");
    l = recognize(&r, &red, doc, &f);
    ok(hint_find(l, "device-memory") && strcmp(case_of(l, "device-memory"), "2^20+7") == 0,
       "device-memory from stderr alone names the case left without an answer, not the one "
       "that answered wrong: %s", hint_find(l, "device-memory") ? case_of(l, "device-memory") : "none");
    run_free(&r);
    doc = json_pack("{s:[{s:s, s:b}, {s:s, s:b, s:i, s:s}]}", "cases", "name", "1", "passed", 1,
                    "name", "1000", "passed", 0, "unwritten", 0, "message",
                    "d_out[0] = -784372.25 but expected -786797.646");
    l = recognize(&r, &red, doc, &f);
    ok(!hint_find(l, "device-memory"),
       "...and no device-memory hint when every failed case answered (wrong)");
    run_free(&r);
}

/* Issue 26 item 5d: the pipeline's std with ddof=1 (the judge says so). */
static void test_std_ddof(void)
{
    struct run r;
    json_t *doc = json_pack(
        "{s:[{s:s, s:b}, {s:s, s:b, s:f, s:s}]}", "cases", "name", "1", "passed", 1, "name",
        "1000", "passed", 0, "max_abs_err", 4.1e-4, "message",
        "cols[3, 0] = 0.5201 but expected 0.5199 (error 0.0002 > tolerance 1e-05; 7990 of 8000 "
        "elements are off): these are the columns of a std with ddof=1 (divided by n - 1)");
    const struct hint_list *l = recognize(&r, &red, doc, NULL);
    ok(hint_find(l, "std-ddof") && strstr(text_of(l, "std-ddof"), "ddof=0") &&
           strcmp(case_of(l, "std-ddof"), "1000") == 0,
       "std-ddof: the judge's ddof=1 finding names the population std: %s",
       text_of(l, "std-ddof"));
    run_free(&r);
}

/* Issue 26 item 5e: a Python submission's hints name cuda.syncthreads(). */
static void test_python_words(void)
{
    struct run r;
    struct hint_facts f;
    struct score_finding race =
        finding("Race reported between Write access at k+0x1c0 and Read access", 13);
    struct score_finding bar = finding("Barrier error detected. Divergent thread(s) in block", 9);
    struct score_sanitizer san;
    memset(&san, 0, sizeof san);
    san.tool = "racecheck";
    san.ran = 1;
    san.findings = &race;
    san.nfindings = 1;
    memset(&f, 0, sizeof f);
    f.python = 1;
    f.sanitizers = &san;
    f.nsanitizers = 1;
    const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    const char *t = text_of(l, "missing-syncthreads");
    ok(strstr(t, "`cuda.syncthreads()`") && !strstr(t, "__syncthreads"),
       "Python: racecheck's race names cuda.syncthreads(): %s", t);
    run_free(&r);
    san.findings = &bar;
    san.tool = "memcheck";
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    t = text_of(l, "divergent-barrier");
    ok(hint_find(l, "divergent-barrier") && strstr(t, "cuda.syncthreads()") &&
           !strstr(t, "__syncthreads"),
       "Python: a divergent barrier found by the sanitizer names cuda.syncthreads(): %s", t);
    run_free(&r);
    f.python = 0;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(strstr(text_of(l, "divergent-barrier"), "`__syncthreads()`") != NULL,
       "...and CUDA C keeps __syncthreads()");
    run_free(&r);
}

/* The text of h outside its code spans: where Markdown is live. */
static void outside_code(const char *h, char *buf, size_t len)
{
    size_t o = 0;
    int in = 0;
    for (; *h && o + 1 < len; h++) {
        if (*h == '`')
            in = !in;
        else if (!in)
            buf[o++] = *h;
    }
    buf[o] = '\0';
}

/* Issue 26 item 6: a device-assert line and a finding forged on stderr
 * put no live Markdown (links, bold) into a hint. */
static void test_markdown_inert(void)
{
    struct run r;
    struct hint_facts f;
    char live[HINT_TEXT_MAX];
    memset(&f, 0, sizeof f);
    f.program_err = "[x](http://evil.example/a):9: void k(): block: [**1**](http://evil.example/b), "
                    "thread: [_2_] Assertion `ok [c](http://evil.example/c) **x**` failed.\n";
    json_t *doc = json_pack("{s:[{s:s, s:b, s:s}]}", "cases", "name", "1000", "passed", 0,
                            "message", "device-side assert triggered");
    const struct hint_list *l = recognize(&r, &red, doc, &f);
    outside_code(text_of(l, "device-assert"), live, sizeof live);
    ok(hint_find(l, "device-assert") && !strstr(live, "http") && !strstr(live, "**") &&
           !strstr(live, "](") && !strstr(live, "_2_"),
       "device-assert: forged file, block and thread fields stay out of live Markdown: %s",
       text_of(l, "device-assert"));
    run_free(&r);
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(!hint_find(l, "device-assert"),
       "device-assert: a line printed on stderr while every case passed is no assert");
    run_free(&r);

    struct score_finding fd = finding("Invalid __global__ read` [d](http://evil.example/d) `",
                                      8);
    fd.file = (char *)"**k**.cu";
    struct score_sanitizer san;
    memset(&san, 0, sizeof san);
    san.tool = "memcheck";
    san.ran = 1;
    san.findings = &fd;
    san.nfindings = 1;
    memset(&f, 0, sizeof f);
    f.sanitizers = &san;
    f.nsanitizers = 1;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    outside_code(text_of(l, "bounds-check"), live, sizeof live);
    ok(hint_find(l, "bounds-check") && !strstr(live, "http") && !strstr(live, "**"),
       "bounds-check: a forged finding's message and file stay out of live Markdown: %s",
       text_of(l, "bounds-check"));
    run_free(&r);
}

static void test_profile(void)
{
    struct run r;
    struct hint_facts f;
    struct hint_profile p = {"lookup", "kernel.cu", 14, 19, 23, 31.5, 4, 8, 0.55};
    memset(&f, 0, sizeof f);
    f.profile = &p;
    const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(hint_find(l, "uncoalesced") && strstr(text_of(l, "uncoalesced"), "31.5 sectors") &&
           strstr(text_of(l, "uncoalesced"), "line 14"),
       "uncoalesced: the profiler's 31.5 sectors per request: %s", text_of(l, "uncoalesced"));
    ok(hint_find(l, "bank-conflicts") && strstr(text_of(l, "bank-conflicts"), "8.0-way") &&
           strstr(text_of(l, "bank-conflicts"), "line 19"),
       "bank-conflicts: 8-way, at its own line: %s", text_of(l, "bank-conflicts"));
    ok(hint_find(l, "divergence") && strstr(text_of(l, "divergence"), "55%") &&
           strstr(text_of(l, "divergence"), "line 23"),
       "divergence: 55%% branch efficiency, at its own line: %s", text_of(l, "divergence"));
    run_free(&r);
    struct hint_profile good = {"lookup", NULL, 0, 0, 0, 4.1, 4, 1, 0.99};
    f.profile = &good;
    l = recognize(&r, &red, red_doc(NULL, NULL), &f);
    ok(l->n == 0, "a coalesced, conflict-free, uniform kernel: no profiling hint (%zu)", l->n);
    run_free(&r);
}

/* score.c: the catalogue's hints in the result document. */
static void test_result_document(void)
{
    static const char *rub_json =
        "{\"lab\":\"reduction\",\"opens\":\"2026-11-01T00:00:00Z\",\"due\":\"2026-12-04T23:59:00Z\","
        "\"correctness\":[{\"case\":\"1000\",\"points\":5},{\"case\":\"2^26\",\"points\":5}],"
        "\"speed\":[]}";
    struct rubric rub;
    char err[256];
    json_t *rj = json_loads(rub_json, 0, NULL);
    int pr = rubric_parse(rj, &red, &rub, err, sizeof err);
    ok(pr == 0, "a reduction rubric parses (%s)", pr ? err : "ok");
    json_decref(rj);
    if (pr)
        return;
    struct run r;
    const struct hint_list *l =
        recognize(&r, &red, red_doc("2^26:33554432:50331777.5", NULL), NULL);
    struct score_input in;
    memset(&in, 0, sizeof in);
    in.lab = "reduction";
    in.status = "graded";
    in.cases = r.cases;
    in.ncases = r.ncases;
    in.hints = l->v;
    in.nhints = l->n;
    in.hints_ran = 1;
    json_t *doc = score_result(&rub, &in);
    json_t *cg = json_object_get(doc, "cugrade");
    json_t *hd = json_array_get(json_object_get(cg, "hint_details"), 0);
    ok(hd && strcmp(json_string_value(json_object_get(hd, "id")), "float32-saturation") == 0 &&
           strcmp(json_string_value(json_object_get(hd, "case")), "2^26") == 0,
       "cugrade.hint_details[0]: id float32-saturation, case 2^26");
    const char *h0 = json_string_value(json_array_get(json_object_get(cg, "hints"), 0));
    ok(h0 && strstr(h0, "Float32 accumulation"), "cugrade.hints[0] is its text");
    json_t *t1 = json_array_get(json_object_get(doc, "tests"), 1);
    const char *out = json_string_value(json_object_get(t1, "output"));
    ok(out && strstr(out, "Hint: Float32 accumulation"),
       "the case's feedback line carries the hint: %.200s", out ? out : "(none)");
    json_t *t0 = json_array_get(json_object_get(doc, "tests"), 0);
    ok(!strstr(json_string_value(json_object_get(t0, "output")), "Hint:"),
       "...and the passing case's line does not");
    json_decref(doc);
    run_free(&r);
    rubric_free(&rub);
}

/* The static scans on the project's own correct solutions: silent. */
static void test_correct_solutions_quiet(void)
{
    static const char *dirs[] = {"tests/gpu/solutions/reduction", "tests/gpu/solutions/matmul",
                                 "tests/gpu/solutions/embedding",
                                 "tests/gpu/solutions-py/reduction",
                                 "tests/gpu/solutions-py/matmul",
                                 "tests/gpu/solutions-py/embedding", NULL};
    size_t n = 0, loud = 0;
    char bad[512] = "";
    for (size_t d = 0; dirs[d]; d++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", root, dirs[d]);
        DIR *dp = opendir(path);
        struct dirent *e;
        while (dp && (e = readdir(dp))) {
            char file[1400];
            snprintf(file, sizeof file, "%s/%s", path, e->d_name);
            char *src = e->d_name[0] != '.' ? slurp(file) : NULL;
            if (!src)
                continue;
            if (strstr(src, "correctness=pass") && strstr(src, "status=graded") &&
                !strstr(src, "correctness=fail")) {
                struct hint_facts f;
                struct run r;
                memset(&f, 0, sizeof f);
                f.python = strstr(e->d_name, ".py") != NULL;
                f.source = src;
                f.source_len = strlen(src);
                const struct hint_list *l = recognize(&r, &red, red_doc(NULL, NULL), &f);
                n++;
                if (l->n) {
                    loud++;
                    snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " %s:%s", e->d_name,
                             l->v[0].id);
                }
                run_free(&r);
            }
            free(src);
        }
        if (dp)
            closedir(dp);
    }
    ok(n >= 10 && loud == 0, "no hint on the %zu correct solutions of tests/gpu (%zu loud:%s)", n,
       loud, bad);
}

static int load(const char *name, struct lab *l)
{
    char dir[1024], err[256];
    snprintf(dir, sizeof dir, "%s/labs/%s", root, name);
    int r = lab_load(dir, l, err, sizeof err);
    ok(r == 0, "labs/%s/lab.json loads (%s)", name, r ? err : "ok");
    return r;
}

int main(void)
{
    root = getenv("CUGRADE_ROOT") ? getenv("CUGRADE_ROOT") : ".";
    if (load("reduction", &red) || load("embedding", &emb) || load("matmul", &mm))
        return 1;
    const char *const *ids = hint_ids();
    size_t nids = 0;
    while (ids[nids])
        nids++;
    ok(nids == 15, "the catalogue has 15 entries (%zu)", nids);
    test_saturation();
    test_overflow();
    test_launch();
    test_launch_not_overflow();
    test_sanitizer_entries();
    test_device_assert();
    test_grid_and_sync_static();
    test_divergent_barrier();
    test_profile();
    test_hostile_source();
    test_source_strings();
    test_unset_output();
    test_device_memory();
    test_std_ddof();
    test_python_words();
    test_markdown_inert();
    test_result_document();
    test_correct_solutions_quiet();
    lab_free(&red);
    lab_free(&emb);
    lab_free(&mm);
    printf("1..%d\n", count);
    return failures != 0;
}
