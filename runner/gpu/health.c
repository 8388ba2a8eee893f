/*
 * health.c - the runner's GPU health (see health.h): the probe, run as a
 * child, and the state the service loop asks before each claim.
 */
#include "runner/gpu/health.h"
#include "runner/config.h"
#include "runner/gpu/lock.h"
#include "runner/run/run.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SUSPECT_GAP_S 2.0 /* while good, one probe per this many seconds at most */

/* ---------------------------------------------------------------------- */
/* The probe (`cugrade-runner gpu-probe`, in a child of its own). */

typedef unsigned long long cu_ptr;

struct cuda_api {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_set)(void *);
    int (*mem_alloc)(cu_ptr *, size_t);
    int (*memset8)(cu_ptr, unsigned char, size_t);
    int (*synchronize)(void);
    int (*mem_free)(cu_ptr);
    int (*error_name)(int, const char **);
};

static int cuda_api_load(void *lib, struct cuda_api *a)
{
    *(void **)&a->init = dlsym(lib, "cuInit");
    *(void **)&a->device_get = dlsym(lib, "cuDeviceGet");
    *(void **)&a->ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&a->ctx_set = dlsym(lib, "cuCtxSetCurrent");
    *(void **)&a->mem_alloc = dlsym(lib, "cuMemAlloc_v2");
    *(void **)&a->memset8 = dlsym(lib, "cuMemsetD8_v2");
    *(void **)&a->synchronize = dlsym(lib, "cuCtxSynchronize");
    *(void **)&a->mem_free = dlsym(lib, "cuMemFree_v2");
    *(void **)&a->error_name = dlsym(lib, "cuGetErrorName");
    return a->init && a->device_get && a->ctx_retain && a->ctx_set && a->mem_alloc &&
                   a->memset8 && a->synchronize && a->mem_free
               ? 0
               : -1;
}

/* One step: 0, or HEALTH_PROBE_FAILED with its message on stderr. */
static int probe_step(const struct cuda_api *a, const char *step, int r)
{
    const char *name = NULL;
    if (r == 0)
        return 0;
    if (!a->error_name || a->error_name(r, &name) != 0 || !name)
        name = "an unknown error";
    fprintf(stderr, "%s: %s (CUDA error %d)\n", step, name, r);
    return HEALTH_PROBE_FAILED;
}

int health_probe_main(void)
{
    enum { CUDA_ERROR_STUB_LIBRARY = 34, PROBE_BYTES = 1 << 20 };
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    struct cuda_api a;
    memset(&a, 0, sizeof a);
    if (!lib || cuda_api_load(lib, &a) < 0) {
        fprintf(stderr, "no CUDA driver library to ask (libcuda.so.1)\n");
        return HEALTH_PROBE_UNKNOWN;
    }
    int dev = 0, r = a.init(0);
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        fprintf(stderr, "libcuda.so.1 is the toolkit's stub, not a driver\n");
        return HEALTH_PROBE_UNKNOWN;
    }
    void *ctx = NULL;
    cu_ptr p = 0;
    if ((r = probe_step(&a, "cuInit", r)) || (r = probe_step(&a, "cuDeviceGet", a.device_get(&dev, 0))) ||
        (r = probe_step(&a, "cuDevicePrimaryCtxRetain", a.ctx_retain(&ctx, dev))) ||
        (r = probe_step(&a, "cuCtxSetCurrent", a.ctx_set(ctx))) ||
        (r = probe_step(&a, "cuMemAlloc (1 MiB)", a.mem_alloc(&p, PROBE_BYTES))) ||
        (r = probe_step(&a, "cuMemsetD8", a.memset8(p, 0x5a, PROBE_BYTES))) ||
        (r = probe_step(&a, "cuCtxSynchronize", a.synchronize())) ||
        (r = probe_step(&a, "cuMemFree", a.mem_free(p))))
        return r;
    return HEALTH_PROBE_OK;
}

/* ---------------------------------------------------------------------- */
/* The state, in the service loop. */

double health_down_wait(void)
{
    return runner_cfg()->gpu_down_wait;
}

void health_init(struct health *hl, int have_gpu, const struct grade_env *env, double now)
{
    memset(hl, 0, sizeof *hl);
    lock_gpu_path(env, "down", hl->down, sizeof hl->down);
    if (have_gpu)
        unlink(hl->down);
    hl->enabled = have_gpu;
    hl->wanted = have_gpu; /* a GPU already gone at start claims nothing */
    hl->fd = -1;
    hl->next = now;
    hl->period = runner_cfg()->gpu_probe_seconds;
    snprintf(hl->gpu, sizeof hl->gpu, "%s", env->gpu_index ? env->gpu_index : "0");
}

void health_suspect(struct health *hl)
{
    if (hl->enabled && !hl->bad) /* while bad, probes already come every period */
        hl->wanted = 1;
}

/* The probe's stderr as one line: its lines joined by ';', the last
 * newline dropped. */
static void probe_flatten(char *why)
{
    for (char *c = why; *c; c++)
        if (*c == '\n')
            *c = c[1] ? ';' : '\0';
}

/* Fork `cugrade-runner gpu-probe` with its stderr on a pipe (*fd, the
 * read end, close-on-exec). Returns the pid or -errno. */
static pid_t probe_spawn(int *fd)
{
    char exe[PATH_MAX];
    int p[2];
    if (run_self_exe(exe, sizeof exe) < 0 || pipe2(p, O_CLOEXEC) < 0)
        return -(errno ? errno : ENOENT);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        close_range(3, ~0U, 0); /* nothing of the runner's (its server connection) */
        char *const argv[] = {exe, "gpu-probe", NULL};
        execv(exe, argv);
        _exit(127);
    }
    int e = errno;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -e;
    }
    *fd = p[0];
    return pid;
}

/* Start the probe. Where none can start, the runner goes on as if it
 * answered (it cannot say): 0 or -errno. */
static int probe_start(struct health *hl, double now)
{
    int fd = -1;
    pid_t pid = probe_spawn(&fd);
    if (pid < 0)
        return (int)pid;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    hl->pid = pid;
    hl->fd = fd;
    hl->started = now;
    hl->overdue = 0;
    hl->nwhy = 0;
    hl->why[0] = '\0';
    return 0;
}

int health_probe_wait(char *why, size_t len)
{
    assert(len > 0);
    why[0] = '\0';
    int fd = -1, status = 0;
    pid_t pid = probe_spawn(&fd);
    if (pid < 0)
        return HEALTH_PROBE_UNKNOWN; /* cannot ask: the verdict stands */
    double limit = runner_cfg()->gpu_probe_seconds, t0 = run_now();
    pid_t w;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && run_now() - t0 < limit) {
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
    int overdue = w == 0;
    if (overdue) { /* a driver that does not answer */
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    size_t n = 0;
    ssize_t k;
    while (n + 1 < len && (k = read(fd, why + n, len - 1 - n)) > 0)
        n += (size_t)k;
    why[n] = '\0';
    probe_flatten(why);
    close(fd);
    if (overdue) {
        snprintf(why, len, "the GPU probe did not answer in %.0f s", limit);
        return HEALTH_PROBE_FAILED;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == HEALTH_PROBE_OK || code == HEALTH_PROBE_UNKNOWN)
        return code;
    if (!why[0])
        snprintf(why, len, "the GPU probe failed (status %d)", code);
    return HEALTH_PROBE_FAILED;
}

static void probe_read(struct health *hl)
{
    while (hl->fd >= 0 && hl->nwhy + 1 < sizeof hl->why) {
        ssize_t n = read(hl->fd, hl->why + hl->nwhy, sizeof hl->why - 1 - hl->nwhy);
        if (n <= 0)
            break;
        hl->nwhy += (size_t)n;
    }
    hl->why[hl->nwhy] = '\0';
}

static void down_write(const char *path, const char *why);

/* The probe failed (or hangs): say so once, leave the down file for the
 * jobs in flight, probe again in a period. */
static void health_went_bad(struct health *hl, const char *why, double now)
{
    if (!hl->bad) {
        /* The down file first, then the log: whoever reads the log line
         * (an operator, health.t) finds the file already there. */
        down_write(hl->down, why);
        fprintf(stderr,
                "cugrade-runner: GPU %s is not usable (%s): claiming no jobs until it answers "
                "(probed every %g s); the jobs stay queued, and those in flight wait for it\n",
                hl->gpu, why, hl->period);
    }
    hl->bad = 1;
    hl->known = 1;
    hl->next = now + hl->period;
}

void health_tick(struct health *hl, double now)
{
    if (!hl->enabled)
        return;
    if (hl->pid) {
        probe_read(hl);
        if (!hl->overdue && now - hl->started > hl->period) {
            /* A driver call that hangs: the GPU is not usable now, even if
             * the probe cannot be reaped yet (stuck in the driver). */
            kill(hl->pid, SIGKILL);
            hl->overdue = 1;
            health_went_bad(hl, "the probe did not answer in time", now);
        }
        return;
    }
    if ((hl->wanted || hl->bad) && now >= hl->next && probe_start(hl, now) < 0) {
        hl->known = 1; /* no probe: go on as before, try again at the next suspicion */
        hl->wanted = 0;
        hl->next = now + SUSPECT_GAP_S;
    }
}

/* The probe's message on one line, for the log. */
static const char *probe_message(struct health *hl)
{
    probe_flatten(hl->why);
    return hl->why[0] ? hl->why : "no message";
}

/* The down file, for the jobs in flight (health_gpu_down): the probe's
 * message on its first line. Written whole under a temporary name, then
 * renamed. */
static void down_write(const char *path, const char *why)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    fprintf(f, "%s\n", why);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

int health_gpu_down(const struct grade_env *env, char *why, size_t len)
{
    char path[PATH_MAX];
    lock_gpu_path(env, "down", path, sizeof path);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    if (why && len) {
        if (!fgets(why, (int)len, f))
            why[0] = '\0';
        why[strcspn(why, "\n")] = '\0';
    }
    fclose(f);
    return 1;
}

int health_reaped(struct health *hl, pid_t pid, int status, double now)
{
    if (!hl->enabled || pid != hl->pid || pid == 0)
        return 0;
    probe_read(hl);
    if (hl->fd >= 0)
        close(hl->fd);
    hl->fd = -1;
    hl->pid = 0;
    hl->wanted = 0;
    hl->known = 1;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == HEALTH_PROBE_OK || code == HEALTH_PROBE_UNKNOWN) {
        if (hl->bad) {
            unlink(hl->down); /* before the log line, as health_went_bad */
            fprintf(stderr, "cugrade-runner: GPU %s answers again: claiming jobs\n", hl->gpu);
        }
        hl->bad = 0;
        hl->next = now + SUSPECT_GAP_S;
        return 1;
    }
    health_went_bad(hl, hl->overdue ? "the probe did not answer in time" : probe_message(hl),
                    now);
    return 1;
}

int health_ok(const struct health *hl)
{
    assert(hl->enabled || !hl->bad);
    /* A suspicion holds the claims until its probe answered. */
    return !hl->enabled || (hl->known && !hl->bad && !hl->wanted && hl->pid == 0);
}

int health_failing(const struct health *hl)
{
    return hl->enabled && hl->bad;
}
