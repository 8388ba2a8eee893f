/*
 * compile.c - see compile.h.
 */
#include "runner/grade/compile.h"
#include "runner/config.h"
#include "runner/grade/python.h"
#include "runner/run/run.h"
#include "runner/sandbox/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COMPILE_MEMORY   (6ull << 30)   /* cicc on a large template file needs GBs */
#define COMPILE_PIDS     256            /* nvcc -> cicc, ptxas, fatbinary, gcc, cc1plus, as */
#define COMPILE_FILES    (256ull << 20)
#define COMPILE_OUTPUT   (64u << 10)

void compile_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* Append a strdup of s to a NULL-terminated vector of capacity cap. */
static int argv_push(char **v, size_t *n, size_t cap, const char *s)
{
    if (*n + 1 >= cap)
        return -E2BIG;
    if (!(v[*n] = strdup(s)))
        return -ENOMEM;
    (*n)++;
    v[*n] = NULL;
    return 0;
}

static int lab_has_flag(const struct lab *lab, const char *flag)
{
    for (size_t i = 0; i < lab->nnvcc_flags; i++)
        if (strcmp(lab->nvcc_flags[i], flag) == 0)
            return 1;
    return 0;
}

char **compile_argv_student(const struct compile_toolchain *tc, const struct lab *lab,
                            const char *src, const char *obj)
{
    size_t cap = lab->nnvcc_flags + 16, n = 0;
    char **v = calloc(cap, sizeof *v);
    char nvcc[PATH_MAX], arch[64];
    if (!v)
        return NULL;
    snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", tc->cuda_home);
    snprintf(arch, sizeof arch, "-arch=%s", tc->arch);
    if (argv_push(v, &n, cap, nvcc) || argv_push(v, &n, cap, "-c"))
        goto fail;
    for (size_t i = 0; i < lab->nnvcc_flags; i++)
        if (argv_push(v, &n, cap, lab->nvcc_flags[i]))
            goto fail;
    if (!lab_has_flag(lab, "-O3") && argv_push(v, &n, cap, "-O3"))
        goto fail;
    if (!lab_has_flag(lab, "-lineinfo") && argv_push(v, &n, cap, "-lineinfo"))
        goto fail;
    if (argv_push(v, &n, cap, "-Xcompiler") || argv_push(v, &n, cap, "-fPIC") ||
        argv_push(v, &n, cap, arch) || argv_push(v, &n, cap, src) ||
        argv_push(v, &n, cap, "-o") || argv_push(v, &n, cap, obj))
        goto fail;
    return v;
fail:
    compile_argv_free(v);
    return NULL;
}

/* Is needle at s? */
static int at(const char *s, const char *needle)
{
    return strncmp(s, needle, strlen(needle)) == 0;
}

char *compile_log_clean(const char *log)
{
    size_t n = strlen(log);
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    const char *p = log;
    while (*p) {
        if (at(p, "/work/")) {
            p += 6;
        } else if (at(p, "/lab/")) {
            p += 5;
        } else if (at(p, "/tmp/tmpxft_")) {
            /* nvcc's intermediate files: /tmp/tmpxft_0000abcd_00000000-6_kernel.cudafe1.cpp */
            const char *q = p + 12;
            while (*q && *q != '/' && *q != ' ' && *q != '\n' && *q != ':') {
                if (*q == '-' ) {
                    const char *r = q + 1;
                    while (*r >= '0' && *r <= '9')
                        r++;
                    if (*r == '_') {
                        q = r + 1;
                        break;
                    }
                }
                q++;
            }
            p = q;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

void compile_result_free(struct compile_result *res)
{
    if (!res)
        return;
    free(res->log);
    res->log = NULL;
}

/* Environment of every toolchain run: nothing of the runner's leaks in. */
static void toolchain_env(const struct compile_toolchain *tc, char *path, size_t pathlen,
                          const char *env[8])
{
    snprintf(path, pathlen, "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin", tc->cuda_home);
    env[0] = path;
    env[1] = "HOME=/work";
    env[2] = "TMPDIR=/tmp";
    env[3] = "LANG=C";
    env[4] = "LC_ALL=C";
    env[5] = NULL;
}

/* What one toolchain step must leave, and how it runs. */
struct toolchain_step {
    const char *expect_out; /* the file (in workdir) that says it worked */
    double wall;            /* its wall limit; 0: the lab's compile_seconds */
    int nice;               /* its CPU priority (compile_nice, COMPILE_FRONT_NICE, 0) */
};

int compile_starved(double wall_limit, double cpu_seconds, double cpu_wait_seconds)
{
    if (cpu_wait_seconds < 0 || wall_limit <= 0)
        return 0; /* unknown: charged as before */
    return cpu_wait_seconds >= cpu_seconds &&
           cpu_wait_seconds >= COMPILE_STARVED_SHARE * wall_limit;
}

/* Run argv in the sandbox with the toolchain's limits, clean its output
 * into res. Returns 0 or -errno (sandbox failure). */
static int toolchain_run(const struct compile_toolchain *tc, const struct lab *lab,
                         const char *workdir, const char *const *argv,
                         const struct sandbox_bind *extra, size_t nextra,
                         const struct toolchain_step *step, struct compile_result *res)
{
    struct sandbox_config cfg;
    struct sandbox_verdict v;
    struct sandbox_bind binds[4];
    char path[PATH_MAX + 64], real[PATH_MAX];
    const char *env[8];
    size_t nb = 0;
    int rc;

    memset(res, 0, sizeof *res);
    memset(&v, 0, sizeof v);
    sandbox_config_init(&cfg);
    toolchain_env(tc, path, sizeof path, env);
    nb = sandbox_cuda_binds(tc->cuda_home, binds, real);
    for (size_t i = 0; i < nextra && nb < 4; i++)
        binds[nb++] = extra[i];
    cfg.argv = argv;
    cfg.env = env;
    cfg.workdir = workdir;
    cfg.binds = binds;
    cfg.nbinds = nb;
    cfg.wall_seconds = lab->compile_seconds > 0 ? lab->compile_seconds : 60;
    if (step->wall > 0 && step->wall < cfg.wall_seconds)
        cfg.wall_seconds = step->wall;
    cfg.nice = step->nice;
    cfg.cpu_seconds = cfg.wall_seconds * 2; /* nvcc runs a few tools in parallel */
    cfg.memory_bytes = COMPILE_MEMORY;
    cfg.pids = COMPILE_PIDS;
    cfg.file_bytes = COMPILE_FILES;
    cfg.workdir_bytes = COMPILE_FILES;
    cfg.output_cap = COMPILE_OUTPUT;
    cfg.result_fd = -1;
    cfg.allow_gpu = 0;

    rc = sandbox_run(&cfg, &v);
    if (rc < 0)
        goto out;
    res->seconds = v.wall_seconds;
    res->exit_code = v.exited ? v.exit_code : -1;
    size_t le = v.err ? strlen(v.err) : 0, lo = v.out ? strlen(v.out) : 0;
    char *joined = malloc(le + lo + 2);
    if (!joined) {
        rc = -ENOMEM;
        goto out;
    }
    snprintf(joined, le + lo + 2, "%s%s%s", v.err ? v.err : "",
             (le && lo && v.err[le - 1] != '\n') ? "\n" : "", v.out ? v.out : "");
    res->log = compile_log_clean(joined);
    free(joined);
    if (!res->log) {
        rc = -ENOMEM;
        goto out;
    }
    if (v.timed_out && !v.cpu_limit &&
        compile_starved(cfg.wall_seconds, v.cpu_seconds, v.cpu_wait_seconds)) {
        res->timed_out = res->starved = 1;
        snprintf(res->message, sizeof res->message,
                 "the compiler waited %.1f s for a CPU and ran %.1f s in its %.0f s limit: "
                 "this grading host was overloaded (our problem, not yours; retried)",
                 v.cpu_wait_seconds, v.cpu_seconds, cfg.wall_seconds);
    } else if (v.timed_out) {
        res->timed_out = 1;
        snprintf(res->message, sizeof res->message,
                 "the compiler ran past the lab's limit of %.0f s.", cfg.wall_seconds);
    } else if (v.oom_killed) {
        res->oom = 1;
        snprintf(res->message, sizeof res->message,
                 "the compiler ran out of memory (limit %llu MiB).",
                 (unsigned long long)(COMPILE_MEMORY >> 20));
    } else if (!v.exited || v.exit_code != 0) {
        snprintf(res->message, sizeof res->message, "%s",
                 v.exited ? "the compiler reported errors." : v.message);
    } else {
        char check[PATH_MAX];
        snprintf(check, sizeof check, "%s/%s", workdir, step->expect_out);
        if (access(check, F_OK) != 0)
            snprintf(res->message, sizeof res->message,
                     "the compiler exited without producing %s.", step->expect_out);
        else
            res->ok = 1;
    }
    rc = 0;
out:
    sandbox_verdict_free(&v);
    return rc;
}

int compile_student(const struct compile_toolchain *tc, const struct lab *lab,
                    const char *workdir, const char *src, const char *obj,
                    struct compile_result *res)
{
    char **argv = compile_argv_student(tc, lab, src, obj);
    if (!argv) {
        memset(res, 0, sizeof *res);
        return -ENOMEM;
    }
    struct toolchain_step step = {obj, 0, compile_nice()};
    int rc = toolchain_run(tc, lab, workdir, (const char *const *)argv, NULL, 0, &step, res);
    compile_argv_free(argv);
    return rc;
}

/* The front pass: nvcc's own first two steps for the same command line
 * (the host preprocessor, then cudafe++, the EDG front end that parses the
 * whole file, host and device code), taken from `nvcc --dryrun` and run as
 * nvcc would run them. ~0.35 s of CPU against ~0.8 s for nvcc -c and ~2 s
 * for the CPU lane's whole work, and the same error lines nvcc prints.
 * Exit 0 (and /work/.front-ok): it parses; 1: the student's error;
 * 100: the dry run did not give the two steps (another toolkit): no
 * front pass. */
static const char front_script[] =
    "nvcc=$1; shift\n"
    "\"$nvcc\" \"$@\" --dryrun >/tmp/dry 2>&1 || exit 100\n"
    "sed -n -e '/^#\\$ [A-Za-z_][A-Za-z_0-9]*=/d' -e 's/^#\\$ //p' -e '/^cudafe++ /q' /tmp/dry"
    " >/tmp/front.sh || exit 100\n"
    "grep -q '^cudafe++ ' /tmp/front.sh || exit 100\n"
    "sh -e /tmp/front.sh || exit 1\n"
    ": > /work/.front-ok\n";

int compile_nice(void)
{
    return (int)runner_cfg()->compile_nice;
}

double compile_front_seconds(void)
{
    return runner_cfg()->front_seconds;
}

int compile_front(const struct compile_toolchain *tc, const struct lab *lab, const char *workdir,
                  const char *src, struct compile_result *res)
{
    char **nv = compile_argv_student(tc, lab, src, "student.o");
    size_t n = 0;
    if (!nv) {
        memset(res, 0, sizeof *res);
        return -ENOMEM;
    }
    while (nv[n])
        n++;
    const char **argv = calloc(n + 5, sizeof *argv);
    if (!argv) {
        compile_argv_free(nv);
        memset(res, 0, sizeof *res);
        return -ENOMEM;
    }
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = front_script;
    argv[3] = "front";
    for (size_t i = 0; i < n; i++)
        argv[4 + i] = nv[i];
    struct toolchain_step step = {".front-ok", compile_front_seconds(), COMPILE_FRONT_NICE};
    int rc = toolchain_run(tc, lab, workdir, argv, NULL, 0, &step, res);
    if (rc == 0 && !res->ok && res->exit_code == 100) {
        res->unavailable = 1;
    } else if (rc == 0 && !res->ok && !res->timed_out && !res->oom) {
        snprintf(res->message, sizeof res->message, "the compiler reported errors.");
    }
    free(argv);
    compile_argv_free(nv);
    return rc;
}

/* A Python file's syntax, checked without running any of it: compile()
 * only parses. The SyntaxError comes back as the compile log, in
 * Python's own words, with the file's name only (exit 1). Then whether
 * the file can define the lab's function at all: a file in which the
 * function's name appears nowhere (no def, assignment, import or string
 * of it; the test is the name as a word of the source, so a name built by
 * setattr from a literal still passes) is told so here, in about a second
 * (exit 3), instead of after the GPU lane's check run has started two
 * interpreters. Whatever passes is checked again when the tenant loads
 * the module (labs/common/py/tenant.py). */
static const char python_syntax_check[] =
    "import os, re, sys, traceback\n"
    "p, sym = sys.argv[1], sys.argv[2]\n"
    "src = open(p, 'rb').read()\n"
    "try:\n"
    "    compile(src, os.path.basename(p), 'exec')\n"
    "except (SyntaxError, ValueError) as e:\n"
    "    sys.stderr.write(''.join(traceback.format_exception_only(type(e), e)))\n"
    "    sys.exit(1)\n"
    "if sym and not re.search(rb'(?<![A-Za-z0-9_])' + re.escape(sym.encode()) +\n"
    "                         rb'(?![A-Za-z0-9_])', src):\n"
    "    sys.stderr.write('your file defines no function %s(...): define it at the top level '\n"
    "                     'of your file, as in starter.py\\n' % sym)\n"
    "    sys.exit(3)\n"
    "open('/work/.python-syntax-ok', 'w').close()\n";

int compile_python(const struct compile_toolchain *tc, const struct lab *lab, const char *workdir,
                   const char *src, int front, struct compile_result *res)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/work/%s", src);
    const char *argv[] = {python_interpreter(), "-I", "-B", "-c", python_syntax_check, path,
                          lab->symbol ? lab->symbol : "", NULL};
    struct sandbox_bind root;
    size_t nroot = (size_t)python_root_bind(&root);
    struct toolchain_step step = {".python-syntax-ok", front ? compile_front_seconds() : 0,
                                  front ? COMPILE_FRONT_NICE : 0};
    int rc = toolchain_run(tc, lab, workdir, argv, nroot ? &root : NULL, nroot, &step, res);
    if (rc == 0 && !res->ok && !res->timed_out && !res->oom)
        snprintf(res->message, sizeof res->message, "%s",
                 res->exit_code == 3
                     ? "your file does not define the lab's function: see below."
                     : "Python could not parse your file: fix the syntax error below (the line "
                       "number is in your file).");
    return rc;
}

/* The CUDA allocators whose calls the harness counts (see compile_link). */
static const char *const link_wraps[] = {
    "--wrap=cudaMalloc",      "--wrap=cudaMallocManaged", "--wrap=cudaMallocPitch",
    "--wrap=cudaMallocAsync", "--wrap=cudaFree",          "--wrap=cudaFreeAsync",
};

int compile_link(const struct compile_toolchain *tc, const struct lab *lab,
                 const char *workdir, const char *obj, const char *harness_obj,
                 const char *prog, int shared, struct compile_result *res)
{
    size_t cap = lab->nlink_libs + 16 + 2 * sizeof link_wraps / sizeof *link_wraps, n = 0;
    char **v = calloc(cap, sizeof *v);
    char nvcc[PATH_MAX], arch[64];
    int rc = -ENOMEM;
    struct sandbox_bind hb = {harness_obj, "/lab/harness.o", 0};

    memset(res, 0, sizeof *res);
    if (!v)
        return -ENOMEM;
    snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", tc->cuda_home);
    snprintf(arch, sizeof arch, "-arch=%s", tc->arch);
    /* The student's object first, the trusted harness after it, static
     * cudart (nvcc's default) last. */
    if (argv_push(v, &n, cap, nvcc) || argv_push(v, &n, cap, arch) ||
        argv_push(v, &n, cap, "-cudart=static") || argv_push(v, &n, cap, obj) ||
        argv_push(v, &n, cap, "/lab/harness.o") || (shared && argv_push(v, &n, cap, "-shared")))
        goto out;
    /* The student's CUDA allocations go through the harness's ledger
     * (labs/common/harness_common.cu, "the student's device memory"): an
     * out-of-memory in the harness is then charged to whoever holds it. */
    for (size_t i = 0; i < sizeof link_wraps / sizeof *link_wraps; i++)
        if (argv_push(v, &n, cap, "-Xlinker") || argv_push(v, &n, cap, link_wraps[i]))
            goto out;
    for (size_t i = 0; i < lab->nlink_libs; i++)
        if (argv_push(v, &n, cap, lab->link_libs[i]))
            goto out;
    if (argv_push(v, &n, cap, "-o") || argv_push(v, &n, cap, prog))
        goto out;
    struct toolchain_step step = {prog, 0, compile_nice()};
    rc = toolchain_run(tc, lab, workdir, (const char *const *)v, &hb, 1, &step, res);
out:
    compile_argv_free(v);
    return rc;
}
