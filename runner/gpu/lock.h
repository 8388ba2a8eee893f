/*
 * lock.h - what a job holds on its GPU (docs/runner.md "Lock and admission
 * discipline"): the GPU lock (shared for checks, sanitizers and the
 * check's judge, exclusive for timing runs with their judge, baselines and
 * the device record) and its GPU
 * memory reservation (admit.h's ledger). The rules: take the reservation
 * first, then the lock, never wait for either while holding the other's
 * kind of thing a waiter needs, let go of the shared lock before asking for
 * the exclusive one.
 */
#ifndef CUGRADE_LOCK_H
#define CUGRADE_LOCK_H

#include "runner/run/env.h"
#include "lab.h"

#include <stddef.h>

#define ADMIT_CONTEXT_MB 600
#define ADMIT_STUDENT_MB 2048 /* harness_common.cu HC_STUDENT_DEVICE_MB */
#define ADMIT_MAX_WAIT   3600.0 /* claimed ahead, a job may wait its turn a while */
/* The CPU priority of a timing run once its gate has given it the exclusive
 * hold (sandbox_boost): while it holds the GPU, every other job's GPU work
 * waits for it, so its CPU work goes before theirs. Its start-up before the
 * gate stays at the runner's nice (docs/runner.md, "CPU priorities"). */
#define TIME_HOLD_NICE (-10)

struct run_ctx;

/* Take CACHE/gpu-<index>.lock, shared or exclusive, through the turnstile
 * (a waiting exclusive holder stops new shared ones). Returns an fd for
 * lock_gpu_release, or -1 (the caller goes on unlocked). Blocks. */
int lock_gpu(const struct grade_env *env, int exclusive);
/* lock_gpu shared, and this process counted as one of the GPU's users
 * (CACHE/gpu-<index>.active) until lock_gpu_release: what a job takes for
 * its check run, sanitizers and the check's judge. Returns the fd or -1
 * (unlocked). */
int lock_gpu_shared_user(const struct grade_env *env);
/* Let go of a lock from lock_gpu or lock_gpu_shared_user (and of the user's
 * line); -1 is a no-op. */
void lock_gpu_release(int fd);
/* The GPU's users ledger: CACHE/gpu-<index>.active (admit.h's format). */
void lock_active_path(const struct grade_env *env, char *out, size_t len);
/* The GPU's timing ledger: CACHE/gpu-<index>.timing, a line for each
 * timing run that waits for or holds the exclusive lock (a profile yields
 * while it has one: profile_run.c). */
void lock_timing_path(const struct grade_env *env, char *out, size_t len);

/* CACHE/gpu-<index>.<what>: the files of one GPU that every runner
 * process of the host shares (lock, turnstile, ledgers, the profiler's). */
void lock_gpu_path(const struct grade_env *env, const char *what, char *out, size_t len);
/* The admission ledger of the job's GPU: CACHE/gpu-<index>.admit. */
void lock_admit_path(const struct grade_env *env, char *out, size_t len);
/* The jobs waiting for admission to this GPU, in arrival order:
 * CACHE/gpu-<index>.admitq (admit.h's format, a line with the MiB each
 * waits for), entered for the length of the wait (admit_reserve_turn). */
void lock_admit_queue_path(const struct grade_env *env, char *out, size_t len);
/* The GPU's admissible memory in MiB (CUGRADE_GPU_MEMORY_MB, else 88% of
 * the device record's), or 0 (admission off: no GPU or no record). */
unsigned long long lock_admit_capacity(const struct run_ctx *rc);

/* What a job of lab needs in MiB: its biggest case, the student's
 * allowance, and a context per process on the GPU: the check run's (a
 * CUDA harness; a Python run's owner and tenant), the judge's and each
 * sanitizer's. */
unsigned long long lock_admit_need(const struct lab *lab, size_t nsanitizers, int python);
/* What the job keeps once its check run is over, in either language: the
 * timing case (limits.timing_device_mb) for the timing run, its baselines
 * one at a time and the profile, the student's allowance, and the timing
 * run's, the judge's and the sanitizers' contexts (the sanitizers may
 * still run). Never more than lock_admit_need. */
unsigned long long lock_admit_after_check(const struct lab *lab, size_t nsanitizers, int python);
/* What a timing run started beside the check run (job_time_prestart) adds
 * to the check's reservation: the timing case it prepares and its
 * contexts, one per process it starts before its gate (a Python run's
 * owner and tenant: labs/common/py/owner.py; a CUDA harness alone). */
unsigned long long lock_admit_time_prestart(const struct lab *lab, int python);
/* What a job keeps while its only GPU work left is its sanitizers, on the
 * small sanitize case (a check run that failed, nothing to time): that
 * case (limits.sanitize_device_mb), the student's allowance and a context
 * per sanitizer and the judge's; with no sanitizer, the judge's context
 * alone. Never more than lock_admit_after_check. */
unsigned long long lock_admit_sanitize_only(const struct lab *lab, size_t nsanitizers);

#endif
