/*
 * lock.c - see lock.h.
 */
#include "lock.h"
#include "admit.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The GPU lock. Timing needs the GPU to itself (DESIGN step 8); checks and
 * sanitizer runs do not. Runners that share one GPU (a test host running
 * several) take CACHE/gpu-<index>.lock shared for GPU work and exclusive for
 * timing, so a timed kernel never runs beside another job's kernels. With
 * one runner per GPU the lock is always free. Returns an fd to pass to
 * lock_gpu_release, or -1 (then the caller goes on unlocked). */
static void user_join(const struct grade_env *env, int fd, int timing);
static long long timing_wait_join(const struct grade_env *env);
static void timing_wait_done(const struct grade_env *env, long long token);
static void timing_yield(const struct grade_env *env);

int lock_gpu(const struct grade_env *env, int exclusive)
{
    char p[PATH_MAX], t[PATH_MAX];
    const char *idx = env->gpu_index ? env->gpu_index : "0";
    /* Timing runs go in batches: while one waits or runs, no new shared
     * holder starts (it polls the timing ledger, holding nothing), so the
     * GPU drains once for all the timing runs waiting, not once for each. */
    long long waiting = exclusive ? timing_wait_join(env) : 0;
    if (!exclusive)
        timing_yield(env);
    snprintf(p, sizeof p, "%s/gpu-%s.lock", env->cache, idx);
    snprintf(t, sizeof t, "%s/gpu-%s.turn", env->cache, idx);
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
    timing_wait_done(env, waiting);
    return fd;
}

/* The GPU's users: every holder of the shared lock has a line in
 * CACHE/gpu-<index>.active (admit.h's ledger, 0 MiB each), so that a run's
 * time limit can count its share of the GPU (share.h). A job's process
 * holds at most one GPU lock at a time and no helper thread takes one, so a
 * few slots per process are plenty. */
static struct gpu_user {
    int fd;
    long long token;
    char path[PATH_MAX];
} users[4];

static void timing_path(const struct grade_env *env, char *out, size_t len)
{
    snprintf(out, len, "%s/gpu-%s.timing", env->cache, env->gpu_index ? env->gpu_index : "0");
}

/* An exclusive holder-to-be enters the timing ledger before it queues;
 * returns its token (0: not entered, then it is simply not batched). */
static long long timing_wait_join(const struct grade_env *env)
{
    char path[PATH_MAX];
    long long tok = 0;
    timing_path(env, path, sizeof path);
    if (admit_reserve(path, ~0ULL, 0, 0, &tok, NULL) < 0)
        tok = 0;
    return tok;
}

static void timing_wait_done(const struct grade_env *env, long long token)
{
    char path[PATH_MAX];
    timing_path(env, path, sizeof path);
    admit_release(path, token);
}

/* A shared holder-to-be waits while timing runs wait or run (bounded: each
 * is bounded by its own limit, and none arrives without a finished check). */
static void timing_yield(const struct grade_env *env)
{
    char path[PATH_MAX];
    timing_path(env, path, sizeof path);
    while (admit_count(path) > 0) {
        struct timespec ts = {0, 20000000L}; /* 20 ms */
        nanosleep(&ts, NULL);
    }
}

/* timing 0: a user of the GPU (the users ledger); 1: a timing run's hold
 * (the timing ledger, so that shared holders keep waiting until it ends). */
static void user_join(const struct grade_env *env, int fd, int timing)
{
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
        if (users[i].token == 0) {
            if (timing)
                timing_path(env, users[i].path, sizeof users[i].path);
            else
                lock_active_path(env, users[i].path, sizeof users[i].path);
            /* Unbounded capacity: always admitted at once. Without a line
             * the job is simply not counted (its limit is the wall clock). */
            if (admit_reserve(users[i].path, ~0ULL, 0, 0, &users[i].token, NULL) == 0 &&
                users[i].token != 0)
                users[i].fd = fd;
            return;
        }
}

static void user_leave(int fd)
{
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
        if (users[i].token != 0 && users[i].fd == fd) {
            admit_release(users[i].path, users[i].token);
            users[i].token = 0;
        }
}

void lock_active_path(const struct grade_env *env, char *out, size_t len)
{
    snprintf(out, len, "%s/gpu-%s.active", env->cache, env->gpu_index ? env->gpu_index : "0");
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

/* GPU memory admission (runner/admit.h): the ledger of this GPU beside its
 * locks, the GPU's capacity (CUGRADE_GPU_MEMORY_MB, else the device
 * record's memory less 12% for the runners' own contexts and the driver),
 * and what a job needs: the lab's biggest case plus a context for each of
 * its processes on the GPU (check, judge, and each sanitizer). */

void lock_admit_path(const struct grade_env *env, char *out, size_t len)
{
    snprintf(out, len, "%s/gpu-%s.admit", env->cache, env->gpu_index ? env->gpu_index : "0");
}

size_t lock_admit_max_jobs(void)
{
    const char *o = getenv("CUGRADE_GPU_JOBS");
    long n = o && *o ? strtol(o, NULL, 10) : 0;
    return n > 0 && n <= 256 ? (size_t)n : 0;
}

unsigned long long lock_admit_capacity(const struct run_ctx *rc)
{
    const char *o = getenv("CUGRADE_GPU_MEMORY_MB");
    if (o && *o)
        return strtoull(o, NULL, 10);
    if (!rc->env->gpu_devices || !rc->device_path[0])
        return 0; /* no GPU or no record: admission off */
    return admit_device_mb(rc->device_path) * 88 / 100;
}

unsigned long long lock_admit_need(const struct lab *lab, size_t nsanitizers)
{
    return lab->device_mb + ADMIT_STUDENT_MB + ADMIT_CONTEXT_MB * (2 + nsanitizers);
}
