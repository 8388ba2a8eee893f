/*
 * serve.c - the runner's service loop (see serve.h). Each job is graded in
 * a forked child of the runner: whatever a submission does to the grading
 * code (a parser bug, a crash we did not foresee), the runner itself
 * survives, posts system_error for that job and claims the next one.
 */
#include "runner/service/serve.h"
#include "runner/config.h"
#include "runner/timing/baseline.h"
#include "runner/gpu/health.h"
#include "runner/service/host.h"
#include "runner/run/run.h"
#include "status.h"
#include "runner/feedback/profile.h"
#include "runner/service/peers.h"
#include "runner/service/warm.h"
#include "runner/grade/pool.h"
#include "runner/grade/python.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_POSTED    0   /* child: the result was posted */
#define EXIT_ABANDONED 3   /* child: the lease was lost (409), nothing posted */
#define EXIT_UNPOSTED  4   /* child: graded, but the result could not be posted */
#define EXIT_SYSERR    5   /* child: the result posted was a system_error */
#define EXIT_MOVED 6       /* child: handed back (hand-back below), nothing posted */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

/* ---------------------------------------------------------------------- */
/* Serving: one job at a time, heartbeats while grading. */

struct heartbeat {
    struct client *cl;
    long long id;
    int attempt;                  /* the claim's "attempt": names our lease */
    int period;                   /* seconds between posts when nothing changed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char phase[32], detail[128];
    int dirty, stop, cancelled;
    pthread_t thread;
    int thread_running;
};

/* What a job's struct grade_later callbacks need. */
struct job_later {
    struct heartbeat *hb;
    const struct grade_env *env;
};

static void *heartbeat_main(void *p)
{
    struct heartbeat *hb = p;
    char phase[32], detail[128];
    pthread_mutex_lock(&hb->mu);
    while (!hb->stop) {
        if (!hb->dirty) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += hb->period;
            pthread_cond_timedwait(&hb->cv, &hb->mu, &ts);
            if (hb->stop)
                break;
        }
        hb->dirty = 0;
        snprintf(phase, sizeof phase, "%s", hb->phase);
        snprintf(detail, sizeof detail, "%s", hb->detail);
        pthread_mutex_unlock(&hb->mu);
        int r = client_progress(hb->cl, hb->id, hb->attempt, phase, detail, NULL);
        pthread_mutex_lock(&hb->mu);
        if (r == -ECANCELED) {
            fprintf(stderr, "cugrade-runner: job %lld: lease lost (409), abandoning\n", hb->id);
            hb->cancelled = 1;
        }
    }
    pthread_mutex_unlock(&hb->mu);
    return NULL;
}

static int progress_post(void *arg, const char *phase, const char *detail)
{
    struct heartbeat *hb = arg;
    int cancelled;
    pthread_mutex_lock(&hb->mu);
    snprintf(hb->phase, sizeof hb->phase, "%s", phase);
    snprintf(hb->detail, sizeof hb->detail, "%s", detail ? detail : "");
    hb->dirty = 1;
    cancelled = hb->cancelled;
    pthread_cond_signal(&hb->cv);
    pthread_mutex_unlock(&hb->mu);
    return cancelled ? -ECANCELED : 0;
}

static void heartbeat_start(struct heartbeat *hb)
{
    hb->stop = 0;
    hb->thread_running = pthread_create(&hb->thread, NULL, heartbeat_main, hb) == 0;
}

/* Stop hb's thread (it posts no progress once a verdict is posted). */
static void heartbeat_stop(struct heartbeat *hb)
{
    if (!hb->thread_running)
        return;
    pthread_mutex_lock(&hb->mu);
    hb->stop = 1;
    pthread_cond_signal(&hb->cv);
    pthread_mutex_unlock(&hb->mu);
    pthread_join(hb->thread, NULL);
    hb->thread_running = 0;
}

/* Score first (grade.h, struct grade_later): the verdict of a job whose
 * profile follows, posted before the profile runs. Then the child tells
 * the runner ('p' on its lane pipe) that it only waits for its profile:
 * it no longer counts against the jobs in flight. */
static int later_verdict(void *arg, const char *status, const json_t *result, const char *key)
{
    struct job_later *jl = arg;
    heartbeat_stop(jl->hb);
    if (jl->hb->cancelled)
        return -ECANCELED;
    fprintf(stderr, "cugrade-runner: job %lld: %s, score %g/%g (profile pending)\n", jl->hb->id,
            status, json_number_value(json_object_get(result, "score")),
            json_number_value(json_object_get(result, "max_score")));
    int r = client_result(jl->hb->cl, jl->hb->id, jl->hb->attempt, status, result, key, 600);
    if (r == 0 && jl->env->lane_fd >= 0) {
        char c = 'p';
        ssize_t w = write(jl->env->lane_fd, &c, 1);
        (void)w;
    }
    return r;
}

/* Hand-back: the job waits for its GPU's memory and the runner asked. No
 * progress of this child may land after the release (the same runner may
 * claim the job again, with the same attempt: the release does not count
 * it), so the heartbeat stops first, and starts again when the server did
 * not take the job back. */
static int later_release(void *arg)
{
    struct job_later *jl = arg;
    heartbeat_stop(jl->hb);
    if (jl->hb->cancelled)
        return -ECANCELED;
    int r = client_release(jl->hb->cl, jl->hb->id, jl->hb->attempt);
    if (r == -ECANCELED) {
        /* 409: the lease is another's now (it expired meanwhile) */
        fprintf(stderr, "cugrade-runner: job %lld: lease lost (409), abandoning\n", jl->hb->id);
        jl->hb->cancelled = 1;
    } else if (r < 0) {
        fprintf(stderr,
                "cugrade-runner: job %lld: not handed back (the server did not answer): "
                "it waits here\n",
                jl->hb->id);
        jl->hb->dirty = 1;
        heartbeat_start(jl->hb);
    }
    return r;
}

static int later_profile(void *arg, const json_t *update, const char *key)
{
    struct job_later *jl = arg;
    int r = client_profile(jl->hb->cl, jl->hb->id, jl->hb->attempt, key, update, 120);
    fprintf(stderr, "cugrade-runner: job %lld: profile %s%s\n", jl->hb->id,
            json_string_value(json_object_get(json_object_get(update, "profile"), "status")),
            r == 0 ? " posted" : r == -ECANCELED ? " dropped (regraded or no longer ours)"
                                                 : " not posted");
    return r;
}

/* In the child: grade the job, heartbeat, post the result. Returns an EXIT_* code. */
static int job_child(struct client *cl, struct host *hst, const struct grade_env *env,
                     const json_t *j)
{
    struct heartbeat hb;
    long long id = (long long)json_integer_value(json_object_get(j, "id"));
    int lease = (int)json_integer_value(json_object_get(j, "lease_seconds"));
    const char *src = json_string_value(json_object_get(j, "source"));
    struct grade_job job = {
        .id = id,
        .lab = json_string_value(json_object_get(j, "lab")),
        .filename = json_string_value(json_object_get(j, "filename")),
        .source = src ? src : "",
        .source_len = src ? json_string_length(json_object_get(j, "source")) : 0,
        .seed = json_string_value(json_object_get(j, "seed")),
        .rubric = json_object_get(j, "rubric"),
        .rubric_version = (int)json_integer_value(json_object_get(j, "rubric_version")),
    };
    memset(&hb, 0, sizeof hb);
    hb.cl = cl;
    hb.id = id;
    hb.attempt = (int)json_integer_value(json_object_get(j, "attempt"));
    hb.period = lease > 0 ? lease / 3 : 20;
    if (hb.period < 2)
        hb.period = 2;
    if (hb.period > 20)
        hb.period = 20;
    pthread_mutex_init(&hb.mu, NULL);
    pthread_cond_init(&hb.cv, NULL);
    snprintf(hb.phase, sizeof hb.phase, "%s", status_name(STATUS_COMPILING));
    /* The first progress at once: the claim's first lease is short
     * (queue_first_lease) until the server hears from us. */
    hb.dirty = 1;
    heartbeat_start(&hb);
    struct job_later jl = {&hb, env};
    struct grade_later later = {later_verdict, later_profile, later_release, &jl};

    const char *status = NULL;
    json_t *result = NULL;
    int r;
    host_scan_devices(hst);
    if (!job.lab || !job.seed || !job.rubric) {
        status = status_name(STATUS_SYSTEM_ERROR);
        result = grade_system_error_doc(job.lab, env->gpu_name,
                                        "the claimed job lacks lab, seed or rubric");
        r = result ? 0 : -ENOMEM;
    } else {
        r = grade_job_run(env, &job, progress_post, &hb, &later, &status, &result);
    }
    heartbeat_stop(&hb);
    if (r == GRADE_HANDED_BACK)
        return EXIT_MOVED;
    if (r == 0 && !result) /* the verdict went through later_verdict */
        return strcmp(status, status_name(STATUS_SYSTEM_ERROR)) == 0 ? EXIT_SYSERR : EXIT_POSTED;
    if (r == -ECANCELED || hb.cancelled) {
        json_decref(result);
        return EXIT_ABANDONED;
    }
    if (r < 0 || !result)
        return EXIT_UNPOSTED;
    fprintf(stderr, "cugrade-runner: job %lld: %s, score %g/%g\n", id, status,
            json_number_value(json_object_get(result, "score")),
            json_number_value(json_object_get(result, "max_score")));
    int ours = strcmp(status, status_name(STATUS_SYSTEM_ERROR)) == 0;
    r = client_result(cl, id, hb.attempt, status, result, NULL, 600);
    json_decref(result);
    if (r == -ECANCELED)
        return EXIT_ABANDONED;
    return r != 0 ? EXIT_UNPOSTED : ours ? EXIT_SYSERR : EXIT_POSTED;
}


/* ---------------------------------------------------------------------- */
/* Two lanes. Each claimed job is graded in a child of its own. It runs
 * its front pass at once (nvcc's preprocessor and cudafe++: a file that
 * does not parse is answered in seconds, whatever is queued), beside up
 * to `jobs` others; then it asks for a CPU lane slot ('f' on its lane
 * pipe) and the runner grants slots in claim order ('c' on its grant
 * pipe), `jobs` at a time: compile, inspection, link. Then the child
 * writes 'g' and waits for the GPU lane (the GPU memory admission and the
 * GPU lock, lock.h) holding nothing another job needs. The runner claims
 * a new job whenever fewer than front_width(jobs) children are in their
 * front pass and fewer than `queue` are in flight: a compile error is
 * answered while both lanes are full. */

enum kid_state {
    KID_FRONT, /* front pass */
    KID_WAIT,  /* asked for a CPU lane slot */
    KID_CPU,   /* granted: compile, inspection, link */
    KID_GPU,   /* left the CPU lane */
    KID_PROFILE, /* its verdict posted, it waits for or runs its profile */
};

struct kid {
    pid_t pid;
    long long id;
    long long seq;     /* claim order: slots are granted in it */
    int attempt;
    int lane;          /* read end of its lane pipe, or -1 */
    int grant;         /* write end of its grant pipe, or -1 */
    enum kid_state state;
    int admitted; /* 'a': its GPU memory is reserved */
    int waiting;  /* 'w': it waits for its GPU's memory (it may be handed back) */
    int asked;    /* sent 'h': asked to hand itself back */
    char lab[64];
};

/* How a job's child ended, for the GPU's probe and the streak below. */
enum kid_end {
    END_POSTED, /* its result (not a system_error) was posted */
    END_OTHER,  /* the lease was lost, or only its profile update was */
    END_SYSERR  /* it ended in a system_error */
};

/* How a child ended: a result posted or abandoned is the child's; anything
 * else (a crash of the grading code, a result it could not post) is a
 * system_error posted here. */
static enum kid_end kid_ended(struct client *cl, const struct host *h, const struct kid *k,
                              int status)
{
    char msg[256];
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_POSTED)
        return END_POSTED;
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_ABANDONED)
        return END_OTHER;
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SYSERR)
        return END_SYSERR;
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_MOVED)
        return END_OTHER; /* handed back: another runner grades it */
    if (k->state == KID_PROFILE) {
        /* Its verdict is posted: only the profile update is lost. */
        fprintf(stderr, "cugrade-runner: job %lld: its profile ended abnormally (status %d)\n",
                k->id, status);
        return END_OTHER;
    }
    if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "the runner's grading process died (signal %d)",
                 WTERMSIG(status));
    else
        snprintf(msg, sizeof msg, "the runner's grading process failed (status %d)",
                 WEXITSTATUS(status));
    fprintf(stderr, "cugrade-runner: job %lld: %s\n", k->id, msg);
    json_t *doc = grade_system_error_doc(k->lab, h->gpu_name, msg);
    if (doc)
        client_result(cl, k->id, k->attempt, status_name(STATUS_SYSTEM_ERROR), doc, NULL, 120);
    json_decref(doc);
    return END_SYSERR;
}

/* A runner whose jobs keep ending in system_error while its GPU answers
 * its probe (a sandbox that cannot start, a device its runs cannot see: a
 * second GPU's runner once failed 30 jobs in a row so, each in a second)
 * would take the queue from its healthy peers and spend every job's
 * attempts. After STREAK_JOBS such jobs in a row it claims nothing for
 * CUGRADE_GPU_PROBE_SECONDS, and after each such job past a pause twice as
 * long as the last, up to STREAK_PAUSE_MAX; its peers take the queue
 * meanwhile (it counts as idle: peers.h). One job that ends otherwise ends
 * the streak. (An overloaded host's starved compiles count too: claiming
 * less is then the right answer.) As
 * DOMjudge disables a judgehost after an internal error, but by itself and
 * for a while: a runner has no admin watching at 3 a.m. */
#define STREAK_JOBS      5
#define STREAK_PAUSE_MAX 600.0

static struct {
    int n;        /* jobs in a row that ended in system_error */
    int pauses;   /* pauses since the streak began */
    double until; /* no claim before this */
} streak;

static void streak_note(enum kid_end e, double now)
{
    if (e == END_POSTED) {
        if (streak.pauses)
            fprintf(stderr, "cugrade-runner: a job ended without a system_error: the streak is "
                            "over\n");
        memset(&streak, 0, sizeof streak);
        return;
    }
    /* A job claimed before the pause that ends during it (one of many in
     * flight) neither extends nor doubles it: only a failure after the
     * runner tried again does. */
    if (e != END_SYSERR || ++streak.n < STREAK_JOBS || now < streak.until)
        return;
    double pause = runner_cfg()->gpu_probe_seconds;
    for (int i = 0; i < streak.pauses && pause < STREAK_PAUSE_MAX; i++)
        pause *= 2;
    pause = fmin(pause, STREAK_PAUSE_MAX);
    streak.pauses++;
    streak.until = now + pause;
    fprintf(stderr,
            "cugrade-runner: %d jobs in a row ended in system_error (ours, their lines above): "
            "claiming none for %.0f s, the other runners take the queue\n",
            streak.n, pause);
}

static int streak_paused(double now)
{
    return now < streak.until;
}

/* How many children are in state s. */
static size_t kids_in(const struct kid *kids, size_t nk, enum kid_state s)
{
    size_t n = 0;
    for (size_t i = 0; i < nk; i++)
        n += kids[i].state == s;
    return n;
}

/* The GPU's baseline record refreshed in the background (baseline.h,
 * docs/runner.md "Baselines per GPU"): every CUGRADE_BASELINE_REFRESH
 * seconds (default 30; 0 off) a child of its own refreshes what is stale
 * (half the sharing window old), one at a time, busy or idle, so that a
 * job's first timing round finds a fresh record and times no baseline in
 * the student's latency. Its GPU batches take the exclusive lock like any
 * timing run. */
static pid_t refresh_pid;
static double refresh_last;

static void refresh_tick(const struct host *h, const struct grade_env *env)
{
    double every = runner_cfg()->baseline_refresh, now = run_now();
    if (refresh_pid > 0 || !h->have_gpu || !(every > 0) || now - refresh_last < every)
        return;
    refresh_last = now;
    pid_t pid = fork();
    if (pid == 0) {
        /* nothing of the runner's: its server connection, and the lane and
         * grant pipes, whose end a job waits on when the runner dies */
        close_range(3, ~0U, 0);
        host_refresh_baselines(env);
        _exit(0);
    }
    if (pid > 0)
        refresh_pid = pid;
}

/* Reap ended children (and the GPU probe) and read lane bytes, waiting at
 * most ms for one. */
static void kids_poll(struct client *cl, const struct host *h, struct health *hl,
                      struct kid *kids, size_t *nk, int ms)
{
    struct pollfd pf[256];
    size_t np = 0;
    for (size_t i = 0; i < *nk && np < 256; i++)
        if (kids[i].lane >= 0)
            pf[np++] = (struct pollfd){kids[i].lane, POLLIN, 0};
    if (ms > 0)
        poll(pf, np, ms);
    for (size_t i = 0; i < *nk; i++) {
        char c;
        ssize_t n = -1;
        while (kids[i].lane >= 0 && (n = read(kids[i].lane, &c, 1)) != 0) {
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    break;
                n = 0;
                break;
            }
            if (c == 'f' && kids[i].state == KID_FRONT)
                kids[i].state = KID_WAIT;
            else if (c == 'g')
                kids[i].state = KID_GPU;
            else if (c == 'p')
                kids[i].state = KID_PROFILE;
            else if (c == 'w')
                kids[i].waiting = !kids[i].admitted;
            else if (c == 'a') {
                kids[i].admitted = 1;
                kids[i].waiting = 0;
            }
        }
        if (kids[i].lane >= 0 && n == 0) {
            close(kids[i].lane);
            kids[i].lane = -1;
        }
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (health_reaped(hl, pid, status, run_now()))
            continue;
        if (python_bytecode_reaped(pid, status))
            continue;
        if (pid == refresh_pid) {
            refresh_pid = 0;
            continue;
        }
        if (warm_reaped(pid))
            continue;
        for (size_t i = 0; i < *nk; i++)
            if (kids[i].pid == pid) {
                enum kid_end e = kid_ended(cl, h, &kids[i], status);
                if (e == END_SYSERR)
                    health_suspect(hl);
                streak_note(e, run_now());
                if (kids[i].lane >= 0)
                    close(kids[i].lane);
                if (kids[i].grant >= 0)
                    close(kids[i].grant);
                kids[i] = kids[--*nk];
                break;
            }
    }
    health_tick(hl, run_now());
}

/* ---------------------------------------------------------------------- */
/* Children: one forked for a claim, or a warm one (warm.h) started before
 * its claim and handed it through its job pipe. */

/* A warm child's life: its member (pool.h), then the claim its job pipe
 * brings (its JSON, to the pipe's end). An empty pipe: it was not wanted;
 * it ends its member and exits. A member whose run ended before its job
 * (killed, out of memory, a host whose Numba does not start) is replaced,
 * after a pause that doubles while members keep ending (at most a
 * minute): a job never waits for a member that cannot come up, it starts
 * its check cold. */
static int warm_child(struct client *cl, struct host *h, struct grade_env *e, const char *lab,
                      int job_fd)
{
    double pause = 0.5, next = 0;
    for (int starts = 0;;) {
        if (!pool_alive() && run_now() >= next) {
            if (starts++)
                fprintf(stderr,
                        "cugrade-runner: the warm check run of %s ended before its job: "
                        "starting another\n",
                        lab);
            pool_end();
            (void)pool_start(e, lab);
            pause = fmin(60, pause * 2);
            next = run_now() + pause;
        }
        struct pollfd pf = {job_fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) > 0)
            break;
    }
    json_error_t jerr;
    json_t *job = json_loadfd(job_fd, JSON_DISABLE_EOF_CHECK, &jerr);
    close(job_fd);
    if (!job) {
        pool_end();
        return EXIT_POSTED;
    }
    return job_child(cl, h, e, job);
}

/* Fork a child: for job, or warm for lab when job is NULL (then *job_fd
 * gets the write end of its job pipe). The child gets the lane and grant
 * pipes (*lane, *grant: the parent's ends, -1 when none). Returns the pid
 * or -errno. */
static pid_t kid_fork(struct client *cl, const struct host *h, const struct grade_env *env,
                      const json_t *job, const char *lab, const struct kid *kids, size_t nk,
                      int *lane, int *grant, int *job_fd)
{
    int p[2], g[2], jp[2] = {-1, -1};
    if (!job && pipe2(jp, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(p, O_CLOEXEC) < 0)
        p[0] = p[1] = -1;
    else
        fcntl(p[0], F_SETFL, O_NONBLOCK);
    if (p[0] < 0 || pipe2(g, O_CLOEXEC) < 0)
        g[0] = g[1] = -1; /* no grant pipe: the child goes on at once */
    pid_t pid = fork();
    if (pid == 0) {
        struct grade_env e = *env;
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_IGN); /* a Ctrl-C lets the jobs in flight finish */
        for (size_t i = 0; i < nk; i++) {
            if (kids[i].lane >= 0)
                close(kids[i].lane);
            if (kids[i].grant >= 0)
                close(kids[i].grant);
        }
        warm_close_inherited();
        if (p[0] >= 0)
            close(p[0]);
        if (g[1] >= 0)
            close(g[1]);
        e.lane_fd = p[1];
        e.grant_fd = g[0];
        if (!job) {
            close(jp[1]);
            _exit(warm_child(cl, (struct host *)h, &e, lab, jp[0]));
        }
        _exit(job_child(cl, (struct host *)h, &e, job));
    }
    int err = pid < 0 ? errno : 0;
    int *mine[] = {&p[1], &g[0], &jp[0]};
    for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
        run_fd_close(mine[i]);
    if (pid < 0) {
        run_fd_close(&p[0]);
        run_fd_close(&g[1]);
        run_fd_close(&jp[1]);
        return -err;
    }
    *lane = p[0];
    *grant = g[1];
    if (job_fd)
        *job_fd = jp[1];
    return pid;
}

/* Start a warm child when a lab wanted lacks one (warm.h): one a call. */
static void warm_fill(struct client *cl, const struct host *h, const struct grade_env *env,
                      const struct kid *kids, size_t nk, int jobs)
{
    const char *lab = warm_next(warm_room(jobs), run_now());
    if (!lab)
        return;
    struct warm_kid w = {.lane = -1, .grant = -1, .job = -1, .born = run_now()};
    snprintf(w.lab, sizeof w.lab, "%s", lab);
    w.pid = kid_fork(cl, h, env, NULL, lab, kids, nk, &w.lane, &w.grant, &w.job);
    if (w.pid > 0)
        warm_add(&w);
}

/* Hand job to a warm child of its lab: its JSON on the child's job pipe.
 * Returns 1 and k's pid and pipes, or 0 (none, or it is gone). */
static int kid_warm(const struct grade_env *env, const json_t *job, struct kid *k)
{
    struct warm_kid w;
    const char *file = json_string_value(json_object_get(job, "filename"));
    if (!python_submission(file) || !pool_lab_warmable(env, k->lab))
        return 0;
    warm_want(k->lab, run_now());
    if (!warm_take(k->lab, &w))
        return 0;
    char *s = json_dumps(job, JSON_COMPACT);
    int r = s ? run_write_all(w.job, s, strlen(s)) : -ENOMEM;
    free(s);
    close(w.job); /* the end of the claim; a child that is gone reads nothing */
    if (r < 0) {
        run_fd_close(&w.lane);
        run_fd_close(&w.grant);
        return 0;
    }
    k->pid = w.pid;
    k->lane = w.lane;
    k->grant = w.grant;
    return 1;
}

/* Start a child grading job (a claim). Returns 0, or -errno (then a
 * system_error was posted for it). */
static int kid_start(struct client *cl, const struct host *h, const struct grade_env *env,
                     json_t *job, struct kid *kids, size_t *nk, long long seq)
{
    struct kid *k = &kids[*nk];
    memset(k, 0, sizeof *k);
    k->seq = seq;
    k->id = (long long)json_integer_value(json_object_get(job, "id"));
    k->attempt = (int)json_integer_value(json_object_get(job, "attempt"));
    const char *lab = json_string_value(json_object_get(job, "lab"));
    snprintf(k->lab, sizeof k->lab, "%s", lab ? lab : "");
    int warm = kid_warm(env, job, k);
    fprintf(stderr, "cugrade-runner: job %lld: lab %s, attempt %d%s\n", k->id, k->lab, k->attempt,
            warm ? " (a warm child)" : "");
    fflush(stderr);
    pid_t pid =
        warm ? k->pid : kid_fork(cl, h, env, job, NULL, kids, *nk, &k->lane, &k->grant, NULL);
    if (pid < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "the runner could not fork: %s", strerror((int)-pid));
        fprintf(stderr, "cugrade-runner: job %lld: %s\n", k->id, msg);
        json_t *doc = grade_system_error_doc(k->lab, h->gpu_name, msg);
        if (doc)
            client_result(cl, k->id, k->attempt, status_name(STATUS_SYSTEM_ERROR), doc, NULL,
                          120);
        json_decref(doc);
        return (int)pid;
    }
    k->pid = pid;
    k->state = k->grant >= 0 ? KID_FRONT : KID_CPU;
    (*nk)++;
    return 0;
}

/* Grant CPU lane slots, oldest claim first, while fewer than jobs are in
 * use. A grant that cannot be written (the child is gone) frees the slot
 * when the child is reaped. */
static void kids_grant(struct kid *kids, size_t nk, int jobs)
{
    size_t in_cpu = kids_in(kids, nk, KID_CPU);
    while (in_cpu < (size_t)jobs) {
        struct kid *next = NULL;
        for (size_t i = 0; i < nk; i++)
            if (kids[i].state == KID_WAIT && (!next || kids[i].seq < next->seq))
                next = &kids[i];
        if (!next)
            return;
        char c = 'c';
        next->state = KID_CPU;
        in_cpu++;
        if (write(next->grant, &c, 1) != 1) {
            close(next->grant);
            next->grant = -1;
        }
    }
}

/* How many children may be in their front pass at once: twice the CPU
 * lane's size (at most 256), or $CUGRADE_FRONT_JOBS (1 to 256). The
 * passes run above the CPU lane's compiles (compile.h): on the idle H100
 * host 32 at once ended 28-36 passes/s against 21-30 with 16
 * (docs/runner.md "Two lanes"). */
static size_t front_width(int jobs)
{
    long n = runner_cfg()->front_jobs;
    size_t twice = 2 * (size_t)jobs;
    return n >= 1 && n <= 256 ? (size_t)n : twice > 256 ? 256 : twice;
}

/* ---------------------------------------------------------------------- */
/* Hand-back. A runner claims far ahead (the two lanes above), and so binds
 * a burst's jobs to its GPU early: in a burst of 100 Python jobs on two
 * H200s one GPU's runner had graded all of its share 95 s before the
 * other's, which was still admitting its jobs one by one as memory freed
 * (docs/log/2026-11-30-hand-back.md). So a runner whose jobs wait for its
 * GPU's memory, while a peer on another GPU of the host has none pending
 * (peers.h), asks the newest of them ('h' on its grant pipe: a byte, not
 * a signal, which could cut a system call short in a child that was
 * admitted meanwhile) to give itself back: the
 * child, still holding nothing, posts the release, the server queues the
 * job again without counting the attempt, and the peer claims it. One ask
 * a second at most; the runner keeps one waiting job for its own GPU, and
 * claims nothing while a peer elsewhere is hungry (that peer takes the
 * queue). A child that was admitted meanwhile, or whose release the server
 * did not take, goes on as if never asked. */
#define HAND_BACK_EVERY_S 1.0

static double hand_back_last = -1e9;

/* Children not yet admitted to the GPU (a child waiting for its profile
 * was). */
static size_t kids_pending(const struct kid *kids, size_t nk)
{
    size_t n = 0;
    for (size_t i = 0; i < nk; i++)
        n += kids[i].state != KID_PROFILE && !kids[i].admitted;
    return n;
}

/* Children waiting for the GPU's memory. */
static size_t kids_waiting(const struct kid *kids, size_t nk)
{
    size_t n = 0;
    for (size_t i = 0; i < nk; i++)
        n += kids[i].waiting && !kids[i].admitted;
    return n;
}

static void hand_back_tick(struct kid *kids, size_t nk, size_t waiting, int hungry)
{
    double now = run_now();
    if (waiting < 2 || !hungry || now - hand_back_last < HAND_BACK_EVERY_S)
        return;
    struct kid *k = NULL;
    for (size_t i = 0; i < nk; i++)
        if (kids[i].waiting && !kids[i].admitted && !kids[i].asked && (!k || kids[i].seq > k->seq))
            k = &kids[i];
    if (!k)
        return;
    hand_back_last = now;
    k->asked = 1; /* once: a child without a grant pipe is never asked again */
    char c = 'h';
    if (k->grant >= 0 && write(k->grant, &c, 1) == 1) {
        fprintf(stderr,
                "cugrade-runner: job %lld: waits for this GPU's memory while another GPU "
                "has room: asked to hand itself back\n",
                k->id);
    }
}

static void serve_loop(struct client *cl, struct host *h, const struct grade_env *env, int once,
                       int jobs, int queue)
{
    size_t front_max = front_width(jobs);
    /* A child whose verdict is posted and that waits for its profile
     * does not count against queue; profile_wait_turn bounds how many wait
     * per GPU (PROFILE_AFTER_MAX), and the array has room for them. */
    size_t room = (size_t)queue + PROFILE_AFTER_MAX;
    struct kid *kids = calloc(room, sizeof *kids);
    struct health hl;
    size_t nk = 0;
    int attempt = 0, claimed = 0;
    double stop_began = 0;
    assert(jobs >= 1 && queue >= jobs && queue <= 256);
    if (!kids)
        return;
    health_init(&hl, h->have_gpu && !once, env, run_now());
    refresh_last = run_now(); /* the record was just made at start (host_build_labs) */
    for (;;) {
        kids_poll(cl, h, &hl, kids, &nk, 0);
        kids_grant(kids, nk, jobs);
        if (!once && !stopping && health_ok(&hl)) /* not while the GPU does not answer */
            refresh_tick(h, env);
        size_t in_front = kids_in(kids, nk, KID_FRONT);
        if (stopping || once)
            warm_end_all();
        else if (health_ok(&hl))
            warm_fill(cl, h, env, kids, nk, jobs);
        if (stopping || (once && claimed)) {
            peers_publish(PEER_STOPPING, nk, kids_pending(kids, nk));
            if (stop_began == 0)
                stop_began = run_now();
            /* The warm children end with their runner (at most 30 s). */
            if (nk == 0 && (warm_ending() == 0 || run_now() - stop_began > 30))
                break;
            kids_poll(cl, h, &hl, kids, &nk, 200);
            continue;
        }
        /* A GPU that does not answer its probe: claim nothing (health.h).
         * Nor more than the host's least loaded peer plus a front lane
         * (peers.h): the first runner to ask does not take a burst. A
         * runner whose probe has not answered yet counts as starting: when
         * runners start together, the first probe to answer took all 59
         * of a burst already queued (make test-gpu, three runners, H200). */
        size_t in_flight = nk - kids_in(kids, nk, KID_PROFILE);
        int paused = streak_paused(run_now());
        peers_publish(health_failing(&hl) || paused ? PEER_IDLE_GPU
                      : health_ok(&hl)              ? PEER_CLAIMING
                                                    : PEER_STARTING,
                      in_flight, kids_pending(kids, nk));
        size_t admit_waits = kids_waiting(kids, nk);
        int hungry = 0;
        long least = peers_least(admit_waits ? &hungry : NULL);
        hand_back_tick(kids, nk, admit_waits, hungry);
        if (in_front >= front_max || in_flight >= (size_t)queue || nk >= room || !health_ok(&hl) ||
            paused || hungry || (least >= 0 && in_flight >= (size_t)least + front_max)) {
            kids_poll(cl, h, &hl, kids, &nk, 200);
            continue;
        }
        json_t *job = NULL;
        /* Long poll only when idle: children must be reaped in time, and a
         * child at the CPU lane's door (or about to be) granted at once. */
        int waiting = in_front || kids_in(kids, nk, KID_WAIT);
        int r = client_claim(cl, waiting ? 0 : nk ? 1 : 20, &job);
        if (r < 0) {
            /* Server down, restarting, or refusing us: never die, back off. */
            client_backoff(attempt < 8 ? attempt++ : attempt);
            continue;
        }
        attempt = 0;
        if (!job) {
            if (waiting) /* an empty queue: wait for a lane byte, not the server */
                kids_poll(cl, h, &hl, kids, &nk, 100);
            continue;
        }
        kid_start(cl, h, env, job, kids, &nk, claimed);
        claimed++;
        json_decref(job);
    }
    free(kids);
}

int serve_default_jobs(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long n = runner_cfg()->runners_per_host;
    long j = (cores > 0 ? cores : 1) / n;
    return j < 1 ? 1 : j > 64 ? 64 : (int)j;
}

void serve_run(struct client *cl, struct host *h, const struct grade_env *env, int once, int jobs,
               int queue)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL); /* SIGPIPE: ignored since main() */
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    serve_loop(cl, h, env, once, jobs, queue);
}
