/*
 * share.c - the share clock (share.h): a thread that samples the GPU's
 * users every 100 ms and cancels the run when its share is used up.
 */
#include "runner/gpu/share.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"
#include "runner/run/run.h"
#include "runner/sandbox/sandbox.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHARE_TICK_NS 100000000L /* 100 ms */

double share_of(double dt, int users)
{
    return dt / (users > 1 ? users : 1);
}

double share_tick(double dt, double paused, double stalled, int users)
{
    return share_of(fmax(0, dt - paused - stalled), users);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds the run's caller has stopped its clock for so far. */
static double paused(const struct share_clock *c)
{
    return c->pause ? sandbox_pause_seconds(c->pause) : 0;
}

/* Seconds the run was stalled for a CPU between two samples (s0, s1: -1
 * while unknown). */
static double stall_between(double s0, double s1)
{
    return s0 >= 0 && s1 > s0 ? s1 - s0 : 0;
}

static void *share_main(void *p)
{
    struct share_clock *c = p;
    double last = mono(), last_paused = paused(c), last_stall = sandbox_stall_seconds(&c->stall);
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SHARE_TICK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &until);
        if (c->stop)
            break;
        pthread_mutex_unlock(&c->mu);
        /* A ledger we cannot read counts as alone: the wall clock. Alone
         * (the exclusive lock) the ledger is not read: what it says then
         * is other jobs waiting, not sharing. */
        int n = atomic_load(&c->alone) ? 1 : admit_count(c->ledger);
        double now = mono(), now_paused = paused(c), now_stall = sandbox_stall_seconds(&c->stall);
        double stalled = stall_between(last_stall, now_stall);
        if (now_stall >= 0) /* the first value known is the start of the count */
            last_stall = now_stall;
        pthread_mutex_lock(&c->mu);
        c->stalled += stalled;
        if (n > c->peak_users)
            c->peak_users = n;
        c->used += share_tick(now - last, now_paused - last_paused, stalled, n);
        c->wall += now - last;
        last = now;
        last_paused = now_paused;
        if (c->used >= c->limit) {
            c->fired = 1;
            ssize_t w = write(c->fds[1], "t", 1);
            (void)w;
            break;
        }
        if (c->yield_to[0] && admit_count(c->yield_to) > 0) {
            c->yielded = 1;
            ssize_t w = write(c->fds[1], "y", 1);
            (void)w;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Start c's thread (share_clock_start_paused, and the ledger that makes
 * the run yield, or NULL). */
static int clock_begin(struct share_clock *c, const char *ledger, double limit,
                       const struct sandbox_pause *pause, const char *yield_to, int *cancel_fd)
{
    assert(c && ledger && cancel_fd && limit > 0);
    memset(c, 0, sizeof *c);
    if (strlen(ledger) >= sizeof c->ledger ||
        (yield_to && strlen(yield_to) >= sizeof c->yield_to))
        return -ENAMETOOLONG;
    snprintf(c->ledger, sizeof c->ledger, "%s", ledger);
    if (yield_to)
        snprintf(c->yield_to, sizeof c->yield_to, "%s", yield_to);
    c->limit = limit;
    c->pause = pause;
    sandbox_stall_init(&c->stall);
    atomic_init(&c->alone, 0);
    if (pipe2(c->fds, O_CLOEXEC) < 0)
        return -errno;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    int r = pthread_create(&c->thread, NULL, share_main, c);
    if (r != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        close(c->fds[0]);
        close(c->fds[1]);
        return -r;
    }
    *cancel_fd = c->fds[0];
    return 0;
}

int share_clock_start(struct share_clock *c, const char *ledger, double limit, int *cancel_fd)
{
    return share_clock_start_paused(c, ledger, limit, NULL, cancel_fd);
}

int share_clock_start_paused(struct share_clock *c, const char *ledger, double limit,
                             const struct sandbox_pause *pause, int *cancel_fd)
{
    return clock_begin(c, ledger, limit, pause, NULL, cancel_fd);
}

int share_clock_start_yield(struct share_clock *c, const char *ledger, double limit,
                            const char *yield_to, int *cancel_fd)
{
    return clock_begin(c, ledger, limit, NULL, yield_to, cancel_fd);
}

void share_clock_restart(struct share_clock *c, double limit)
{
    assert(limit > 0);
    pthread_mutex_lock(&c->mu);
    c->limit = limit;
    c->used = c->wall = c->stalled = 0;
    c->peak_users = 0;
    pthread_mutex_unlock(&c->mu);
}

void share_clock_alone(struct share_clock *c)
{
    atomic_store(&c->alone, 1);
}

double share_wall_ceiling(double ceiling, double limit)
{
    assert(limit > 0);
    return fmin(fmax(ceiling, limit), limit * SHARE_MAX_STRETCH);
}

char *share_clock_note(const struct share_clock *c, const char *when, char *buf, size_t len)
{
    assert(c && when && buf && len > 0);
    buf[0] = 0;
    if (!(c->wall > c->limit * 1.1))
        return buf;
    int gpu = c->peak_users > 1, cpu = c->stalled >= 0.05 * c->wall;
    if (gpu && cpu)
        snprintf(buf, len,
                 " Other jobs shared the GPU %s (up to %d at once) and the host's CPUs were busy "
                 "(%.1f s of waiting for a CPU not counted), so the limit counted %.1f s in "
                 "%.1f s of wall time.",
                 when, c->peak_users, c->stalled, c->used, c->wall);
    else if (gpu)
        snprintf(buf, len,
                 " Other jobs shared the GPU %s (up to %d at once), so the limit counted your "
                 "share of it: %.1f s of share in %.1f s of wall time.",
                 when, c->peak_users, c->used, c->wall);
    else if (cpu)
        snprintf(buf, len,
                 " The host's CPUs were busy %s: %.1f s of waiting for a CPU were not counted "
                 "(%.1f s counted in %.1f s of wall time).",
                 when, c->stalled, c->used, c->wall);
    return buf;
}

int share_clock_peek(struct share_clock *c, double *stalled)
{
    pthread_mutex_lock(&c->mu);
    int fired = c->fired;
    *stalled = c->stalled;
    pthread_mutex_unlock(&c->mu);
    return fired;
}

int share_clock_stop(struct share_clock *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    close(c->fds[0]);
    close(c->fds[1]);
    return c->fired;
}

void share_clock_timeout(struct sandbox_verdict *v, int fired)
{
    if (fired && v->cancelled) {
        v->cancelled = 0; /* the share clock's cancel is the time limit */
        v->timed_out = 1;
    }
}

int share_run(const struct run_ctx *rc, const char *const *argv, int channel_fd, double limit,
              struct run_opts *o, struct sandbox_verdict *v, struct share_clock *sc, int *shared)
{
    return share_run_yielding(rc, argv, channel_fd, limit, o, v, sc, shared, NULL);
}

int share_run_yielding(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                       double limit, struct run_opts *o, struct sandbox_verdict *v,
                       struct share_clock *sc, int *shared, const char *yield_to)
{
    char users[PATH_MAX];
    assert(limit > 0);
    lock_active_path(rc->env, users, sizeof users);
    *shared = share_clock_start_yield(sc, users, limit, yield_to, &o->cancel_fd) == 0;
    if (*shared)
        o->stall = &sc->stall;
    double wall = *shared ? share_wall_ceiling(rc->limits.ceiling, limit) : limit;
    assert(wall >= limit);
    int r = run_sandboxed_opts(rc, argv, channel_fd, wall, o, v);
    if (*shared)
        share_clock_timeout(v, share_clock_stop(sc));
    return r;
}
