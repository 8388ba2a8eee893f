/*
 * metric.c - the table of speed metrics (see metric.h) and the arithmetic
 * every metric shares. A row is all there is to know about a metric: no
 * caller may infer anything from a metric's name.
 */
#include "metric.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The order is the one the rubric error lists them in. A bandwidth share is
 * a fraction of the measured copy bandwidth: a threshold above 1 could only
 * be met by a result flagged as too fast, so the rubric refuses one. */
static const struct metric metric__table[] = {
    {"ratio_to_cublas", "cublas", 1, METRIC_TIME_OVER_BASELINE, 1e12, "x",
     "your time over cuBLAS's time (lower is better)"},
    {"ratio_to_optimized", "optimized", 1, METRIC_TIME_OVER_BASELINE, 1e12, "x",
     "your time over the optimized reference's time (lower is better)"},
    {"speedup_vs_cpu", "cpu", 0, METRIC_BASELINE_OVER_TIME, 1e12, "x",
     "speedup over the CPU baseline (higher is better)"},
    {"speedup_vs_naive", "naive", 0, METRIC_BASELINE_OVER_TIME, 1e12, "x",
     "speedup over the naive reference (higher is better)"},
    {"bandwidth_share", NULL, 0, METRIC_SHARE_OF_COPY, 1.0, "",
     "share of the GPU's measured copy bandwidth (higher is better)"},
};

#define METRIC__N (sizeof metric__table / sizeof metric__table[0])

/* The metric named name, or NULL; see metric.h. */
const struct metric *metric_find(const char *name)
{
    for (size_t i = 0; name && i < METRIC__N; i++)
        if (strcmp(metric__table[i].name, name) == 0)
            return &metric__table[i];
    return NULL;
}

/* The i-th row or NULL; see metric.h. */
const struct metric *metric_at(size_t i)
{
    return i < METRIC__N ? &metric__table[i] : NULL;
}

/* "a, b, c" into buf; see metric.h. */
void metric_names(char *buf, size_t len)
{
    size_t o = 0;
    assert(buf && len > 0);
    buf[0] = '\0';
    for (size_t i = 0; i < METRIC__N && o < len; i++) {
        int n = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", metric__table[i].name);
        if (n < 0)
            return;
        o += (size_t)n;
    }
}

/* The value by the row's formula, NAN on a missing input; see metric.h. */
double metric_value(const struct metric *m, double student_ms, double baseline_ms, double bytes,
                    double copy_gbs)
{
    assert(m);
    if (!(student_ms > 0))
        return NAN;
    switch (m->formula) {
    case METRIC_TIME_OVER_BASELINE:
        return baseline_ms > 0 ? student_ms / baseline_ms : NAN;
    case METRIC_BASELINE_OVER_TIME:
        return baseline_ms > 0 ? baseline_ms / student_ms : NAN;
    case METRIC_SHARE_OF_COPY:
        if (!(bytes > 0) || !(copy_gbs > 0))
            return NAN;
        return bytes / (student_ms * 1e-3) / 1e9 / copy_gbs;
    }
    return NAN;
}

/* Higher-is-better form of value; see metric.h. */
double metric_speedup(const struct metric *m, double value)
{
    assert(m);
    if (!(value > 0) || !isfinite(value))
        return NAN;
    return m->lower_is_better ? 1.0 / value : value;
}

/* "1.50x"; see metric.h. */
void metric_format(const struct metric *m, double value, char *buf, size_t len)
{
    assert(m && buf && len > 0);
    if (!isfinite(value))
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, fabs(value) >= 1 ? "%.2f%s" : "%.3g%s", value, m->unit);
}
