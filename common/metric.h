/*
 * metric.h - the speed metrics a rubric's speed line may name, in one
 * table (common/metric.c): what each is relative to, which way is better,
 * how it is computed from the timings, its unit and how it is shown.
 *
 * Everything that needs to know a metric asks the table: rubric parsing
 * (which names exist, the largest meaningful threshold), scoring (the value,
 * the tier's direction, the scoreboard's speedup), re-timing and the
 * job's timing rounds (which baseline to time), the pages and, through the
 * result JSON's "label" and "unit", the client. Adding a metric is one row
 * in metric.c (and, for a new kind of baseline, a timing slot in
 * runner/grade/score.c).
 */
#ifndef CUGRADE_METRIC_H
#define CUGRADE_METRIC_H

#include <stddef.h>

enum metric_formula {
    METRIC_TIME_OVER_BASELINE, /* student time / baseline time */
    METRIC_BASELINE_OVER_TIME, /* baseline time / student time */
    METRIC_SHARE_OF_COPY,      /* achieved bytes/s / the device's measured copy bandwidth */
};

struct metric {
    const char *name;            /* as a rubric spells it: "ratio_to_cublas" */
    const char *baseline;        /* the timing it is relative to ("cublas", "optimized",
                                    "naive", "cpu"); NULL: the device's copy bandwidth */
    int lower_is_better;         /* a tier is met at value <= threshold (else >=) */
    enum metric_formula formula;
    double max_threshold;        /* the largest tier threshold that can be met honestly */
    const char *unit;            /* printed after the value: "x", or "" for a fraction */
    const char *label;           /* what the value is, for people */
};

/* The metric a rubric names, or NULL when there is none of that name
 * (name may be NULL). The entry is static: never freed. */
const struct metric *metric_find(const char *name);

/* The i-th metric of the table (i from 0), or NULL past its end. */
const struct metric *metric_at(size_t i);

/* Every metric's name, ", "-separated, into buf (truncated to len, always
 * terminated): for the error a rubric with an unknown metric gets. */
void metric_names(char *buf, size_t len);

/* The metric's value from the student's time and the baseline's (both ms),
 * or, for a share, the case's bytes and the device's copy bandwidth (GB/s);
 * NAN when an input it needs is missing (not > 0). */
double metric_value(const struct metric *m, double student_ms, double baseline_ms, double bytes,
                    double copy_gbs);

/* value turned so that higher is better (the scoreboard's "speedup"):
 * 1/value for a lower-is-better metric; NAN when value is not > 0. */
double metric_speedup(const struct metric *m, double value);

/* value as people read it: 2 decimals from 1 up, else 3 significant
 * digits, then the unit ("1.50x", "0.612"); "n/a" when not finite. */
void metric_format(const struct metric *m, double value, char *buf, size_t len);

#endif
