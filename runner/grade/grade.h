/*
 * grade.h - one submission through the whole pipeline (docs/runner.md):
 * compile -> inspect -> link -> check cases -> sanitize -> time -> score.
 *
 * Everything the student's code touches runs in the sandbox (sandbox.h).
 * What judges it runs outside: the symbol inspection (inspect.h), the lab's
 * trusted judge (reference/<lab>/judge, built by labs/build-lab.sh), the
 * statistics (stats.h) and the scoring (score.h).
 *
 * Failures are kept apart as in isolate: a misbehaving submission is a
 * status (compile_error, rejected, runtime_error, timeout, or graded with
 * failed cases); a failure of ours (sandbox broken, judge crashed, lab not
 * built) is system_error with a message for the admins.
 */
#ifndef CUGRADE_GRADE_H
#define CUGRADE_GRADE_H

#include <errno.h>
#include <stddef.h>
#include <jansson.h>

#include "runner/run/env.h"

/* grade_job_run's answer for a job handed back (docs/runner.md "Hand-back"):
 * the server has it queued again; nothing is posted. */
#define GRADE_HANDED_BACK (-EXDEV)

/* The job as claimed (docs/api.md "Runner protocol"). Strings borrowed. */
struct grade_job {
    long long id;              /* 0 for local grading */
    const char *lab;
    const char *filename;      /* "kernel.cu"; anything else safe is kept */
    const char *source;
    size_t source_len;
    const char *seed;          /* 32 hex chars, fresh per claim */
    const json_t *rubric;      /* the rubric document */
    int rubric_version;
    const char *stop_after;    /* NULL, or "compile" | "inspect" | "link": stop there (for
                                  tests and hosts without a GPU); the status is then
                                  "graded" and the document says "stopped_after" */
};

/* Score first, the profile after (docs/runner.md "Profiling hints"): how
 * a served job posts a verdict whose profile follows. arg is theirs. */
struct grade_later {
    /* Post the verdict now: result (borrowed) says cugrade.profile
     * {"status": "pending"}, and profile_key (16 hex digits) names the
     * update to follow. 0 when stored; else -errno (-ECANCELED: the lease
     * is lost), and no profile runs. */
    int (*verdict)(void *arg, const char *status, const json_t *result, const char *profile_key);
    /* Post the profile update {profile, hints, hint_details} (borrowed). */
    int (*profile)(void *arg, const json_t *update, const char *profile_key);
    /* Give the job back to the server (it waits for its GPU's memory and
     * the runner asked: 'h' on env->grant_fd): 0 when the server queued it again
     * (the job then ends, GRADE_HANDED_BACK), -ECANCELED when the lease is
     * lost (the job is abandoned), else -errno and the job goes on
     * waiting. May be NULL. */
    int (*release)(void *arg);
    void *arg;
};

/* Grade one job. Returns 0 with *status (a static string: graded |
 * compile_error | rejected | runtime_error | timeout | system_error) and
 * *result (new reference: the result document; for system_error a document
 * whose "output" says what broke), or -ECANCELED when abandoned (nothing to
 * post), GRADE_HANDED_BACK when handed back (nothing to post), or -ENOMEM. Never lets a submission crash the runner.
 * With later (may be NULL) and a profile due, the verdict goes to
 * later->verdict before the profile runs and the update to later->profile
 * after it; then 0 with *status set and *result NULL (posted), or
 * later->verdict's error. Without it the profile runs first and is in
 * *result. */
int grade_job_run(const struct grade_env *env, const struct grade_job *job,
                  grade_progress_fn progress, void *arg, const struct grade_later *later,
                  const char **status, json_t **result);

/* Build lab `lab` for env->arch into CACHE/ARCH/LAB with
 * `labs/build-lab.sh LAB DIR ARCH` (trusted, outside the sandbox) unless a
 * previous build finished there. Serialised with a lock file. Returns 0, or
 * -errno with a sentence in err. */
int grade_lab_ensure(const struct grade_env *env, const char *lab, char *err, size_t errlen);

/* Measure what a lab's first job would otherwise wait for: the GPU's device
 * record and the baselines of the timed case (both cached). Needs a GPU
 * (env->gpu_devices); a no-op without one. Returns 0 or -errno. */
int grade_lab_warm(const struct grade_env *env, const char *lab);
/* The GPU's baseline record of lab refreshed where stale (baseline.h's
 * baseline_refresh, half the sharing window): what a serving runner does in
 * the background. Nothing without a GPU. Returns 0 or -errno. */
int grade_lab_refresh(const struct grade_env *env, const char *lab);

struct score_sanitizer;
/* Parse compute-sanitizer's report text into s->findings (at most 10): one
 * finding per error line, with the student's file:line from the device
 * frame when -lineinfo provided it, and a hint (bounds check, barrier...).
 * Appends to what s already holds. */
void grade_sanitizer_parse(const char *text, struct score_sanitizer *s);

/* Result document for a failure of ours (system_error): score 0 and a
 * message. Returns a new reference or NULL. */
json_t *grade_system_error_doc(const char *lab, const char *gpu, const char *message);

#endif
