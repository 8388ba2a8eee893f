/*
 * job_time.c - the timing phase of a job (job.h: job_time): the timing run
 * alone on the GPU (the exclusive lock waits for the sanitizers), its judge,
 * the baselines timed beside it in rounds, re-timing near a tier threshold
 * (retime.h), then the profile of a correct submission (job_profile.c).
 * Split from job.c along its banner; the helpers they share are in
 * job_phase.h.
 */
#include "runner/grade/job.h"
#include "runner/config.h"
#include "runner/grade/job_phase.h"
#include "status.h"
#include "runner/timing/baseline.h"
#include "runner/timing/retime.h"
#include "runner/gpu/lock.h"
#include "runner/grade/pool.h"
#include "runner/grade/python.h"
#include "runner/grade/sanitizer.h"
#include "runner/gpu/share.h"
#include "runner/timing/stats.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>


/* Timing is only done when it can earn points: every correctness case
 * passed, or a speed line without requires_correct. */
static int job_time_wanted(const struct job *j)
{
    int all_correct = 1, need_correct = 1;
    for (size_t i = 0; i < j->in.ncases; i++)
        if (!j->in.cases[i].passed)
            all_correct = 0;
    for (size_t i = 0; i < j->rub.nspeed; i++)
        if (!j->rub.speed[i].requires_correct)
            need_correct = 0;
    return j->lab.timing_case && j->rub.nspeed > 0 && !(need_correct && !all_correct);
}

/* One timing round of the job (runner/timing/retime.h): which baselines the
 * rubric compares against are timed beside the student's batch, and the
 * pool their samples go to. */
struct job_round {
    struct job *j;
    const char *cmp[4];  /* GPU and CPU baselines timed in this job, interleaved */
    size_t ncmp;
    struct retime_pool *pool;
    json_t *device;      /* a device record seen on the way */
    int hold;            /* the round's exclusive GPU lock, kept for its judge (or -1) */
    int owner_cpu;       /* the round's CPU series came from the owner (judge) */
};

/* The phase a round's seconds go to: the first round's own, or "retime". */
static const char *round_phase(int k, const char *first)
{
    return k == 0 ? first : "retime";
}

/* The sharing window of round k (baseline.h): only a first round takes
 * another job's batches; 0 for a re-timing round. */
static double round_share_window(int k)
{
    return k == 0 ? BASELINE_SHARE_S : 0;
}

/* The first round takes a batch of baseline `name` that another job of
 * this GPU timed within the sharing window (baseline.h), instead of
 * timing one inside its own exclusive hold. A re-timing round always times
 * its own: it is there to add independent samples, and its order (the
 * baselines first on odd rounds) to cancel a drift of the clocks. Returns
 * 1 when a shared batch joined the pool. */
static int job_round_shared_baseline(struct job_round *jr, int k, const char *name,
                                     enum retime_who who)
{
    double *x = NULL, age = 0, fresh = round_share_window(k);
    size_t n = 0;
    if (!(fresh > 0))
        return 0;
    int r = baseline_batch_recent(&jr->j->rc, name, jr->j->lab.timing_case, fresh, &x, &n, &age);
    if (r == 0)
        r = retime_append_shared(jr->pool, who, x, n, age);
    free(x);
    return r == 0;
}

/* The interleaved GPU baselines of round k, under the exclusive lock the
 * caller holds (or a fresh shared batch in its place). A batch that fails
 * is ours and only logged: the cached median stands in for it
 * (job_baselines). */
static void job_round_gpu_baselines(struct job_round *jr, int k)
{
    for (size_t i = 0; i < jr->ncmp; i++) {
        double *x = NULL;
        size_t n = 0;
        int who = retime_who(jr->cmp[i]);
        if (strcmp(jr->cmp[i], "cpu") == 0 || who < 0)
            continue;
        if (job_round_shared_baseline(jr, k, jr->cmp[i], (enum retime_who)who))
            continue;
        if (baseline_batch(&jr->j->rc, jr->cmp[i], jr->j->lab.timing_case, &x, &n,
                           &jr->device) == 0)
            retime_append(jr->pool, (enum retime_who)who, x, n);
        free(x);
    }
    job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
}

/* A CPU batch's median joins the host's record, and the CPU series of the
 * pool becomes the record's newest batch medians (this job's among them):
 * its batches differ more than its samples within one (baseline.h). */
static void job_cpu_record(struct job_round *jr, const double *x, size_t n)
{
    char path[PATH_MAX];
    double rec[BASELINE_CPU_RECORD];
    double m = stats_median(x, n);
    baseline_record_path(&jr->j->rc, jr->j->lab.timing_case, path, sizeof path);
    if (baseline_record_add(path, m) != 0)
        fprintf(stderr, "cugrade-runner: cannot append to %s\n", path);
    size_t k = baseline_record_read(path, rec, BASELINE_CPU_RECORD);
    jr->pool->s[RETIME_CPU].n = 0;
    jr->pool->s[RETIME_CPU].shared_n = 0; /* the record now holds a batch of this job's */
    if (k == 0)
        retime_append(jr->pool, RETIME_CPU, &m, 1);
    else
        retime_append(jr->pool, RETIME_CPU, rec, k);
}

/* The first round takes the host's CPU record as it is when another job
 * appended a batch to it within the sharing window (baseline.h): 1 when
 * the record's newest batch medians joined the pool. */
static int job_cpu_record_shared(struct job_round *jr, int k)
{
    char path[PATH_MAX];
    double rec[BASELINE_CPU_RECORD], fresh = round_share_window(k);
    if (!(fresh > 0))
        return 0;
    baseline_record_path(&jr->j->rc, jr->j->lab.timing_case, path, sizeof path);
    double age = baseline_record_age(path);
    if (!(age >= 0 && age <= fresh))
        return 0;
    size_t n = baseline_record_read(path, rec, BASELINE_CPU_RECORD);
    return n >= BASELINE_CPU_SHARE_MIN &&
           retime_append_shared(jr->pool, RETIME_CPU, rec, n, age) == 0;
}

/* The CPU baseline's batch of round k (outside the GPU lock: it does not
 * use the GPU, and the lock would idle the GPU for its seconds), or the
 * record another job appended to seconds ago. */
static void job_round_cpu_baseline(struct job_round *jr, int k)
{
    if (jr->owner_cpu) /* in place of the CPU baseline (job_owner_cpu_samples) */
        return;
    for (size_t i = 0; i < jr->ncmp; i++) {
        double *x = NULL;
        size_t n = 0;
        if (strcmp(jr->cmp[i], "cpu") != 0)
            continue;
        if (job_cpu_record_shared(jr, k)) {
            job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
            continue;
        }
        if (baseline_batch(&jr->j->rc, "cpu", jr->j->lab.timing_case, &x, &n, &jr->device) == 0)
            job_cpu_record(jr, x, n);
        free(x);
        job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
    }
}

/* The job's shared lock let go once its sanitizers have ended (round 0):
 * a job waiting for the exclusive lock holds nothing another job needs. */
static void job_time_let_go(struct job *j, int k)
{
    if (k == 0) {
        sanitizer_settle(j->san_tasks, j->nsan_tasks);
        /* their contexts are gone: the timing case and the judge's remain */
        job_reserve_to(j, lock_admit_after_check(&j->lab, 0, j->python));
    }
    lock_gpu_release(j->job_lk);
    j->job_lk = -1;
}

/* The exclusive hold of round k, the round's GPU baselines timed first on
 * odd rounds. Returns the lock's fd for lock_gpu_release (or -1). */
static int job_time_hold(struct job *j, struct job_round *jr, int k)
{
    int tlk = lock_gpu(j->env, 1);
    job_clock_mark(&j->pc, round_phase(k, "sanitize_wait"));
    if (k % 2)
        job_round_gpu_baselines(jr, k);
    return tlk;
}

/* The gate of a timing run (docs/runner.md, the discipline's item 8):
 * under the job's shared lock a CUDA harness starts, brings CUDA up and
 * builds the timed case's inputs (labs/common/harness_common.cu,
 * hc_gate_wait); a Python owner starts its interpreter and CuPy, prepares
 * the timed case, and the tenant imports Numba and CuPy. Nothing of the
 * student's has run (or, in Python, is loaded) yet. Then the program says
 * 'r' on fd 4 and waits. Only then is the shared lock let go and the exclusive one
 * taken (job_time_hold), and 'g' lets the student's module load, compile
 * and be timed with the GPU alone. The wait stops the run's wall clock
 * (sandbox_config.pause): a queue of timing runs is not the student's
 * time. */
struct time_gate {
    struct job *j;
    struct job_round *jr;
    int k;
    int fd;                 /* our end of the socket; the owner's is fd 4 */
    int tlk;                /* the exclusive lock, once taken */
    int opened;             /* 1: 'g' was sent */
    struct sandbox_pause pause; /* the run's wall clock, stopped while we hold it back */
    struct sandbox_pause *pz;   /* &pause, or a warm run's own (pool.h) */
    struct sandbox_boost boost; /* the run's priority in the hold (TIME_HOLD_NICE) */
    struct sandbox_boost *bz;   /* &boost, or a warm run's own */
    struct share_clock *clock;  /* the run's share clock (share.h), or NULL: the wall */
    pthread_t thread;
    int started;
    struct time_pre *pre;       /* a run started beside the check run, or NULL */
};

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
    int go;                     /* 0: not yet; 1: timing; -1: never */
    int gate_fd;                /* the gate's socket while it is open, else -1 */
    int cancel_wfd;             /* a byte here ends the run (sandbox cancel_fd), else -1 */
    int cancel_pipe[2];         /* the cancel fd when no share clock gives one */
    int fd;                     /* the timing channel */
    const char *targv_c[12];
    const char *const *targv;
    struct run_opts o;
    struct python_run pr;
    double tlim;
    int r, tlk, sampled;        /* job_time_gated's results */
    char note[200];
    int warm; /* 1: the warm timing run of the job's pool member,
                                   given its job (pt) */
    struct pool_time pt;
};

/* End a pre-started run the job will not use, at once: a byte on its
 * cancel fd (the sandbox kills it) and the gate shut. tp->mu held. */
static void time_pre_cancel(struct time_pre *tp)
{
    char c = 'x';
    if (tp->cancel_wfd >= 0 && write(tp->cancel_wfd, &c, 1) < 0)
        fprintf(stderr, "cugrade-runner: cannot cancel a pre-started timing run: %s\n",
                strerror(errno));
    if (tp->gate_fd >= 0)
        shutdown(tp->gate_fd, SHUT_RDWR);
}

/* A pre-started run's gate and cancel fd, for an abort to end it at once
 * (time_pre_join); ended now when the job already said go -1. */
static void time_pre_attach(struct time_pre *tp, int gate_fd, int cancel_wfd)
{
    pthread_mutex_lock(&tp->mu);
    tp->gate_fd = gate_fd;
    tp->cancel_wfd = cancel_wfd;
    if (tp->go < 0)
        time_pre_cancel(tp);
    pthread_mutex_unlock(&tp->mu);
}

/* In the gate's thread, once the run said 'r': wait for the job's word.
 * Returns 1 to go on, 0 when the job ended without a timing. */
static int time_pre_wait(struct time_pre *tp)
{
    pthread_mutex_lock(&tp->mu);
    while (tp->go == 0)
        pthread_cond_wait(&tp->cv, &tp->mu);
    int go = tp->go > 0;
    pthread_mutex_unlock(&tp->mu);
    return go;
}

static void *time_gate_main(void *p)
{
    struct time_gate *g = p;
    struct job *j = g->j;
    char c;
    ssize_t n;
    if (!run_gate_ready(g->fd, g->pz))
        return NULL; /* the run ended (or was ended) before the gate */
    if (g->pre && !time_pre_wait(g->pre)) {
        shutdown(g->fd, SHUT_RDWR); /* no 'g': the run ends at its gate */
        sandbox_pause_end(g->pz);
        return NULL;
    }
    /* A pre-started run: the job thread waits in time_pre_join from here on. */
    job_clock_mark(&j->pc, round_phase(g->k, "time_start"));
    job_time_let_go(j, g->k);
    g->tlk = job_time_hold(j, g->jr, g->k);
    if (g->clock) /* from here on the run is alone on the GPU */
        share_clock_alone(g->clock);
    if (g->bz) /* and its CPU work goes first, and its judge's */
        sandbox_boost_ask(g->bz);
    judge_session_boost(&j->js, TIME_HOLD_NICE);
    sandbox_pause_end(g->pz);
    c = 'g';
    do /* the owner may be gone (killed): no SIGPIPE for us */
        n = send(g->fd, &c, 1, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    g->opened = n == 1;
    return NULL;
}

/* Start the gate of a timing run: o gets the program's end as fd 4, the
 * pause clock and (best effort: else the wall clock) the cancel fd of the
 * share clock sc counting tlim seconds, which the gate turns to the wall
 * clock once it holds the exclusive lock; g->clock says whether sc runs
 * (then the caller stops it after time_gate_close). Returns 0 or -errno. */
static int time_gate_open(struct time_gate *g, struct job *j, struct job_round *jr, int k,
                          struct run_opts *o, int *child_fd, struct share_clock *sc, double tlim,
                          struct time_pre *pre)
{
    int sv[2];
    char users[PATH_MAX];
    memset(g, 0, sizeof *g);
    g->j = j, g->jr = jr, g->k = k, g->tlk = -1, g->fd = -1, g->pre = pre;
    sandbox_pause_init(&g->pause);
    g->pz = &g->pause;
    sandbox_boost_init(&g->boost, TIME_HOLD_NICE);
    g->bz = &g->boost;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    lock_active_path(j->env, users, sizeof users);
    if (share_clock_start_paused(sc, users, tlim, &g->pause, &o->cancel_fd) == 0) {
        g->clock = sc;
        o->stall = &sc->stall;
    }
    g->fd = sv[0];
    *child_fd = sv[1];
    o->control_fd = sv[1];
    o->pause = &g->pause;
    o->boost = &g->boost;
    if (pre) { /* so that an abort ends the run at once (time_pre_join) */
        if (!g->clock && pipe2(pre->cancel_pipe, O_CLOEXEC) == 0)
            o->cancel_fd = pre->cancel_pipe[0];
        time_pre_attach(pre, g->fd, g->clock ? sc->fds[1] : pre->cancel_pipe[1]);
    }
    run_task_start(&g->thread, &g->started, time_gate_main, g);
    if (!g->started) {
        if (g->clock)
            share_clock_stop(g->clock);
        g->clock = NULL;
        o->cancel_fd = -1;
        run_fd_close(&g->fd);
        run_fd_close(child_fd);
        return -EAGAIN;
    }
    return 0;
}

/* After the run: wake the gate if it still waits for 'r' and join it.
 * Returns the exclusive lock's fd when the gate took it, else -1 (and the
 * job's shared lock is still held). */
static int time_gate_close(struct time_gate *g)
{
    if (g->pre) {
        pthread_mutex_lock(&g->pre->mu);
        g->pre->gate_fd = g->pre->cancel_wfd = -1;
        pthread_mutex_unlock(&g->pre->mu);
        run_fd_close(&g->pre->cancel_pipe[0]);
        run_fd_close(&g->pre->cancel_pipe[1]);
    }
    shutdown(g->fd, SHUT_RDWR);
    run_task_join(&g->thread, &g->started);
    run_fd_close(&g->fd);
    return g->tlk;
}

/* job_time_gated for the warm timing run of the job's pool member
 * (pool.h), given its job at the pre-start: it is up, or coming up, to its
 * timing gate on pre->pt.gate; its wall clock's pause and its share
 * clock are the member's, restarted to tlim. The gate and the job's word
 * (time_pre) are the cold pre-start's. */
static int job_time_gated_warm(struct job *j, int *tlk, int *sampled, char *note, size_t len,
                               struct time_pre *pre)
{
    struct time_gate g;
    memset(&g, 0, sizeof g);
    g.j = j, g.tlk = -1, g.pre = pre;
    g.fd = pre->pt.gate;
    pre->pt.gate = -1; /* the gate's now: time_gate_close closes it */
    g.pz = pre->pt.pause;
    g.bz = pre->pt.boost;
    g.clock = pre->pt.clock;
    time_pre_attach(pre, g.fd, g.clock->fds[1]);
    run_task_start(&g.thread, &g.started, time_gate_main, &g);
    if (!g.started) {
        time_pre_cancel(pre); /* the member's run ends at once */
        pthread_mutex_lock(&pre->mu);
        pre->gate_fd = pre->cancel_wfd = -1;
        pthread_mutex_unlock(&pre->mu);
    }
    int started = g.started, r = pool_time_join(j->warm, &j->tv);
    *tlk = time_gate_close(&g); /* joined; the cancel fd is no longer the pre-start's */
    *sampled = g.opened;
    share_clock_timeout(&j->tv, pool_time_clock_stop(j->warm));
    share_clock_note(g.clock, "before your timed samples", note, len);
    return started ? r : -EAGAIN;
}

/* The gated timing run (time_gate) on its share clock (share.h): its
 * start-up under the shared lock counts its share of the GPU (beside n
 * other jobs' check runs it may take n times as long on the wall clock:
 * an H200 burst charged correct kernels `timeout` for a 17 s start-up),
 * the wait at the gate nothing (the pause), its samples under the
 * exclusive lock the wall clock. A run that never counts past tlim is not
 * a timeout; a hang still is, alone or not. pr is the Python run (NULL for
 * CUDA). *tlk gets the exclusive lock (or -1), *sampled whether the gate
 * opened; note (len) a sentence for a timeout's message, or "". Returns
 * run_sandboxed_opts's value, or -EAGAIN when the gate could not open. */
static int job_time_gated(struct job *j, struct job_round *jr, int k, const char *const *targv,
                          int fd, double tlim, struct run_opts *o, struct python_run *pr, int *tlk,
                          int *sampled, char *note, size_t len, struct time_pre *pre)
{
    struct time_gate g;
    struct share_clock sc;
    int child_fd = -1, r;
    assert(!pre || (k == 0 && j->job_lk >= 0));
    if (pre && pre->warm)
        return job_time_gated_warm(j, tlk, sampled, note, len, pre);
    if (j->job_lk < 0)
        j->job_lk = lock_gpu_shared_user(j->env); /* a re-timing round */
    if ((r = time_gate_open(&g, j, jr, k, o, &child_fd, &sc, tlim, pre)) < 0)
        return -EAGAIN;
    int shared = g.clock != NULL;
    /* the timing's own ceiling (limit.h: at most twice run_seconds) */
    double wall = shared ? share_wall_ceiling(2 * j->rc.limits.ceiling, tlim) : tlim;
    if (pr)
        python_run_gate(pr);
    r = run_sandboxed_opts(&j->rc, targv, fd, wall, o, &j->tv);
    run_fd_close(&child_fd);
    *tlk = time_gate_close(&g); /* joined: the clock is no longer the gate's */
    *sampled = g.opened;
    /* The owner never reached its gate (a compile error, a crash): let go
     * here (a no-op when the gate did). A pre-start's job thread does that
     * itself (job_time_run, job_sanitize): this thread may run beside its
     * check. */
    if (!g.opened && !pre)
        job_time_let_go(j, k);
    if (shared) {
        share_clock_timeout(&j->tv, share_clock_stop(&sc));
        share_clock_note(&sc, "before your timed samples", note, len);
    }
    return r;
}

/* The timing run of round k, with the round's GPU baselines in the same
 * exclusive hold: the student first on even rounds, the baselines first
 * on odd ones (a drift of the GPU's clocks within the hold cancels over
 * two rounds). The job's shared lock is let go (its sanitizers have
 * ended) before the exclusive one is asked for: a waiter holds nothing. */
/* What one timing run needs: its channel, its command line, its options
 * (a Python owner's in tp->pr) and its limit, into tp. Returns 0 or
 * job_fail's -errno. */
/* A timing run's share limit: the lab's timing limit, and for Python the
 * interpreters' start-up too (capped by the ceiling). */
static double time_run_limit(const struct job *j)
{
    double tlim = j->rc.limits.timing;
    return j->python ? fmin(j->rc.limits.ceiling, tlim + PYTHON_STARTUP_SECONDS) : tlim;
}

static int time_run_setup(struct job *j, int k, struct time_pre *tp)
{
    char chan[32];
    snprintf(chan, sizeof chan, k == 0 ? "timing" : "timing-%d", k);
    tp->fd = channel_open(j->rc.jobdir, chan);
    if (tp->fd < 0)
        return job_fail(j, tp->fd, "cannot open a channel: %s", strerror(-tp->fd));
    const char *c[] = {"/work/prog", "time", "--seed-fd", "5", "--case", j->lab.timing_case,
                       "--max-ms", TIME_MAX_MS, "--gate", "4", NULL};
    static_assert(sizeof c <= sizeof tp->targv_c, "targv_c holds the CUDA command line");
    memcpy(tp->targv_c, c, sizeof c);
    tp->targv = tp->targv_c;
    tp->o = (struct run_opts){.control_fd = -1, .cancel_fd = -1, .secret = j->seed, .timing = 1};
    tp->tlim = time_run_limit(j);
    if (j->python) {
        int r = python_run_prepare(&tp->pr, &tp->o, j->env->root, &j->lab, "time", j->seed,
                                   j->lab.timing_case, TIME_MAX_MS, j->src);
        if (r < 0) {
            close(tp->fd);
            tp->fd = -1;
            return job_fail(j, r, "the lab's hidden libraries (lab.json python.hide): %s",
                            strerror(-r));
        }
        (void)python_run_kept(&tp->pr, &tp->o, j->env, &j->lab);
        tp->targv = tp->pr.argv;
    }
    return 0;
}

static void *time_pre_main(void *p)
{
    struct time_pre *tp = p;
    struct job *j = tp->j;
    tp->r = job_time_gated(j, NULL, 0, tp->targv, tp->fd, tp->tlim, &tp->o,
                           j->python ? &tp->pr : NULL, &tp->tlk, &tp->sampled, tp->note,
                           sizeof tp->note, tp);
    return NULL;
}

void job_time_prestart(struct job *j)
{
    assert(!j->pre && j->job_lk >= 0);
    if (!j->lab.timing_case || j->rub.nspeed == 0)
        return;
    struct time_pre *tp = calloc(1, sizeof *tp);
    if (!tp)
        return; /* the timing starts after the check, as without a pre-start */
    tp->j = j;
    tp->gate_fd = tp->fd = tp->cancel_wfd = -1;
    tp->cancel_pipe[0] = tp->cancel_pipe[1] = -1;
    tp->tlk = -1;
    tp->pt.gate = -1;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv, NULL);
    /* The warm timing run of the job's pool member, when it has one (its
     * job given here, as a cold one would start here), else a cold one. */
    tp->tlim = time_run_limit(j);
    if (j->warm && pool_time_give(j->warm, &j->rc, j->seed, j->src, tp->tlim, &tp->pt) == 0) {
        tp->warm = 1;
        tp->fd = tp->pt.chan;
        j->warm_runs |= JOB_WARM_TIMING;
    }
    if (tp->warm || time_run_setup(j, 0, tp) == 0)
        run_task_start(&tp->thread, &tp->started, time_pre_main, tp);
    if (!tp->started) {
        j->err[0] = '\0'; /* not a failure of the job: it starts its timing later */
        if (tp->pt.gate >= 0) /* a warm run given its job ends at its gate, shut */
            shutdown(tp->pt.gate, SHUT_RDWR);
        run_fd_close(&tp->pt.gate);
        if (tp->fd >= 0)
            close(tp->fd);
        pthread_cond_destroy(&tp->cv);
        pthread_mutex_destroy(&tp->mu);
        free(tp);
        return;
    }
    j->pre = tp;
}

/* Tell a pre-started run to go on (go 1) or to end at its gate (go -1),
 * and wait for it to end. */
static void time_pre_join(struct time_pre *tp, int go)
{
    pthread_mutex_lock(&tp->mu);
    tp->go = go;
    if (go < 0)
        time_pre_cancel(tp);
    pthread_cond_broadcast(&tp->cv);
    pthread_mutex_unlock(&tp->mu);
    run_task_join(&tp->thread, &tp->started);
}

void job_time_prestart_end(struct job *j)
{
    struct time_pre *tp = j->pre;
    if (!tp)
        return;
    j->pre = NULL;
    if (tp->started)
        time_pre_join(tp, -1);
    if (tp->fd >= 0)
        close(tp->fd);
    pthread_cond_destroy(&tp->cv);
    pthread_mutex_destroy(&tp->mu);
    free(tp);
}

/* HOLD_STEPS at most, each name at most HOLD_NAME - 1 of [a-z_]: what
 * job_keep_hold copies of a timing record's hold_s. */
#define HOLD_STEPS 8
#define HOLD_NAME 24

/* The first timing round's steps after its gate, as its hold record says
 * them ({"type": "hold", "load": s, ...}: labs/common/py/owner.py
 * send_hold), into j->hold for the result (cugrade.hold_s): where a
 * hold's seconds went, for the benches. Diagnostics only, never graded,
 * and bounded: at most HOLD_STEPS names of [a-z_], finite seconds >= 0;
 * anything else is left out (a CUDA harness's records share its process
 * with the student's code), and so are the record's type and the
 * channel's _offset. */
static void job_keep_hold(struct job *j)
{
    json_t *h = j->ti.hold, *v;
    const char *name;
    if (j->hold || !json_is_object(h))
        return;
    json_t *out = json_object();
    json_object_foreach(h, name, v) {
        double s = json_number_value(v);
        size_t n = strlen(name);
        if (strcmp(name, "_offset") == 0)
            continue;
        if (!out || json_object_size(out) >= HOLD_STEPS || !json_is_number(v) || !isfinite(s) ||
            s < 0 || n == 0 || n >= HOLD_NAME || strspn(name, "abcdefghijklmnopqrstuvwxyz_") != n)
            continue;
        json_object_set_new(out, name, json_real(s));
    }
    j->hold = out;
}

/* The timing run of round k, with the round's GPU baselines in the same
 * exclusive hold: the student first on even rounds, the baselines first
 * on odd ones (a drift of the GPU's clocks within the hold cancels over
 * two rounds). The job's shared lock is let go (its sanitizers have
 * ended) before the exclusive one is asked for: a waiter holds nothing.
 * Round 0 goes on with the run started beside the check, when there is one.
 * *tlk gets the exclusive lock (or -1), still held. */
static int job_time_run_held(struct job *j, struct job_round *jr, int k, int *tlk)
{
    char fail[512];
    struct time_pre own, *tp = k == 0 && j->pre ? j->pre : &own;
    int r, sampled = 1; /* sampled: the samples ran under the exclusive lock */
    char share_note[200] = "";
    if (tp == j->pre) {
        time_pre_join(tp, 1);
        r = tp->r, *tlk = tp->tlk, sampled = tp->sampled;
        snprintf(share_note, sizeof share_note, "%s", tp->note);
        if (!sampled) /* it ended before its gate: let go here, as job_time_gated does */
            job_time_let_go(j, 0);
    } else {
        memset(&own, 0, sizeof own);
        if ((r = time_run_setup(j, k, &own)) < 0)
            return r;
        r = job_time_gated(j, jr, k, own.targv, own.fd, own.tlim, &own.o,
                           j->python ? &own.pr : NULL, tlk, &sampled, share_note, sizeof share_note,
                           NULL);
    }
    int fd = tp->fd;
    double tlim = tp->tlim;
    tp->fd = -1; /* ours to close now */
    if (tp == j->pre)
        job_time_prestart_end(j);
    if (r == -EAGAIN) {
        close(fd);
        return job_fail(j, r, "cannot open the timing gate: %s", strerror(-r));
    }
    job_clock_mark(&j->pc, round_phase(k, "time_run"));
    /* Timed out while other jobs shared the GPU (share_note says so): run
     * it again, once. The share clock counts this GPU's users, but what
     * they slow is also host-wide: the driver makes and tears down every
     * GPU's contexts one at a time, and a timing run's allocations and
     * first launches queue behind them even under the exclusive lock (on
     * 2 x H200 a correct embedding kernel, 57 jobs sent at once, timed
     * out with 18 s of share in 52 s). A hang hangs again and is charged
     * then, at twice its limit; a correct kernel gets a calmer GPU. */
    if (r == 0 && j->tv.timed_out && share_note[0] && !j->time_again) {
        lock_gpu_release(*tlk);
        *tlk = -1;
        close(fd);
        j->time_again = 1;
        fprintf(stderr,
                "cugrade-runner: job %lld: timing round %d timed out beside other jobs; "
                "timing it again\n",
                j->g->id, k);
        run_verdict_reset(&j->tv);
        return job_time_run_held(j, jr, k, tlk);
    }
    if (r == 0 && k % 2 == 0 && sampled && !j->tv.timed_out)
        job_round_gpu_baselines(jr, k);
    if (r < 0) {
        close(fd);
        return job_fail(j, r, "the timing sandbox failed: %s", strerror(-r));
    }
    channel_read_all(fd, &j->ti);
    close(fd);
    if (k == 0)
        job_keep_hold(j);
    if (run_harness_failed(&j->tv, &j->ti, j->err, sizeof j->err))
        return -EIO;
    if (j->tv.timed_out && (r = job_timeout_ours(j, "the timing run")) < 0)
        return r;
    const char *why_t = run_failure(&j->tv, fail, sizeof fail);
    /* The run's wall time is no limit's: it holds the wait at the gate. */
    if (j->tv.timed_out && !j->tv.cpu_limit && !j->tv.output_limit)
        why_t = limit_timing_message(tlim, j->lab.timing_case, fail, sizeof fail);
    if (why_t || !j->ti.timing) {
        j->st = j->tv.timed_out ? status_name(STATUS_TIMEOUT) : status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg, "Timing failed: %s%s%s",
                 why_t ? why_t : "the harness sent no timing record.",
                 j->tv.timed_out ? share_note : "",
                 j->tv.timed_out && j->time_again
                     ? " It was timed twice: the first run timed out while other jobs shared "
                       "the GPU, and the second timed out as well."
                     : "");
        /* The timing run's prints are the feedback now. */
        sandbox_verdict_free(&j->v);
        j->v = j->tv;
        memset(&j->tv, 0, sizeof j->tv);
        return JOB_VERDICT;
    }
    return JOB_NEXT;
}

/* job_time_run_held; a round that goes on to its judge keeps the exclusive
 * lock in jr->hold for it, any other lets it go. */
static int job_time_run(struct job *j, struct job_round *jr, int k)
{
    int tlk = -1;
    assert(jr->hold < 0);
    int r = job_time_run_held(j, jr, k, &tlk);
    if (r == JOB_NEXT)
        jr->hold = tlk;
    else
        lock_gpu_release(tlk);
    return r;
}

/* What the judge says of the timing channel, into j->in.timing. */
static void job_time_record(struct job *j, const json_t *jdoc, const struct stats_summary *ss)
{
    struct score_timing *t = &j->in.timing;
    json_t *jt = json_object_get(jdoc, "timing");
    t->have = 1;
    t->case_name = j->lab.timing_case;
    t->student_ms = ss->median;
    t->samples = ss->kept;
    t->rel_err = ss->rel_err;
    t->recheck_passed = json_is_true(json_object_get(jt, "recheck_passed"));
    t->bytes = json_number_value(json_object_get(jt, "bytes"));
    t->flops = json_number_value(json_object_get(jt, "flops"));
    if (!(t->bytes > 0) && !(t->flops > 0))
        case_work(&j->lab, j->lab.timing_case, jt, &t->bytes, &t->flops);
    json_t *jdev = json_object_get(jdoc, "device");
    if (json_number_value(json_object_get(jdev, "copy_gbs")) > 0) {
        t->copy_gbs = json_number_value(json_object_get(jdev, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(jdev, "peak_fp32_gflops"));
    }
    /* A lab whose owner times its own baseline in the same run, before any
     * student code ran there (the profiling lab's starter): the naive slot. */
    double bms = json_number_value(json_object_get(jt, "baseline_ms"));
    if (bms > 0 && !(t->naive_ms > 0))
        t->naive_ms = bms;
    const char *why = json_string_value(json_object_get(jt, "flag_reason"));
    if (json_is_true(json_object_get(jt, "flagged")) && t->recheck_passed) {
        snprintf(j->judge_flag, sizeof j->judge_flag, "%s", why ? why : "flagged by the judge");
        t->judge_flag_reason = j->judge_flag;
    }
}

/* A lab whose owner times the CPU baseline itself in the timing run, before
 * the student's process exists (the pipeline lab's NumPy pipeline,
 * docs/python.md): the judge passes the owner's cpu_samples_ms on, and they
 * are the CPU series of the pool (retime_apply makes cpu_ms of them), in
 * place of a cached CPU baseline and of the CPU baseline's batch (judged
 * before it now, in the hold: job_round_cpu_baseline then times none).
 * Returns 0 or -ENOMEM. */
static int job_owner_cpu_samples(struct job_round *jr, const json_t *jdoc)
{
    const json_t *cs = json_object_get(json_object_get(jdoc, "timing"), "cpu_samples_ms"), *e;
    size_t k;
    int r = 0;
    json_array_foreach(cs, k, e) {
        double v = json_number_value(e);
        if (!json_is_number(e) || !(v > 0) || !isfinite(v))
            continue;
        if (retime_append(jr->pool, RETIME_CPU, &v, 1) != 0)
            r = -ENOMEM;
        else
            jr->owner_cpu = 1;
    }
    return r;
}

/* The judge checks the re-check (fresh inputs from seed2: a cached answer
 * fails), computes the case's bytes and flops and flags a time past the
 * physical floor; the runner recomputes the median and its error from the
 * raw samples. It runs in the round's exclusive hold (jr->hold), let go
 * here: a shared lock would wait behind every timing run waiting or
 * running (lock.c, timing_yield), which in a burst is most of the time --
 * 34 s on average for a Python job timed in a burst of 100 on 2 x H200,
 * its after-check reservation held meanwhile, for a judge's run of well
 * under a second (docs/log/2026-11-30-timing-judge.md). */
static int job_time_judge(struct job *j, struct job_round *jr, int round)
{
    char tchan[PATH_MAX], chan[32];
    json_t *jdoc = NULL, *e;
    struct score_case *tcases = NULL;
    size_t ntcases = 0, k;
    struct stats_summary ss;
    snprintf(chan, sizeof chan, round == 0 ? "timing" : "timing-%d", round);
    channel_path(j->rc.jobdir, chan, tchan, sizeof tchan);
    int jlk = jr->hold >= 0 ? jr->hold : lock_gpu_shared_user(j->env);
    jr->hold = -1;
    int r = judge_run(&j->rc, &j->js, j->seed, tchan, NULL, &jdoc, &tcases, &ntcases, j->err,
                      sizeof j->err);
    lock_gpu_release(jlk);
    score_cases_free(tcases, ntcases);
    job_clock_mark(&j->pc, round_phase(round, "time_judge"));
    if (r < 0) {
        json_decref(jdoc);
        return r;
    }
    json_t *samples = json_object_get(json_object_get(jdoc, "timing"), "samples_ms");
    size_t n = json_array_size(samples);
    double *x = calloc(n ? n : 1, sizeof *x);
    if (!x) {
        json_decref(jdoc);
        return job_fail(j, -ENOMEM, "out of memory");
    }
    json_array_foreach(samples, k, e) x[k] = json_number_value(e);
    r = stats_summarize(x, n, &ss);
    if (r == 0 && retime_append(jr->pool, RETIME_STUDENT, x, n) != 0)
        r = -ENOMEM;
    free(x);
    if (r == 0)
        r = job_owner_cpu_samples(jr, jdoc);
    if (r != 0 && j->python && n == 0) {
        /* A Python job's channel has one writer, our owner (the student's
         * code runs in its tenant): a judge that took none of its samples
         * refused our records, not the student's (it did, for every
         * Python job of three labs, when a record was not flat). */
        const char *why = json_string_value(json_array_get(json_object_get(jdoc, "errors"), 0));
        r = job_fail(j, -EIO,
                     "the judge took none of the timing samples of our Python owner (%s): our "
                     "failure, not your code's; it is graded again and never charged to you",
                     why ? why : "it gave no reason");
        json_decref(jdoc);
        return r;
    }
    if (r != 0) {
        json_decref(jdoc);
        j->st = status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "Timing failed: the judge accepted no timing samples.");
        return JOB_VERDICT;
    }
    if (round == 0) {
        job_time_record(j, jdoc, &ss);
    } else {
        /* A re-timing batch is judged like the first: one failed re-check
         * or flag takes the speed points of the whole timing. */
        struct score_timing keep = j->in.timing;
        job_time_record(j, jdoc, &ss);
        j->in.timing.recheck_passed = keep.recheck_passed && j->in.timing.recheck_passed;
        if (keep.judge_flag_reason)
            j->in.timing.judge_flag_reason = keep.judge_flag_reason;
        if (keep.copy_gbs > 0) {
            j->in.timing.copy_gbs = keep.copy_gbs;
            j->in.timing.peak_gflops = keep.peak_gflops;
        }
    }
    json_decref(jdoc);
    return JOB_NEXT;
}

/* Baselines on the same GPU, same case (cached): those not timed in this
 * job, and any whose interleaved batch failed. */
static void job_baselines(struct job *j, const struct retime_pool *pool)
{
    json_t *device = NULL;
    struct score_timing *t = &j->in.timing;
    for (size_t i = 0; i < j->lab.nbaselines; i++) {
        double *slot = score_median_slot(t, j->lab.baselines[i]);
        int who = retime_who(j->lab.baselines[i]);
        if (slot && !(who >= 0 && pool->s[who].n > 0))
            *slot = baseline_time(&j->rc, j->lab.baselines[i], j->lab.timing_case, &device);
    }
    if (device && !(t->copy_gbs > 0)) {
        t->copy_gbs = json_number_value(json_object_get(device, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(device, "peak_fp32_gflops"));
    }
    json_decref(device);
    job_clock_mark(&j->pc, "baselines");
}

/* Round k of the timing (a struct retime_source's round): the student's
 * batch and the interleaved baselines', the batch's judge, and on the
 * first round the cached baselines. */
static int job_time_round(void *ctx, int k, struct retime_pool *pool, struct score_timing *t)
{
    struct job_round *jr = ctx;
    struct job *j = jr->j;
    int r;
    assert(pool == jr->pool && t == &j->in.timing);
    if (k > 0) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s (re-timing %d of at most %d: near a tier threshold)",
                 j->lab.timing_case, k, t->retime_bound);
        if (progress_call(j, status_name(STATUS_TIMING), detail) == -ECANCELED)
            return -ECANCELED;
        sandbox_verdict_free(&j->tv);
        memset(&j->tv, 0, sizeof j->tv);
        channel_info_clear(&j->ti);
        memset(&j->ti, 0, sizeof j->ti);
    }
    if ((r = job_time_run(j, jr, k)) != JOB_NEXT || (r = job_time_judge(j, jr, k)) != JOB_NEXT)
        return r;
    assert(jr->hold < 0);
    job_round_cpu_baseline(jr, k); /* the GPU let go: its seconds cost no other job's */
    if (k == 0)
        job_baselines(j, pool);
    if (jr->device && !(t->copy_gbs > 0)) {
        t->copy_gbs = json_number_value(json_object_get(jr->device, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(jr->device, "peak_fp32_gflops"));
    }
    return 0;
}

/* The baselines the rubric's speed lines compare against, timed in this
 * job beside the student's batches. */
static void job_round_baselines(struct job_round *jr)
{
    const struct job *j = jr->j;
    for (size_t i = 0; i < j->rub.nspeed; i++) {
        const char *b = j->rub.speed[i].metric->baseline;
        int have = 0, in_lab = 0;
        for (size_t k = 0; b && k < jr->ncmp; k++)
            have |= strcmp(jr->cmp[k], b) == 0;
        for (size_t k = 0; b && k < j->lab.nbaselines; k++)
            in_lab |= strcmp(j->lab.baselines[k], b) == 0;
        if (b && in_lab && !have && jr->ncmp < sizeof jr->cmp / sizeof jr->cmp[0])
            jr->cmp[jr->ncmp++] = b;
    }
}

/* Every speed line the student was timed for has the baseline it is
 * relative to (or the device's copy bandwidth). A baseline that could not
 * be timed (its batch killed at its limit on a loaded host, its program
 * gone) is ours: the job is a system_error naming it, which the server
 * retries, never a grade without that line's points. In Numba's simulator
 * (CI, hosts without a GPU) there are no baselines and the times mean
 * nothing: the lines stay "not available" there. Returns JOB_NEXT or
 * job_fail's -EAGAIN. */
static int job_time_complete(struct job *j)
{
    const struct score_timing *t = &j->in.timing;
    if (!t->have || !(t->student_ms > 0) || (j->python && python_simulated()))
        return JOB_NEXT;
    for (size_t i = 0; i < j->rub.nspeed; i++) {
        const struct metric *m = j->rub.speed[i].metric;
        assert(m);
        if (isfinite(score_metric(m, t)))
            continue;
        if (m->baseline)
            return job_fail(j, -EAGAIN,
                            "the %s baseline could not be timed on this GPU for %s: our failure, "
                            "not your kernel's; it is graded again and never charged to you",
                            m->baseline, j->lab.timing_case);
        return job_fail(j, -EAGAIN,
                        "the GPU's copy bandwidth was not measured: our failure, not your "
                        "kernel's; it is graded again and never charged to you");
    }
    return JOB_NEXT;
}

int job_time(struct job *j)
{
    if (!job_time_wanted(j))
        return JOB_NEXT;
    if (progress_call(j, status_name(STATUS_TIMING), j->lab.timing_case) == -ECANCELED)
        return -ECANCELED;
    struct retime_pool pool;
    memset(&pool, 0, sizeof pool);
    struct job_round jr = {.j = j, .pool = &pool, .hold = -1};
    job_round_baselines(&jr);
    struct retime_source src = {job_time_round, &jr};
    int bound = j->python ? RETIME_PYTHON_BOUND : RETIME_BOUND;
    int r = retime_run(&j->rub, bound, &src, &pool, &j->in.timing);
    retime_pool_free(&pool);
    json_decref(jr.device);
    if (r == -EINVAL) {
        j->st = status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "Timing failed: the judge accepted no timing samples.");
        return JOB_VERDICT;
    }
    if (r == JOB_NEXT)
        r = job_time_complete(j);
    if (r == JOB_NEXT)
        job_profile(j);
    return r;
}
