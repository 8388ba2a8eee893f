/*
 * health.h - is this runner's GPU still usable? A GPU that stops answering
 * (the driver lost it, a full-chip reset, memory taken by something else)
 * fails every job as system_error in a second or two; a runner that kept
 * claiming would turn a whole deadline queue into final system_errors
 * (3 attempts each) within a minute. So after a job ends in system_error
 * the runner probes the GPU (`cugrade-runner gpu-probe`, a child: the
 * runner itself never loads CUDA), and while the probe fails it claims
 * nothing and probes again every CUGRADE_GPU_PROBE_SECONDS (30). The jobs
 * stay queued on the server for a healthy runner. See docs/runner.md.
 */
#ifndef CUGRADE_HEALTH_H
#define CUGRADE_HEALTH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct grade_env;

/* `cugrade-runner gpu-probe` exit statuses. */
#define HEALTH_PROBE_OK      0 /* a context, an allocation, a memset, a synchronize */
#define HEALTH_PROBE_FAILED  1 /* the driver refused one of them: message on stderr */
#define HEALTH_PROBE_UNKNOWN 3 /* no CUDA driver library to ask (CI, a stub) */

struct health {
    int enabled;        /* the runner has a GPU */
    int known;          /* a probe answered (or none could start) */
    int bad;            /* the last probe failed: claim nothing */
    int wanted;         /* a probe should start as soon as none runs */
    pid_t pid;          /* the probe in flight, or 0 */
    int fd;             /* its stderr (non-blocking), or -1 */
    int overdue;        /* it was killed at its time limit */
    double started;     /* when it started */
    double next;        /* a probe starts no earlier than this */
    double period;      /* seconds between probes while bad, and the most one
                         * may take: a probe slower than that is a hung driver */
    char gpu[64];       /* the GPU index, for the log */
    char down[PATH_MAX]; /* CACHE/gpu-N.down: there while the probe fails */
    char why[256];      /* the probe's stderr */
    size_t nwhy;
};

/* Set up for env's GPU (have_gpu 0: never probes, always ok). The first
 * probe starts at the first health_tick; nothing is claimed before it
 * answered. A down file left by an earlier runner is removed. */
void health_init(struct health *hl, int have_gpu, const struct grade_env *env, double now);

/* A job ended in system_error: probe soon (at most every 2 s while good);
 * nothing is claimed until the probe answered. */
void health_suspect(struct health *hl);

/* Start a due probe; read its message; kill it at its time limit. */
void health_tick(struct health *hl, double now);

/* pid was reaped with status: 1 when it was the probe (state updated,
 * transitions logged), else 0. */
int health_reaped(struct health *hl, pid_t pid, int status, double now);

/* 1 while jobs may be claimed: no GPU to watch, or its last probe
 * answered and no suspicion waits for another. */
int health_ok(const struct health *hl);

/* 1 while the last probe failed (the GPU does not answer); 0 before the
 * first answer and while a suspicion waits for one. */
int health_failing(const struct health *hl);

/* The jobs' side: while CACHE/gpu-N.down exists (the runner's probe
 * fails), a job about to enter the GPU lane waits rather than fail on the
 * GPU. 1 while it exists (why: its first line), else 0. */
int health_gpu_down(const struct grade_env *env, char *why, size_t len);

/* How long a job waits for it: $CUGRADE_GPU_DOWN_WAIT seconds (600). */
double health_down_wait(void);

/* The jobs' side, when a run of theirs timed out: probe the GPU now and
 * wait for the answer (at most CUGRADE_GPU_PROBE_SECONDS; a probe killed at
 * it failed). HEALTH_PROBE_OK, _UNKNOWN (no driver to ask, or no probe
 * could start: the verdict stands) or _FAILED with the probe's stderr in
 * why, as one line (as the runner's own probe logs it). A GPU that hung under a burst ran every check run on
 * it into its limit: eight correct kernels were charged `timeout` on an
 * H200 before the runner's own probe saw the GPU gone. */
int health_probe_wait(char *why, size_t len);
/* `cugrade-runner gpu-probe`: one of the HEALTH_PROBE_* statuses. */
int health_probe_main(void);

#endif
