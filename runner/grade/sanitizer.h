/*
 * sanitizer.h - compute-sanitizer runs (memcheck, racecheck) of a job,
 * pre-started (runner/launch.c): compute-sanitizer with cugrade-launch as
 * its target starts in the sandbox while nvcc compiles, brings up its
 * injection and the CUDA context (most of its cost), and waits on its
 * control socket. After the link, sanitizer_go() hands it /work/prog.so;
 * sanitizer_cancel() ends a run whose program never came. Findings are
 * parsed by grade_sanitizer_parse (grade.h) into a score_sanitizer.
 *
 * A Python submission's runs (python != 0) have no program to wait for,
 * only the student's .py under the Python harness (python_sanitize_prepare,
 * python.h). sanitizer_prestart starts each with a gate (tenant.py
 * --sanitize ... --gate, fd 4): the tool, the interpreter, its libraries and
 * the CUDA context come up while the job waits for its turn on the GPU,
 * then the tenant says 'r' and waits; sanitizer_go sends 'g' (and starts
 * the run's clock). A run that could not be started so, or that ended
 * before its go, is started at the go as before, without a gate
 * (docs/python.md "Sanitizers").
 *
 * A task's thread writes t->s, t->r, t->err, t->gone; the job reads them
 * only after sanitizer_finish.
 */
#ifndef CUGRADE_SANITIZER_H
#define CUGRADE_SANITIZER_H

#include "runner/gpu/share.h"
#include "runner/grade/python.h"
#include "runner/run/run.h"
#include "runner/grade/score.h"

#include <pthread.h>

struct sanitizer_task {
    pthread_t thread;
    int started;
    const struct run_ctx *rc;
    const char *tool, *cs, *seed, *sanitize_case, *launch;
    long long job_id;
    struct score_sanitizer *s;
    int ctl;                     /* our end of the launcher's control socket */
    int ctl_child;               /* its end: fd 4 in the sandbox */
    int cancel[2];               /* a byte on [1]: the sandbox ends at once */
    int done[2];                 /* [1] closed by the thread when the run ended */
    int gone;                    /* cancelled: nothing to report */
    int overtime;                /* cancelled past its limit: a timeout of the program's */
    double limit;                /* seconds from go (its clock's, or the wall's) */
    int r;                       /* < 0: the sandbox failed (system_error) */
    char err[256];
    int python;                  /* a .py submission: py and py_opts are its run */
    struct python_run py;
    struct run_opts py_opts;
    int gated;        /* Python: started with its gate (ctl), before the go */
    _Atomic int went; /* Python, gated: 'g' is being or was sent */
    int early;        /* Python, gated: ended before its go; not judged */
    /* Its limit from the go on the wall clock less the time the host's
     * CPUs kept it waiting (its CPU stall: share.h), so that a loaded host
     * is never the program's timeout; not divided among the GPU's users,
     * as a check run's is: the run holds the job's shared lock, and a
     * program that hangs under the tool alone would hold every timing
     * run back for that much longer. */
    struct share_clock sc;
    int clock_on;            /* sc runs: started with the run, stopped once after it */
    struct sandbox_pause pz; /* sc stopped from a gated run's start to its go */
    int paused;              /* pz under way */
    double go_at;            /* run_now() at the go, 0 before (sanitizer_settle) */
};

/* grade_sanitizer_parse for a Python run: positions in the student's file
 * only (student_file, its name in /work: "kernel.py"; with lineinfo the
 * device frame's line, without it the host frame's launch line -- never
 * the harness's tenant.py), each hint in Python's words (cuda.syncthreads,
 * a bounds check on x.shape[0]), Numba's decorated kernel names and any
 * host path cut from the message. */
void sanitizer_python_parse(const char *text, struct score_sanitizer *s, const char *student_file);

/* The tool's out-of-memory findings ("Program hit CUDA_ERROR_OUT_OF_MEMORY
 * ... on CUDA API call to cuLaunchKernel", cudaErrorMemoryAllocation) are
 * not the student's: a sanitizer run shares the GPU with other jobs, whose
 * memory (past their reservations, docs/runner.md "GPU memory") can leave
 * it none (an H200's make test-gpu charged a correct CuPy matmul 10 points
 * for one). They are dropped from s; when nothing else was found and the
 * tool said it found errors (errors_exit), the line is ours: not run,
 * infra_failed, a note that says so (score.c does not charge it). A
 * student's own allocation that fails fails their check run's cases too.
 * Returns how many findings were dropped. */
size_t sanitizer_oom_ours(struct score_sanitizer *s, int errors_exit);

/* Zero t with every fd -1: sanitizer_cancel and sanitizer_finish are safe. */
void sanitizer_task_init(struct sanitizer_task *t);
/* Start t (tool, rc, cs, seed, sanitize_case, launch, limit, s filled in)
 * waiting for its program (Python: at its gate). Returns 0, or -errno with
 * nothing started (Python: never fails; a run not started is started at
 * the go). */
int sanitizer_prestart(struct sanitizer_task *t);
/* The program is linked: let t load it and wait until it has (at most
 * 30 s) or its run ended; its limit counts from now (its clock). Python: 'g' on its
 * gate, or the run started now when it has none (it could not be
 * pre-started, or ended before its go). */
void sanitizer_go(struct sanitizer_task *t);
/* End t's run at once; sanitizer_finish waits for its thread. */
void sanitizer_cancel(struct sanitizer_task *t);
/* Wait for the n runs that got their program, each until its clock ends
 * it (or, without one, its limit on the wall clock from the go; with one, a
 * wall backstop); one ended so is a timeout of the program's. */
void sanitizer_settle(struct sanitizer_task *t, size_t n);
/* Wait for t's thread, then close what it held. */
void sanitizer_finish(struct sanitizer_task *t);

#endif
