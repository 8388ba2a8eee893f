/*
 * runner_pysan.c - unit tests for compute-sanitizer on Python submissions
 * (docs/python.md "Sanitizers"): the command line of a Python job's
 * sanitizer run (python_sanitize_prepare), the harness's "start" record,
 * and compute-sanitizer's output for a Numba kernel -- real captures from
 * an H100 under tests/runner/fixtures/pysan-*.txt -- parsed into the
 * student's file:line with Numba's names and every host path cut and the
 * hints in Python's words. Prints TAP lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/config.h"
#include "runner/grade/grade.h"
#include "runner/grade/python.h"
#include "runner/grade/sanitizer.h"
#include "runner/grade/score.h"
#include "tap.h"

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

/* The lines of the captured findings (tests/gpu/solutions-py/reduction/
 * oob_write.py and race.py as /work/kernel.py). */
#define PYSAN_MEMCHECK_LINE 26
#define PYSAN_RACECHECK_LINE 22

static const char *root;
static struct lab reduction; /* ROOT/labs/reduction, loaded by main */

/* The fixture's text (malloc'd), or NULL. */
static char *fixture(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/runner/fixtures/%s", root, name);
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static int no_host_path(const char *s)
{
    return s && !strstr(s, "/work") && !strstr(s, "/opt/") && !strstr(s, "/usr/") &&
           !strstr(s, "site-packages") && !strstr(s, "cudapy::") && !strstr(s, "[abi:") &&
           !strstr(s, "Array<");
}

static void test_argv(void)
{
    struct python_run pr;
    struct run_opts o;
    memset(&pr, 0, sizeof pr);
    memset(&o, 0, sizeof o);
    unsetenv("CUGRADE_PYTHON");
    env_switch("CUGRADE_NO_GPU", NULL);
    int r =
        python_sanitize_prepare(&pr, &o, root, &reduction, "/usr/local/cuda/bin/compute-sanitizer",
                                "racecheck", "1000", "00112233aabbccdd", "kernel.py");
    const char *want[] = {"/usr/local/cuda/bin/compute-sanitizer",
                          "--tool",
                          "racecheck",
                          "--error-exitcode",
                          "86",
                          "--print-limit",
                          "20",
                          "--launch-timeout",
                          "60",
                          "/usr/bin/python3",
                          "-I",
                          "-B",
                          "/lab/labs/common/py/tenant.py",
                          "--sanitize",
                          "reduction",
                          "1000",
                          "00112233aabbccdd",
                          "/work/kernel.py",
                          NULL};
    int same = r == 0;
    for (size_t i = 0; same && i < sizeof want / sizeof *want; i++)
        same = want[i] ? pr.argv[i] && strcmp(pr.argv[i], want[i]) == 0 : pr.argv[i] == NULL;
    check(same, "a Python sanitizer run: compute-sanitizer --tool racecheck ... python3 -I -B "
                "tenant.py --sanitize reduction 1000 SEED /work/kernel.py");
    for (size_t i = 0; pr.argv[i]; i++)
        if (strstr(pr.argv[i], "target-processes"))
            same = 0;
    check(same, "no --target-processes all: the tool's target is the student's process itself");
    char labs[1100];
    snprintf(labs, sizeof labs, "%s/labs", root);
    check(o.labs_bind && strcmp(o.labs_bind, labs) == 0 && o.control_fd == -1 && !o.secret &&
              !o.extra_env,
          "labs bound read-only, no control socket, no run seed handed over, no simulator");
    env_switch("CUGRADE_NO_GPU", "1");
    memset(&o, 0, sizeof o);
    python_sanitize_prepare(&pr, &o, root, &reduction, "cs", "memcheck", "1000", "ab", "k.py");
    check(o.extra_env && strcmp(o.extra_env, "NUMBA_ENABLE_CUDASIM=1") == 0 && o.pids >= 4096,
          "in the simulator: NUMBA_ENABLE_CUDASIM=1 and the simulator's threads");
    env_switch("CUGRADE_NO_GPU", NULL);

    struct python_run a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    python_sanitize_seed(&a);
    python_sanitize_seed(&b);
    check(strlen(a.seed) == 16 && strspn(a.seed, "0123456789abcdef") == 16 &&
              strcmp(a.seed, b.seed) != 0,
          "a throwaway seed: 16 hex digits, a fresh one each time (never the run's)");

    check(python_sanitize_started("{\"type\": \"start\", \"lab\": \"reduction\"}\n") &&
              !python_sanitize_started("") && !python_sanitize_started(NULL),
          "the harness's start record is recognised; without it the run failed before the "
          "student's code");
}

static void test_capture(const char *name, const char *tool, const char *student, int want_line,
                         const char *want_msg, const char *want_hint)
{
    char *text = fixture(name);
    if (!text) {
        printf("not ok - fixture %s missing\n", name);
        failures++;
        return;
    }
    struct score_sanitizer s = {.tool = tool};
    sanitizer_python_parse(text, &s, student);
    char title[256];
    snprintf(title, sizeof title, "%s (real capture %s): a finding at %s:%d", tool, name, student,
             want_line);
    check(s.nfindings >= 1 && s.findings[0].file && strcmp(s.findings[0].file, student) == 0 &&
              s.findings[0].line == want_line,
          title);
    int others = 1;
    for (size_t i = 0; i < s.nfindings; i++)
        others = others && (!s.findings[i].file || strcmp(s.findings[i].file, student) == 0);
    snprintf(title, sizeof title, "%s: every position is in the student's %s (none in tenant.py)",
             tool, student);
    check(s.nfindings >= 1 && others, title);
    if (s.nfindings < 1)
        printf("#   %.600s\n", text);
    else
        printf("#   %s:%d %s | %s\n", s.findings[0].file ? s.findings[0].file : "?",
               s.findings[0].line, s.findings[0].message,
               s.findings[0].hint ? s.findings[0].hint : "");
    int clean = 1;
    for (size_t i = 0; i < s.nfindings; i++)
        clean = clean && no_host_path(s.findings[i].message) &&
                (!s.findings[i].file || no_host_path(s.findings[i].file));
    snprintf(title, sizeof title, "%s: no host path, no mangled Numba name in its findings", tool);
    check(s.nfindings >= 1 && clean, title);
    snprintf(title, sizeof title, "%s: the message says \"%s\", the hint \"%s\"", tool, want_msg,
             want_hint);
    check(s.nfindings >= 1 && strstr(s.findings[0].message, want_msg) && s.findings[0].hint &&
              strstr(s.findings[0].hint, want_hint),
          title);
    score_sanitizer_clear(&s);
    free(text);
}

/* The owner and the hidden files come from the loaded lab (lab.json's
 * "python", read by common/lab.c), not from a second read of lab.json: a
 * lab with no lab.json on disk still gets its owner and its hidden file. */
static void test_lab_python(void)
{
    char dir[] = "/tmp/pysan-hide-XXXXXX", file[64], pattern[64], *hide[1] = {pattern};
    check(mkdtemp(dir) != NULL, "a temporary folder");
    snprintf(file, sizeof file, "%s/libhidden.so.1", dir);
    snprintf(pattern, sizeof pattern, "%s/libhidden*.so*", dir);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    struct lab lab = {.name = "nolab",
                      .python_owner = "own.py",
                      .python_hide = hide,
                      .npython_hide = 1,
                      .timing_case = "1"};
    struct python_run pr;
    struct run_opts o;
    memset(&pr, 0, sizeof pr);
    memset(&o, 0, sizeof o);
    int r = python_run_prepare(&pr, &o, root, &lab, "check", "ab", "1", NULL, "k.py");
    check(r == 0 && strcmp(pr.argv[3], "/lab/labs/nolab/own.py") == 0 &&
              strcmp(pr.argv[4], "nolab") == 0,
          "the lab's own owner script (lab.python_owner), by the lab's name");
    int hidden = 0;
    for (size_t i = 0; i < pr.nhide; i++)
        hidden |= strcmp(pr.hide[i].src, "/dev/null") == 0 && strcmp(pr.hide[i].dst, file) == 0;
    check(hidden, "a file of lab.python_hide is bound to /dev/null");
    lab.python_owner = NULL;
    lab.npython_hide = 0;
    memset(&pr, 0, sizeof pr);
    r = python_run_prepare(&pr, &o, root, &lab, "check", "ab", "1", NULL, "k.py");
    check(r == 0 && strcmp(pr.argv[3], "/lab/labs/common/py/owner.py") == 0,
          "no owner: the common owner.py");
    unlink(file);
    rmdir(dir);
}

/* The tool's out-of-memory findings are ours (sanitizer_oom_ours): the
 * message a make test-gpu run on an H200 charged a correct CuPy matmul for
 * ("Program hit CUDA_ERROR_OUT_OF_MEMORY (error 2) due to \"out of memory\"
 * on CUDA API call to cuLaunchKernel.", the GPU full of other jobs'
 * memory), in the tool's layout; and beside a real race, which stays. */
#define OOM_LINES                                                                                  \
    "========= Program hit CUDA_ERROR_OUT_OF_MEMORY (error 2) due to \"out of memory\" on CUDA "   \
    "API call to cuLaunchKernel.\n"                                                                \
    "=========     Saved host backtrace up to driver entry point at error\n"                       \
    "=========         Host Frame: matmul in cupy_rawkernel.py:31\n"                               \
    "=========         Host Frame: call in tenant.py:181\n"                                        \
    "========= \n"
static void test_oom_ours(void)
{
    struct score_sanitizer s = {.tool = "memcheck"};
    s.ran = 1;
    sanitizer_python_parse("========= COMPUTE-SANITIZER\n" OOM_LINES
                           "========= ERROR SUMMARY: 1 error\n",
                           &s, "cupy_rawkernel.py");
    check(s.nfindings == 1, "the tool's out-of-memory line is parsed as a finding");
    check(sanitizer_oom_ours(&s, 1) == 1 && s.nfindings == 0 && !s.ran && !s.clean &&
              s.infra_failed && strstr(s.note, "our problem, not yours"),
          "alone, it is dropped and the line is ours: not run, not charged, the note says why");
    score_sanitizer_clear(&s);

    struct score_sanitizer c = {.tool = "memcheck"};
    c.ran = 1;
    grade_sanitizer_parse("========= COMPUTE-SANITIZER\n"
                          "========= Program hit cudaErrorMemoryAllocation (error 2) due to "
                          "\"out of memory\" on CUDA API call to cudaMalloc.\n"
                          "=========     Saved host backtrace up to driver entry point at error\n"
                          "========= \n",
                          &c);
    check(c.nfindings == 1 && sanitizer_oom_ours(&c, 1) == 1 && c.infra_failed,
          "a CUDA program's cudaMalloc that found no memory under the tool: ours too");
    score_sanitizer_clear(&c);

    char *race = fixture("pysan-racecheck.txt");
    struct score_sanitizer r = {.tool = "racecheck"};
    r.ran = 1;
    size_t len = race ? strlen(race) : 0;
    char *both = malloc(len + sizeof OOM_LINES);
    if (both) {
        memcpy(both, race ? race : "", len);
        memcpy(both + len, OOM_LINES, sizeof OOM_LINES);
        sanitizer_python_parse(both, &r, "kernel.py");
    }
    size_t before = r.nfindings;
    check(race && before >= 2 && sanitizer_oom_ours(&r, 1) == 1 && r.nfindings == before - 1 &&
              r.ran && !r.infra_failed && strstr(r.findings[0].message, "Race reported"),
          "beside a real race, only the out-of-memory finding goes: the race is still charged");
    score_sanitizer_clear(&r);
    free(both);
    free(race);

    struct score_sanitizer n = {.tool = "memcheck"};
    n.ran = 1;
    sanitizer_python_parse("========= COMPUTE-SANITIZER\n" OOM_LINES, &n, "cupy_rawkernel.py");
    check(sanitizer_oom_ours(&n, 0) == 1 && n.ran && !n.infra_failed,
          "a run that did not end with the tool's errors-found code keeps its own verdict");
    score_sanitizer_clear(&n);
}

int main(void)
{
    char dir[1100], err[512];
    root = getenv("CUGRADE_ROOT");
    if (!root)
        root = ".";
    snprintf(dir, sizeof dir, "%s/labs/reduction", root);
    if (lab_load(dir, &reduction, err, sizeof err) < 0) {
        fprintf(stderr, "# %s\n", err);
        return 1;
    }
    test_argv();
    test_lab_python();
    test_oom_ours();
    test_capture("pysan-memcheck.txt", "memcheck", "kernel.py", PYSAN_MEMCHECK_LINE,
                 "Invalid __global__ write", "x.shape[0]");
    test_capture("pysan-racecheck.txt", "racecheck", "kernel.py", PYSAN_RACECHECK_LINE,
                 "Race reported", "cuda.syncthreads()");
    /* The owner/tenant pair under --target-processes all (IPC buffers), the
     * student's file ipc_oob.py without lineinfo: the position is the host
     * frame's launch line (52), never the harness's tenant.py frames of the
     * follow-on CUDA_ERROR_LAUNCH_FAILED findings. */
    test_capture("pysan-memcheck-ipc.txt", "memcheck", "ipc_oob.py", 52, "Invalid __global__ write",
                 "x.shape[0]");

    /* Without lineinfo (a student's @cuda.jit(lineinfo=False)): no position,
     * still a finding, still no path. */
    struct score_sanitizer s = {.tool = "memcheck"};
    sanitizer_python_parse("========= COMPUTE-SANITIZER\n"
                           "========= Invalid __global__ write of size 4 bytes\n"
                           "=========     at "
                           "cudapy::submission::k[abi:v1,cw51cXTLSUwv1sCUt9Uw1VDQjQVVQE0ONQQA]("
                           "Array<float, 1, C, mutable, aligned>)+0x90\n"
                           "=========         Host Frame: main in tenant.py:298\n"
                           "========= ERROR SUMMARY: 1 error\n",
                           &s, "kernel.py");
    check(s.nfindings == 1 && !s.findings[0].file && no_host_path(s.findings[0].message),
          "without lineinfo or a launch frame of the student's: a finding without a position (not "
          "tenant.py)");
    score_sanitizer_clear(&s);
    lab_free(&reduction);
    return failures ? 1 : 0;
}
