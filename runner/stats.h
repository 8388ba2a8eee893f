/*
 * stats.h - timing statistics for the runner: median, a distribution-free
 * confidence interval of the median from order statistics, the relative
 * error of the median, and outlier removal. The harness computes a median
 * too; the runner recomputes everything here from the raw samples, so one
 * implementation decides what a timing is worth.
 */
#ifndef CUGRADE_STATS_H
#define CUGRADE_STATS_H

#include <stddef.h>

struct stats_summary {
    size_t n;          /* samples given (finite, > 0) */
    size_t kept;       /* samples left after outlier removal */
    size_t outliers;   /* n - kept */
    double median;     /* median of the kept samples */
    double lo, hi;     /* ~95% confidence interval of the median (order statistics) */
    double rel_err;    /* (hi - lo) / 2 / median: the half-width relative to the median */
    double min, max;   /* of the kept samples */
    double mad;        /* median absolute deviation of all samples */
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

#endif
