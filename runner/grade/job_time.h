/*
 * job_time.h - what the timing phase's two files share: job_time.c (the
 * rounds, the judge, the baselines, re-timing) and job_time_gate.c (a
 * timing run's gate and the run started beside the check). Not for the
 * rest of the runner: job.h has job_time, job_phase.h the pre-start.
 */
#ifndef CUGRADE_RUNNER_JOB_TIME_H
#define CUGRADE_RUNNER_JOB_TIME_H

#include <pthread.h>

#include "runner/grade/job.h"
#include "runner/grade/job_phase.h"
#include "runner/grade/pool.h"
#include "runner/grade/python.h"
#include "runner/run/run.h"

struct job_round; /* job_time.c: one timing round's baselines and pool */

/* The first timing run, started beside the check run (job_time_prestart):
 * its start-up (an interpreter, CuPy and Numba, a context, the timed
 * case's inputs; for CUDA a context and the inputs) overlaps the check,
 * and it waits at its gate, its wall clock stopped, until the job reaches
 * its timing (go 1) or ends without one (go -1: the gate is shut, the run
 * ends at it). Nothing of the student's runs in it before 'g'. */
struct time_pre {
    struct job *j;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;             /* 0: not yet; 1: timing; -1: never */
    int gate_fd;        /* the gate's socket while it is open, else -1 */
    int cancel_wfd;     /* a byte here ends the run (sandbox cancel_fd), else -1 */
    int cancel_pipe[2]; /* the cancel fd when no share clock gives one */
    int fd;             /* the timing channel */
    const char *targv_c[12];
    const char *const *targv;
    struct run_opts o;
    struct python_run pr;
    double tlim;
    int r, tlk, sampled; /* job_time_gated's results */
    char note[200];
    /* 1: the warm timing run of the job's pool member, given its job (pt) */
    int warm;
    struct pool_time pt;
};

/* The phase a round's seconds go to: the first round's own, or "retime". */
const char *round_phase(int k, const char *first);
/* The job's shared lock let go once its sanitizers have ended (round 0). */
void job_time_let_go(struct job *j, int k);
/* The exclusive hold of round k, the round's GPU baselines timed first on
 * odd rounds. Returns the lock's fd for lock_gpu_release (or -1). */
int job_time_hold(struct job *j, struct job_round *jr, int k);

/* What one timing run needs, into tp (job_time_gate.c). Returns 0 or
 * job_fail's -errno. */
int time_run_setup(struct job *j, int k, struct time_pre *tp);
/* The gated timing run on its share clock; see job_time_gate.c. */
int job_time_gated(struct job *j, struct job_round *jr, int k, const char *const *targv, int fd,
                   double tlim, struct run_opts *o, struct python_run *pr, int *tlk, int *sampled,
                   char *note, size_t len, struct time_pre *pre);
/* Tell a pre-started run to go on (go 1) or to end at its gate (go -1),
 * and wait for it to end. */
void time_pre_join(struct time_pre *tp, int go);

#endif
