/*
 * pool.h - a warm Python check run, started before its job (docs/python.md
 * "The warm pool").
 *
 * A Python check run spends its first seconds on two interpreters and
 * their imports (NumPy, Numba, CuPy): none of it depends on the job. A
 * serving runner keeps a few job children waiting per lab
 * (runner/service/warm.h), and each starts one member: the lab's check run
 * in its own sandbox, work directory and box, as a cold job would make
 * them, with `owner.py LAB check --pool`. The owner and the tenant import
 * their libraries (no CUDA context: no GPU memory is used before the job
 * holds its reservation, and nothing of any student's is loaded), then
 * the owner says 'r' on its gate and waits, its wall clock stopped. The
 * job that comes to this child adopts the member's directories at setup
 * (pool_take) and, at its check, gives the run its file, cases and seed
 * through the gate (pool_go): the run goes on as a cold one would, its
 * share clock counted from zero from there. A member serves one job and
 * ends with it; one that died, or never said 'r' in time, is never used:
 * the job runs its check cold in the same directories.
 *
 * One member per process (a warm child holds one): not thread-safe beyond
 * what the functions below say.
 */
#ifndef CUGRADE_POOL_H
#define CUGRADE_POOL_H

#include "runner/grade/grade.h"
#include "runner/run/run.h"
#include "runner/gpu/share.h"

struct pool_member;

/* 1 when a check run of lab can be warm: the lab loads, and either uses
 * the common owner and has a Python interface (labs/LAB/lab.py), or has an
 * owner of its own (lab.json python.owner) that says it has the --pool
 * mode (python.pool: the profiling lab's lab.py). */
int pool_lab_warmable(const struct grade_env *env, const char *lab);

/* Start this process's member: the check run of lab (its name) on env's
 * GPU, in the background. Returns 0, or -errno (-ENOTSUP: the lab is not
 * pool_lab_warmable; then there is none: jobs start cold). */
int pool_start(const struct grade_env *env, const char *lab);

/* 1 while this process has a member whose run has not ended. */
int pool_alive(void);

/* End this process's member unused (its run stopped at its gate, its
 * directories removed). A no-op when there is none. */
void pool_end(void);

/* The member for a job of lab, now the job's (the pool has none after);
 * NULL when there is none, it is another lab's, or the lab's files
 * changed since it started (then it is ended). */
struct pool_member *pool_take(const char *lab);

/* The member's job directory and work directory (the job's from
 * pool_take on: it removes them). */
const char *pool_member_jobdir(const struct pool_member *m);
const char *pool_member_workdir(const struct pool_member *m);

/* The member's check channel (channel.h): the caller's from here on. */
int pool_member_channel(struct pool_member *m);

/* Give the member its job: the file /work/src, the cases ("a,b"), the
 * seed, and limit seconds of GPU share (share.h) for the run from now on,
 * under a wall ceiling of share_wall_ceiling(rc->limits.ceiling, limit).
 * Waits for the run to end. Returns run_sandboxed_opts's value with *v,
 * *sc (stopped: its numbers) and *shared (1: the share clock counted) as
 * share_run gives them; or -ESTALE when the member could not take the job
 * (it died, or did not say 'r' within PYTHON_STARTUP_SECONDS, or its wall
 * ceiling is not this limit's): then nothing of the job ran, and the caller
 * runs the check cold. */
int pool_go(struct pool_member *m, const struct run_ctx *rc, const char *seed, const char *cases,
            const char *src, double limit, struct sandbox_verdict *v, struct share_clock *sc,
            int *shared);

/* The member's timing run, given its job by pool_time_give. */
struct pool_time {
    int gate;                    /* a dup of our end of its gate (the caller's to
                                      close): the timing gate follows on it */
    int chan;                    /* its channel (channel.h), the caller's */
    struct sandbox_pause *pause; /* its wall clock's pause (the member's) */
    struct sandbox_boost *boost; /* its priority in the hold (the member's) */
    struct share_clock *clock;   /* its share clock, restarted to tlim (the
                                      member's: pool_time_clock_stop stops it) */
};

/* Give the member's timing run (`owner.py LAB time ... --gate --pool`,
 * started with the check run) the job's file and seed, at once (a run not
 * ready now is ended): it goes on as a cold pre-started timing run does
 * (job_time_gate.c), up to its timing gate, 'r' on t->gate. Returns 0 and *t,
 * or -ESTALE (none, not ready, or its wall ceiling is not
 * share_wall_ceiling(2 x rc's ceiling, tlim)): then the caller starts the
 * timing run cold. */
int pool_time_give(struct pool_member *m, const struct run_ctx *rc, const char *seed,
                   const char *src, double tlim, struct pool_time *t);

/* Wait for the timing run's end: run_sandboxed_opts's value, and *v. */
int pool_time_join(struct pool_member *m, struct sandbox_verdict *v);

/* Stop the timing run's clock, after its end and after the caller let go
 * of its cancel fd (t->clock->fds[1]). Returns 1 when its limit ended the
 * run (then *v's cancel is a timeout). */
int pool_time_clock_stop(struct pool_member *m);

/* Free a member pool_take gave (its run ended or stopped first); its
 * directories are left to the job. NULL: a no-op. */
void pool_member_free(struct pool_member *m);

#endif
