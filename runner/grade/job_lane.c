/*
 * job_lane.c - a job's way through the runner's lanes (docs/runner.md "Two
 * lanes" and "A GPU that stops answering"): the front pass on claim, the
 * wait for a CPU lane slot, and the wait at the GPU lane's door while the
 * runner's probe finds the GPU unusable. Split from job.c.
 */
#include "runner/grade/job.h"
#include "runner/config.h"
#include "runner/grade/job_phase.h"
#include "status.h"
#include "runner/grade/compile.h"
#include "runner/gpu/health.h"
#include "runner/grade/python.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* The front pass and the CPU lane. */

/* CUGRADE_FRONT=0 turns the front pass off. */
static int front_enabled(void)
{
    return runner_cfg()->front != 0;
}

/* Before the job waits for a CPU lane slot: nvcc's first two steps on the
 * file, so that a file that does not parse is answered at once, whatever
 * the lane holds. Anything but the student's error (no front pass on this
 * toolkit, a sandbox failure, a limit hit) goes on to the full compile,
 * which says it again in its own words. */
int job_front(struct job *j)
{
    struct compile_result fr;
    if (j->python || !front_enabled() || j->lab.python_only)
        return JOB_NEXT;
    if (progress_call(j, status_name(STATUS_COMPILING), "parsing") == -ECANCELED)
        return -ECANCELED;
    int r = compile_front(&j->tc, &j->lab, j->workdir, j->src, &fr);
    job_clock_mark(&j->pc, "front");
    if (r < 0)
        return JOB_NEXT;
    if (fr.ok || fr.unavailable || fr.timed_out || fr.oom || !fr.log) {
        if (fr.unavailable)
            fprintf(stderr, "cugrade-runner: job %lld: no front pass on this toolkit (nvcc "
                    "--dryrun did not give cudafe++)\n", j->g->id);
        else if (fr.timed_out)
            fprintf(stderr, "cugrade-runner: job %lld: the front pass ran past its %g s: on to "
                    "the full compile\n", j->g->id, compile_front_seconds());
        compile_result_free(&fr);
        return JOB_NEXT;
    }
    j->log_keep = fr.log;
    fr.log = NULL;
    j->in.compile_log = j->log_keep;
    j->st = status_name(STATUS_COMPILE_ERROR);
    snprintf(j->status_msg, sizeof j->status_msg, "%s", fr.message);
    return JOB_VERDICT;
}

/* Ask the runner for a CPU lane slot ('f' on the lane pipe) and wait for
 * its grant. The runner grants slots in claim order; a runner gone (the
 * grant pipe at EOF) is ours. Without the pipes (grade, prepare) at once. */
int job_cpu_lane(struct job *j)
{
    const struct grade_env *env = j->env;
    char c = 'f';
    if (env->lane_fd < 0 || env->grant_fd < 0)
        return 0;
    if (write(env->lane_fd, &c, 1) != 1)
        return job_fail(j, -EPIPE, "the runner's lane pipe is closed");
    for (;;) {
        ssize_t n = read(env->grant_fd, &c, 1);
        if (n == 1)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        return job_fail(j, -EPIPE, "the runner stopped granting CPU lane slots");
    }
    job_clock_mark(&j->pc, "cpu_wait");
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The GPU lane's door. */

/* While the runner's probe finds the GPU unusable (health.h), a job about
 * to enter the GPU lane waits for it, holding nothing, rather than fail on
 * it and spend one of its attempts: up to CUGRADE_GPU_DOWN_WAIT (600 s),
 * then it is ours (system_error: requeued for another runner). */
int job_gpu_up(struct job *j)
{
    char why[256];
    double limit = health_down_wait(), waited = 0;
    if (!health_gpu_down(j->env, why, sizeof why))
        return 0;
    if (progress_call(j, status_name(STATUS_CHECKING), "waiting: the GPU is not answering") ==
        -ECANCELED)
        return -ECANCELED;
    while (health_gpu_down(j->env, why, sizeof why)) {
        if (waited >= limit)
            return job_fail(j, -EHOSTDOWN, "the GPU did not answer for %.0f s (%s)", waited, why);
        struct timespec ts = {0, 500 * 1000 * 1000};
        nanosleep(&ts, NULL);
        waited += 0.5;
    }
    job_clock_mark(&j->pc, "gpu_down_wait");
    return 0;
}

int job_timeout_ours(struct job *j, const char *run)
{
    char why[256];
    if (!j->env->gpu_devices || health_probe_wait(why, sizeof why) != HEALTH_PROBE_FAILED)
        return 0;
    /* A GPU whose memory is full answers: the student's timeout stands
     * (a burst's reservations may leave no room for the probe's context). */
    if (strstr(why, "OUT_OF_MEMORY"))
        return 0;
    return job_fail(j, -EIO,
                    "%s ran into its limit on a GPU that stopped answering (%.200s): ours, not "
                    "the student's timeout",
                    run, why);
}
