/*
 * runner_stats.c - unit tests for runner/timing/stats.c on canned timing samples:
 * median, outlier removal, the order-statistics interval of the median and
 * its relative error. Prints TAP lines.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "runner/timing/stats.h"

#include "tests/unit/tap.h"

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

int main(void)
{
    struct stats_summary s;

    double odd[] = {3, 1, 2};
    double even[] = {4, 1, 3, 2};
    check(stats_median(odd, 3) == 2, "median of an odd count is the middle sample");
    check(stats_median(even, 4) == 2.5, "median of an even count averages the middle two");
    check(odd[0] == 3 && odd[1] == 1, "median leaves its input in place");
    check(isnan(stats_median(odd, 0)), "median of nothing is NaN");

    /* 1..100 ms: ranks 40 and 61 bound the median at 95%. */
    double seq[100];
    for (int i = 0; i < 100; i++)
        seq[i] = i + 1;
    check(stats_summarize(seq, 100, &s) == 0, "summarize 100 samples");
    check(s.median == 50.5, "median of 1..100 is 50.5");
    check(s.lo == 40 && s.hi == 61, "95% interval of the median is [x(40), x(61)]");
    check(near(s.rel_err, 21.0 / 2 / 50.5, 1e-12), "relative error is the half-width over the median");
    check(s.outliers == 0, "a uniform spread has no outliers");

    /* A tight kernel (1.000..1.019 ms) with two preempted samples. */
    double t[22];
    for (int i = 0; i < 20; i++)
        t[i] = 1.0 + 0.001 * i;
    t[20] = 7.5;
    t[21] = 3.0;
    check(stats_summarize(t, 22, &s) == 0, "summarize samples with outliers");
    check(s.outliers == 2 && s.kept == 20, "two far samples are removed as outliers");
    check(near(s.median, 1.0095, 1e-9), "the median ignores the outliers");
    check(s.max < 1.02, "the kept maximum is a real sample");
    check(s.rel_err < 0.01, "a tight kernel times under 1% relative error");

    /* Noisy samples: relative error well above 1%, so the harness must go on. */
    double noisy[10] = {1.0, 1.3, 0.9, 1.2, 1.1, 0.8, 1.25, 0.95, 1.15, 1.05};
    check(stats_summarize(noisy, 10, &s) == 0 && s.rel_err > 0.05,
          "noisy samples report a large relative error");

    /* A very tight kernel: 5 MADs is a hair, but nothing within 5% goes. */
    double tight[40];
    for (int i = 0; i < 40; i++)
        tight[i] = 1.0 + (i % 2 ? 0.0001 : 0.0) + (i < 10 ? 0.01 : 0);
    check(stats_summarize(tight, 40, &s) == 0 && s.outliers == 0,
          "samples within 5% of the median are never outliers");

    double same[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    check(stats_summarize(same, 8, &s) == 0 && s.rel_err == 0 && s.outliers == 0,
          "identical samples: zero error, no outliers");

    double bad[5] = {NAN, -1, 0, INFINITY, 4};
    check(stats_summarize(bad, 5, &s) == 0 && s.n == 1 && s.median == 4,
          "NaN, infinite and non-positive samples are dropped");
    check(stats_summarize(bad, 4, &s) == -EINVAL, "no usable sample is -EINVAL");

    double few[3] = {1.0, 1.2, 1.1};
    check(stats_summarize(few, 3, &s) == 0 && s.lo == 1.0 && s.hi == 1.2,
          "under 6 samples the interval is the whole range");

    /* The exact binomial interval of the median. */
    double lo, hi, cov;
    cov = stats_median_ci(seq, 100, 0.95, &lo, &hi);
    check(lo == 40 && hi == 61, "n = 100 at 95%: ranks 40 and 61, as the normal approximation");
    ok(fabs(cov - 0.9648) < 5e-4, "its exact coverage is 1 - 2 P(B <= 39) = 0.9648 (got %.5f)", cov);
    double s9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    cov = stats_median_ci(s9, 9, 0.95, &lo, &hi);
    ok(lo == 2 && hi == 8 && fabs(cov - (1 - 2 * 10.0 / 512)) < 1e-12,
       "n = 9 at 95%%: [x(2), x(8)], coverage 1 - 2 * 10/512 (got [%g, %g], %.5f)", lo, hi, cov);
    cov = stats_median_ci(s9, 5, 0.95, &lo, &hi);
    ok(lo == 1 && hi == 5 && fabs(cov - 0.9375) < 1e-12,
       "n = 5 cannot reach 95%%: the whole range, and its coverage 0.9375 says so (%.4f)", cov);
    double l2, h2;
    stats_median_ci(seq, 100, 0.975, &l2, &h2);
    check(l2 <= 40 && h2 >= 61 && (l2 < 40 || h2 > 61), "97.5% is wider than 95%");
    check(isnan(stats_median_ci(seq, 0, 0.95, &lo, &hi)) && isnan(lo), "no samples: NaN");
    double big[3001];
    for (int i = 0; i < 3001; i++)
        big[i] = i;
    cov = stats_median_ci(big, 3001, 0.95, &lo, &hi);
    ok(cov >= 0.95 && cov < 0.953 && fabs((hi - lo) / 2 - 1.96 * sqrt(3001.0) / 2) < 2,
       "n = 3001: coverage just above 95%% (%.4f), half-width ~ 1.96 sqrt(n)/2 ranks (%g)", cov,
       (hi - lo) / 2);
    check(stats_summarize(seq, 100, &s) == 0 && fabs(s.coverage - 0.9648) < 5e-4,
          "the summary reports the coverage of its interval");
    check(stats_summarize_conf(seq, 100, 0.975, &s) == 0 && s.lo == l2 && s.hi == h2,
          "a summary at 97.5% uses the 97.5% interval");

    return failures ? 1 : 0;
}
