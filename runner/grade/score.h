/*
 * score.h - the rubric applied to what the pipeline measured
 * (docs/runner.md, "Score"): case verdicts from the judge, sanitizer
 * verdicts, timings and baselines -> the result document of docs/api.md
 * (a superset of Gradescope's results.json).
 */
#ifndef CUGRADE_SCORE_H
#define CUGRADE_SCORE_H

#include <stddef.h>
#include <jansson.h>
#include "rubric.h"
#include "runner/run/verdict.h"
#include "runner/timing/metric.h"

struct hint;

struct score_input {
    const char *lab;
    const char *gpu;
    int rubric_version;
    const char *status;        /* graded | compile_error | rejected | runtime_error | timeout */
    const char *status_message;/* a sentence when status is not graded; may be NULL */
    const char *compile_log;   /* may be NULL */
    const char *rejection_symbol, *rejection_reason;   /* when rejected */
    struct score_case *cases;  size_t ncases;
    struct score_sanitizer *sanitizers; size_t nsanitizers;
    struct score_timing timing;
    /* The classic-bug catalogue's hints (runner/feedback/hint.h); hints_ran 0 when
     * it did not run (then the older per-finding and grid hints). */
    const struct hint *hints; size_t nhints;
    int hints_ran;
};

/* Parse the judge's stdout document {"cases":[...]} into an array of cases.
 * Returns 0 and a malloc'd array (free with score_cases_free), -EINVAL when
 * the document is not of that shape, -ENOMEM. */
int score_cases_from_judge(const json_t *doc, struct score_case **cases, size_t *n);

/* Build the result document. Returns a new reference (caller decrefs), or
 * NULL on ENOMEM. */
json_t *score_result(const struct rubric *r, const struct score_input *in);

#endif
