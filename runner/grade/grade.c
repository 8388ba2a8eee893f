/*
 * grade.c - see grade.h. One job through its phases (job.h); the rooms of
 * the runner are listed in runner/README.md.
 *
 * Layout of a job on disk (all under env->work, mode 0700, root's):
 *   job-XXXXXX/            the job's private directory (mkdtemp)
 *     channel-check        the harness result channels: opened here, outside
 *     channel-memcheck     the sandbox's work directory, handed to the
 *     channel-timing       program as fd 3 (docs/formats.md); the student's
 *     ...                  process cannot name or reopen them
 *     w-XXXX/              the sandbox's /work (sandbox_workdir_create):
 *                          <filename>.cu, student.o, prog
 * Built labs: CACHE/ARCH/LAB/ (labs/build-lab.sh); baselines cached in
 * CACHE/ARCH/LAB/baselines/<gpu>__<case>__<name>.json.
 */
#include "runner/grade/grade.h"
#include "status.h"
#include "runner/grade/job.h"

#include <assert.h>
#include <errno.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *grade_system_error_doc(const char *lab, const char *gpu, const char *message)
{
    return json_pack("{s:f, s:f, s:s, s:[], s:{s:s, s:s, s:s, s:s}}", "score", 0.0, "max_score",
                     0.0, "output", message ? message : "internal error", "tests", "cugrade",
                     "lab", lab ? lab : "", "gpu", gpu ? gpu : "", "status", status_name(STATUS_SYSTEM_ERROR),
                     "error", message ? message : "internal error");
}

/* The phases up to the verdict. Returns JOB_NEXT or JOB_VERDICT (j->st
 * says how it ended), -ECANCELED, or -errno (j->err). */
static int grade_phases(struct job *j)
{
    int r;
    if ((r = job_setup(j)) < 0 || (r = job_front(j)) != JOB_NEXT || job_stop_at(j, "front"))
        return r;
    if ((r = job_cpu_lane(j)) < 0 || (r = job_prestart(j)) < 0)
        return r;
    if ((r = job_compile(j)) != JOB_NEXT || job_stop_at(j, "compile"))
        return r;
    /* A Python file has no object to inspect (its owner runs it:
     * docs/python.md); its link step only makes sure the lab is built. */
    if (!j->python && ((r = job_inspect(j)) != JOB_NEXT || job_stop_at(j, "inspect")))
        return r;
    if ((r = job_link(j)) != JOB_NEXT || job_stop_at(j, "link"))
        return r;
    if ((r = job_admit(j)) < 0)
        return r;
    /* A check that ended badly skips the timing; the sanitizers' verdicts
     * are collected (and the GPU let go) whatever happened. */
    if ((r = job_check(j)) == JOB_NEXT)
        r = job_time(j);
    if (r < 0)
        return r;
    int s = job_sanitize(j);
    return s < 0 ? s : JOB_VERDICT;
}

/* len - 1 random hex digits and a NUL into out. 0 or -errno. */
static int random_hex(char *out, size_t len)
{
    unsigned char b[32];
    size_t n = (len - 1) / 2;
    assert(len >= 3 && n <= sizeof b);
    if (getrandom(b, n, 0) != (ssize_t)n)
        return -EIO;
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* The verdict (*result, taken) through later, then the profile and its
 * update. Returns 0 (*result NULL: posted) or the verdict post's error. */
static int grade_post_later(struct job *j, const struct grade_later *later, const char *status,
                            json_t **result)
{
    char key[17];
    if (random_hex(key, sizeof key) < 0) {
        snprintf(j->err, sizeof j->err, "no random bytes for the profile key");
        return -EIO;
    }
    int r = later->verdict(later->arg, status, *result, key);
    json_decref(*result);
    *result = NULL;
    if (r < 0)
        return r;
    job_profile_after(j);
    json_t *u = job_profile_update(j);
    if (!u || later->profile(later->arg, u, key) < 0)
        fprintf(stderr, "cugrade-runner: job %lld: the profile update was not posted\n", j->g->id);
    json_decref(u);
    return 0;
}

int grade_job_run(const struct grade_env *env, const struct grade_job *job,
                  grade_progress_fn progress, void *arg, const struct grade_later *later,
                  const char **status, json_t **result)
{
    *status = NULL;
    *result = NULL;
    struct job *j = malloc(sizeof *j);
    if (!j)
        return -ENOMEM;
    job_init(j, env, job, progress, arg);
    j->profile_later = later != NULL;
    j->later = later;
    int r = grade_phases(j);
    if (r >= 0)
        r = job_score(j, status, result);
    if (r >= 0 && later && j->profile_pending) {
        /* Posted (or not) through later: nothing for the caller to post. */
        r = grade_post_later(j, later, *status, result);
        job_free(j);
        free(j);
        return r;
    }
    if (r == -ENOMEM && !j->err[0])
        snprintf(j->err, sizeof j->err, "out of memory");
    if (r < 0 && r != -ECANCELED && r != GRADE_HANDED_BACK) {
        fprintf(stderr, "cugrade-runner: job %lld: system error: %s\n", job->id, j->err);
        *status = status_name(STATUS_SYSTEM_ERROR);
        *result = grade_system_error_doc(job->lab, env->gpu_name, j->err);
        r = *result ? 0 : -ENOMEM;
    }
    job_free(j);
    free(j);
    return r;
}
