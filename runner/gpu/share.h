/*
 * share.h - a run's time limit counted on its share of the GPU.
 *
 * Several jobs' check runs and sanitizers share one GPU, which time-slices
 * between their contexts. A spinning kernel of one job keeps its slices
 * full, so an honest job beside it runs several times slower than alone:
 * on an H100 with 20 hostile submissions in a burst of 200, three correct-
 * but-buggy matmul submissions ran past their 12 s wall limit and were
 * charged `timeout` for another job's spin. The share clock counts a run's
 * time as wall time divided by the number of jobs using the GPU at that
 * moment (the shared lock's holders, lock.h's users ledger), and ends the
 * run when that share reaches its limit. Alone on the GPU it is the wall
 * clock; beside n others a run gets n times the wall time, and a spinner
 * among them still gets only its limit's worth of the GPU. Nor does the
 * clock count the time the run was stalled for want of a CPU (the run's
 * sandbox_stall: its cgroup's "full" CPU pressure): a loaded host (a CI
 * machine of two cores compiling thirty files; a burst's interpreters
 * starting at once) once charged a correct Python submission `timeout`
 * for its interpreter's start-up, while a spinning run is never stalled
 * while it has a CPU and is still cut after its limit's worth of running.
 * A wall ceiling (the lab's run_seconds) bounds it all.
 */
#ifndef CUGRADE_SHARE_H
#define CUGRADE_SHARE_H

#include "runner/sandbox/sandbox.h"

#include <pthread.h>
#include <stdatomic.h>

/* A run shared with others may take this many times its limit on the wall
 * clock (and never more than the lab's run_seconds). */
#define SHARE_MAX_STRETCH 16.0

struct share_clock {
    char ledger[4096];   /* the GPU's users ledger */
    double limit;        /* seconds of GPU share */
    double used;         /* seconds of share counted so far */
    double wall;         /* seconds of wall time watched */
    int peak_users;      /* the most users seen at once */
    const struct sandbox_pause *pause; /* NULL, or time during which nothing is counted */
    struct sandbox_stall stall;        /* the run's CPU stall (sandbox_config.stall: the
                                   caller passes &stall to the run), not counted */
    double stalled;                    /* seconds of stall left out so far */
    atomic_int alone;    /* 1: the run holds the GPU exclusively, its share is the wall */
    char yield_to[4096]; /* "", or a ledger whose first live line ends the run */
    int fired;           /* 1 when the limit was reached */
    int yielded;         /* 1 when the run was ended for yield_to */
    int fds[2];          /* a byte on fds[1] cancels the run (sandbox cancel_fd) */
    int stop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Pure: the share of dt seconds of wall time when users jobs use the GPU
 * (at least 1: the run itself). */
double share_of(double dt, int users);

/* Pure: the share counted for one tick of dt seconds of wall time, of
 * which the caller stopped the clock for paused seconds and the run was
 * stalled for a CPU for stalled seconds, with users jobs on the GPU: what
 * is left of dt, over the users (share_of); never negative. */
double share_tick(double dt, double paused, double stalled, int users);

/* Start counting limit seconds of GPU share against the users in ledger.
 * Returns 0 and the fd the sandbox polls (sandbox_config.cancel_fd: a byte
 * there ends the run) in *cancel_fd, or -errno (then run on the wall clock).
 * The run's sandbox_config.stall should be &c->stall (run_opts.stall).
 * The caller calls share_clock_stop exactly once after a 0. */
int share_clock_start(struct share_clock *c, const char *ledger, double limit, int *cancel_fd);

/* share_clock_start for a run whose wall clock its caller stops at times
 * (pause, the run's sandbox_config.pause, may be NULL): the clock counts
 * nothing while it is stopped either. A timing run's gate: its start-up
 * counts its share under the shared lock, the wait for the exclusive lock
 * not at all, its samples (share_clock_alone) the wall clock. */
int share_clock_start_paused(struct share_clock *c, const char *ledger, double limit,
                             const struct sandbox_pause *pause, int *cancel_fd);

/* share_clock_start, and the run is also cut, not as a timeout, once the
 * ledger at yield_to holds a live line (checked every tick): then c->yielded
 * is 1 and the cancel fd has its byte. */
int share_clock_start_yield(struct share_clock *c, const char *ledger, double limit,
                            const char *yield_to, int *cancel_fd);

/* Count from zero again, to limit seconds: a warm run of the pool
 * (runner/grade/pool.h) started before its job, whose start-up is ours,
 * begins its job's count when the job is given to it. Any thread. */
void share_clock_restart(struct share_clock *c, double limit);

/* From now on the run holds the GPU alone (the exclusive lock): its share
 * is the wall time, whatever the users ledger holds. Any thread. */
void share_clock_alone(struct share_clock *c);

/* The wall ceiling of a run whose share limit is limit seconds:
 * min(max(ceiling, limit), SHARE_MAX_STRETCH x limit). Pure. */
double share_wall_ceiling(double ceiling, double limit);

/* A sentence for a timeout's message (buf, with a leading space) when the
 * clock gave the run more wall time than its limit (wall > 1.1 x limit):
 * that other jobs shared the GPU (up to peak_users at once) and/or that
 * the host's CPUs held it back (stalled seconds not counted), with the
 * seconds counted and the wall time; when (e.g. "during your run") says
 * where. "" otherwise: a stretch is never explained by a cause that did
 * not happen. Returns buf. */
char *share_clock_note(const struct share_clock *c, const char *when, char *buf, size_t len);

/* Whether a running clock's limit was reached, and the seconds of stall
 * it has left out so far (*stalled), read under its lock (its thread may
 * still tick). */
int share_clock_peek(struct share_clock *c, double *stalled);

/* Stop counting and close the fds. Returns 1 when the limit was reached
 * (the run was cancelled by the clock: a timeout), else 0. */
int share_clock_stop(struct share_clock *c);

/* The verdict of a run on a share clock that share_clock_stop said fired:
 * its cancel was the time limit (v->timed_out, not v->cancelled). A no-op
 * when fired is 0 or the run was not cancelled. */
void share_clock_timeout(struct sandbox_verdict *v, int fired);

struct run_ctx;
struct run_opts;
struct sandbox_verdict;

/* run_sandboxed_opts with the limit counted on the run's share of the
 * job's GPU (the users ledger of lock.h): a wall ceiling of
 * min(max(run_seconds, limit), SHARE_MAX_STRETCH x limit), and the clock's
 * cancel turned into a timeout (v->timed_out). o->cancel_fd is the clock's.
 * *shared says whether the clock ran (else the wall clock was the limit);
 * then *sc keeps its numbers (used, wall, peak_users). Returns
 * run_sandboxed_opts's value. */
int share_run(const struct run_ctx *rc, const char *const *argv, int channel_fd, double limit,
              struct run_opts *o, struct sandbox_verdict *v, struct share_clock *sc, int *shared);

/* share_run that also ends the run early, and not as a timeout, once the
 * ledger at yield_to holds a live line (checked every tick, 100 ms): then
 * sc->yielded is 1 and v->cancelled says it was cut. What a profile does
 * for the GPU's timing ledger (lock.h): a timing run that waits for the
 * exclusive lock gets the GPU at once instead of after the profile.
 * yield_to NULL: share_run. */
int share_run_yielding(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                       double limit, struct run_opts *o, struct sandbox_verdict *v,
                       struct share_clock *sc, int *shared, const char *yield_to);

#endif
