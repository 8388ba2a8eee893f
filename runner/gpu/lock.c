/*
 * lock.c - see lock.h.
 */
#include "runner/gpu/lock.h"
#include "runner/config.h"
#include "runner/gpu/admit.h"
#include "runner/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

void lock_gpu_path(const struct grade_env *env, const char *what, char *out, size_t len)
{
    snprintf(out, len, "%s/gpu-%s.%s", env->cache, env->gpu_index ? env->gpu_index : "0", what);
}

/* The GPU's users: every holder of the shared lock has a line in
 * CACHE/gpu-<index>.active (admit.h's ledger, 0 MiB each), so that a run's
 * time limit can count its share of the GPU (share.h). A job's process
 * holds one or two GPU locks at a time, so a few slots per process are
 * plenty; two of its threads take and let go of locks (the job's, and a
 * timing run's gate, which lets the job's shared lock go and takes the
 * exclusive one: job_time.c), so the slots are taken and given back under
 * a mutex. A slot lost to a race would leave a line of a live process in
 * the timing ledger, and every shared holder of that GPU would wait for
 * it for as long as that process lives. */
static struct gpu_user {
    int fd;
    long long token;
    char path[PATH_MAX];
} users[4];
static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;

/* A shared holder-to-be waits while timing runs wait or run, as listed in
 * the timing ledger at path (bounded: each is bounded by its own limit, and
 * none arrives without a finished check). */
static void timing_yield(const char *path)
{
    while (admit_count(path) > 0) {
        struct timespec ts = {0, 20000000L}; /* 20 ms */
        nanosleep(&ts, NULL);
    }
}

/* timing 0: a user of the GPU (the users ledger); 1: a timing run's hold
 * (the timing ledger, so that shared holders keep waiting until it ends). */
static void user_join(const struct grade_env *env, int fd, int timing)
{
    pthread_mutex_lock(&users_mu);
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
        if (users[i].token == 0) {
            lock_gpu_path(env, timing ? "timing" : "active", users[i].path, sizeof users[i].path);
            /* Without a line the job is simply not counted (a user's limit
             * is then the wall clock; a timing hold is not batched). */
            if ((users[i].token = admit_enter(users[i].path)) != 0)
                users[i].fd = fd;
            break;
        }
    pthread_mutex_unlock(&users_mu);
}

static void user_leave(int fd)
{
    pthread_mutex_lock(&users_mu);
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
        if (users[i].token != 0 && users[i].fd == fd) {
            admit_release(users[i].path, users[i].token);
            users[i].token = 0;
        }
    pthread_mutex_unlock(&users_mu);
}

/* The GPU lock. Timing needs the GPU to itself (docs/runner.md); checks and
 * sanitizer runs do not. Runners that share one GPU (a test host running
 * several) take CACHE/gpu-<index>.lock shared for GPU work and exclusive for
 * timing, so a timed kernel never runs beside another job's kernels. With
 * one runner per GPU the lock is always free. Returns an fd to pass to
 * lock_gpu_release, or -1 (then the caller goes on unlocked). */
int lock_gpu(const struct grade_env *env, int exclusive)
{
    char p[PATH_MAX], t[PATH_MAX], timing[PATH_MAX];
    /* Timing runs go in batches: while one waits or runs, no new shared
     * holder starts (it polls the timing ledger, holding nothing), so the
     * GPU drains once for all the timing runs waiting, not once for each. */
    lock_timing_path(env, timing, sizeof timing);
    long long waiting = exclusive ? admit_enter(timing) : 0;
    if (!exclusive)
        timing_yield(timing);
    lock_gpu_path(env, "lock", p, sizeof p);
    lock_gpu_path(env, "turn", t, sizeof t);
    /* flock() lets new shared holders in while an exclusive one waits, so a
     * timing run could starve behind a stream of checks. Everyone passes a
     * turnstile first (held only while queueing for the real lock): once a
     * timing run waits at the real lock, no new check gets past it. */
    int tfd = open(t, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (tfd >= 0)
        while (flock(tfd, LOCK_EX) < 0 && errno == EINTR)
            ;
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0)
        while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
            if (errno != EINTR) {
                close(fd);
                fd = -1;
                break;
            }
    if (tfd >= 0)
        close(tfd);
    if (exclusive && fd >= 0)
        user_join(env, fd, 1); /* stays in the timing ledger until released */
    admit_release(timing, waiting); /* token 0: a no-op */
    return fd;
}

void lock_timing_path(const struct grade_env *env, char *out, size_t len)
{
    lock_gpu_path(env, "timing", out, len);
}

void lock_active_path(const struct grade_env *env, char *out, size_t len)
{
    lock_gpu_path(env, "active", out, len);
}

int lock_gpu_shared_user(const struct grade_env *env)
{
    int fd = lock_gpu(env, 0);
    if (fd >= 0)
        user_join(env, fd, 0);
    return fd;
}

void lock_gpu_release(int fd)
{
    if (fd < 0)
        return;
    user_leave(fd);
    close(fd); /* releases the flock */
}

/* GPU memory admission (runner/gpu/admit.h): the ledger of this GPU beside its
 * locks, the GPU's capacity (CUGRADE_GPU_MEMORY_MB, else the device
 * record's memory less 12% for the runners' own contexts and the driver),
 * and what a job needs: the lab's biggest case plus a context for each of
 * its processes on the GPU (check, judge, and each sanitizer). */

void lock_admit_path(const struct grade_env *env, char *out, size_t len)
{
    lock_gpu_path(env, "admit", out, len);
}

void lock_admit_queue_path(const struct grade_env *env, char *out, size_t len)
{
    lock_gpu_path(env, "admitq", out, len);
}

unsigned long long lock_admit_capacity(const struct run_ctx *rc)
{
    long mb = runner_cfg()->gpu_memory_mb;
    if (mb >= 0)
        return (unsigned long long)mb;
    if (!rc->env->gpu_devices || !rc->device_path[0])
        return 0; /* no GPU or no record: admission off */
    return admit_device_mb(rc->device_path) * 88 / 100;
}

/* The processes a run of the student's file starts on the GPU: a CUDA
 * harness alone; a Python run's owner and its tenant (labs/common/py/
 * owner.py). A sanitizer run is one process in both (tenant.py --sanitize
 * for Python), and so is the judge. */
static unsigned long long run_contexts(int python)
{
    return python ? 2 : 1;
}

unsigned long long lock_admit_need(const struct lab *lab, size_t nsanitizers, int python)
{
    return lab->device_mb + ADMIT_STUDENT_MB +
           ADMIT_CONTEXT_MB * (run_contexts(python) + 1 + nsanitizers);
}

unsigned long long lock_admit_sanitize_only(const struct lab *lab, size_t nsanitizers)
{
    unsigned long long s =
        lab->sanitize_device_mb < lab->device_mb ? lab->sanitize_device_mb : lab->device_mb;
    unsigned long long mb = ADMIT_CONTEXT_MB; /* the judge's */
    if (nsanitizers)
        mb += s + ADMIT_STUDENT_MB + ADMIT_CONTEXT_MB * nsanitizers;
    unsigned long long after = lock_admit_after_check(lab, nsanitizers, 0);
    return mb < after ? mb : after;
}

unsigned long long lock_admit_time_prestart(const struct lab *lab, int python)
{
    unsigned long long t =
        lab->timing_device_mb < lab->device_mb ? lab->timing_device_mb : lab->device_mb;
    return t + ADMIT_CONTEXT_MB * run_contexts(python);
}

unsigned long long lock_admit_after_check(const struct lab *lab, size_t nsanitizers, int python)
{
    /* lab.c: timing_device_mb is device_mb when not declared, and never
     * more when device_mb is known; an unknown (0) device_mb caps it. */
    unsigned long long t =
        lab->timing_device_mb < lab->device_mb ? lab->timing_device_mb : lab->device_mb;
    return t + ADMIT_STUDENT_MB + ADMIT_CONTEXT_MB * (run_contexts(python) + 1 + nsanitizers);
}
