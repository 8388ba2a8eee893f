/*
 * job_memory.c - a job's GPU memory (docs/runner.md, "GPU memory
 * admission"): its reservation before any student code runs, the check
 * run's memory gate for its big cases (check_gate.h), and the shrinking
 * reservation of each later phase. Split from job.c.
 */
#include "runner/grade/job.h"
#include "runner/grade/check_gate.h"
#include "runner/grade/job_phase.h"
#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* How many sanitizer runs the rubric asks for on this lab (0, 1 or 2). */
size_t job_sanitizers_wanted(const struct job *j)
{
    if (!j->lab.sanitize_case)
        return 0;
    return (size_t)(j->rub.sanitize_memcheck != 0) + (size_t)(j->rub.sanitize_racecheck != 0);
}

/* 1 when the rubric runs case c of the lab in its check (a rubric that
 * lists no case runs them all). */
int job_case_wanted(const struct job *j, const struct lab_case *c)
{
    const struct rubric *rub = &j->rub;
    if (rub->ncorrectness == 0)
        return 1;
    for (size_t k = 0; k < rub->ncorrectness; k++)
        if (strcmp(rub->correctness[k].case_name, c->name) == 0)
            return 1;
    return 0;
}

/* 1 when the check run has a case marked "big" (lab.json). */
static int job_has_big_case(const struct job *j)
{
    for (size_t i = 0; i < j->lab.ncases; i++)
        if (j->lab.cases[i].big && job_case_wanted(j, &j->lab.cases[i]))
            return 1;
    return 0;
}

/* Reserve the job's GPU memory (admit.h), waiting at most max_wait
 * seconds and holding nothing meanwhile. Returns 0 (j->admitted), -EBUSY
 * when it did not fit in time, or -errno. */
int job_reserve(struct job *j, double max_wait, double *waited)
{
    assert(!j->admitted);
    char queue[PATH_MAX];
    long long qtok;
    lock_admit_path(j->env, j->admit_file, sizeof j->admit_file);
    /* Counted as waiting meanwhile: a profile is not taken while others
     * wait (job_time.c, job_profile). */
    lock_admit_queue_path(j->env, queue, sizeof queue);
    qtok = admit_enter(queue);
    unsigned long long need = lock_admit_need(&j->lab, job_sanitizers_wanted(j));
    /* A CUDA check run holds all but its big cases' memory; it grows at
     * its memory gate (check_gate.h). A Python run keeps it all: what its
     * interpreters and CuPy's pool hold is not measured. */
    j->check_grow = j->python || !job_has_big_case(j) ? 0 : lock_admit_check_grow(&j->lab);
    assert(j->check_grow < need);
    need -= j->check_grow;
    if (j->lab.timing_case && j->rub.nspeed > 0) /* job_time_prestart's run */
        need += lock_admit_time_prestart(&j->lab, j->python);
    int r = admit_reserve_jobs(j->admit_file, lock_admit_capacity(&j->rc), need, j->check_grow,
                               lock_admit_max_jobs(), max_wait, &j->admit_token, waited);
    admit_release(queue, qtok);
    j->admitted = r == 0;
    return r;
}

void job_unreserve(struct job *j)
{
    if (j->admitted)
        admit_release(j->admit_file, j->admit_token);
    j->admit_token = 0;
    j->admitted = 0;
}

/* The check run is over, and with it the biggest case: the reservation
 * shrinks to what the rest of the job runs (lock_admit_after_check), so
 * the next job is admitted while this one waits for its sanitizers, its
 * timing and its profile. A ledger that cannot be rewritten keeps the
 * bigger reservation (only slower, never unsafe). */
void job_reserve_shrink(struct job *j)
{
    job_reserve_to(j, lock_admit_after_check(&j->lab, job_sanitizers_wanted(j)));
}

void job_reserve_to(struct job *j, unsigned long long mb)
{
    /* Not a Python job: what its interpreters and CuPy's pool hold for the
     * timing case is not measured (docs/python.md), so it keeps it all. */
    if (!j->admitted || j->python)
        return;
    int r = admit_resize(j->admit_file, j->admit_token, mb);
    if (r < 0)
        fprintf(stderr, "cugrade-runner: job %lld: cannot shrink its GPU reservation: %s\n",
                j->g->id, strerror(-r));
}

/* A CUDA check run with big cases and a reservation below them opens
 * its memory gate (check_gate.h): *fd gets the harness's end. Without a
 * thread for it, the reservation grows here, before the run. Returns 0 or
 * job_fail's -errno. */
int job_check_gate(struct job *j, struct check_gate *g, struct run_opts *o, int *fd)
{
    if (j->python || j->check_grow == 0 || !j->admitted || j->admit_token == 0 ||
        !j->big_list[0])
        return 0;
    unsigned long long cap = lock_admit_capacity(&j->rc);
    if (check_gate_open(g, j->admit_file, j->admit_token, cap, o, fd) == 0)
        return 0;
    double waited = 0;
    int r = admit_grow(j->admit_file, j->admit_token, cap, ADMIT_MAX_WAIT, NULL, &waited);
    if (r < 0)
        return job_fail(j, r, "GPU memory admission: case %s could not get its memory after "
                        "%.0f s: %s", j->big_list, waited, strerror(-r));
    return 0;
}
