/*
 * job_lane.c - a job's way through the runner's lanes (docs/runner.md "Two
 * lanes" and "A GPU that stops answering"): the front pass on claim, the
 * wait for a CPU lane slot, and the wait at the GPU lane's door while the
 * runner's probe finds the GPU unusable, and the GPU memory admission
 * (with the hand-back while the job waits for it). Split from job.c.
 */
#include "runner/grade/job.h"
#include "runner/config.h"
#include "runner/grade/job_phase.h"
#include "status.h"
#include "runner/grade/compile.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/health.h"
#include "runner/gpu/lock.h"
#include "runner/grade/python.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* The front pass and the CPU lane. */

/* CUGRADE_FRONT_SECONDS=0 turns the front pass off. */
static int front_enabled(void)
{
    return compile_front_seconds() > 0;
}

/* Before the job waits for a CPU lane slot: nvcc's first two steps on the
 * file, or a Python file's whole syntax check, so that a file that does
 * not parse is answered at once, whatever the lane holds. Anything but the
 * student's error (no front pass on this toolkit, a sandbox failure, a
 * limit hit) goes on to the full compile, which says it again in its own
 * words; a Python file that passed is not checked again. */
int job_front(struct job *j)
{
    struct compile_result fr;
    if (!front_enabled() || (!j->python && j->lab.python_only))
        return JOB_NEXT;
    if (progress_call(j, status_name(STATUS_COMPILING), "parsing") == -ECANCELED)
        return -ECANCELED;
    int r = j->python ? compile_python(&j->tc, &j->lab, j->workdir, j->src, 1, &fr)
                      : compile_front(&j->tc, &j->lab, j->workdir, j->src, &fr);
    job_clock_mark(&j->pc, "front");
    if (r < 0)
        return JOB_NEXT;
    if (j->python && fr.ok) { /* (its log, empty, is the compile's) */
        j->python_parsed = 1;
        job_keep_compile_log(j, &fr);
        compile_result_free(&fr);
        return JOB_NEXT;
    }
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
    job_keep_compile_log(j, &fr);
    j->st = status_name(STATUS_COMPILE_ERROR);
    snprintf(j->status_msg, sizeof j->status_msg, "%s", fr.message);
    return JOB_VERDICT;
}

/* Tell the runner where the job is (grade.h, struct grade_env's lane_fd):
 * one byte, never waited on; a runner gone is noticed at the next grant. */
void job_lane_say(const struct job *j, char c)
{
    if (j->env->lane_fd >= 0) {
        ssize_t w = write(j->env->lane_fd, &c, 1);
        (void)w;
    }
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

/* ---------------------------------------------------------------------- */
/* The GPU lane: admission (the job's GPU memory reservation, runner/gpu/admit.h). */

/* How many sanitizer runs the rubric asks for on this lab (0, 1 or 2). */
size_t job_sanitizers_wanted(const struct job *j)
{
    if (!j->lab.sanitize_case)
        return 0;
    return (size_t)(j->rub.sanitize_memcheck != 0) + (size_t)(j->rub.sanitize_racecheck != 0);
}

/* Has the runner asked for the job back ('h' on the grant pipe, which
 * carries nothing else once the CPU lane slot was granted)? A check that
 * never waits. */
static int job_asked_back(void *arg)
{
    const struct job *j = arg;
    struct pollfd pf = {j->env->grant_fd, POLLIN, 0};
    char c = 0;
    if (j->env->grant_fd < 0 || poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN))
        return 0;
    return read(j->env->grant_fd, &c, 1) == 1 && c == 'h';
}

/* Reserve the job's GPU memory (admit.h), waiting at most max_wait
 * seconds and holding nothing meanwhile. Returns 0 (j->admitted), -EBUSY
 * when it did not fit in time, or -errno. */
int job_reserve(struct job *j, double max_wait, double *waited)
{
    assert(!j->admitted);
    char queue[PATH_MAX];
    lock_admit_path(j->env, j->admit_file, sizeof j->admit_file);
    /* Waiting in turn, in the queue (admit.h), and counted as waiting
     * meanwhile: a profile is not taken while others wait (job_time.c,
     * job_profile). */
    lock_admit_queue_path(j->env, queue, sizeof queue);
    unsigned long long need = lock_admit_need(&j->lab, job_sanitizers_wanted(j), j->python);
    if (j->lab.timing_case && j->rub.nspeed > 0) /* job_time_prestart's run */
        need += lock_admit_time_prestart(&j->lab, j->python);
    int r = admit_reserve_turn(j->admit_file, queue, lock_admit_capacity(&j->rc), need, max_wait,
                               &j->admit_token, waited, job_asked_back, j);
    j->admitted = r == 0;
    if (j->admitted)
        job_lane_say(j, 'a');
    return r;
}

void job_unreserve(struct job *j)
{
    if (j->admitted)
        admit_release(j->admit_file, j->admit_token);
    j->admit_token = 0;
    j->admitted = 0;
}

void job_reserve_to(struct job *j, unsigned long long mb)
{
    if (!j->admitted)
        return;
    int r = admit_resize(j->admit_file, j->admit_token, mb);
    if (r < 0)
        fprintf(stderr, "cugrade-runner: job %lld: cannot shrink its GPU reservation: %s\n",
                j->g->id, strerror(-r));
}

/* job_reserve for the GPU lane: at once when the job fits now; else the
 * student is told what the job waits for (its last word was "linking",
 * which read as a compile that hung: a make test-gpu run on two H200s
 * left 48 jobs there for minutes), then it waits its turn. */
int job_admit_wait(struct job *j, double *waited)
{
    int r = job_reserve(j, 0, waited);
    if (r != -EBUSY)
        return r;
    if (progress_call(j, status_name(STATUS_CHECKING),
                      "waiting: other submissions hold the GPU's memory") == -ECANCELED)
        return -ECANCELED;
    double total = 0, w = 0;
    for (;;) {
        /* While it waits the runner may ask it to give itself back
         * (docs/runner.md "Hand-back"): it holds nothing yet. */
        job_lane_say(j, 'w');
        r = job_reserve(j, ADMIT_MAX_WAIT - total, &w);
        total += w;
        *waited = total;
        if (r != -EXDEV)
            return r;
        int rr = j->later && j->later->release ? j->later->release(j->later->arg) : -ENOTSUP;
        if (rr == -ECANCELED) /* the lease is lost: nothing more to do */
            return rr;
        if (rr == 0) {
            fprintf(stderr,
                    "cugrade-runner: job %lld: handed back after %.1f s waiting for the "
                    "GPU's memory (another GPU has room)\n",
                    j->g->id, total);
            return GRADE_HANDED_BACK;
        }
    }
}

/* Before the job's shared GPU lock, which waits while timing runs wait
 * or run (lock.c, timing_yield): the student is told so when they do. */
int job_gpu_lock_say(struct job *j)
{
    char timing[PATH_MAX];
    lock_timing_path(j->env, timing, sizeof timing);
    if (admit_count(timing) > 0 &&
        progress_call(j, status_name(STATUS_CHECKING),
                      "waiting: the GPU is held for timing runs") == -ECANCELED)
        return -ECANCELED;
    return 0;
}
