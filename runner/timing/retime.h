/*
 * retime.h - honest noise on the speed score (docs/runner.md, "Noise and
 * re-timing"): the samples of the student's timing batches and of the
 * baselines timed beside them are pooled per program; after each round
 * every speed metric gets its 95% interval, and a metric whose interval
 * holds a tier threshold is timed again, at most a bound of extra rounds.
 * The decision is a pure function of the samples measured: the same
 * samples give the same rounds, tiers and points.
 */
#ifndef CUGRADE_RETIME_H
#define CUGRADE_RETIME_H

#include "rubric.h"
#include "runner/timing/metric.h"

#include <stddef.h>

/* Extra rounds at most (docs/runner.md "Noise and re-timing"; the bound's
 * switch went with docs/log/2026-12-01-switches.md). */
#define RETIME_BOUND 2
/* A Python submission's round restarts the owner's and the tenant's
 * interpreters, imports and JIT: 60-270 s of re-timing per job on an H100
 * with 2 extra rounds; one extra round. */
#define RETIME_PYTHON_BOUND 1

/* The timed programs of a job: the student's, then the baselines. */
enum retime_who {
    RETIME_STUDENT,
    RETIME_NAIVE,
    RETIME_OPTIMIZED,
    RETIME_CUBLAS,
    RETIME_CPU,
    RETIME_NWHO
};

struct retime_series {
    double *x;
    size_t n, cap;
    size_t shared_n;     /* of the n: samples of a batch another job timed (shared) */
    double shared_age_s; /* how old that batch was when taken */
};

/* Every sample of every round, per program. */
struct retime_pool {
    struct retime_series s[RETIME_NWHO];
};

/* The program a baseline name stands for ("naive", "optimized", "cublas",
 * "cpu"), or -1. */
int retime_who(const char *baseline);
/* Append n samples (ms) to who's series. Returns 0 or -ENOMEM. */
int retime_append(struct retime_pool *p, enum retime_who who, const double *x, size_t n);
/* Append the n samples of a batch another job of this GPU timed age_s
 * seconds ago (baseline.h: shared batches); at most one such batch per
 * series. Returns 0, -EEXIST (one is already there) or -ENOMEM. */
int retime_append_shared(struct retime_pool *p, enum retime_who who, const double *x, size_t n,
                         double age_s);
void retime_pool_free(struct retime_pool *p);

/* Medians and spreads of t from the pool: the student's (student_ms,
 * samples, rel_err, student) and each baseline that has samples (its
 * median slot and spread, marked interleaved when the job timed a batch of
 * it itself, shared when it took another job's). Returns 0, or -EINVAL when
 * the student's series has no usable sample. */
int retime_apply(const struct retime_pool *p, struct score_timing *t);

/* The first speed line of r whose metric's 95% interval holds one of its
 * tier thresholds, with a sentence in why; -1 when none is (or the timing
 * earns no speed points anyway: flagged, re-check failed). */
int retime_uncertain(const struct rubric *r, const struct score_timing *t, char *why, size_t len);

/* Where the samples come from: round k (0 = the first timing) appends the
 * student's samples and those of the baselines timed beside them to p,
 * and may fill the rest of t (work, device, re-check). Returns 0 to go
 * on, or anything else to stop (a verdict or an error: returned as is). */
struct retime_source {
    int (*round)(void *ctx, int k, struct retime_pool *p, struct score_timing *t);
    void *ctx;
};

/* Rounds until no speed line is within the noise or `bound` extra rounds
 * were made; t->retimed, retime_bound and retime_reason say what happened.
 * Returns 0, -EINVAL (no usable student sample), or the source's stop. */
int retime_run(const struct rubric *r, int bound, const struct retime_source *src,
               struct retime_pool *p, struct score_timing *t);

#endif
