/*
 * metric.c - see metric.h.
 */
#include "runner/timing/metric.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* The baselines a metric may be relative to (common/metric.c's "baseline")
 * and where a timing keeps each one's median and spread. */
static const struct {
    const char *name;
    size_t median, spread;
} score__baselines[] = {
    {"naive", offsetof(struct score_timing, naive_ms), offsetof(struct score_timing, naive)},
    {"optimized", offsetof(struct score_timing, optimized_ms),
     offsetof(struct score_timing, optimized)},
    {"cublas", offsetof(struct score_timing, cublas_ms), offsetof(struct score_timing, cublas)},
    {"cpu", offsetof(struct score_timing, cpu_ms), offsetof(struct score_timing, cpu)},
};

/* The row of score__baselines named name, or -1. */
static int score__baseline(const char *name)
{
    for (size_t i = 0; name && i < sizeof score__baselines / sizeof score__baselines[0]; i++)
        if (strcmp(score__baselines[i].name, name) == 0)
            return (int)i;
    return -1;
}

double *score_median_slot(struct score_timing *t, const char *name)
{
    int i = score__baseline(name);
    return i < 0 ? NULL : (double *)((char *)t + score__baselines[i].median);
}

struct score_spread *score_spread_slot(struct score_timing *t, const char *name)
{
    int i = score__baseline(name);
    return i < 0 ? NULL : (struct score_spread *)((char *)t + score__baselines[i].spread);
}

double score_metric(const struct metric *m, const struct score_timing *t)
{
    assert(m);
    if (!t->have)
        return NAN;
    int b = score__baseline(m->baseline);
    double base = b < 0 ? NAN : *(const double *)((const char *)t + score__baselines[b].median);
    return metric_value(m, t->student_ms, base, t->bytes, t->copy_gbs);
}

/* The interval of one timing at 95% (or 97.5% when two) as [*lo, *hi];
 * a timing without a spread is taken as exact. */
static void spread_bounds(const struct score_spread *s, double ms, int two, double *lo, double *hi)
{
    if (s->samples > 0) {
        *lo = two ? s->lo2 : s->lo;
        *hi = two ? s->hi2 : s->hi;
    } else {
        *lo = *hi = ms;
    }
}

double score_metric_ci(const struct metric *metric, const struct score_timing *t, double *lo,
                       double *hi)
{
    *lo = *hi = NAN;
    if (!t->have || !(t->student_ms > 0) || t->student.samples == 0)
        return 0;
    const char *base = metric->baseline;
    struct score_timing u = *t;
    const struct score_spread *bs = base ? score_spread_slot(&u, base) : NULL;
    double *bms = base ? score_median_slot(&u, base) : NULL;
    /* One batch of a baseline has no spread to speak of: exact, like a cached one. */
    int two = bs && bs->samples > 1;
    double s[2], b[2];
    spread_bounds(&t->student, t->student_ms, two, &s[0], &s[1]);
    if (bms)
        spread_bounds(bs, *bms, two, &b[0], &b[1]);
    else
        b[0] = b[1] = NAN;
    /* Every metric is monotone in each timing: its extremes are at the
     * corners of the two intervals. */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < (bms ? 2 : 1); k++) {
            u.student_ms = s[i];
            if (bms)
                *bms = b[k];
            double v = score_metric(metric, &u);
            if (!isfinite(v)) {
                *lo = *hi = NAN;
                return 0;
            }
            if (!(v >= *lo))
                *lo = v;
            if (!(v <= *hi))
                *hi = v;
        }
    /* A spread without its coverage (set by hand) is taken at its nominal level. */
    double cs = t->student.cov > 0 ? t->student.cov : 0.95;
    if (two) {
        double c1 = t->student.cov2 > 0 ? t->student.cov2 : 0.975;
        double c2 = bs->cov2 > 0 ? bs->cov2 : 0.975;
        cs = 1 - (1 - c1) - (1 - c2);
    }
    if (cs > 0.95)
        cs = 0.95; /* the level claimed, not the exact one above it */
    return cs > 0 ? cs : 1e-9;
}

int score_tier_uncertain(const struct rubric_speed *sp, double lo, double hi, double *threshold)
{
    if (!sp || !isfinite(lo) || !isfinite(hi))
        return 0;
    const char *tlo = NULL, *thi = NULL;
    double plo = rubric_speed_points(sp, lo, &tlo), phi = rubric_speed_points(sp, hi, &thi);
    if (tlo == thi && plo == phi)
        return 0;
    for (size_t k = 0; k < sp->ntiers; k++) {
        double th = sp->tiers[k].threshold;
        if (th >= lo && th <= hi) {
            if (threshold)
                *threshold = th;
            return 1;
        }
    }
    return 0;
}

double score_floor_ms(const struct score_timing *t)
{
    double f = 0;
    if (t->bytes > 0 && t->copy_gbs > 0)
        f = t->bytes / (t->copy_gbs * 1e9) * 1e3;
    if (t->flops > 0 && t->peak_gflops > 0) {
        double g = t->flops / (t->peak_gflops * 1e9) * 1e3;
        if (g > f)
            f = g;
    }
    return f;
}
