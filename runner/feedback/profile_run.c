/*
 * profile_run.c - see profile.h: the sandboxed ncu run of a correct
 * submission (profile_run), the GPU's one profiler (its lock and queue),
 * the memory the run reserves, and the source page of the hints' lines.
 * Split from profile.c, which keeps the command line, the report's parser
 * and the hint rules.
 */
#include "runner/feedback/profile.h"
#include "runner/config.h"
#include "runner/gpu/share.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"
#include "runner/run/run.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* One ncu session per GPU at a time: CACHE/gpu-<index>.profile, flock'd,
 * and its queue CACHE/gpu-<index>.profileq (admit.h's ledger, 0 MiB a
 * line). The wait is bounded (PROFILE_LOCK_WAIT): past it the job goes on
 * without a profile rather than queue behind a burst of them; and with
 * PROFILE_QUEUE_MAX already waiting it does not wait at all -- they would
 * take the whole bound (a deadline burst on an H100, stop 21: the profile
 * phase was 30 s at the median, mostly waits that ended "busy"). */
static int profile_lock(const struct grade_env *env)
{
    char path[PATH_MAX], queue[PATH_MAX];
    lock_gpu_path(env, "profile", path, sizeof path);
    lock_gpu_path(env, "profileq", queue, sizeof queue);
    return profile_lock_at(path, queue, PROFILE_LOCK_WAIT);
}

int profile_lock_at(const char *path, const char *queue, double max_wait)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    if (admit_count(queue) >= PROFILE_QUEUE_MAX) {
        close(fd);
        return -2;
    }
    long long tok = admit_enter(queue); /* 0: not counted, it still waits its bound */
    double end = run_now() + max_wait;
    int r = fd;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if ((e != EWOULDBLOCK && e != EINTR) || run_now() >= end) {
            close(fd);
            r = e == EWOULDBLOCK ? -2 : -1;
            break;
        }
        usleep(20000);
    }
    admit_release(queue, tok);
    return r;
}

/* The profiled run's GPU memory (admit.h), reserved once the profile lock
 * is held, waiting at most what is left of PROFILE_LOCK_WAIT since t0.
 * Returns the token (0: admission off or nothing to reserve), or -1 when
 * it did not fit in time (busy) -- any other failure profiles anyway, as
 * the runs did before admission existed. */
static long long profile_reserve(const struct run_ctx *rc, unsigned long long need_mb, double t0,
                                 char *path, size_t len)
{
    long long tok = 0;
    if (!rc || need_mb == 0)
        return 0;
    lock_admit_path(rc->env, path, len);
    double left = PROFILE_LOCK_WAIT - (run_now() - t0);
    int r = admit_reserve(path, lock_admit_capacity(rc), need_mb, left > 0 ? left : 0, &tok, NULL);
    if (r == -EBUSY)
        return -1;
    return r < 0 ? 0 : tok;
}

/* ncu's own complaint (==ERROR== lines, ERR_NVGPUCTRPERM...), for the
 * admins and the "unavailable" message. */
static void profile_error_text(const char *log, const struct sandbox_verdict *v, char *buf,
                               size_t len)
{
    const char *srcs[3] = {log, v->err, v->out};
    buf[0] = '\0';
    for (int i = 0; i < 3 && !buf[0]; i++) {
        const char *e = srcs[i] ? strstr(srcs[i], "==ERROR==") : NULL;
        if (!e)
            continue;
        const char *nl = strchr(e, '\n');
        snprintf(buf, len, "%.*s", (int)(nl ? nl - e : (long)strlen(e)), e);
    }
    if (!buf[0]) {
        char fail[300];
        const char *why = run_failure(v, fail, sizeof fail);
        snprintf(buf, len, "%s", why ? why : "ncu wrote no report");
    }
}

/* The source lines of out's hints: ncu's source page of the pass's report,
 * printed in the same sandbox (no GPU needed: after the locks), only when
 * a hint that a line explains fired. Adds out.source_seconds; a page that
 * cannot be had leaves the hints as they are (never a failure). */
static void profile_lines(const struct run_ctx *rc, const char *ncu, const char *ncu_dir,
                          json_t *out)
{
    json_t *hints = json_object_get(out, "hints");
    if (!profile_hints_want_lines(hints))
        return;
    double t0 = run_now();
    const char *argv[] = {ncu,
                          "-i",
                          PROFILE_REPORT ".ncu-rep",
                          "--csv",
                          "--page",
                          "source",
                          "--print-source",
                          "cuda,sass",
                          "--log-file",
                          PROFILE_SOURCE_LOG,
                          NULL};
    /* ncu alone: none of the student's run's fds, binds or environment */
    struct run_opts io;
    struct sandbox_bind bind = {ncu_dir, ncu_dir, 0};
    memset(&io, 0, sizeof io);
    io.control_fd = io.cancel_fd = -1;
    io.more_binds = &bind;
    io.nmore_binds = 1;
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    int r = run_sandboxed_opts(rc, argv, -1, PROFILE_SECONDS, &io, &v);
    char *text = NULL;
    size_t len = 0;
    int located = 0;
    if (r == 0 &&
        sandbox_take_file(rc->workdir, PROFILE_SOURCE_LOG_NAME, PROFILE_LOG_CAP, &text, &len) < 0)
        text = NULL;
    const char *page = text ? text : v.out; /* an ncu that ignores --log-file with -i */
    if (r == 0 && page) {
        struct profile_source src;
        profile_source_init(&src);
        if (profile_source_parse(page, PROFILE_STUDENT_DIR, &src) == 0)
            located = profile_hints_locate(hints, &src);
        profile_source_free(&src);
    }
    if (!located) {
        char m[400];
        profile_error_text(text, &v, m, sizeof m);
        fprintf(stderr, "cugrade-runner: profile: no source line for the hints (%s)\n",
                r < 0 ? strerror(-r) : m);
    }
    json_object_set_new(out, "source_seconds", json_real(run_now() - t0));
    free(text);
    sandbox_verdict_free(&v);
}

/* o (may be NULL) into po, with the ncu directory beside the run's own
 * binds (a Python run's), in binds (room for RUN_MORE_BINDS). */
static void profile_opts(const struct run_opts *o, const char *ncu_dir,
                         struct sandbox_bind *binds, struct run_opts *po)
{
    memset(po, 0, sizeof *po);
    if (o)
        *po = *o;
    else
        po->control_fd = po->cancel_fd = -1;
    size_t nb = 0;
    for (size_t i = 0; i < po->nmore_binds && nb < RUN_MORE_BINDS - 1; i++)
        binds[nb++] = po->more_binds[i];
    binds[nb++] = (struct sandbox_bind){ncu_dir, ncu_dir, 0};
    po->more_binds = binds;
    po->nmore_binds = nb;
}

/* The profiled run under the shared GPU lock, given up for a timing run
 * that waits for the exclusive lock (the GPU's timing ledger, lock.h) and
 * started again once it is over, at most PROFILE_YIELDS times (then it runs
 * to its end: a profile is not starved by a stream of timing runs). Why: a
 * profile runs after its verdict, and nobody waits for it; a timing run is
 * some student's verdict. Alone on an H200, a second submission sent right
 * after a first waited 1.66 s for the exclusive lock while the first's
 * profile (about 3 s) held the shared one. The limit counts the run's
 * share of the GPU (share.h), as a check run's does: in a burst ncu's
 * replay passes are time-sliced with the other jobs' runs (an H100: 4 of
 * 30 profiles past 10 s of wall time in a 66-job burst), and that is no
 * reason to drop the profile. Returns share_run's value; *yields counts
 * the passes given up. */
static int profile_pass(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                        struct run_opts *po, struct sandbox_verdict *v, int *yields)
{
    char timing[PATH_MAX];
    lock_timing_path(rc->env, timing, sizeof timing);
    for (;;) {
        struct share_clock sc;
        int shared;
        int glk = lock_gpu_shared_user(rc->env); /* waits out the timing runs */
        int r = share_run_yielding(rc, argv, channel_fd, PROFILE_SECONDS, po, v, &sc, &shared,
                                   *yields < PROFILE_YIELDS ? timing : NULL);
        lock_gpu_release(glk);
        /* Cut before ncu started (-ECANCELED: nothing ran) or while it ran. */
        int cut = shared && sc.yielded && (r == -ECANCELED || (r >= 0 && v->cancelled));
        if (!cut)
            return r;
        (*yields)++;
        char partial[PATH_MAX];
        snprintf(partial, sizeof partial, "%s/%s", rc->workdir, PROFILE_LOG_NAME);
        unlink(partial); /* the cut pass's report, if it began one (a link: the link) */
        sandbox_verdict_free(v);
        memset(v, 0, sizeof *v);
    }
}

/* profile_run, with held the GPU's profile lock the caller holds (taken
 * over: closed here), or -1 to take it here. */
static json_t *profile_run_lock(const struct run_ctx *rc, const char *const *target,
                                int channel_fd, const struct run_opts *o,
                                unsigned long long need_mb, int held)
{
    double t0 = run_now();
    const char *ncu = profile_ncu_path();
    if (!ncu)
        return profile_json_unavailable("Nsight Compute (ncu) is not installed on this runner.", 0);
    char ncu_dir[PATH_MAX], real[PATH_MAX];
    if (!realpath(ncu, real))
        return profile_json_unavailable("Nsight Compute (ncu) cannot be resolved.", 0);
    snprintf(ncu_dir, sizeof ncu_dir, "%s", real);
    char *slash = strrchr(ncu_dir, '/');
    if (slash && slash != ncu_dir)
        *slash = '\0';
    const char *argv[64];
    char filter[2048];
    char **skip = profile_harness_kernels(rc->env->root, rc->lab->name);
    if (!skip)
        return NULL;
    if (profile_argv(real, PROFILE_LOG, (const char *const *)skip, target, argv, 64, filter,
                     sizeof filter) < 0) {
        profile_names_free(skip);
        if (held >= 0)
            close(held);
        return profile_json_unavailable("the profiled command is too long", 0);
    }
    struct run_opts po;
    struct sandbox_bind binds[RUN_MORE_BINDS];
    profile_opts(o, ncu_dir, binds, &po);

    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    int plk = held >= 0 ? held : profile_lock(rc->env);
    long long tok = 0;
    char admit[PATH_MAX];
    if (plk != -2 && (tok = profile_reserve(rc, need_mb, t0, admit, sizeof admit)) < 0) {
        if (plk >= 0)
            close(plk);
        plk = -2;
    }
    if (plk == -2) {
        profile_names_free(skip);
        return profile_json_unavailable("the profiler was busy with other submissions; "
                                        "resubmit for a profile",
                                        run_now() - t0);
    }
    int yields = 0;
    int r = profile_pass(rc, argv, channel_fd, &po, &v, &yields);
    if (tok > 0)
        admit_release(admit, tok);
    if (plk >= 0)
        close(plk);
    double secs = run_now() - t0;
    char *log = NULL;
    size_t loglen = 0;
    json_t *out = NULL;
    if (r < 0) {
        char m[200];
        snprintf(m, sizeof m, "the profiling sandbox failed: %s", strerror(-r));
        out = profile_json_unavailable(m, secs);
        goto done;
    }
    if (sandbox_take_file(rc->workdir, PROFILE_LOG_NAME, PROFILE_LOG_CAP, &log, &loglen) < 0)
        log = NULL;
    struct profile_report rep;
    profile_report_init(&rep);
    int pr = log ? profile_csv_parse(log, (const char *const *)skip, &rep) : -ENOENT;
    if (pr == 0 && rep.nkernels > 0) {
        out = profile_json(&rep, secs);
        if (out) {
            profile_lines(rc, real, ncu_dir, out);
            json_object_set_new(out, "seconds", json_real(run_now() - t0));
            if (yields > 0)
                json_object_set_new(out, "yields", json_integer(yields));
        }
    } else {
        char m[400];
        profile_error_text(log, &v, m, sizeof m);
        if (pr == 0 && rep.skipped > 0 && !strstr(m, "==ERROR=="))
            snprintf(m, sizeof m, "no kernel of yours was launched in the profiled case");
        fprintf(stderr, "cugrade-runner: profiling unavailable: %s\n", m);
        out = profile_json_unavailable(m, secs);
    }
    profile_report_free(&rep);
done:
    profile_names_free(skip);
    free(log);
    sandbox_verdict_free(&v);
    return out;
}

json_t *profile_run(const struct run_ctx *rc, const char *const *target, int channel_fd,
                    const struct run_opts *o, unsigned long long need_mb)
{
    return profile_run_lock(rc, target, channel_fd, o, need_mb, -1);
}

json_t *profile_run_held(const struct run_ctx *rc, const char *const *target, int channel_fd,
                         const struct run_opts *o, unsigned long long need_mb, int lock_fd)
{
    assert(lock_fd >= 0);
    return profile_run_lock(rc, target, channel_fd, o, need_mb, lock_fd);
}

/* Does anyone wait for this GPU's memory admission (the grading comes
 * first)? */
static int profile_gpu_busy(const struct grade_env *env)
{
    char queue[PATH_MAX];
    lock_admit_queue_path(env, queue, sizeof queue);
    return admit_count(queue) > 0;
}

int profile_wait_turn(const struct grade_env *env, double max_wait, char *why, size_t len)
{
    char path[PATH_MAX], line[PATH_MAX];
    lock_gpu_path(env, "profile", path, sizeof path);
    lock_gpu_path(env, "profilew", line, sizeof line);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, len, "profile skipped: the GPU's profiler lock cannot be opened (%s)",
                 strerror(errno));
        return -1;
    }
    int waiting = admit_count(line), most = PROFILE_AFTER_MAX;
    if (waiting >= most) {
        snprintf(why, len,
                 "profile skipped: %d profiles already wait for this GPU (at most %d wait); "
                 "profile your kernel yourself: ncu --set basic ./your_program",
                 waiting, most);
        close(fd);
        return -2;
    }
    /* In line, holding nothing a grading job needs: first the profiler
     * (one ncu per GPU), then, holding it, a moment when no job waits for
     * the GPU's memory. */
    long long tok = admit_enter(line);
    double end = run_now() + max_wait;
    int have = 0, r = -2;
    for (;;) {
        if (!have)
            have = flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (have && !profile_gpu_busy(env)) {
            r = fd;
            break;
        }
        if (run_now() >= end)
            break;
        usleep(50000);
    }
    admit_release(line, tok);
    if (r < 0) {
        snprintf(why, len,
                 "profile skipped: the GPU stayed busy grading other submissions for %.0f s; "
                 "resubmit when it is quieter, or profile your kernel yourself: ncu --set basic "
                 "./your_program",
                 max_wait);
        close(fd);
    }
    return r;
}
