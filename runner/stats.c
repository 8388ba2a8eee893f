/*
 * stats.c - see stats.h. The confidence interval of the median uses the
 * binomial order-statistics interval with the normal approximation: for n
 * sorted samples the ranks n/2 -+ 1.96*sqrt(n)/2 bound the median with ~95%
 * confidence, whatever the distribution (timings are skewed, so no
 * mean/stddev here).
 */
#include "stats.h"

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

int stats_summarize(const double *samples, size_t n, struct stats_summary *out)
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

    /* 1-based ranks j, k of the interval; fewer than 6 samples cannot give
     * a 95% interval, so the whole range is the (conservative) answer. */
    if (kept < 6) {
        out->lo = s[0];
        out->hi = s[kept - 1];
    } else {
        double half = 1.96 * sqrt((double)kept) / 2.0;
        long j = (long)floor((double)kept / 2.0 - half);
        long k = (long)ceil((double)kept / 2.0 + half) + 1;
        if (j < 1)
            j = 1;
        if (k > (long)kept)
            k = (long)kept;
        out->lo = s[j - 1];
        out->hi = s[k - 1];
    }
    out->rel_err = (out->hi - out->lo) / 2.0 / out->median;
    rc = 0;
fail:
    free(s);
    free(dev);
    return rc;
}
