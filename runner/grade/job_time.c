/*
 * job_time.c - the timing phase of a job (job.h: job_time): the timing run
 * alone on the GPU (the exclusive lock waits for the sanitizers), its judge,
 * the baselines timed beside it in rounds, re-timing near a tier threshold
 * (retime.h), then the profile of a correct submission (job_profile.c).
 * Split from job.c along its banner; the helpers they share are in
 * job_phase.h. A timing run's gate and the run started beside the check
 * are job_time_gate.c (job_time.h).
 */
#include "runner/grade/job_time.h"
#include "runner/config.h"
#include "status.h"
#include "runner/timing/baseline.h"
#include "runner/timing/retime.h"
#include "runner/gpu/lock.h"
#include "runner/grade/sanitizer.h"
#include "runner/timing/stats.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Timing is only done when it can earn points: every correctness case
 * passed, or a speed line without requires_correct. */
static int job_time_wanted(const struct job *j)
{
    int all_correct = 1, need_correct = 1;
    for (size_t i = 0; i < j->in.ncases; i++)
        if (!j->in.cases[i].passed)
            all_correct = 0;
    for (size_t i = 0; i < j->rub.nspeed; i++)
        if (!j->rub.speed[i].requires_correct)
            need_correct = 0;
    return j->lab.timing_case && j->rub.nspeed > 0 && !(need_correct && !all_correct);
}

/* One timing round of the job (runner/timing/retime.h): which baselines the
 * rubric compares against are timed beside the student's batch, and the
 * pool their samples go to. */
struct job_round {
    struct job *j;
    const char *cmp[4];  /* GPU and CPU baselines timed in this job, interleaved */
    size_t ncmp;
    struct retime_pool *pool;
    json_t *device;      /* a device record seen on the way */
    int hold;            /* the round's exclusive GPU lock, kept for its judge (or -1) */
    int owner_cpu;       /* the round's CPU series came from the owner (judge) */
};

/* The phase a round's seconds go to: the first round's own, or "retime". */
const char *round_phase(int k, const char *first)
{
    return k == 0 ? first : "retime";
}

/* The sharing window of round k (baseline.h): only a first round takes
 * another job's batches; 0 for a re-timing round. */
static double round_share_window(int k)
{
    return k == 0 ? BASELINE_SHARE_S : 0;
}

/* The first round takes a batch of baseline `name` that another job of
 * this GPU timed within the sharing window (baseline.h), instead of
 * timing one inside its own exclusive hold. A re-timing round always times
 * its own: it is there to add independent samples, and its order (the
 * baselines first on odd rounds) to cancel a drift of the clocks. Returns
 * 1 when a shared batch joined the pool. */
static int job_round_shared_baseline(struct job_round *jr, int k, const char *name,
                                     enum retime_who who)
{
    double *x = NULL, age = 0, fresh = round_share_window(k);
    size_t n = 0;
    if (!(fresh > 0))
        return 0;
    int r = baseline_batch_recent(&jr->j->rc, name, jr->j->lab.timing_case, fresh, &x, &n, &age);
    if (r == 0)
        r = retime_append_shared(jr->pool, who, x, n, age);
    free(x);
    return r == 0;
}

/* The interleaved GPU baselines of round k, under the exclusive lock the
 * caller holds (or a fresh shared batch in its place). A batch that fails
 * is ours and only logged: the cached median stands in for it
 * (job_baselines). */
static void job_round_gpu_baselines(struct job_round *jr, int k)
{
    for (size_t i = 0; i < jr->ncmp; i++) {
        double *x = NULL;
        size_t n = 0;
        int who = retime_who(jr->cmp[i]);
        if (strcmp(jr->cmp[i], "cpu") == 0 || who < 0)
            continue;
        if (job_round_shared_baseline(jr, k, jr->cmp[i], (enum retime_who)who))
            continue;
        if (baseline_batch(&jr->j->rc, jr->cmp[i], jr->j->lab.timing_case, &x, &n,
                           &jr->device) == 0)
            retime_append(jr->pool, (enum retime_who)who, x, n);
        free(x);
    }
    job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
}

/* A CPU batch's median joins the host's record, and the CPU series of the
 * pool becomes the record's newest batch medians (this job's among them):
 * its batches differ more than its samples within one (baseline.h). */
static void job_cpu_record(struct job_round *jr, const double *x, size_t n)
{
    char path[PATH_MAX];
    double rec[BASELINE_CPU_RECORD];
    double m = stats_median(x, n);
    baseline_record_path(&jr->j->rc, jr->j->lab.timing_case, path, sizeof path);
    if (baseline_record_add(path, m) != 0)
        fprintf(stderr, "cugrade-runner: cannot append to %s\n", path);
    size_t k = baseline_record_read(path, rec, BASELINE_CPU_RECORD);
    jr->pool->s[RETIME_CPU].n = 0;
    jr->pool->s[RETIME_CPU].shared_n = 0; /* the record now holds a batch of this job's */
    if (k == 0)
        retime_append(jr->pool, RETIME_CPU, &m, 1);
    else
        retime_append(jr->pool, RETIME_CPU, rec, k);
}

/* The first round takes the host's CPU record as it is when another job
 * appended a batch to it within the sharing window (baseline.h): 1 when
 * the record's newest batch medians joined the pool. */
static int job_cpu_record_shared(struct job_round *jr, int k)
{
    char path[PATH_MAX];
    double rec[BASELINE_CPU_RECORD], fresh = round_share_window(k);
    if (!(fresh > 0))
        return 0;
    baseline_record_path(&jr->j->rc, jr->j->lab.timing_case, path, sizeof path);
    double age = baseline_record_age(path);
    if (!(age >= 0 && age <= fresh))
        return 0;
    size_t n = baseline_record_read(path, rec, BASELINE_CPU_RECORD);
    return n >= BASELINE_CPU_SHARE_MIN &&
           retime_append_shared(jr->pool, RETIME_CPU, rec, n, age) == 0;
}

/* The CPU baseline's batch of round k (outside the GPU lock: it does not
 * use the GPU, and the lock would idle the GPU for its seconds), or the
 * record another job appended to seconds ago. */
static void job_round_cpu_baseline(struct job_round *jr, int k)
{
    if (jr->owner_cpu) /* in place of the CPU baseline (job_owner_cpu_samples) */
        return;
    for (size_t i = 0; i < jr->ncmp; i++) {
        double *x = NULL;
        size_t n = 0;
        if (strcmp(jr->cmp[i], "cpu") != 0)
            continue;
        if (job_cpu_record_shared(jr, k)) {
            job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
            continue;
        }
        if (baseline_batch(&jr->j->rc, "cpu", jr->j->lab.timing_case, &x, &n, &jr->device) == 0)
            job_cpu_record(jr, x, n);
        free(x);
        job_clock_mark(&jr->j->pc, round_phase(k, "time_baselines"));
    }
}

/* The job's shared lock let go once its sanitizers have ended (round 0):
 * a job waiting for the exclusive lock holds nothing another job needs. */
void job_time_let_go(struct job *j, int k)
{
    if (k == 0) {
        sanitizer_settle(j->san_tasks, j->nsan_tasks);
        /* their contexts are gone: the timing case and the judge's remain */
        job_reserve_to(j, lock_admit_after_check(&j->lab, 0, j->python));
    }
    lock_gpu_release(j->job_lk);
    j->job_lk = -1;
}

/* The exclusive hold of round k, the round's GPU baselines timed first on
 * odd rounds: the wait for it (other jobs' GPU work draining, other timing
 * runs) is the phase hold_wait. Returns the lock's fd for
 * lock_gpu_release (or -1). */
int job_time_hold(struct job *j, struct job_round *jr, int k)
{
    int tlk = lock_gpu(j->env, 1);
    job_clock_mark(&j->pc, round_phase(k, "hold_wait"));
    if (k % 2)
        job_round_gpu_baselines(jr, k);
    return tlk;
}

/* HOLD_STEPS at most, each name at most HOLD_NAME - 1 of [a-z_]: what
 * job_keep_hold copies of a timing record's hold_s. */
#define HOLD_STEPS 8
#define HOLD_NAME 24

/* The first timing round's steps after its gate, as its hold record says
 * them ({"type": "hold", "load": s, ...}: labs/common/py/owner.py
 * send_hold), into j->hold for the result (cugrade.hold_s): where a
 * hold's seconds went, for the benches. Diagnostics only, never graded,
 * and bounded: at most HOLD_STEPS names of [a-z_], finite seconds >= 0;
 * anything else is left out (a CUDA harness's records share its process
 * with the student's code), and so are the record's type and the
 * channel's _offset. */
static void job_keep_hold(struct job *j)
{
    json_t *h = j->ti.hold, *v;
    const char *name;
    if (j->hold || !json_is_object(h))
        return;
    json_t *out = json_object();
    json_object_foreach(h, name, v) {
        double s = json_number_value(v);
        size_t n = strlen(name);
        if (strcmp(name, "_offset") == 0)
            continue;
        if (!out || json_object_size(out) >= HOLD_STEPS || !json_is_number(v) || !isfinite(s) ||
            s < 0 || n == 0 || n >= HOLD_NAME || strspn(name, "abcdefghijklmnopqrstuvwxyz_") != n)
            continue;
        json_object_set_new(out, name, json_real(s));
    }
    j->hold = out;
}

/* The timing run of round k, with the round's GPU baselines in the same
 * exclusive hold: the student first on even rounds, the baselines first
 * on odd ones (a drift of the GPU's clocks within the hold cancels over
 * two rounds). The job's shared lock is let go (its sanitizers have
 * ended) before the exclusive one is asked for: a waiter holds nothing.
 * Round 0 goes on with the run started beside the check, when there is one.
 * *tlk gets the exclusive lock (or -1), still held. */
static int job_time_run_held(struct job *j, struct job_round *jr, int k, int *tlk)
{
    char fail[512];
    struct time_pre own, *tp = k == 0 && j->pre ? j->pre : &own;
    int r, sampled = 1; /* sampled: the samples ran under the exclusive lock */
    char share_note[200] = "";
    if (tp == j->pre) {
        time_pre_join(tp, 1);
        r = tp->r, *tlk = tp->tlk, sampled = tp->sampled;
        snprintf(share_note, sizeof share_note, "%s", tp->note);
        if (!sampled) /* it ended before its gate: let go here, as job_time_gated does */
            job_time_let_go(j, 0);
    } else {
        memset(&own, 0, sizeof own);
        if ((r = time_run_setup(j, k, &own)) < 0)
            return r;
        r = job_time_gated(j, jr, k, own.targv, own.fd, own.tlim, &own.o,
                           j->python ? &own.pr : NULL, tlk, &sampled, share_note, sizeof share_note,
                           NULL);
    }
    int fd = tp->fd;
    double tlim = tp->tlim;
    tp->fd = -1; /* ours to close now */
    if (tp == j->pre)
        job_time_prestart_end(j);
    if (r == -EAGAIN) {
        close(fd);
        return job_fail(j, r, "cannot open the timing gate: %s", strerror(-r));
    }
    job_clock_mark(&j->pc, round_phase(k, "time_run"));
    /* Timed out while other jobs shared the GPU (share_note says so): run
     * it again, once. The share clock counts this GPU's users, but what
     * they slow is also host-wide: the driver makes and tears down every
     * GPU's contexts one at a time, and a timing run's allocations and
     * first launches queue behind them even under the exclusive lock (on
     * 2 x H200 a correct embedding kernel, 57 jobs sent at once, timed
     * out with 18 s of share in 52 s). A hang hangs again and is charged
     * then, at twice its limit; a correct kernel gets a calmer GPU. */
    if (r == 0 && j->tv.timed_out && share_note[0] && !j->time_again) {
        lock_gpu_release(*tlk);
        *tlk = -1;
        close(fd);
        j->time_again = 1;
        fprintf(stderr,
                "cugrade-runner: job %lld: timing round %d timed out beside other jobs; "
                "timing it again\n",
                j->g->id, k);
        run_verdict_reset(&j->tv);
        return job_time_run_held(j, jr, k, tlk);
    }
    if (r == 0 && k % 2 == 0 && sampled && !j->tv.timed_out)
        job_round_gpu_baselines(jr, k);
    if (r < 0) {
        close(fd);
        return job_fail(j, r, "the timing sandbox failed: %s", strerror(-r));
    }
    channel_read_all(fd, &j->ti);
    close(fd);
    if (k == 0)
        job_keep_hold(j);
    if (run_harness_failed(&j->tv, &j->ti, j->err, sizeof j->err))
        return -EIO;
    if (j->tv.timed_out && (r = job_timeout_ours(j, "the timing run")) < 0)
        return r;
    const char *why_t = run_failure(&j->tv, fail, sizeof fail);
    /* The run's wall time is no limit's: it holds the wait at the gate. */
    if (j->tv.timed_out && !j->tv.cpu_limit && !j->tv.output_limit)
        why_t = limit_timing_message(tlim, j->lab.timing_case, fail, sizeof fail);
    if (why_t || !j->ti.timing) {
        j->st = j->tv.timed_out ? status_name(STATUS_TIMEOUT) : status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg, "Timing failed: %s%s%s",
                 why_t ? why_t : "the harness sent no timing record.",
                 j->tv.timed_out ? share_note : "",
                 j->tv.timed_out && j->time_again
                     ? " It was timed twice: the first run timed out while other jobs shared "
                       "the GPU, and the second timed out as well."
                     : "");
        /* The timing run's prints are the feedback now. */
        sandbox_verdict_free(&j->v);
        j->v = j->tv;
        memset(&j->tv, 0, sizeof j->tv);
        return JOB_VERDICT;
    }
    return JOB_NEXT;
}

/* job_time_run_held; a round that goes on to its judge keeps the exclusive
 * lock in jr->hold for it, any other lets it go. */
static int job_time_run(struct job *j, struct job_round *jr, int k)
{
    int tlk = -1;
    assert(jr->hold < 0);
    int r = job_time_run_held(j, jr, k, &tlk);
    if (r == JOB_NEXT)
        jr->hold = tlk;
    else
        lock_gpu_release(tlk);
    return r;
}

/* What the judge says of the timing channel, into j->in.timing. */
static void job_time_record(struct job *j, const json_t *jdoc, const struct stats_summary *ss)
{
    struct score_timing *t = &j->in.timing;
    json_t *jt = json_object_get(jdoc, "timing");
    t->have = 1;
    t->case_name = j->lab.timing_case;
    t->student_ms = ss->median;
    t->samples = ss->kept;
    t->rel_err = ss->rel_err;
    t->recheck_passed = json_is_true(json_object_get(jt, "recheck_passed"));
    t->bytes = json_number_value(json_object_get(jt, "bytes"));
    t->flops = json_number_value(json_object_get(jt, "flops"));
    if (!(t->bytes > 0) && !(t->flops > 0))
        case_work(&j->lab, j->lab.timing_case, jt, &t->bytes, &t->flops);
    json_t *jdev = json_object_get(jdoc, "device");
    if (json_number_value(json_object_get(jdev, "copy_gbs")) > 0) {
        t->copy_gbs = json_number_value(json_object_get(jdev, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(jdev, "peak_fp32_gflops"));
    }
    /* A lab whose owner times its own baseline in the same run, before any
     * student code ran there (the profiling lab's starter): the naive slot. */
    double bms = json_number_value(json_object_get(jt, "baseline_ms"));
    if (bms > 0 && !(t->naive_ms > 0))
        t->naive_ms = bms;
    const char *why = json_string_value(json_object_get(jt, "flag_reason"));
    if (json_is_true(json_object_get(jt, "flagged")) && t->recheck_passed) {
        snprintf(j->judge_flag, sizeof j->judge_flag, "%s", why ? why : "flagged by the judge");
        t->judge_flag_reason = j->judge_flag;
    }
}

/* A lab whose owner times the CPU baseline itself in the timing run, before
 * the student's process exists (the pipeline lab's NumPy pipeline,
 * docs/python.md): the judge passes the owner's cpu_samples_ms on, and they
 * are the CPU series of the pool (retime_apply makes cpu_ms of them), in
 * place of a cached CPU baseline and of the CPU baseline's batch (judged
 * before it now, in the hold: job_round_cpu_baseline then times none).
 * Returns 0 or -ENOMEM. */
static int job_owner_cpu_samples(struct job_round *jr, const json_t *jdoc)
{
    const json_t *cs = json_object_get(json_object_get(jdoc, "timing"), "cpu_samples_ms"), *e;
    size_t k;
    int r = 0;
    json_array_foreach(cs, k, e) {
        double v = json_number_value(e);
        if (!json_is_number(e) || !(v > 0) || !isfinite(v))
            continue;
        if (retime_append(jr->pool, RETIME_CPU, &v, 1) != 0)
            r = -ENOMEM;
        else
            jr->owner_cpu = 1;
    }
    return r;
}

/* The judge checks the re-check (fresh inputs from seed2: a cached answer
 * fails), computes the case's bytes and flops and flags a time past the
 * physical floor; the runner recomputes the median and its error from the
 * raw samples. It runs in the round's exclusive hold (jr->hold), let go
 * here: a shared lock would wait behind every timing run waiting or
 * running (lock.c, timing_yield), which in a burst is most of the time --
 * 34 s on average for a Python job timed in a burst of 100 on 2 x H200,
 * its after-check reservation held meanwhile, for a judge's run of well
 * under a second (docs/log/2026-11-30-timing-judge.md). */
static int job_time_judge(struct job *j, struct job_round *jr, int round)
{
    char tchan[PATH_MAX], chan[32];
    json_t *jdoc = NULL, *e;
    struct score_case *tcases = NULL;
    size_t ntcases = 0, k;
    struct stats_summary ss;
    snprintf(chan, sizeof chan, round == 0 ? "timing" : "timing-%d", round);
    channel_path(j->rc.jobdir, chan, tchan, sizeof tchan);
    int jlk = jr->hold >= 0 ? jr->hold : lock_gpu_shared_user(j->env);
    jr->hold = -1;
    int r = judge_run(&j->rc, &j->js, j->seed, tchan, NULL, &jdoc, &tcases, &ntcases, j->err,
                      sizeof j->err);
    lock_gpu_release(jlk);
    score_cases_free(tcases, ntcases);
    job_clock_mark(&j->pc, round_phase(round, "time_judge"));
    if (r < 0) {
        json_decref(jdoc);
        return r;
    }
    json_t *samples = json_object_get(json_object_get(jdoc, "timing"), "samples_ms");
    size_t n = json_array_size(samples);
    double *x = calloc(n ? n : 1, sizeof *x);
    if (!x) {
        json_decref(jdoc);
        return job_fail(j, -ENOMEM, "out of memory");
    }
    json_array_foreach(samples, k, e) x[k] = json_number_value(e);
    r = stats_summarize(x, n, &ss);
    if (r == 0 && retime_append(jr->pool, RETIME_STUDENT, x, n) != 0)
        r = -ENOMEM;
    free(x);
    if (r == 0)
        r = job_owner_cpu_samples(jr, jdoc);
    if (r != 0 && j->python && n == 0) {
        /* A Python job's channel has one writer, our owner (the student's
         * code runs in its tenant): a judge that took none of its samples
         * refused our records, not the student's (it did, for every
         * Python job of three labs, when a record was not flat). */
        const char *why = json_string_value(json_array_get(json_object_get(jdoc, "errors"), 0));
        r = job_fail(j, -EIO,
                     "the judge took none of the timing samples of our Python owner (%s): our "
                     "failure, not your code's; it is graded again and never charged to you",
                     why ? why : "it gave no reason");
        json_decref(jdoc);
        return r;
    }
    if (r != 0) {
        json_decref(jdoc);
        j->st = status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "Timing failed: the judge accepted no timing samples.");
        return JOB_VERDICT;
    }
    if (round == 0) {
        job_time_record(j, jdoc, &ss);
    } else {
        /* A re-timing batch is judged like the first: one failed re-check
         * or flag takes the speed points of the whole timing. */
        struct score_timing keep = j->in.timing;
        job_time_record(j, jdoc, &ss);
        j->in.timing.recheck_passed = keep.recheck_passed && j->in.timing.recheck_passed;
        if (keep.judge_flag_reason)
            j->in.timing.judge_flag_reason = keep.judge_flag_reason;
        if (keep.copy_gbs > 0) {
            j->in.timing.copy_gbs = keep.copy_gbs;
            j->in.timing.peak_gflops = keep.peak_gflops;
        }
    }
    json_decref(jdoc);
    return JOB_NEXT;
}

/* Baselines on the same GPU, same case (cached): those not timed in this
 * job, and any whose interleaved batch failed. */
static void job_baselines(struct job *j, const struct retime_pool *pool)
{
    json_t *device = NULL;
    struct score_timing *t = &j->in.timing;
    for (size_t i = 0; i < j->lab.nbaselines; i++) {
        double *slot = score_median_slot(t, j->lab.baselines[i]);
        int who = retime_who(j->lab.baselines[i]);
        if (slot && !(who >= 0 && pool->s[who].n > 0))
            *slot = baseline_time(&j->rc, j->lab.baselines[i], j->lab.timing_case, &device);
    }
    if (device && !(t->copy_gbs > 0)) {
        t->copy_gbs = json_number_value(json_object_get(device, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(device, "peak_fp32_gflops"));
    }
    json_decref(device);
    job_clock_mark(&j->pc, "baselines");
}

/* Round k of the timing (a struct retime_source's round): the student's
 * batch and the interleaved baselines', the batch's judge, and on the
 * first round the cached baselines. */
static int job_time_round(void *ctx, int k, struct retime_pool *pool, struct score_timing *t)
{
    struct job_round *jr = ctx;
    struct job *j = jr->j;
    int r;
    assert(pool == jr->pool && t == &j->in.timing);
    if (k > 0) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s (re-timing %d of at most %d: near a tier threshold)",
                 j->lab.timing_case, k, t->retime_bound);
        if (progress_call(j, status_name(STATUS_TIMING), detail) == -ECANCELED)
            return -ECANCELED;
        sandbox_verdict_free(&j->tv);
        memset(&j->tv, 0, sizeof j->tv);
        channel_info_clear(&j->ti);
        memset(&j->ti, 0, sizeof j->ti);
    }
    if ((r = job_time_run(j, jr, k)) != JOB_NEXT || (r = job_time_judge(j, jr, k)) != JOB_NEXT)
        return r;
    assert(jr->hold < 0);
    job_round_cpu_baseline(jr, k); /* the GPU let go: its seconds cost no other job's */
    if (k == 0)
        job_baselines(j, pool);
    if (jr->device && !(t->copy_gbs > 0)) {
        t->copy_gbs = json_number_value(json_object_get(jr->device, "copy_gbs"));
        t->peak_gflops = json_number_value(json_object_get(jr->device, "peak_fp32_gflops"));
    }
    return 0;
}

/* The baselines the rubric's speed lines compare against, timed in this
 * job beside the student's batches. */
static void job_round_baselines(struct job_round *jr)
{
    const struct job *j = jr->j;
    for (size_t i = 0; i < j->rub.nspeed; i++) {
        const char *b = j->rub.speed[i].metric->baseline;
        int have = 0, in_lab = 0;
        for (size_t k = 0; b && k < jr->ncmp; k++)
            have |= strcmp(jr->cmp[k], b) == 0;
        for (size_t k = 0; b && k < j->lab.nbaselines; k++)
            in_lab |= strcmp(j->lab.baselines[k], b) == 0;
        if (b && in_lab && !have && jr->ncmp < sizeof jr->cmp / sizeof jr->cmp[0])
            jr->cmp[jr->ncmp++] = b;
    }
}

/* Every speed line the student was timed for has the baseline it is
 * relative to (or the device's copy bandwidth). A baseline that could not
 * be timed (its batch killed at its limit on a loaded host, its program
 * gone) is ours: the job is a system_error naming it, which the server
 * retries, never a grade without that line's points. In Numba's simulator
 * (CI, hosts without a GPU) there are no baselines and the times mean
 * nothing: the lines stay "not available" there. Returns JOB_NEXT or
 * job_fail's -EAGAIN. */
static int job_time_complete(struct job *j)
{
    const struct score_timing *t = &j->in.timing;
    if (!t->have || !(t->student_ms > 0) || (j->python && python_simulated()))
        return JOB_NEXT;
    for (size_t i = 0; i < j->rub.nspeed; i++) {
        const struct metric *m = j->rub.speed[i].metric;
        assert(m);
        if (isfinite(score_metric(m, t)))
            continue;
        if (m->baseline)
            return job_fail(j, -EAGAIN,
                            "the %s baseline could not be timed on this GPU for %s: our failure, "
                            "not your kernel's; it is graded again and never charged to you",
                            m->baseline, j->lab.timing_case);
        return job_fail(j, -EAGAIN,
                        "the GPU's copy bandwidth was not measured: our failure, not your "
                        "kernel's; it is graded again and never charged to you");
    }
    return JOB_NEXT;
}

int job_time(struct job *j)
{
    if (!job_time_wanted(j))
        return JOB_NEXT;
    if (progress_call(j, status_name(STATUS_TIMING), j->lab.timing_case) == -ECANCELED)
        return -ECANCELED;
    struct retime_pool pool;
    memset(&pool, 0, sizeof pool);
    struct job_round jr = {.j = j, .pool = &pool, .hold = -1};
    job_round_baselines(&jr);
    struct retime_source src = {job_time_round, &jr};
    int bound = j->python ? RETIME_PYTHON_BOUND : RETIME_BOUND;
    int r = retime_run(&j->rub, bound, &src, &pool, &j->in.timing);
    retime_pool_free(&pool);
    json_decref(jr.device);
    if (r == -EINVAL) {
        j->st = status_name(STATUS_RUNTIME_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "Timing failed: the judge accepted no timing samples.");
        return JOB_VERDICT;
    }
    if (r == JOB_NEXT)
        r = job_time_complete(j);
    if (r == JOB_NEXT)
        job_profile(j);
    return r;
}
