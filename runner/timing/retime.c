/*
 * retime.c - see retime.h.
 */
#include "runner/timing/retime.h"
#include "runner/config.h"
#include "runner/timing/stats.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const who_names[RETIME_NWHO] = {"student", "naive", "optimized", "cublas",
                                                   "cpu"};

int retime_who(const char *baseline)
{
    for (int i = RETIME_NAIVE; i < RETIME_NWHO; i++)
        if (baseline && strcmp(baseline, who_names[i]) == 0)
            return i;
    return -1;
}

int retime_append(struct retime_pool *p, enum retime_who who, const double *x, size_t n)
{
    assert(who >= 0 && who < RETIME_NWHO);
    struct retime_series *s = &p->s[who];
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n)
            cap *= 2;
        double *nx = realloc(s->x, cap * sizeof *nx);
        if (!nx)
            return -ENOMEM;
        s->x = nx;
        s->cap = cap;
    }
    memcpy(s->x + s->n, x, n * sizeof *x);
    s->n += n;
    return 0;
}

int retime_append_shared(struct retime_pool *p, enum retime_who who, const double *x, size_t n,
                         double age_s)
{
    assert(who > RETIME_STUDENT && who < RETIME_NWHO);
    assert(age_s >= 0);
    struct retime_series *s = &p->s[who];
    if (s->shared_n > 0)
        return -EEXIST;
    int r = retime_append(p, who, x, n);
    if (r == 0) {
        s->shared_n = n;
        s->shared_age_s = age_s;
    }
    return r;
}

void retime_pool_free(struct retime_pool *p)
{
    for (int i = 0; i < RETIME_NWHO; i++)
        free(p->s[i].x);
    memset(p, 0, sizeof *p);
}

/* Summaries of one series at 95% and 97.5% into *sp; its median. */
static int series_spread(const struct retime_series *s, struct score_spread *sp, double *median,
                         double *rel_err)
{
    struct stats_summary a, b;
    int r = stats_summarize_conf(s->x, s->n, 0.95, &a);
    if (r == 0)
        r = stats_summarize_conf(s->x, s->n, 0.975, &b);
    if (r != 0)
        return r;
    sp->lo = a.lo;
    sp->hi = a.hi;
    sp->lo2 = b.lo;
    sp->hi2 = b.hi;
    sp->cov = a.coverage;
    sp->cov2 = b.coverage;
    sp->samples = a.kept;
    *median = a.median;
    if (rel_err)
        *rel_err = a.rel_err;
    return 0;
}

int retime_apply(const struct retime_pool *p, struct score_timing *t)
{
    if (p->s[RETIME_STUDENT].n == 0)
        return -EINVAL;
    int r = series_spread(&p->s[RETIME_STUDENT], &t->student, &t->student_ms, &t->rel_err);
    if (r != 0)
        return -EINVAL;
    t->samples = t->student.samples;
    for (int i = RETIME_NAIVE; i < RETIME_NWHO; i++) {
        struct score_spread *sp = score_spread_slot(t, who_names[i]), tmp = {0};
        double ms;
        if (p->s[i].n == 0 || series_spread(&p->s[i], &tmp, &ms, NULL) != 0)
            continue; /* no batch of it in this job: the cached median stays, exact */
        tmp.interleaved = p->s[i].n > p->s[i].shared_n;
        tmp.shared = p->s[i].shared_n > 0;
        tmp.shared_age_s = tmp.shared ? p->s[i].shared_age_s : 0;
        *sp = tmp;
        *score_median_slot(t, who_names[i]) = ms;
    }
    return 0;
}

int retime_uncertain(const struct rubric *r, const struct score_timing *t, char *why, size_t len)
{
    if (!t->have || !t->recheck_passed || t->judge_flag_reason)
        return -1; /* no speed points whatever the time: nothing to decide */
    for (size_t i = 0; i < r->nspeed; i++) {
        const struct rubric_speed *sp = &r->speed[i];
        double lo, hi, th;
        double conf = score_metric_ci(sp->metric, t, &lo, &hi);
        if (conf > 0 && score_tier_uncertain(sp, lo, hi, &th)) {
            snprintf(why, len,
                     "%s = %.4g, its %.0f%% CI %.4g\u2013%.4g holds the tier threshold %g",
                     sp->metric->name, score_metric(sp->metric, t), floor(conf * 100), lo, hi, th);
            return (int)i;
        }
    }
    return -1;
}

int retime_run(const struct rubric *r, int bound, const struct retime_source *src,
               struct retime_pool *p, struct score_timing *t)
{
    char first[300] = "", why[300];
    assert(bound >= 0);
    t->retime_bound = bound;
    t->retimed = 0;
    t->retime_reason[0] = '\0';
    for (int k = 0;; k++) {
        int rc = src->round(src->ctx, k, p, t);
        if (rc != 0)
            return rc;
        if (retime_apply(p, t) != 0)
            return -EINVAL;
        t->retimed = k;
        int line = retime_uncertain(r, t, why, sizeof why);
        if (line < 0) {
            if (k > 0)
                snprintf(t->retime_reason, sizeof t->retime_reason,
                         "re-timed %d time%s: %s; now clear of every threshold", k,
                         k == 1 ? "" : "s", first);
            return 0;
        }
        if (k == 0)
            snprintf(first, sizeof first, "%s", why);
        if (k >= bound) {
            if (bound == 0)
                snprintf(t->retime_reason, sizeof t->retime_reason,
                         "%s; re-timing is off: the tier is decided by the median", why);
            else
                snprintf(t->retime_reason, sizeof t->retime_reason,
                         "re-timed %d time%s (the most allowed): %s; the tier is decided by "
                         "the median",
                         k, k == 1 ? "" : "s", why);
            return 0;
        }
    }
}
