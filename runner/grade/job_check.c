/*
 * job_check.c - the check phase of a job (job.h: job_check): every case of
 * the rubric in one sandboxed run (a warm pool member's, or a cold one on
 * the share clock), then its judge. Split from job.c along its banner; the
 * helpers they share are in job_phase.h.
 */
#include "runner/grade/job.h"
#include "runner/grade/job_phase.h"
#include "status.h"
#include "runner/gpu/lock.h"
#include "runner/gpu/share.h"
#include "runner/grade/pool.h"
#include "runner/grade/python.h"
#include "runner/run/limit.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* name when its rubric line is visible to the student, else a neutral
 * phrase: hidden cases are not named in a student's feedback. */
static const char *case_visible(const struct rubric *rub, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < rub->ncorrectness; i++)
        if (strcmp(rub->correctness[i].case_name, name) == 0) {
            const char *vis = rub->correctness[i].visibility;
            return !vis || strcmp(vis, "visible") == 0 ? name : "(a hidden case)";
        }
    return name;
}

/* The check run is over, and with it the biggest case: the reservation
 * shrinks to what the rest of the job runs (lock_admit_after_check), so
 * the next job is admitted while this one waits for its sanitizers, its
 * timing and its profile. A ledger that cannot be rewritten keeps the
 * bigger reservation (only slower, never unsafe). */
static void job_reserve_shrink(struct job *j)
{
    job_reserve_to(j, lock_admit_after_check(&j->lab, job_sanitizers_wanted(j), j->python));
}

int job_case_list(struct job *j)
{
    const struct lab *lab = &j->lab;
    const struct rubric *rub = &j->rub;
    if (j->case_list)
        return 0;
    size_t want = rub->ncorrectness ? rub->ncorrectness : lab->ncases, list_len = 1;
    j->case_names = calloc(want ? want : 1, sizeof *j->case_names);
    if (!j->case_names)
        return job_fail(j, -ENOMEM, "out of memory");
    for (size_t i = 0; i < lab->ncases; i++) {
        int in_rubric = rub->ncorrectness == 0;
        for (size_t k = 0; k < rub->ncorrectness; k++)
            if (strcmp(rub->correctness[k].case_name, lab->cases[i].name) == 0)
                in_rubric = 1;
        if (in_rubric && j->ncase_names < want) {
            j->case_names[j->ncase_names++] = lab->cases[i].name;
            list_len += strlen(lab->cases[i].name) + 1;
        }
    }
    j->case_list = malloc(list_len);
    if (!j->case_list)
        return job_fail(j, -ENOMEM, "out of memory");
    j->case_list[0] = '\0';
    for (size_t i = 0; i < j->ncase_names; i++) {
        if (i)
            strcat(j->case_list, ",");
        strcat(j->case_list, j->case_names[i]);
    }
    return 0;
}

const char *job_check_failure(const struct sandbox_verdict *v, const struct run_limits *l,
                              double lim, const char *case_name, const struct share_clock *sc,
                              char *buf, size_t len)
{
    if (!v->timed_out || v->output_limit || v->cpu_limit)
        return run_failure(v, buf, len);
    limit_timeout_message(l, lim, case_name, buf, len);
    if (sc) {
        size_t n = strlen(buf);
        share_clock_note(sc, "during your run", buf + n, len - n);
    }
    return buf;
}

/* How the check run ended badly (j->why, NULL when it did not): the
 * verdict and the channel say it, no judge needed. sc: the run's share
 * clock when it shared the GPU, else NULL. */
static void job_check_why(struct job *j, double lim, const struct share_clock *sc)
{
    char *fail = j->why_buf;
    const size_t flen = sizeof j->why_buf;
    const struct sandbox_verdict *v = &j->v;
    const char *running = j->ci.ncases < (int)j->ncase_names ? j->case_names[j->ci.ncases] : NULL;
    j->why =
        job_check_failure(v, &j->rc.limits, lim, case_visible(&j->rub, running), sc, fail, flen);
    if (v->exited && v->exit_code == 3) {
        run_fatal_case_message(&j->ci, j->fatal, sizeof j->fatal);
        if (j->fatal[0])
            j->why = j->fatal;
    }
    if (!j->why && !j->ci.done)
        j->why = "Your program stopped before the harness finished (no final record).";
}

/* The check run given to the warm run this job adopted (pool.h), its
 * channel watched: pool_go's value (-ESTALE: nothing ran, start it cold),
 * *wc the watch's. */
static int job_check_warm(struct job *j, double lim, struct share_clock *sc, int *shared, int *wc)
{
    struct channel_watch w;
    j->chk_fd = pool_member_channel(j->warm);
    channel_watch_start(&w, j->chk_fd, (int)j->ncase_names, j->progress, j->arg);
    int r = pool_go(j->warm, &j->rc, j->seed, j->case_list, j->src, lim, &j->v, sc, shared);
    *wc = channel_watch_stop(&w);
    if (r == -ESTALE)
        run_fd_close(&j->chk_fd);
    return r;
}

/* The check run started now, its channel watched: share_run's value, or
 * job_fail's with no channel left open; *wc the watch's. */
static int job_check_cold(struct job *j, double lim, struct share_clock *sc, int *shared, int *wc)
{
    int r;
    if ((j->chk_fd = channel_open(j->rc.jobdir, "check")) < 0)
        return job_fail(j, j->chk_fd, "cannot open the result channel: %s", strerror(-j->chk_fd));
    /* The seed on fd 5 (run_opts.secret), never on the command line. */
    const char *argv_c[] = {"/work/prog", "check", "--seed-fd", "5", "--cases", j->case_list, NULL};
    const char *const *argv = argv_c;
    struct run_opts o = {.control_fd = -1, .cancel_fd = -1, .secret = j->seed};
    struct python_run pr;
    if (j->python) {
        if ((r = python_run_prepare(&pr, &o, j->env->root, &j->lab, "check", j->seed, j->case_list,
                                    NULL, j->src)) < 0) {
            run_fd_close(&j->chk_fd);
            return job_fail(j, r, "the lab's hidden libraries (lab.json python.hide): %s",
                            strerror(-r));
        }
        (void)python_run_kept(&pr, &o, j->env, &j->lab);
        argv = pr.argv;
    }
    struct channel_watch w;
    channel_watch_start(&w, j->chk_fd, (int)j->ncase_names, j->progress, j->arg);
    r = share_run(&j->rc, argv, j->chk_fd, lim, &o, &j->v, sc, shared);
    *wc = channel_watch_stop(&w);
    return r;
}

/* The check run itself (under the job's shared lock), watched for
 * progress, and its channel read. */
static int job_check_run(struct job *j)
{
    char d[48];
    int r, wc = 0;
    snprintf(d, sizeof d, "0/%zu", j->ncase_names);
    if (progress_call(j, status_name(STATUS_CHECKING), d) == -ECANCELED)
        return -ECANCELED;
    double lim = j->rc.limits.check;
    if (j->python) /* two interpreters, CuPy and Numba imported, the JIT's warm-up */
        lim = fmin(j->rc.limits.ceiling, lim + PYTHON_STARTUP_SECONDS);
    /* The limit counts the run's share of the GPU (share.h): beside other
     * jobs it may take longer on the wall clock, up to the ceiling. */
    struct share_clock sc;
    int shared = 0;
    job_time_prestart(j);
    r = j->warm ? job_check_warm(j, lim, &sc, &shared, &wc) : -ESTALE;
    if (r != -ESTALE)
        j->warm_runs |= JOB_WARM_CHECK;
    if (r == -ESTALE && (r = job_check_cold(j, lim, &sc, &shared, &wc)) < 0 && j->chk_fd < 0)
        return r; /* no channel: job_fail said it */
    job_clock_mark(&j->pc, "check_run");
    job_reserve_shrink(j);
    j->check_timed_out = r == 0 && j->v.timed_out;
    if (r < 0)
        return job_fail(j, r, "the run sandbox failed: %s", strerror(-r));
    if (wc == -ECANCELED)
        return -ECANCELED;
    if ((r = channel_read_all(j->chk_fd, &j->ci)) < 0 && r != -EBADMSG)
        return job_fail(j, r, "cannot read the result channel: %s", strerror(-r));
    if (run_harness_failed(&j->v, &j->ci, j->err, sizeof j->err))
        return -EIO;
    job_check_why(j, lim, shared ? &sc : NULL);
    snprintf(d, sizeof d, "%zu/%zu", j->ncase_names, j->ncase_names);
    progress_call(j, status_name(STATUS_CHECKING), d);
    return 0;
}

/* Cases the judge has no verdict on ("not run: why"), and launch errors
 * by cause on those it has. 0 or -ENOMEM. */
static int job_check_merge(struct job *j)
{
    struct score_input *in = &j->in;
    for (size_t i = 0; i < j->ncase_names; i++) {
        int found = 0;
        for (size_t k = 0; k < in->ncases; k++)
            if (strcmp(in->cases[k].name, j->case_names[i]) == 0) {
                found = 1;
                const char *le =
                    json_string_value(json_object_get(j->ci.case_errors, j->case_names[i]));
                if (le && (!in->cases[k].message || !*in->cases[k].message)) {
                    free(in->cases[k].message);
                    in->cases[k].message = strdup(le);
                }
            }
        if (found)
            continue;
        struct score_case *nc = realloc(in->cases, (in->ncases + 1) * sizeof *nc);
        if (!nc)
            return job_fail(j, -ENOMEM, "out of memory");
        in->cases = nc;
        memset(&nc[in->ncases], 0, sizeof *nc);
        nc[in->ncases].name = strdup(j->case_names[i]);
        char m[800];
        snprintf(m, sizeof m, "not run: %s", j->why ? j->why : "the harness reported nothing");
        nc[in->ncases].message = strdup(m);
        nc[in->ncases].first_bad_index = nc[in->ncases].unwritten = -1;
        nc[in->ncases].max_abs_err = nc[in->ncases].max_rel_err = NAN;
        in->ncases++;
    }
    return 0;
}

int job_check(struct job *j)
{
    char chan[PATH_MAX];
    json_t *jdoc = NULL;
    int r;
    if ((r = job_case_list(j)) < 0 || (r = job_check_run(j)) < 0)
        return r;
    if (j->check_timed_out && (r = job_timeout_ours(j, "the check run")) < 0)
        return r;
    if (j->python && j->ci.compile_error && j->v.exited && j->v.exit_code == 5) {
        /* The owner's word (it alone writes the channel): the module did
         * not import or its first call did not compile. */
        free(j->log_keep);
        j->log_keep = strdup(j->ci.compile_error);
        j->in.compile_log = j->log_keep;
        j->st = status_name(STATUS_COMPILE_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "Your Python file did not load or its first call did not compile (JIT): the "
                 "error is below; run it in your notebook first.");
        return JOB_VERDICT;
    }
    /* The check's judge, while the sanitizers finish beside it. */
    channel_path(j->rc.jobdir, "check", chan, sizeof chan);
    r = judge_run(&j->rc, &j->js, j->seed, chan, j->case_list, &jdoc, &j->in.cases, &j->in.ncases,
                  j->err, sizeof j->err);
    job_clock_mark(&j->pc, "judge");
    if (r < 0) {
        json_decref(jdoc);
        return r;
    }
    json_t *jdev = json_object_get(jdoc, "device");
    j->in.timing.copy_gbs = json_number_value(json_object_get(jdev, "copy_gbs"));
    j->in.timing.peak_gflops = json_number_value(json_object_get(jdev, "peak_fp32_gflops"));
    json_decref(jdoc);
    if (j->why) {
        j->st = j->v.timed_out ? status_name(STATUS_TIMEOUT) : status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg, "%s", j->why);
    }
    if ((r = job_check_merge(j)) < 0)
        return r;
    if (j->why)
        return JOB_VERDICT;
    if (j->ci.device && !(j->in.timing.copy_gbs > 0)) {
        j->in.timing.copy_gbs = json_number_value(json_object_get(j->ci.device, "copy_gbs"));
        j->in.timing.peak_gflops =
            json_number_value(json_object_get(j->ci.device, "peak_fp32_gflops"));
    }
    /* j->v (the check run's stdout and stderr) stays: the student's prints
     * are the feedback (program_output) and the hints read stderr (an
     * allocation the harness refused) until a failed timing run replaces it. */
    return JOB_NEXT;
}
