/*
 * job_phase.h - what runner/grade/job.c and the phase files split from it
 * (job_check.c, job_time.c, job_time_gate.c, job_lane.c) share. Not for
 * the rest of the runner: job.h is the job's interface.
 */
#ifndef CUGRADE_RUNNER_JOB_PHASE_H
#define CUGRADE_RUNNER_JOB_PHASE_H

#include <jansson.h>

#include "runner/grade/job.h"

/* The job's progress callback (a no-op without one); -ECANCELED when the
 * server says the job is no longer ours. */
int progress_call(const struct job *j, const char *phase, const char *detail);

/* The bytes and flops of lab's case_name for one call, from the timing
 * record (or the course labs' own formulas). */
void case_work(const struct lab *lab, const char *case_name, const json_t *timing, double *bytes,
               double *flops);

/* How many sanitizer runs the rubric asks for on this lab (0, 1 or 2).
 * job_lane.c. */
size_t job_sanitizers_wanted(const struct job *j);
/* Reserve the job's GPU memory (admit.h), waiting at most max_wait
 * seconds and holding nothing meanwhile; 'a' on the lane pipe once
 * admitted. Returns 0 (j->admitted), -EBUSY when it did not fit in time,
 * -EXDEV when the runner asked for the job back ('h' on the grant pipe), or
 * -errno. job_lane.c. */
int job_reserve(struct job *j, double max_wait, double *waited);
/* The reservation for the GPU lane: at once when the job fits now; else
 * the student is told what it waits for, and it waits its turn, handed
 * back when the runner asks (docs/runner.md "Hand-back"): then
 * GRADE_HANDED_BACK. Returns 0 or -errno. job_lane.c. */
int job_admit_wait(struct job *j, double *waited);
/* Before the job's shared GPU lock: "waiting: the GPU is held for timing
 * runs" when timing runs wait or run. 0 or -ECANCELED. job_lane.c. */
int job_gpu_lock_say(struct job *j);
/* Let go of the job's GPU memory reservation (admit.h), if it holds one. */
void job_unreserve(struct job *j);
/* Shrink the job's GPU reservation to mb MiB for the phase it enters (per
 * phase, docs/runner.md "GPU memory"; never grows; a Python job's too:
 * its processes' contexts are counted per process, runner/gpu/lock.c). A
 * ledger that cannot be rewritten keeps the bigger reservation. */
void job_reserve_to(struct job *j, unsigned long long mb);

/* A system_error of ours: the sentence into j->err, r (< 0) returned. */
__attribute__((format(printf, 3, 4))) int job_fail(struct job *j, int r, const char *fmt, ...);

/* One byte to the runner on the lane pipe (grade.h, lane_fd), when there
 * is one. job_lane.c. */
void job_lane_say(const struct job *j, char c);

/* res's compile log becomes the one shown to the student (j->log_keep,
 * j->in.compile_log; res no longer holds it). */
void job_keep_compile_log(struct job *j, struct compile_result *res);

/* Before the GPU lane: wait while the runner's probe finds the GPU
 * unusable (health.h), holding nothing; 0, or -errno past
 * CUGRADE_GPU_DOWN_WAIT (j->err says so). job_lane.c. */
int job_gpu_up(struct job *j);

/* A run of j's (run: "the check run", "the timing run") timed out: was it
 * the GPU? It is probed now (health_probe_wait); when it does not answer,
 * the timeout is ours: -EIO with the sentence in j->err (a system_error,
 * retried), else 0 and the verdict stands (also when the probe only ran
 * out of device memory: the GPU answered). No GPU: 0. job_lane.c. */
int job_timeout_ours(struct job *j, const char *run);

/* Start the first timing run beside the check run (job_time_gate.c): its
 * start-up overlaps the check, then it waits at its gate for the job's
 * timing (job_time) or ends there (job_time_prestart_end). Under the
 * job's shared lock, after its admission; a no-op for a lab with nothing
 * to time, and when it cannot start (the timing starts after the check). */
void job_time_prestart(struct job *j);
/* The profiling feedback of a submission that passed every case, at the
 * end of its timing (job_profile.c): run now, marked pending for
 * job_profile_after, or skipped with the reason in j->profile. */
void job_profile(struct job *j);

/* End a pre-started timing run the job will not use (a verdict at the
 * check, an error): it ends at its gate, nothing of the student's having
 * run in it; waits for it. A no-op without one. */
void job_time_prestart_end(struct job *j);

#endif
