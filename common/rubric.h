/*
 * rubric.h - a lab's rubric (rubrics/<lab>.json, or a version stored by the
 * server). Parsed and validated in one place for both binaries: the server
 * validates admin edits and reads deadlines and limits; the runner scores.
 */
#ifndef CUGRADE_RUBRIC_H
#define CUGRADE_RUBRIC_H

#include <stddef.h>
#include <jansson.h>
#include "lab.h"
#include "metric.h"

enum rubric_late { RUBRIC_LATE_ACCEPT, RUBRIC_LATE_REFUSE };

struct rubric_line {            /* one correctness case */
    char *case_name;
    double points;
    char *visibility;           /* visible | hidden | after_due_date | after_published */
};

struct rubric_tier {
    char *name;
    double threshold;
    double points;
};

#define RUBRIC_MAX_TIERS 16 /* a speed line's tiers at most (a handout lists them all) */

struct rubric_speed {
    char *name;
    const struct metric *metric; /* a row of the metric table (static, not freed) */
    int requires_correct;
    struct rubric_tier *tiers;  size_t ntiers;
};

struct rubric {
    char *lab;
    double opens, due, hard_deadline;   /* Unix seconds; 0 = unset */
    enum rubric_late late_policy;
    double penalty_percent_per_day;
    int max_in_flight, max_per_hour, max_attempts;
    struct rubric_line *correctness;    size_t ncorrectness;
    double sanitizer_points;
    int sanitize_memcheck, sanitize_racecheck;
    struct rubric_speed *speed;         size_t nspeed;
    int profile;                        /* profiling hints (default 1; "profile": false) */
    double max_score;                   /* derived */
};

/* Parse and validate a rubric document. lab may be NULL (then case names are
 * not checked against the lab). Returns 0, or -EINVAL with a sentence in err
 * naming the bad field ("correctness[3].points: must be a number >= 0"). */
int rubric_parse(const json_t *doc, const struct lab *lab, struct rubric *out,
                 char *err, size_t errlen);

/* Points of the best tier met by value for this speed line (0 if none). */
double rubric_speed_points(const struct rubric_speed *s, double value, const char **tier_name);

/* The tiers of s as a handout says them, the most points first: "**100x or
 * more: 15 points**, 30x or more: 8" (a lower-is-better metric "within
 * 2x", a share "80%"). Into buf (truncated, always terminated). */
void rubric_tiers_text(const struct rubric_speed *s, char *buf, size_t len);

/* text (a lab's handout) with every "{{tiers:METRIC}}" replaced by
 * rubric_tiers_text of r's speed line of that metric, or "no speed points"
 * when r (may be NULL) has none: the handout says the rubric's tiers as
 * they are now, never a copy that a rubric change left behind. malloc'd;
 * NULL when text is NULL or out of memory. */
char *rubric_handout(const struct rubric *r, const char *text);

void rubric_free(struct rubric *r);

/* ISO 8601 UTC ("2026-12-04T23:59:00Z") <-> Unix seconds. parse returns 0 or -EINVAL. */
int rubric_time_parse(const char *s, double *out);
void rubric_time_format(double t, char *buf, size_t len);

#endif
