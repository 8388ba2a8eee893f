/*
 * job_time_gate.c - the gate of a timing run and the run started beside the
 * check (job_time.h): a timing run starts up under the job's shared lock,
 * waits at its gate with its wall clock stopped, and gets its 'g' once the
 * job holds the GPU's exclusive lock. Split from job_time.c along its
 * banner.
 */
#include "runner/grade/job_time.h"
#include "runner/gpu/lock.h"
#include "runner/gpu/share.h"
#include "runner/grade/judge.h"
#include "runner/grade/pool.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    int fd;                     /* our end of the socket; the owner's is fd 4 */
    int tlk;                    /* the exclusive lock, once taken */
    int opened;                 /* 1: 'g' was sent */
    struct sandbox_pause pause; /* the run's wall clock, stopped while we hold it back */
    struct sandbox_pause *pz;   /* &pause, or a warm run's own (pool.h) */
    struct sandbox_boost boost; /* the run's priority in the hold (TIME_HOLD_NICE) */
    struct sandbox_boost *bz;   /* &boost, or a warm run's own */
    struct share_clock *clock;  /* the run's share clock (share.h), or NULL: the wall */
    pthread_t thread;
    int started;
    struct time_pre *pre; /* a run started beside the check run, or NULL */
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
    /* the job's own sanitizers ended (round 0): apart from the wait for
     * the exclusive hold, which other jobs' work decides */
    job_clock_mark(&j->pc, round_phase(g->k, "sanitize_wait"));
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
int job_time_gated(struct job *j, struct job_round *jr, int k, const char *const *targv, int fd,
                   double tlim, struct run_opts *o, struct python_run *pr, int *tlk, int *sampled,
                   char *note, size_t len, struct time_pre *pre)
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

/* A timing run's share limit: the lab's timing limit, and for Python the
 * interpreters' start-up too (capped by the ceiling). */
static double time_run_limit(const struct job *j)
{
    double tlim = j->rc.limits.timing;
    return j->python ? fmin(j->rc.limits.ceiling, tlim + PYTHON_STARTUP_SECONDS) : tlim;
}

/* What one timing run needs: its channel, its command line, its options
 * (a Python owner's in tp->pr) and its limit, into tp. Returns 0 or
 * job_fail's -errno. */
int time_run_setup(struct job *j, int k, struct time_pre *tp)
{
    char chan[32];
    snprintf(chan, sizeof chan, k == 0 ? "timing" : "timing-%d", k);
    tp->fd = channel_open(j->rc.jobdir, chan);
    if (tp->fd < 0)
        return job_fail(j, tp->fd, "cannot open a channel: %s", strerror(-tp->fd));
    const char *c[] = {"/work/prog", "time",      "--seed-fd", "5", "--case", j->lab.timing_case,
                       "--max-ms",   TIME_MAX_MS, "--gate",    "4", NULL};
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
    tp->r =
        job_time_gated(j, NULL, 0, tp->targv, tp->fd, tp->tlim, &tp->o, j->python ? &tp->pr : NULL,
                       &tp->tlk, &tp->sampled, tp->note, sizeof tp->note, tp);
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
        j->err[0] = '\0';     /* not a failure of the job: it starts its timing later */
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
void time_pre_join(struct time_pre *tp, int go)
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
