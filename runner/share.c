/*
 * share.c - the share clock (share.h): a thread that samples the GPU's
 * users every 100 ms and cancels the run when its share is used up.
 */
#include "share.h"
#include "admit.h"
#include "lock.h"
#include "run.h"

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

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *share_main(void *p)
{
    struct share_clock *c = p;
    double last = mono();
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
        /* A ledger we cannot read counts as alone: the wall clock. */
        int n = admit_count(c->ledger);
        double now = mono();
        pthread_mutex_lock(&c->mu);
        if (n > c->peak_users)
            c->peak_users = n;
        c->used += share_of(now - last, n);
        c->wall += now - last;
        last = now;
        if (c->used >= c->limit) {
            c->fired = 1;
            ssize_t w = write(c->fds[1], "t", 1);
            (void)w;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int share_clock_start(struct share_clock *c, const char *ledger, double limit, int *cancel_fd)
{
    assert(c && ledger && cancel_fd && limit > 0);
    memset(c, 0, sizeof *c);
    if (strlen(ledger) >= sizeof c->ledger)
        return -ENAMETOOLONG;
    snprintf(c->ledger, sizeof c->ledger, "%s", ledger);
    c->limit = limit;
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

int share_run(const struct run_ctx *rc, const char *const *argv, int channel_fd, double limit,
              struct run_opts *o, struct sandbox_verdict *v, struct share_clock *sc, int *shared)
{
    char users[PATH_MAX];
    assert(limit > 0);
    lock_active_path(rc->env, users, sizeof users);
    *shared = share_clock_start(sc, users, limit, &o->cancel_fd) == 0;
    double wall = *shared ? fmin(fmax(rc->limits.ceiling, limit), limit * SHARE_MAX_STRETCH) : limit;
    assert(wall >= limit);
    int r = run_sandboxed_opts(rc, argv, channel_fd, wall, o, v);
    if (*shared && share_clock_stop(sc) && v->cancelled) {
        v->cancelled = 0; /* the share clock's cancel is the time limit */
        v->timed_out = 1;
    }
    return r;
}
