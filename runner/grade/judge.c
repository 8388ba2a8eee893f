/*
 * judge.c - see judge.h.
 */
#include "runner/grade/judge.h"
#include "runner/sandbox/bwrap.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JUDGE_READY_SECONDS 120         /* judge --serve must have CUDA up by then */
#define JUDGE_OUTPUT_CAP    (16u << 20) /* one verdict line at most */

/* The judge's environment: its GPU, and one hardware queue (run.h). */
static void judge_extra_env(const struct run_ctx *rc, char *cvd, size_t len, const char *extra[4])
{
    extra[0] = RUN_GPU_QUEUES_ENV;
    extra[1] = extra[2] = extra[3] = NULL;
    if (rc->env->gpu_index) {
        snprintf(cvd, len, "CUDA_VISIBLE_DEVICES=%s", rc->env->gpu_index);
        extra[1] = cvd;
        extra[2] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
    }
}

/* One line of the session's stdout (without its '\n', NUL-terminated,
 * valid until the next call), or NULL at EOF, an error, past the deadline
 * or past JUDGE_OUTPUT_CAP. */
static char *judge_line(struct judge_session *js, double deadline)
{
    for (;;) {
        char *nl = js->len ? memchr(js->buf, '\n', js->len) : NULL;
        if (nl) {
            /* Hand out the line; what follows it moves to the front on the
             * next call (the line is used before then). */
            *nl = '\0';
            return js->buf;
        }
        double left = deadline - run_now();
        if (left <= 0 || js->len >= JUDGE_OUTPUT_CAP)
            return NULL;
        if (js->cap - js->len < 65536) {
            size_t nc = js->cap ? js->cap * 2 : 1 << 20;
            char *nb = realloc(js->buf, nc);
            if (!nb)
                return NULL;
            js->buf = nb;
            js->cap = nc;
        }
        struct pollfd p = {js->out, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t n = read(js->out, js->buf + js->len, js->cap - js->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        js->len += (size_t)n;
    }
}

/* Drop the line judge_line returned. */
static void judge_line_done(struct judge_session *js)
{
    size_t k = strlen(js->buf) + 1;
    memmove(js->buf, js->buf + k, js->len - k);
    js->len -= k;
}

/* No GPU lock here: only the judge's context comes up (see the lock rules
 * in lock.h and job_admit). */
static void *judge_ready_main(void *p)
{
    struct judge_session *js = p;
    char *l = judge_line(js, run_now() + JUDGE_READY_SECONDS);
    int prepare = l && strcmp(l, "ready prepare") == 0;
    js->ready = l && (prepare || strcmp(l, "ready") == 0) ? 1 : -1;
    if (l)
        judge_line_done(js);
    if (prepare && js->prepare) {
        /* No answer comes: the next line on its stdout is a verdict's.
         * Written before judge_ask's first command (it joins this thread);
         * a judge gone since fails it with EPIPE (main() ignores SIGPIPE),
         * which shows there as a broken session. */
        assert(js->in >= 0); /* the thread starts once the pipes are up */
        (void)run_write_all(js->in, js->prepare, strlen(js->prepare));
    }
    return NULL;
}

/* No session (yet): judge_session_end and judge_run are safe on it. */
void judge_session_init(struct judge_session *js, const struct run_ctx *rc)
{
    memset(js, 0, sizeof *js);
    js->rc = rc;
    js->pid = js->in = js->out = -1;
}

void judge_session_boost(struct judge_session *js, int nice)
{
    if (js->pid <= 0)
        return;
    /* run_trusted_child made the judge a session (and group) of its own */
    (void)setpriority(PRIO_PGRP, (id_t)js->pid, nice);
    bwrap_autogroup_nice(js->pid, nice);
}

/* "prepare\t--seed\tS[\t--cases\tC]\n" (malloc'd), or NULL when there is
 * nothing to send (no seed), nothing safe to send (a tab or a newline in a
 * field would split the line; the seed is hex, job.c valid_seed, and the
 * cases are lab.json's names) or no memory. */
static char *judge_prepare_line(const char *seed, const char *cases)
{
    if (!seed || !*seed || strpbrk(seed, "\t\n") || (cases && strpbrk(cases, "\t\n")))
        return NULL;
    char *l = NULL;
    int k = cases && *cases ? asprintf(&l, "prepare\t--seed\t%s\t--cases\t%s\n", seed, cases)
                            : asprintf(&l, "prepare\t--seed\t%s\n", seed);
    return k < 0 ? NULL : l;
}

void judge_session_start(const struct run_ctx *rc, struct judge_session *js, const char *seed,
                         const char *cases)
{
    char judge[PATH_MAX], cvd[64];
    const char *extra[4];
    int in[2], out[2];
    judge_session_init(js, rc);
    js->prepare = judge_prepare_line(seed, cases);
    run_lab_dir(rc->env, rc->lab->name, judge, sizeof judge);
    strncat(judge, "/judge", sizeof judge - strlen(judge) - 1);
    judge_extra_env(rc, cvd, sizeof cvd, extra);
    if (pipe2(in, O_CLOEXEC) < 0)
        return;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return;
    }
    const char *argv[] = {judge, "--serve", NULL};
    pid_t pid = fork();
    if (pid == 0)
        run_trusted_child(argv, extra, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return;
    }
    js->pid = pid;
    js->in = in[1];
    js->out = out[0];
    run_task_start(&js->thread, &js->started, judge_ready_main, js);
}

/* The session ends in the background: the judge exits at EOF on its stdin
 * (its CUDA teardown is not the student's wait); a straggler is killed. */
struct judge_reap {
    pid_t pid;
};

static void *judge_reap_main(void *p)
{
    struct judge_reap *jr = p;
    int st, reaped = 0;
    for (int i = 0; i < 1000 && !reaped; i++) { /* 10 s */
        pid_t w = waitpid(jr->pid, &st, WNOHANG);
        reaped = w == jr->pid || (w < 0 && errno != EINTR);
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!reaped)
            nanosleep(&ts, NULL);
    }
    if (reaped)
        kill(-jr->pid, SIGKILL); /* anything it left in its group */
    else
        run_kill_child(jr->pid); /* a straggler, and its group */
    if (!reaped)
        while (waitpid(jr->pid, &st, 0) < 0 && errno == EINTR)
            ;
    free(jr);
    return NULL;
}

void judge_session_end(struct judge_session *js)
{
    run_task_join(&js->thread, &js->started);
    if (js->in >= 0)
        close(js->in);
    if (js->out >= 0)
        close(js->out);
    js->in = js->out = -1;
    if (js->pid > 0) {
        struct judge_reap *jr = malloc(sizeof *jr);
        pthread_t th;
        pthread_attr_t at;
        int ok = 0;
        if (jr && pthread_attr_init(&at) == 0) {
            jr->pid = js->pid;
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&th, &at, judge_reap_main, jr) == 0;
            pthread_attr_destroy(&at);
        }
        if (!ok) {
            if (jr) {
                jr->pid = js->pid;
                judge_reap_main(jr);
            } else {
                run_kill_child(js->pid);
                waitpid(js->pid, NULL, 0);
            }
        }
    }
    js->pid = -1;
    free(js->prepare);
    js->prepare = NULL;
    free(js->buf);
    js->buf = NULL;
    js->len = js->cap = 0;
}

/* One verdict from the session. Returns 0 and the line (malloc'd) in *out,
 * -EAGAIN when there is no usable session (the caller runs the one-shot
 * judge), or another negative errno (the session broke: ours). */
static int judge_ask(struct judge_session *js, const char *const *argv, double seconds, char **out)
{
    *out = NULL;
    if (!js || js->pid <= 0)
        return -EAGAIN;
    run_task_join(&js->thread, &js->started);
    if (js->ready != 1)
        return -EAGAIN;
    char cmd[3 * PATH_MAX];
    size_t o = 0;
    for (size_t i = 1; argv[i]; i++) {
        if (strchr(argv[i], '\t') || strchr(argv[i], '\n'))
            return -EINVAL;
        int k = snprintf(cmd + o, sizeof cmd - o, "%s%s", i > 1 ? "\t" : "", argv[i]);
        if (k < 0 || (size_t)k >= sizeof cmd - o)
            return -E2BIG;
        o += (size_t)k;
    }
    if (o + 1 >= sizeof cmd)
        return -E2BIG;
    cmd[o++] = '\n';
    int r = 0;
    size_t w = 0;
    while (w < o) {
        ssize_t n = write(js->in, cmd + w, o - w);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = -EPIPE;
            break;
        }
        w += (size_t)n;
    }
    char *l = r == 0 ? judge_line(js, run_now() + seconds) : NULL;
    if (l) {
        *out = strdup(l);
        judge_line_done(js);
        if (!*out)
            r = -ENOMEM;
    } else if (r == 0) {
        r = -EIO;
    }
    if (r < 0) {
        /* Broken: no later verdict may come from it. */
        run_kill_child(js->pid);
        js->ready = -1;
    }
    return r;
}

/* Run the trusted judge on a channel: `judge --seed S --channel F [--cases
 * a,b] [--device D]`, through the job's session when it has one. Returns 0
 * with its verdict document in *doc (new reference) and the cases parsed
 * into *cases and *n, or a negative errno with a sentence in err (a
 * system_error: the judge is ours). The caller holds the GPU lock shared. */
int judge_run(const struct run_ctx *rc, struct judge_session *js, const char *seed,
                     const char *channel, const char *cases_csv, json_t **doc,
                     struct score_case **cases, size_t *n, char *err, size_t errlen)
{
    char judge[PATH_MAX], *out = NULL, cvd[64];
    const char *extra[4];
    const char *argv[10];
    size_t a = 0;
    *doc = NULL;
    run_lab_dir(rc->env, rc->lab->name, judge, sizeof judge);
    strncat(judge, "/judge", sizeof judge - strlen(judge) - 1);
    argv[a++] = judge;
    argv[a++] = "--seed";
    argv[a++] = seed;
    argv[a++] = "--channel";
    argv[a++] = channel;
    if (cases_csv) {
        argv[a++] = "--cases";
        argv[a++] = cases_csv;
    }
    /* The device record measured by a trusted program, not the one from
     * inside the student's process. */
    if (rc->device_path[0]) {
        argv[a++] = "--device";
        argv[a++] = rc->device_path;
    }
    argv[a] = NULL;
    judge_extra_env(rc, cvd, sizeof cvd, extra);
    double lim = (rc->lab->run_seconds > 0 ? rc->lab->run_seconds : 120) * 2 + 60;
    int r = judge_ask(js, argv, lim, &out);
    if (r == -EAGAIN)
        r = grade_exec_trusted(argv, extra, lim, JUDGE_OUTPUT_CAP, &out);
    if (r != 0) {
        /* ours either way (a system_error): say what the staff would look for */
        if (r == -EPIPE)
            snprintf(err, errlen,
                     "the judge's session had ended before the verdict was asked for "
                     "(the judge died: killed for memory?)");
        else if (r == -EIO)
            snprintf(err, errlen,
                     "the judge gave no verdict: its session ended, or it took longer "
                     "than %.0f s",
                     lim);
        else if (r < 0)
            snprintf(err, errlen, "the judge failed (%s)", strerror(-r));
        else
            snprintf(err, errlen, "the judge failed (exit status %d)", r);
        free(out);
        return r < 0 ? r : -EIO;
    }
    json_error_t je;
    json_t *d = json_loads(out ? out : "", 0, &je);
    free(out);
    r = d ? score_cases_from_judge(d, cases, n) : -EINVAL;
    if (r < 0) {
        snprintf(err, errlen, "the judge's output is not {\"cases\":[...]}: %s",
                 d ? "wrong shape" : je.text);
        json_decref(d);
        return r;
    }
    *doc = d;
    return 0;
}
