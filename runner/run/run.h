/*
 * run.h - how a job runs programs: in the sandbox on the GPU (the student's
 * program, the baselines, the sanitizers) or trusted outside it (the judge,
 * nvcc's wrappers, build scripts), and the small helpers every phase of the
 * pipeline shares (paths in the lab cache, threads, verdict wording).
 *
 * The runner's rooms: runner/README.md; its files: docs/runner.md "The
 * rooms".
 */
#ifndef CUGRADE_RUN_H
#define CUGRADE_RUN_H

#include "runner/run/env.h"
#include "lab.h"
#include "runner/run/limit.h"
#include "runner/sandbox/sandbox.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#define DIRLEN 2048        /* directories; file paths below get PATH_MAX */
#define TIME_MAX_MS "3000" /* the timing run's sample budget (--max-ms) */
#define RUN_MORE_BINDS 16  /* run_opts.more_binds */

/* What every run of one job shares. env and lab are borrowed for the job's
 * life; workdir is the sandbox's /work on the host. */
struct run_ctx {
    const struct grade_env *env;
    const struct lab *lab;
    const char *workdir;
    char jobdir[DIRLEN];
    char device_path[PATH_MAX]; /* trusted device record for the judge, or "" */
    struct run_limits limits;   /* this job's wall limits (limit.h) */
};

/* How a sandboxed run differs from a plain one (zero it, then set what is
 * needed; fds are -1 when unused). */
struct run_opts {
    const char *prog_bind;   /* host program bound read-only at /lab/prog */
    const char *launch_bind; /* host cugrade-launch bound read-only at /lab/launch */
    const char *extra_env;   /* one more "K=V" for the environment */
    int control_fd;          /* fd 4 inside (sandbox_config.control_fd) */
    int cancel_fd;           /* sandbox_config.cancel_fd */
    const char *labs_bind;   /* host labs/ bound read-only at /lab/labs (Python runs) */
    unsigned pids;           /* the pids limit, 0: RUN_PIDS (the CUDA simulator
                                runs a thread per CUDA thread of a block) */
    const struct sandbox_bind *more_binds; /* more binds after the others (a Python
                                run's hidden libraries), at most RUN_MORE_BINDS */
    size_t nmore_binds;
    const char *secret;                /* NULL, or a value that must not be on the command
                                line nor in the environment (a run's seed: the
                                student's code reads /proc/PID/cmdline, and
                                bwrap's init keeps its --setenv values in
                                memory the student can read): written to a
                                pipe that is fd 5 inside (sandbox_config.
                                secret_fd), which the harness reads and closes
                                before any of the student's code runs */
    const struct sandbox_pause *pause; /* sandbox_config.pause */
    /* A timing run (the student's or a baseline's): CUDA's own number of
     * hardware queues, not RUN_GPU_QUEUES_ENV's one. */
    int timing;
    struct sandbox_stall *stall; /* sandbox_config.stall (a share clock's) */
    struct sandbox_boost *boost; /* sandbox_config.boost (a timing run's, asked for
                                    when its gate gives it the exclusive hold) */
};

/* The CUDA environment of every GPU process of ours except a timing run:
 * one hardware work queue per context, not CUDA's 8. The driver creates
 * and tears down contexts one at a time for the whole host, every GPU of
 * it: on an H200, 16 processes at once each making a context took 3.5 s
 * with 8 queues and 1.15 s with one, 16 check runs 3.7 s and 1.1 s, 8
 * jobs' check run and two sanitizers 7.5 s and 3.2 s; two GPUs took as
 * long as one (tests/bench/share_bench.py, docs/log/2026-11-30-driver-lock.md).
 * A burst's jobs queue on that. One queue puts a process's streams in one
 * line: correct CUDA still runs (the harness synchronizes the device), but
 * kernels of two streams no longer overlap. So a timing run, whose time is
 * the student's score, keeps CUDA's default: a program that overlaps
 * streams is timed as it would run anywhere else. */
#define RUN_GPU_QUEUES_ENV "CUDA_DEVICE_MAX_CONNECTIONS=1"

struct channel_info;

/* Seconds on the monotonic clock. */
double run_now(void);

/* This binary's path (exe: len bytes), to start one of its own
 * subcommands (gpu-hold, gpu-probe): 0, or -1. */
int run_self_exe(char *exe, size_t len);

/* In a forked child: a session (and process group) of its own, stdin
 * from in_fd (-1: /dev/null), stdout to out_fd, the runner's environment
 * less LD_LIBRARY_PATH plus extra_env, then exec argv. Never returns. */
void run_trusted_child(const char *const *argv, const char *const *extra_env, int in_fd, int out_fd)
    __attribute__((noreturn));

/* SIGKILL a child started with run_trusted_child: its group (what it left
 * behind) and itself (if it has not reached its setsid() yet). */
void run_kill_child(pid_t pid);

/* Run argv in the sandbox on the job's GPU with the lab's run limits, the
 * wall limit `seconds`, channel_fd as fd 3 (-1: none) and o's differences
 * (may be NULL). Returns sandbox_run's value: 0 with *v filled (caller
 * frees it with sandbox_verdict_free), or -errno when the sandbox itself
 * failed (a system_error for every caller). */
int run_sandboxed_opts(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                       double seconds, const struct run_opts *o, struct sandbox_verdict *v);
/* run_sandboxed_opts with prog_bind and one extra "K=V" (both may be NULL). */
int run_sandboxed_env(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                      double seconds, const char *prog_bind, const char *extra_env,
                      struct sandbox_verdict *v);
/* run_sandboxed_opts with prog_bind only (may be NULL). */
int run_sandboxed(const struct run_ctx *rc, const char *const *argv, int channel_fd, double seconds,
                  const char *prog_bind, struct sandbox_verdict *v);

/* A sentence (written into buf) on how a run ended badly, or NULL for a
 * clean exit 0. */
const char *run_failure(const struct sandbox_verdict *v, char *buf, size_t len);
/* 1 (and a sentence in err) when the harness itself claimed the failure
 * (exit 2 or 4 with its harness_error record): ours, a system_error. */
int run_harness_failed(const struct sandbox_verdict *v, const struct channel_info *ci, char *err,
                       size_t errlen);
/* The launch error that broke the context (exit 3), from the channel, into
 * buf ("" when none). */
void run_fatal_case_message(const struct channel_info *ci, char *buf, size_t len);
/* Free a verdict and zero it, so that freeing it again is harmless. */
void run_verdict_reset(struct sandbox_verdict *v);

/* Start fn(arg) on a thread (*started = 1); when no thread can be made,
 * run it here (*started = 0). run_task_join waits for a started one. */
void run_task_start(pthread_t *th, int *started, void *(*fn)(void *), void *arg);
void run_task_join(pthread_t *th, int *started);
/* Close *fd when open and set it to -1. */
void run_fd_close(int *fd);

/* Filesystem helpers: a name safe in a file name (alnum . - kept, the rest
 * '_'); a file written whole or not at all (0 or -errno); mkdir -p (0 or
 * -errno); a lab's build directory CACHE/ARCH/LAB; remove a job directory
 * (channels and the sandbox's work dir; workdir may be NULL). */
void run_slug(const char *in, char *out, size_t len);
int run_file_write_atomic(const char *path, const char *data, size_t len);
int run_mkdir_p(const char *path);
void run_lab_dir(const struct grade_env *env, const char *lab, char *out, size_t len);
/* Make a job's private directory under env->work (created if missing):
 * jobdir (len bytes) gets ENV_WORK/job-XXXXXX, mode 0711. Returns 0, or
 * -errno with jobdir "". Its work directory: sandbox_workdir_create. */
int run_jobdir_make(const struct grade_env *env, char *jobdir, size_t len);

void run_jobdir_remove(const char *jobdir, const char *workdir);

/* Write all of data to fd: a socket without SIGPIPE (send, MSG_NOSIGNAL),
 * anything else with write(); EINTR retried. Returns 0 or -errno (-EIO
 * for a write of 0). */
int run_write_all(int fd, const char *data, size_t len);

/* A gated run's word on our end of its gate (fd): 1 when it said 'r' (it
 * waits at its gate: its wall clock, pause, is stopped from now on), 0
 * when the gate ended first (the run ended, or was ended). */
int run_gate_ready(int fd, struct sandbox_pause *pause);

/* Run a trusted command outside the sandbox (build script, judge,
 * nvidia-smi) with a wall-clock limit; its process group is killed at the
 * limit. stdout is returned in *out (malloc'd, NUL-terminated, at most cap
 * bytes kept; caller frees; out may be NULL to discard); stderr goes to the
 * runner's stderr. The child gets the runner's environment without
 * LD_LIBRARY_PATH (a dist/ install's, meant for our binaries only), plus
 * extra_env entries ("K=V"). Returns the exit status (>= 0), 128+signal when killed by a
 * signal, -ETIMEDOUT, or -errno. */
int grade_exec_trusted(const char *const *argv, const char *const *extra_env, double seconds,
                       size_t cap, char **out);

#endif
