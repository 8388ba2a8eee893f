/*
 * job_phase.h - what runner/grade/job.c and the phase files split from it
 * (job_time.c, job_lane.c) share. Not for the rest of the runner: job.h is the job's
 * interface.
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

/* How many sanitizer runs the rubric asks for on this lab (0, 1 or 2). */
size_t job_sanitizers_wanted(const struct job *j);
/* 1 when the rubric runs case c of the lab in its check (a rubric that
 * lists no case runs them all). */
int job_case_wanted(const struct job *j, const struct lab_case *c);

/* job_memory.c: reserve the job's GPU memory (admit.h), waiting at most
 * max_wait seconds and holding nothing meanwhile (a CUDA check run's big
 * cases are owed, not held: job_check_gate). Returns 0 (j->admitted),
 * -EBUSY when it did not fit in time, or -errno. */
int job_reserve(struct job *j, double max_wait, double *waited);
/* After the check run: the reservation shrinks to what the rest runs. */
void job_reserve_shrink(struct job *j);
struct check_gate;
struct run_opts;
/* Open a CUDA check run's memory gate when it has big cases owed (*fd:
 * the harness's end, else -1; without a thread the growth happens here).
 * Returns 0 or job_fail's -errno. */
int job_check_gate(struct job *j, struct check_gate *g, struct run_opts *o, int *fd);
/* Let go of the job's GPU memory reservation (admit.h), if it holds one. */
void job_unreserve(struct job *j);
/* Shrink the job's GPU reservation to mb MiB for the phase it enters (per
 * phase, docs/runner.md "GPU memory"; never grows; a CUDA job only: what a
 * Python job's interpreters and CuPy's pool hold is not measured). A
 * ledger that cannot be rewritten keeps the bigger reservation. */
void job_reserve_to(struct job *j, unsigned long long mb);

/* A system_error of ours: the sentence into j->err, r (< 0) returned. */
__attribute__((format(printf, 3, 4))) int job_fail(struct job *j, int r, const char *fmt, ...);

/* Before the GPU lane: wait while the runner's probe finds the GPU
 * unusable (health.h), holding nothing; 0, or -errno past
 * CUGRADE_GPU_DOWN_WAIT (j->err says so). job_lane.c. */
int job_gpu_up(struct job *j);

/* Start the first timing run beside the check run (job_time.c): its
 * start-up overlaps the check, then it waits at its gate for the job's
 * timing (job_time) or ends there (job_time_prestart_end). Under the
 * job's shared lock, after its admission; a no-op for a lab with nothing
 * to time, and when it cannot start (the timing starts after the check). */
void job_time_prestart(struct job *j);
/* End a pre-started timing run the job will not use (a verdict at the
 * check, an error): it ends at its gate, nothing of the student's having
 * run in it; waits for it. A no-op without one. */
void job_time_prestart_end(struct job *j);

#endif
