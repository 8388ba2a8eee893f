/*
 * stats.c - see stats.h. The confidence interval of the median is the
 * binomial order-statistics interval with exact ranks: the number of
 * samples below the true median is Binomial(n, 1/2), so [x(j), x(n+1-j)]
 * holds it with probability 1 - 2 P(B <= j-1), whatever the distribution
 * (timings are skewed, so no mean/stddev here). For large n the ranks are
 * those of the normal approximation n/2 -+ 1.96 sqrt(n)/2 that the
 * harness and owner.py use to decide when to stop sampling.
 */
#include "runner/timing/stats.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of an already sorted array. */
static double sorted_median(const double *s, size_t n)
{
    if (n == 0)
        return NAN;
    if (n % 2)
        return s[n / 2];
    return 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double stats_median(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return NAN;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double m = sorted_median(s, n);
    free(s);
    return m;
}

/* P(B <= k) for B ~ Binomial(n, 1/2), summed in log space (n up to
 * millions without overflow). */
static double binom_half_cdf(size_t n, size_t k)
{
    double lgn = lgamma((double)n + 1), ln2 = log(2.0), p = 0;
    for (size_t i = 0; i <= k && i <= n; i++)
        p += exp(lgn - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) - (double)n * ln2);
    return p > 1 ? 1 : p;
}

double stats_median_ci(const double *sorted, size_t n, double conf, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n == 0)
        return NAN;
    assert(conf > 0 && conf < 1);
    /* Rank j (1-based) grows while the interval still covers conf; the
     * search starts near the normal approximation's rank and walks, so
     * large pools cost O(sqrt(n)) cdf terms, not O(n^2). */
    size_t j = 1;
    double cov = 1 - 2 * binom_half_cdf(n, 0);
    if (cov >= conf) {
        double z = 3.0; /* start below any rank a conf <= 0.9973 allows */
        double guess = floor((double)n / 2.0 - z * sqrt((double)n) / 2.0);
        if (guess > 1) {
            double c = 1 - 2 * binom_half_cdf(n, (size_t)guess - 1);
            if (c >= conf) { /* else walk from rank 1 */
                j = (size_t)guess;
                cov = c;
            }
        }
        while (j + 1 <= n / 2) {
            double c = 1 - 2 * binom_half_cdf(n, j);
            if (c < conf)
                break;
            j++;
            cov = c;
        }
    }
    *lo = sorted[j - 1];
    *hi = sorted[n - j];
    return cov;
}

int stats_summarize(const double *samples, size_t n, struct stats_summary *out)
{
    return stats_summarize_conf(samples, n, 0.95, out);
}

int stats_summarize_conf(const double *samples, size_t n, double conf, struct stats_summary *out)
{
    memset(out, 0, sizeof *out);
    out->median = out->lo = out->hi = out->rel_err = NAN;
    double *s = malloc((n ? n : 1) * sizeof *s);
    double *dev = malloc((n ? n : 1) * sizeof *dev);
    int rc = -ENOMEM;
    if (!s || !dev)
        goto fail;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(samples[i]) && samples[i] > 0)
            s[m++] = samples[i];
    out->n = m;
    rc = -EINVAL;
    if (m == 0)
        goto fail;
    qsort(s, m, sizeof *s, cmp_double);
    double med = sorted_median(s, m);
    for (size_t i = 0; i < m; i++)
        dev[i] = fabs(s[i] - med);
    qsort(dev, m, sizeof *dev, cmp_double);
    out->mad = sorted_median(dev, m);

    /* 1.4826 * MAD estimates sigma for normal noise; 5 sigma above the
     * median is a sample that something else disturbed. With MAD == 0 (many
     * identical samples, a coarse clock) nothing is called an outlier. */
    size_t kept = m;
    if (out->mad > 0 && m >= 5) {
        /* ...and never closer than 5% to the median: with a very tight
         * distribution, 5 MADs is a hair, and dropping half the samples
         * would shrink the interval below what the clock can tell. */
        double cut = med + 5.0 * 1.4826 * out->mad;
        if (cut < med * 1.05)
            cut = med * 1.05;
        while (kept > 0 && s[kept - 1] > cut)
            kept--;
    }
    out->kept = kept;
    out->outliers = m - kept;
    out->median = sorted_median(s, kept);
    out->min = s[0];
    out->max = s[kept - 1];

    /* Too few samples for conf (n <= 5 at 95%): the whole range, and its
     * coverage says how much less than conf it is. */
    out->coverage = stats_median_ci(s, kept, conf, &out->lo, &out->hi);
    out->rel_err = (out->hi - out->lo) / 2.0 / out->median;
    rc = 0;
fail:
    free(s);
    free(dev);
    return rc;
}
