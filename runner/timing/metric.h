/*
 * metric.h - a job's timings and what a rubric's speed line reads from
 * them: the student's and each baseline's median and its spread (docs/
 * runner.md, "Noise and re-timing"), a metric's value and interval (a row
 * of common/metric.c's table), whether a tier threshold lies within the
 * noise, and the physical floor a time cannot beat.
 */
#ifndef CUGRADE_METRIC_RUNNER_H
#define CUGRADE_METRIC_RUNNER_H

#include <stddef.h>
#include "rubric.h"

/* A timing faster than this share of the physical floor is flagged: the
 * floor uses the copy bandwidth measured on the same GPU (a read-mostly
 * kernel can beat a copy by a little, not by 20%) and the FP32 peak. */
#define SCORE_FLOOR_FACTOR 0.8

/* The spread of one timed median (docs/runner.md, "Noise and re-timing"):
 * the distribution-free interval of the median from order statistics at
 * 95%, and at 97.5% (lo2, hi2) for a metric of two measured timings, so
 * that the two together hold at >= 95% (Bonferroni). samples == 0: no
 * spread known (a cached baseline: its median only). */
struct score_spread {
    double lo, hi;   /* 95% interval of the median */
    double lo2, hi2; /* 97.5% interval of the median */
    size_t samples;
    int interleaved;     /* timed in this job, alternating with the student's batches */
    double cov, cov2;    /* the exact coverage of [lo, hi] and [lo2, hi2]: below the
                                  nominal 95% / 97.5% with too few samples (whole range) */
    int shared;          /* holds a batch another job of this GPU timed (baseline.h) */
    double shared_age_s; /* that batch's age when taken, s */
};

struct score_timing {
    int have; /* 0: not timed */
    const char *case_name;
    double student_ms; /* median, runner's statistics */
    size_t samples;
    double rel_err;
    int recheck_passed; /* the re-check on fresh inputs after timing */
    double naive_ms, optimized_ms, cublas_ms, cpu_ms; /* NAN when absent */
    double bytes, flops;                              /* work of the timed case; 0 when unknown */
    double copy_gbs, peak_gflops;                     /* from the device record */
    const char *judge_flag_reason; /* the judge flagged the time (past the floor); NULL if not */
    /* Noise (runner/timing/retime.c): each timing's spread, and the re-timing. */
    struct score_spread student, naive, optimized, cublas, cpu;
    int retimed;             /* extra timing rounds made because a metric sat on a threshold */
    int retime_bound;        /* the most that were allowed (0: re-timing off) */
    char retime_reason[400]; /* why, and how it ended; "" when not re-timed */
};

/* Value of a rubric metric (a row of common/metric.c's table) from the
 * timing: the row's formula over the student's median and its baseline's
 * (score_median_slot), or the case's bytes and the copy bandwidth; NAN when
 * it cannot be computed (not timed, baseline or work missing). */
double score_metric(const struct metric *metric, const struct score_timing *t);

/* The confidence interval [lo, hi] of a metric (lo <= hi whichever way
 * the metric goes): from the student's interval and, for a metric against
 * a baseline, the baseline's (both measured: each at 97.5%, >= 95%
 * jointly; a cached baseline, or one of a single sample, counts as
 * exact). Returns the confidence
 * it holds at (0.95, less when a timing had too few samples for its
 * nominal level: the exact coverages, joined by Bonferroni), or 0 with
 * lo = hi = NAN when no spread is known. */
double score_metric_ci(const struct metric *metric, const struct score_timing *t, double *lo,
                       double *hi);

/* The spread slot of t for a baseline name ("naive", "optimized",
 * "cublas", "cpu"), or NULL. */
struct score_spread *score_spread_slot(struct score_timing *t, const char *name);

/* The median slot of t for baseline name ("naive", "optimized", "cublas",
 * "cpu"), or NULL for another name. */
double *score_median_slot(struct score_timing *t, const char *name);

/* 1 when a tier threshold of line sp lies inside [lo, hi] (the tier met
 * at lo and at hi differ): the tier is within the noise. *threshold gets
 * that threshold (the first such in the rubric's order). */
int score_tier_uncertain(const struct rubric_speed *sp, double lo, double hi, double *threshold);

/* The fastest time the GPU could physically do the timed case in
 * (max(bytes / copy bandwidth, flops / peak)), in ms; 0 when unknown. */
double score_floor_ms(const struct score_timing *t);

#endif
