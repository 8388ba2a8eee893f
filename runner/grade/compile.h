/*
 * compile.h - nvcc on the student's file, and the link with the lab's
 * trusted harness, both inside the sandbox (docs/runner.md, "A job").
 *
 * The sandbox sees the job's work directory at /work (the student's source
 * and, after the compile, student.o), the CUDA toolkit read-only, and for
 * the link the lab's built harness object read-only at /lab/harness.o.
 * Compiler output comes back with the sandbox's paths cleaned
 * ("/work/kernel.cu(12): error" -> "kernel.cu(12): error"), line numbers
 * intact.
 */
#ifndef CUGRADE_COMPILE_H
#define CUGRADE_COMPILE_H

#include <stddef.h>
#include <stdint.h>
#include "lab.h"

struct compile_toolchain {
    const char *cuda_home;  /* host path of the CUDA toolkit, e.g. "/usr/local/cuda" */
    const char *arch;       /* "sm_90" */
};

struct compile_result {
    int ok;                 /* 1: the output file was produced and nvcc exited 0 */
    int timed_out;          /* the compile/link time cap was hit */
    int oom;                /* the memory cap was hit */
    int starved;            /* timed out for want of a CPU (compile_starved): ours */
    int exit_code;          /* the command's exit status, -1 when it did not exit */
    int unavailable;        /* compile_front only: no front pass on this toolkit */
    double seconds;         /* wall time */
    char *log;              /* cleaned compiler output (stderr then stdout), caller frees */
    char message[256];      /* a sentence for the student when !ok */
};

/* Build the nvcc argv for the student's compile: nvcc -c <lab flags>
 * [-O3] [-lineinfo] -Xcompiler -fPIC -arch=<arch> <src> -o <obj> (-O3 and
 * -lineinfo added when the lab's flags lack them; position-independent host
 * code so the object links into the executable and the shared object the
 * sanitizers load alike). Returns a NULL-terminated malloc'd array whose
 * strings are malloc'd (free with compile_argv_free), or NULL on ENOMEM. */
char **compile_argv_student(const struct compile_toolchain *tc, const struct lab *lab,
                            const char *src, const char *obj);

/* Free an argv from compile_argv_*. */
void compile_argv_free(char **argv);

/* Compile workdir/<src> to workdir/<obj> inside the sandbox, with the lab's
 * compile_seconds and a memory cap. Returns 0 and fills *res (res->ok says
 * whether it compiled), or a negative errno when the sandbox failed (a
 * system_error). Caller frees with compile_result_free. */
int compile_student(const struct compile_toolchain *tc, const struct lab *lab,
                    const char *workdir, const char *src, const char *obj,
                    struct compile_result *res);

/* A toolchain step that ran past its wall limit is the student's (a file
 * too heavy to compile, or one that blocks the compiler) unless the host's
 * CPUs were what it waited for: starved when its cgroup's CPU pressure
 * says it was ready to run but waited for a CPU at least as long as it
 * ran, and for at least COMPILE_STARVED_SHARE of the limit. Then the job
 * is a system_error (retried), never the student's compile_error. A host
 * without CPU pressure accounting (no PSI) charges every timeout as
 * before. */
#define COMPILE_STARVED_SHARE 0.25
int compile_starved(double wall_limit, double cpu_seconds, double cpu_wait_seconds);

/* The front pass's own wall limit: it is there to answer a file that
 * does not parse in seconds, so one that takes longer (a hostile
 * preprocessor bomb, heavy templates) gives its front slot back and goes
 * on to the full compile, which has the lab's compile_seconds and says
 * what it says. Without this a few such files could hold every front
 * slot for the compile limit, and the runner claims nothing while its
 * front lane is full (serve.c). */
#define COMPILE_FRONT_SECONDS 10.0
/* The limit: $CUGRADE_FRONT_SECONDS (0.01 to 3600), else the default. */
double compile_front_seconds(void);

/* The CPU priority of the compiler's full steps (compile_student,
 * compile_link): nice 10 by default, $CUGRADE_COMPILE_NICE (0 to 19; 0:
 * as the runner). On deadline night the CPU lane's full compiles fill
 * every core; at a lower priority they give the cores first to the front
 * passes (a compile error answered in seconds, not after the queue's
 * compiles) and to the GPU lane's own CPU work (the check run's host
 * code, compute-sanitizer), and still get every idle cycle. Python's
 * syntax check runs at the runner's own priority, the front pass above
 * it (COMPILE_FRONT_NICE). */
#define COMPILE_NICE 10
int compile_nice(void);
/* The front pass's CPU priority: nice -5. It is the one step whose latency a student waits on while
 * everything else is throughput: 200 front passes of ~0.35 s of CPU each
 * are ~4.4 s of a 16-core host, and at the runner's own priority they
 * shared the cores with the GPU lane's sanitizers and check runs (the
 * host at 98-99% CPU at p90 in the burst). Bounded like the rest: its
 * own wall limit (compile_front_seconds) and the sandbox's CPU limit. */
#define COMPILE_FRONT_NICE (-5)
/* The front pass's programs use glibc's default malloc. On transparent
 * huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, used until
 * 2026-12-01) a pass took 0.35 s instead of 0.45-0.48 s on the H100 host,
 * but about 1 s more on the CI machine, where the kernel's clearing of
 * fresh 2 MiB pages was most of it: a small gain on one host against a
 * large loss on another (docs/log/2026-12-01-front-pass-huge-pages.md). */

/* The front pass (docs/runner.md "The front pass"): the preprocessor and
 * cudafe++ steps of the nvcc command compile_student would run, in the
 * same sandbox. res->ok: the file parses; else, unless res->unavailable
 * (this toolkit's dry run did not give those steps: carry on to nvcc),
 * res->log holds the errors as nvcc prints them; res->timed_out past
 * compile_front_seconds() (the caller goes on to the full compile). Same
 * returns. */
int compile_front(const struct compile_toolchain *tc, const struct lab *lab, const char *workdir,
                  const char *src, struct compile_result *res);

/* Link workdir/<obj> with the trusted harness object harness_obj (host path)
 * and static cudart into workdir/<prog>, inside the sandbox: an executable,
 * or with shared a shared object whose main() cugrade-launch calls
 * (runner/launch.c). Same returns. */
int compile_link(const struct compile_toolchain *tc, const struct lab *lab,
                 const char *workdir, const char *obj, const char *harness_obj,
                 const char *prog, int shared, struct compile_result *res);

/* Check a Python submission's syntax (workdir/src) in the compile sandbox
 * without running it (docs/python.md). Same returns; res->ok when it
 * parses. front: as the front pass (its time limit, COMPILE_FRONT_NICE),
 * else with the lab's compile limit at the runner's priority. */
int compile_python(const struct compile_toolchain *tc, const struct lab *lab, const char *workdir,
                   const char *src, int front, struct compile_result *res);

/* Clean sandbox paths out of compiler output: "/work/" and nvcc's
 * "/tmp/tmpxft_..._" temporary prefixes disappear, "/lab/" becomes "".
 * Returns a new string (caller frees), or NULL on ENOMEM. */
char *compile_log_clean(const char *log);

void compile_result_free(struct compile_result *res);

#endif
