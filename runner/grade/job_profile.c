/*
 * job_profile.c - the profile of a correct submission (profile.h), the last
 * step of a job's timing phase (job_time.c): in line with the verdict, or
 * after it (score first: grade.h, struct grade_later). Split from
 * job_time.c along its banner.
 */
#include "runner/grade/job.h"
#include "runner/config.h"
#include "runner/feedback/profile.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"
#include "runner/grade/job_phase.h"
#include "runner/grade/python.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Grading comes first: while other jobs wait for admission to this GPU a
 * profile is not taken. Why: a deadline burst on an H100 (200 jobs, 10%
 * hostile) graded 23.6 jobs/min with the profiles taken under load (12 of
 * 37 came back, 25 "busy"), 28.5 without. Returns 1 (j->profile says why)
 * when skipped. */
static int job_profile_load(struct job *j)
{
    char queue[PATH_MAX];
    lock_admit_queue_path(j->env, queue, sizeof queue);
    int n = admit_count(queue);
    if (n <= 0)
        return 0;
    char m[400];
    snprintf(m, sizeof m,
             "Not profiled: %d other submission%s waited for this GPU, and grading them came "
             "first. Resubmit when the grader is less busy for a profile, or profile your kernel "
             "yourself: ncu --set basic ./your_program",
             n, n == 1 ? "" : "s");
    j->profile = profile_json_unavailable(m, 0);
    job_clock_mark(&j->pc, "profile");
    return 1;
}

static void job_profile_run(struct job *j, int plk);

/* Profiling feedback (profile.h) for a submission that passed every case:
 * the timing case's check run once more under ncu, in the sandbox, under
 * the same shared GPU lock as a check run (and the GPU's profile lock).
 * Never a verdict: a profiler failure is "unavailable", never charged.
 * Off when the rubric says "profile": false, with CUGRADE_NCU=none, or
 * without a GPU. */
void job_profile(struct job *j)
{
    if (!j->rub.profile || profile_off() || !j->env->gpu_devices)
        return;
    for (size_t i = 0; i < j->in.ncases; i++)
        if (!j->in.cases[i].passed)
            return;
    if (j->python) {
        /* Measured on an H100 (docs/runner.md, "Profiling"): a Python
         * profile re-runs the interpreter, CuPy's and Numba's imports and
         * the JIT under ncu, which also profiles the owner's own CuPy
         * kernels: every one ran past its 10 s limit and cost 10-88 s of
         * the GPU lane with the profile lock, against a +5 s budget. */
        j->profile = profile_json_unavailable(
            "Python submissions are not profiled here (a profiled run would restart the "
            "interpreter and the JIT under Nsight Compute: tens of seconds). Profile your "
            "kernel yourself: ncu --target-processes all python3 your_file.py", 0);
        return;
    }
    if (j->profile_later) {
        /* Score first (grade.h, struct grade_later): the verdict posts
         * with the profile pending, and job_profile_after runs it. */
        j->profile = json_pack("{s:s}", "status", "pending");
        j->profile_pending = j->profile != NULL;
        return;
    }
    if (job_profile_load(j))
        return;
    job_profile_run(j, -1);
}

/* CUGRADE_PROFILE_WAIT: seconds a profile waits for its turn after the
 * verdict. */
static double job_profile_wait(void)
{
    return runner_cfg()->profile_wait;
}

void job_profile_after(struct job *j)
{
    char why[400];
    assert(j->profile_pending);
    json_decref(j->profile);
    j->profile = NULL;
    j->profile_pending = 0;
    /* Nothing held while in line: the judge's context, the reservation. */
    judge_session_end(&j->js);
    job_unreserve(j);
    double t0 = run_now();
    int plk = profile_wait_turn(j->env, job_profile_wait(), why, sizeof why);
    double waited = run_now() - t0;
    job_clock_mark(&j->pc, "profile_wait");
    if (plk < 0) {
        fprintf(stderr, "cugrade-runner: job %lld: %s\n", j->g->id, why);
        j->profile = profile_json_unavailable(why, 0);
        json_object_set_new(j->profile, "status", json_string("skipped"));
    } else {
        job_profile_run(j, plk);
    }
    if (j->profile)
        json_object_set_new(j->profile, "wait_seconds", json_real(waited));
}

/* The timing case's check run once more under ncu (profile.h), with plk
 * the GPU's profile lock the caller holds (taken over), or -1. */
static void job_profile_run(struct job *j, int plk)
{
    int fd = channel_open(j->rc.jobdir, "profile");
    if (fd < 0) {
        if (plk >= 0)
            close(plk);
        return;
    }
    const char *argv_c[] = {"/work/prog", "check", "--seed-fd", "5", "--cases",
                            j->lab.timing_case, NULL};
    const char *const *argv = argv_c;
    struct run_opts o = {.control_fd = -1, .cancel_fd = -1, .secret = j->seed};
    struct python_run pr;
    if (j->python) {
        if (python_run_prepare(&pr, &o, j->env->root, &j->lab, "check", j->seed, j->lab.timing_case,
                               NULL, j->src) < 0) {
            close(fd);
            if (plk >= 0)
                close(plk);
            return;
        }
        (void)python_run_kept(&pr, &o, j->env, &j->lab);
        argv = pr.argv;
    }
    /* The profile waits for the GPU's one profiler holding nothing: the
     * job's reservation is let go first (its sanitizers have settled and
     * its timing is over), and profile_run reserves what the timing case
     * needs once it has the profiler. (A burst on an H100, stop 21: the
     * profile phase took 24 s on average, 29 s at the median, mostly
     * that wait, with the job's whole reservation held.) */
    judge_session_end(&j->js); /* its context too: the judge's work is done */
    job_unreserve(j);
    unsigned long long need = lock_admit_after_check(&j->lab, 0, j->python);
    j->profile = plk >= 0 ? profile_run_held(&j->rc, argv, fd, &o, need, plk)
                          : profile_run(&j->rc, argv, fd, &o, need);
    close(fd);
    job_clock_mark(&j->pc, "profile");
}
