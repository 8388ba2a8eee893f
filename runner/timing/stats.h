/*
 * stats.h - timing statistics for the runner: median, a distribution-free
 * confidence interval of the median from order statistics (exact binomial
 * ranks), the relative error of the median, and outlier removal. The harness computes a median
 * too; the runner recomputes everything here from the raw samples, so one
 * implementation decides what a timing is worth.
 */
#ifndef CUGRADE_STATS_H
#define CUGRADE_STATS_H

#include <stddef.h>

struct stats_summary {
    size_t n;        /* samples given (finite, > 0) */
    size_t kept;     /* samples left after outlier removal */
    size_t outliers; /* n - kept */
    double median;   /* median of the kept samples */
    double lo, hi;   /* 95% confidence interval of the median (order statistics) */
    double coverage; /* the interval's exact coverage (>= 0.95 unless too few samples) */
    double rel_err;  /* (hi - lo) / 2 / median: the half-width relative to the median */
    double min, max; /* of the kept samples */
    double mad;      /* median absolute deviation of all samples */
};

/* Median of n values (copied and sorted; the input is not modified).
 * Returns NAN when n == 0. */
double stats_median(const double *x, size_t n);

/* Summarize timing samples. Samples that are not finite or not > 0 are
 * dropped first (a broken clock, not a fast kernel). Outliers are samples
 * more than 5 scaled MADs above the median (timing noise is one-sided:
 * preemption, clock ramps, another tenant), removed once. Returns 0, or
 * -EINVAL when no usable sample is left, or -ENOMEM. A sample within 5% of
 * the median is never an outlier. */
int stats_summarize(const double *samples, size_t n, struct stats_summary *out);

/* The distribution-free confidence interval of the median of n sorted
 * samples: [x(j), x(n+1-j)] with the largest rank j whose exact coverage
 * 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2), is at least conf (0 < conf < 1).
 * Whatever the distribution of the samples (they must be independent).
 * When even the whole range falls short (n small: 1 - 2^(1-n) < conf) the
 * whole range is returned. Returns the coverage achieved; NAN when n == 0. */
double stats_median_ci(const double *sorted, size_t n, double conf, double *lo, double *hi);

/* stats_summarize at confidence conf instead of 0.95 (the interval and
 * rel_err follow it; outliers are removed the same way). */
int stats_summarize_conf(const double *samples, size_t n, double conf, struct stats_summary *out);

#endif
