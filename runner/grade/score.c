/*
 * score.c - see score.h.
 */
#include "runner/grade/score.h"
#include "runner/feedback/hint.h"
#include "status.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num_or(const json_t *o, const char *k, double def)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : def;
}

int score_cases_from_judge(const json_t *doc, struct score_case **cases, size_t *n)
{
    const json_t *arr = json_object_get(doc, "cases");
    *cases = NULL;
    *n = 0;
    if (!json_is_array(arr))
        return -EINVAL;
    size_t m = json_array_size(arr);
    struct score_case *c = calloc(m ? m : 1, sizeof *c);
    if (!c)
        return -ENOMEM;
    for (size_t i = 0; i < m; i++) {
        const json_t *e = json_array_get(arr, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *p = json_object_get(e, "passed");
        if (!json_is_object(e) || !name || !json_is_boolean(p)) {
            score_cases_free(c, i);
            return -EINVAL;
        }
        const char *msg = json_string_value(json_object_get(e, "message"));
        c[i].name = strdup(name);
        c[i].message = msg ? strdup(msg) : NULL;
        if (c[i].message) /* the student's exception text may be in it */
            score_text_clean(c[i].message, strlen(c[i].message) + 1, c[i].message,
                             strlen(c[i].message), 0);
        if (!c[i].name || (msg && !c[i].message)) {
            score_cases_free(c, i + 1);
            return -ENOMEM;
        }
        c[i].ran = 1;
        c[i].passed = json_is_true(p);
        c[i].max_abs_err = num_or(e, "max_abs_err", NAN);
        c[i].max_rel_err = num_or(e, "max_rel_err", NAN);
        c[i].first_bad_index = (long long)num_or(e, "first_bad_index", -1);
        c[i].unwritten = (long long)num_or(e, "unwritten", -1);
        /* A one-value output's answer and reference (the reduction's
         * sum): the catalogue's float32-saturation and grid-coverage
         * read them. got null: NaN. */
        c[i].have_value = json_is_number(json_object_get(e, "expected"));
        c[i].got = num_or(e, "got", NAN);
        c[i].expected = num_or(e, "expected", NAN);
    }
    *cases = c;
    *n = m;
    return 0;
}

static const struct score_case *case_find(const struct score_input *in, const char *name)
{
    for (size_t i = 0; i < in->ncases; i++)
        if (in->cases[i].name && strcmp(in->cases[i].name, name) == 0)
            return &in->cases[i];
    return NULL;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *test_new(const char *name, double score, double max, int passed,
                        const char *output, const char *visibility)
{
    return json_pack("{s:s, s:f, s:f, s:s, s:s, s:s}", "name", name, "score", score,
                     "max_score", max, "status", passed ? "passed" : "failed", "output",
                     output ? output : "", "visibility", visibility ? visibility : "visible");
}

/* The one-line feedback of a case for tests[].output. */
static void case_output(const struct score_case *c, char *buf, size_t len)
{
    if (!c) {
        snprintf(buf, len, "not run");
        return;
    }
    if (!c->ran) {
        snprintf(buf, len, "%s", c->message ? c->message : "not run: the program stopped before this case");
        return;
    }
    int o = snprintf(buf, len, "%s", c->passed ? "correct" : "wrong");
    if (isfinite(c->max_abs_err) && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, "; max abs err %.3g", c->max_abs_err);
    if (isfinite(c->max_rel_err) && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, ", max rel err %.3g", c->max_rel_err);
    if (c->first_bad_index >= 0 && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, "; first bad index %lld", c->first_bad_index);
    if (c->unwritten > 0 && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o,
                      "; %lld outputs were never written (your grid does not cover all elements)",
                      c->unwritten);
    if (c->message && *c->message && o >= 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, "; %s", c->message);
}

/* The catalogue's hints about case name, folded into its feedback line. */
static void case_hints(const struct score_input *in, const char *name, char *buf, size_t len)
{
    size_t o = strlen(buf);
    for (size_t i = 0; i < in->nhints && o < len; i++)
        if (in->hints[i].case_name[0] && strcmp(in->hints[i].case_name, name) == 0) {
            int w = snprintf(buf + o, len - o, " Hint: %s", in->hints[i].text);
            if (w < 0)
                break;
            o += (size_t)w;
        }
}

/* cugrade.hint_details: the catalogue's hints with their ids and cases.
 * Returns a new reference, or NULL (ENOMEM). */
static json_t *hint_details(const struct score_input *in)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < in->nhints; i++) {
        const struct hint *h = &in->hints[i];
        if (json_array_append_new(a, json_pack("{s:s, s:o, s:s}", "id", h->id, "case",
                                               h->case_name[0] ? json_string(h->case_name)
                                                               : json_null(),
                                               "text", h->text))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static int add_hint(json_t *hints, const char *h)
{
    size_t i;
    json_t *v;
    json_array_foreach(hints, i, v) if (strcmp(json_string_value(v), h) == 0) return 0;
    return json_array_append_new(hints, json_string(h));
}

/* The feedback of a speed line that earned its tier: the value, its 95%
 * interval, the time it came from, the re-timing. */
static void speed_message(const struct rubric_speed *sp, const struct score_timing *t, double v,
                          const char *tier, char *buf, size_t len)
{
    char a[32], b[32], c[32], ci[160] = "", th_s[32], tail[200] = "";
    double lo, hi, th = NAN;
    metric_format(sp->metric, v, a, sizeof a);
    double conf = score_metric_ci(sp->metric, t, &lo, &hi);
    if (conf > 0) {
        metric_format(sp->metric, lo, b, sizeof b);
        metric_format(sp->metric, hi, c, sizeof c);
        snprintf(ci, sizeof ci, " (%.0f%% CI %s\u2013%s%s)", floor(conf * 100), b, c,
                 conf < 0.95 ? ": too few samples for 95%" : "");
        if (score_tier_uncertain(sp, lo, hi, &th)) {
            snprintf(th_s, sizeof th_s, "%g", th);
            snprintf(tail, sizeof tail,
                     "; the threshold %s is within the noise%s: decided by the median", th_s,
                     t->retimed ? " even after re-timing" : "");
        }
    }
    int o = snprintf(buf, len, "%s = %s%s; %.4g ms, median of %zu samples", sp->metric->name, a,
                     ci,
                     t->student_ms, t->samples);
    if (t->retimed > 0 && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, ", re-timed %d time%s", t->retimed,
                      t->retimed == 1 ? "" : "s");
    if (o >= 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, "%s: %s", tail, tier ? tier : "no tier met");
}

/* speed[] entry: the line, its value and 95% interval, tier, points, and
 * how the metric reads (the table's label, unit and direction) so that a
 * client shows it without a copy of the table. */
static json_t *speed_entry(const struct rubric_speed *sp, const struct score_timing *t, double v,
                           const char *tier, double pts, double best)
{
    double lo = NAN, hi = NAN;
    double conf = score_metric_ci(sp->metric, t, &lo, &hi);
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:s?, s:f, s:f}", "name",
                     sp->name, "metric", sp->metric->name, "label", sp->metric->label, "unit",
                     sp->metric->unit, "lower_is_better", sp->metric->lower_is_better, "value",
                     num_or_null(v), "ci_low", num_or_null(lo), "ci_high", num_or_null(hi),
                     "ci_confidence", num_or_null(conf > 0 ? conf : NAN), "tier", tier, "points",
                     pts, "max_points", best);
}

/* One timing of the job for timing.timings[]: median and its 95% interval;
 * shared_age_s: the age of a batch another job of this GPU timed (null
 * when every batch was this job's own, or cached). */
static json_t *timing_entry(const char *name, double ms, const struct score_spread *s)
{
    int known = s->samples > 0;
    return json_pack("{s:s, s:o, s:o, s:o, s:I, s:b, s:o}", "name", name, "median_ms",
                     num_or_null(ms), "ci_low", num_or_null(known ? s->lo : NAN), "ci_high",
                     num_or_null(known ? s->hi : NAN), "samples", (json_int_t)s->samples,
                     "interleaved", s->interleaved, "shared_age_s",
                     num_or_null(s->shared ? s->shared_age_s : NAN));
}

/* The noise part of the timing object: each timing's spread, the method,
 * the re-timing and why. */
static int timing_noise(json_t *timing, const struct score_timing *t)
{
    json_t *arr = json_array();
    static const char *const names[] = {"naive", "optimized", "cublas", "cpu"};
    const double ms[] = {t->naive_ms, t->optimized_ms, t->cublas_ms, t->cpu_ms};
    const struct score_spread *sp[] = {&t->naive, &t->optimized, &t->cublas, &t->cpu};
    if (!arr || json_array_append_new(arr, timing_entry("student", t->student_ms, &t->student)))
        goto fail;
    for (size_t i = 0; i < 4; i++)
        if (isfinite(ms[i]) && json_array_append_new(arr, timing_entry(names[i], ms[i], sp[i])))
            goto fail;
    int known = t->student.samples > 0;
    if (json_object_set_new(timing, "median_ms", num_or_null(t->student_ms)) ||
        json_object_set_new(timing, "ci_low", num_or_null(known ? t->student.lo : NAN)) ||
        json_object_set_new(timing, "ci_high", num_or_null(known ? t->student.hi : NAN)) ||
        json_object_set_new(timing, "ci_method",
                            json_string("distribution-free 95% interval of the median from "
                                        "order statistics (exact binomial ranks); a metric of "
                                        "two measured timings combines their 97.5% intervals")) ||
        json_object_set_new(timing, "retimed", json_integer(t->retimed)) ||
        json_object_set_new(timing, "retime_bound", json_integer(t->retime_bound)) ||
        json_object_set_new(timing, "retime_reason",
                            t->retime_reason[0] ? json_string(t->retime_reason) : json_null()))
        goto fail;
    return json_object_set_new(timing, "timings", arr) ? -1 : 0; /* arr is taken, even then */
fail:
    json_decref(arr);
    return -1;
}

/* The result document being built: score_result's steps fill it in, in
 * this order. Each json_t is a new reference that stays here until
 * result_document hands it to the document (then NULL). */
struct result {
    const struct rubric *r;
    const struct score_input *in;
    json_t *tests, *cases, *sans, *hints, *speed, *timing;
    double score, max;          /* the tests' sums, added in the tests' order */
    int all_correct;            /* no correctness case failed (requires_correct) */
    int graded;                 /* in->status is graded */
    double floor_ms;            /* score_floor_ms of the timing, 0 when unknown */
    int flagged;                /* the timing is not rewarded */
    char flag_reason[512];      /* why, when flagged */
    double primary;             /* the first speed line's value, NAN when none */
    const struct metric *primary_metric; /* its metric, NULL when none */
    double speedup;             /* the scoreboard's */
    char summary[2048];
};

/* The catalogue's hints first: they name the bug (runner/feedback/hint.h). */
static void result_catalogue_hints(struct result *res)
{
    for (size_t i = 0; i < res->in->nhints; i++)
        add_hint(res->hints, res->in->hints[i].text);
}

/* Correctness lines: one test per rubric case, with its feedback and the
 * catalogue's hints about it. Clears all_correct when one failed. Returns 0
 * or -ENOMEM. */
static int result_correctness(struct result *res)
{
    const struct rubric *r = res->r;
    const struct score_input *in = res->in;
    char buf[2048];

    for (size_t i = 0; i < r->ncorrectness; i++) {
        const struct rubric_line *l = &r->correctness[i];
        const struct score_case *c = case_find(in, l->case_name);
        int passed = c && c->ran && c->passed;
        if (!passed)
            res->all_correct = 0;
        char name[300];
        snprintf(name, sizeof name, "correctness: %s", l->case_name);
        if (!c && in->status &&
            (status_parse(in->status) == STATUS_COMPILE_ERROR ||
             status_parse(in->status) == STATUS_REJECTED))
            snprintf(buf, sizeof buf, "not run: %s", in->status);
        else
            case_output(c, buf, sizeof buf);
        if (c && !passed)
            case_hints(in, c->name, buf, sizeof buf);
        double pts = passed ? l->points : 0;
        res->score += pts;
        res->max += l->points;
        if (json_array_append_new(res->tests,
                                  test_new(name, pts, l->points, passed, buf, l->visibility)))
            return -ENOMEM;
        if (c && c->ran && !c->passed && c->unwritten > 0 && !in->hints_ran)
            add_hint(res->hints, "Some outputs were never written: check that your grid covers "
                                 "every element (round the block count up: `(n + block - 1) / "
                                 "block`).");
    }
    /* No correctness lines: correct when the judge reported a case. */
    if (r->ncorrectness == 0)
        res->all_correct = in->ncases > 0;
    return 0;
}

/* cugrade.cases: every case the judge reported, in its order; a case that
 * ran and failed clears all_correct, rubric line or not. Returns 0 or
 * -ENOMEM. */
static int result_cases(struct result *res)
{
    const struct score_input *in = res->in;
    for (size_t i = 0; i < in->ncases; i++) {
        const struct score_case *c = &in->cases[i];
        if (c->ran && !c->passed)
            res->all_correct = 0;
        if (json_array_append_new(
                res->cases,
                json_pack("{s:s, s:b, s:o, s:o, s:o, s:o, s:s?}", "name", c->name, "passed",
                          c->ran && c->passed, "max_abs_err", num_or_null(c->max_abs_err),
                          "max_rel_err", num_or_null(c->max_rel_err), "first_bad_index",
                          c->first_bad_index >= 0 ? json_integer(c->first_bad_index) : json_null(),
                          "unwritten", c->unwritten >= 0 ? json_integer(c->unwritten) : json_null(),
                          "message", c->message)))
            return -ENOMEM;
    }
    return 0;
}

/* Sanitizer line, when the rubric has one: all requested tools ran and
 * were clean (one that could not run for a reason of ours is not charged).
 * Returns 0 or -ENOMEM. */
static int result_sanitizer_line(struct result *res)
{
    const struct rubric *r = res->r;
    const struct score_input *in = res->in;
    char buf[2048];

    if (!(r->sanitizer_points > 0))
        return 0;
    int clean = in->nsanitizers > 0;
    int o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < in->nsanitizers; i++) {
        const struct score_sanitizer *s = &in->sanitizers[i];
        if ((!s->ran && !s->infra_failed) || (s->ran && !s->clean))
            clean = 0;
        if (o >= 0 && (size_t)o < sizeof buf)
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%s: %s", i ? "; " : "", s->tool,
                          !s->ran    ? (s->note[0] ? s->note : "not run")
                          : s->clean ? "clean"
                                     : (s->note[0] ? s->note : "errors found"));
        for (size_t k = 0; k < s->nfindings && k < 3; k++)
            if (o >= 0 && (size_t)o < sizeof buf)
                o += snprintf(buf + o, sizeof buf - (size_t)o, "; %s:%d %s",
                              s->findings[k].file ? s->findings[k].file : "?", s->findings[k].line,
                              s->findings[k].message);
    }
    if (!in->nsanitizers)
        snprintf(buf, sizeof buf, "not run");
    score_text_clean(buf, sizeof buf, buf, strlen(buf), 0); /* findings quote the program */
    double pts = clean ? r->sanitizer_points : 0;
    res->score += pts;
    res->max += r->sanitizer_points;
    if (json_array_append_new(res->tests, test_new("sanitizer (memcheck, racecheck)", pts,
                                                   r->sanitizer_points, clean, buf, "visible")))
        return -ENOMEM;
    return 0;
}

/* cugrade.sanitizer: every tool's verdict and findings, the findings'
 * hints when the catalogue did not run. Returns 0 or -ENOMEM. */
static int result_sanitizers(struct result *res)
{
    const struct score_input *in = res->in;
    for (size_t i = 0; i < in->nsanitizers; i++) {
        const struct score_sanitizer *s = &in->sanitizers[i];
        json_t *f = json_array();
        if (!f)
            return -ENOMEM;
        for (size_t k = 0; k < s->nfindings; k++) {
            /* parsed from the program's output: the student can forge them */
            char file[256], msg[1024];
            const struct score_finding *fd = &s->findings[k];
            score_text_clean(file, sizeof file, fd->file, fd->file ? strlen(fd->file) : 0, 1);
            score_text_clean(msg, sizeof msg, fd->message, fd->message ? strlen(fd->message) : 0,
                             0);
            json_array_append_new(f, json_pack("{s:s?, s:i, s:s, s:s?}", "file",
                                               fd->file ? file : NULL, "line", fd->line,
                                               "message", msg, "hint", fd->hint));
            if (s->findings[k].hint && !in->hints_ran)
                add_hint(res->hints, s->findings[k].hint);
        }
        json_t *e = json_pack("{s:s, s:b, s:b, s:o}", "tool", s->tool, "ran", s->ran, "clean",
                              s->ran && s->clean, "findings", f);
        if (e && s->infra_failed)
            json_object_set_new(e, "runner_problem", json_true());
        if (!e || (s->note[0] && json_object_set_new(e, "note", json_string(s->note))) ||
            json_array_append_new(res->sans, e))
            return -ENOMEM;
    }
    return 0;
}

/* Whether the timing is rewarded: not when faster than the physical
 * floor, when the judge flagged it, or when the re-check on fresh inputs
 * failed (a cached or precomputed answer). Sets floor_ms, flagged and
 * flag_reason, and hints why. */
static void result_flag(struct result *res)
{
    const struct score_timing *t = &res->in->timing;
    res->floor_ms = score_floor_ms(t);
    res->flagged =
        t->have && res->floor_ms > 0 && t->student_ms < SCORE_FLOOR_FACTOR * res->floor_ms;
    res->flag_reason[0] = '\0';
    if (t->have && t->judge_flag_reason && !res->flagged) {
        res->flagged = 1;
        snprintf(res->flag_reason, sizeof res->flag_reason, "%s; the timing is not rewarded.",
                 t->judge_flag_reason);
        add_hint(res->hints, res->flag_reason);
    } else if (res->flagged) {
        snprintf(res->flag_reason, sizeof res->flag_reason,
                 "%.4g ms is faster than this GPU can physically do the case (%.4g ms: "
                 "bytes over the measured copy bandwidth, flops over the FP32 peak); "
                 "the timing is not rewarded.",
                 t->student_ms, res->floor_ms);
        add_hint(res->hints, res->flag_reason);
    }
    if (t->have && !t->recheck_passed) {
        /* A cached or precomputed answer: the time is not of real work. */
        if (!res->flagged)
            snprintf(res->flag_reason, sizeof res->flag_reason,
                     "the outputs after the timed loop were wrong on fresh inputs (a cached "
                     "or precomputed answer?): the timing is not rewarded.");
        res->flagged = 1;
        add_hint(res->hints, "The outputs after the timed loop were wrong on fresh inputs "
                             "(a cached or precomputed answer?): no speed points.");
    }
    assert(!res->flagged || res->flag_reason[0]);
}

/* Speed lines: one test and one cugrade.speed entry per rubric line, the
 * best tier met when timed, rewarded and (if required) all correct. Sets
 * primary from the first line. Returns 0 or -ENOMEM. */
static int result_speed(struct result *res)
{
    const struct rubric *r = res->r;
    const struct score_timing *t = &res->in->timing;
    char buf[2048];

    res->speed = json_array();
    if (!res->speed)
        return -ENOMEM;
    res->primary = NAN;
    res->primary_metric = NULL;
    for (size_t i = 0; i < r->nspeed; i++) {
        const struct rubric_speed *sp = &r->speed[i];
        double best = 0;
        for (size_t k = 0; k < sp->ntiers; k++)
            if (sp->tiers[k].points > best)
                best = sp->tiers[k].points;
        res->max += best;
        double v = score_metric(sp->metric, t);
        if (i == 0) {
            res->primary = v;
            res->primary_metric = sp->metric;
        }
        const char *tier = NULL;
        double pts = 0;
        int must_pass = sp->requires_correct && !res->all_correct;
        if (!t->have)
            snprintf(buf, sizeof buf, "not timed%s",
                     !res->graded ? ""
                     : must_pass  ? ": every correctness case must pass first"
                                  : "");
        else if (!isfinite(v))
            snprintf(buf, sizeof buf, "%s: not available (a baseline is missing)",
                     sp->metric->name);
        else if (res->flagged)
            snprintf(buf, sizeof buf, "%s = %.3g; flagged: %s", sp->metric->name, v,
                     res->flag_reason);
        else if (must_pass)
            snprintf(buf, sizeof buf, "%s = %.3g; no points: every correctness case must pass",
                     sp->metric->name, v);
        else {
            pts = rubric_speed_points(sp, v, &tier);
            speed_message(sp, t, v, tier, buf, sizeof buf);
        }
        res->score += pts;
        if (json_array_append_new(res->tests,
                                  test_new(sp->name, pts, best, pts > 0, buf, "visible")) ||
            json_array_append_new(res->speed, speed_entry(sp, t, v, tier, pts, best)))
            return -ENOMEM;
    }
    return 0;
}

/* The scoreboard's "speedup": the primary metric turned higher-is-better
 * by the metric table's direction; none when flagged. */
static void result_speedup(struct result *res)
{
    res->speedup = NAN;
    if (res->primary_metric)
        res->speedup = metric_speedup(res->primary_metric, res->primary);
    if (res->flagged)
        res->speedup = NAN;
}

/* cugrade.timing: the timings, the primary metric and the flag, and their
 * noise (timing_noise); null when not timed. Returns 0 or -ENOMEM. */
static int result_timing(struct result *res)
{
    const struct score_timing *t = &res->in->timing;
    const struct metric *pm = res->primary_metric;
    if (!t->have) {
        res->timing = json_null();
        return 0;
    }
    double gflops = NAN, gbs = NAN;
    if (t->student_ms > 0) {
        if (t->flops > 0)
            gflops = t->flops / (t->student_ms * 1e-3) / 1e9;
        if (t->bytes > 0)
            gbs = t->bytes / (t->student_ms * 1e-3) / 1e9;
    }
    res->timing = json_pack(
        "{s:o, s:{s:o, s:o}, s:o, s:o, s:o, s:s?, s:o, s:o, s:o, s:i, s:o, s:b, s:o, "
        "s:o, s:b, s:s?}",
        "student_ms", num_or_null(t->student_ms), "reference_ms", "naive", num_or_null(t->naive_ms),
        "optimized", num_or_null(t->optimized_ms), "cublas_ms", num_or_null(t->cublas_ms), "cpu_ms",
        num_or_null(t->cpu_ms), "speedup", num_or_null(res->speedup), "metric", pm ? pm->name : NULL,
        "metric_value", num_or_null(res->primary), "bandwidth_gbs", num_or_null(gbs), "gflops",
        num_or_null(gflops), "samples", (int)t->samples, "rel_err", num_or_null(t->rel_err),
        "flagged", res->flagged, "floor_ms", num_or_null(res->floor_ms > 0 ? res->floor_ms : NAN),
        "case", t->case_name ? json_string(t->case_name) : json_null(), "recheck_passed",
        t->recheck_passed, "flag_reason", res->flagged ? res->flag_reason : NULL);
    /* How the primary metric reads, from the table: the client shows these
     * and keeps no copy of the table. */
    char shown[32];
    if (pm)
        metric_format(pm, res->primary, shown, sizeof shown);
    if (res->timing && pm &&
        (json_object_set_new(res->timing, "metric_label", json_string(pm->label)) ||
         json_object_set_new(res->timing, "metric_unit", json_string(pm->unit)) ||
         json_object_set_new(res->timing, "metric_text", json_string(shown))))
        return -ENOMEM;
    if (!res->timing || timing_noise(res->timing, t))
        return -ENOMEM;
    if (!res->flagged)
        json_object_set_new(res->timing, "flag_reason", json_null());
    return 0;
}

/* Summary paragraph: why nothing ran, or how many correctness cases
 * passed and the primary metric. */
static void result_summary(struct result *res)
{
    const struct rubric *r = res->r;
    const struct score_input *in = res->in;
    const struct score_timing *t = &in->timing;
    char *summary = res->summary;
    size_t len = sizeof res->summary;

    if (in->status && status_parse(in->status) == STATUS_COMPILE_ERROR) {
        snprintf(summary, len, "Your file did not compile%s%s See the compiler log.",
                 in->status_message ? ": " : ".", in->status_message ? in->status_message : "");
        return;
    }
    if (in->status && status_parse(in->status) == STATUS_REJECTED) {
        snprintf(summary, len, "Your file was rejected: %s",
                 in->rejection_reason ? in->rejection_reason : "forbidden construct");
        return;
    }
    size_t passed = 0;
    for (size_t i = 0; i < r->ncorrectness; i++) {
        const struct score_case *c = case_find(in, r->correctness[i].case_name);
        passed += c && c->ran && c->passed;
    }
    int o = snprintf(summary, len, "%s%s%zu of %zu correctness cases passed.",
                     in->status_message ? in->status_message : "", in->status_message ? " " : "",
                     passed, r->ncorrectness);
    if (t->have && isfinite(res->primary) && o >= 0 && (size_t)o < len)
        snprintf(summary + o, len - (size_t)o, " %s %.3g on %s (%.4g ms)%s.",
                 res->primary_metric->name, res->primary, t->case_name ? t->case_name : "the timed case", t->student_ms,
                 res->flagged ? ", flagged as faster than physically possible" : "");
}

/* The document: score, max_score, summary and tests, and the cugrade
 * object around what the steps built. The score is the sum of the tests:
 * a compile error or a rejection ran nothing and earns nothing; a
 * runtime_error or timeout keeps the points of the cases that passed
 * before the program stopped. Takes the result's references (NULL after,
 * whether or not it succeeds, as json_pack's "o" steals them). Returns a
 * new reference, or NULL (ENOMEM). */
static json_t *result_document(struct result *res)
{
    const struct score_input *in = res->in;
    assert(res->tests && res->cases && res->sans && res->hints && res->speed && res->timing);

    json_t *cg = json_pack(
        "{s:o, s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "speed", res->speed, "lab",
        in->lab ? in->lab : "", "rubric_version", in->rubric_version, "gpu", in->gpu ? in->gpu : "",
        "compile_log", in->compile_log ? json_string(in->compile_log) : json_null(), "rejection",
        in->rejection_reason
            ? json_pack("{s:s, s:s}", "symbol", in->rejection_symbol ? in->rejection_symbol : "",
                        "reason", in->rejection_reason)
            : json_null(),
        "cases", res->cases, "sanitizer", res->sans, "timing", res->timing, "hints", res->hints);
    res->speed = res->cases = res->sans = res->timing = res->hints = NULL;
    if (!cg)
        return NULL;
    if (in->status)
        json_object_set_new(cg, "status", json_string(in->status));
    if (in->hints_ran) {
        json_t *hd = hint_details(in);
        if (!hd || json_object_set_new(cg, "hint_details", hd)) {
            json_decref(cg);
            return NULL;
        }
    }
    json_t *doc = json_pack("{s:f, s:f, s:s, s:o, s:o}", "score", res->score, "max_score", res->max,
                            "output", res->summary, "tests", res->tests, "cugrade", cg);
    res->tests = NULL;
    return doc;
}

json_t *score_result(const struct rubric *r, const struct score_input *in)
{
    struct result res = {.r = r,
                         .in = in,
                         .tests = json_array(),
                         .cases = json_array(),
                         .sans = json_array(),
                         .hints = json_array(),
                         .all_correct = 1,
                         .graded = in->status && status_parse(in->status) == STATUS_GRADED};
    json_t *doc = NULL;

    if (!res.tests || !res.cases || !res.sans || !res.hints)
        goto fail;
    result_catalogue_hints(&res);
    if (result_correctness(&res) || result_cases(&res) || result_sanitizer_line(&res) ||
        result_sanitizers(&res))
        goto fail;
    result_flag(&res);
    if (result_speed(&res))
        goto fail;
    result_speedup(&res);
    if (result_timing(&res))
        goto fail;
    result_summary(&res);
    doc = result_document(&res);
fail:
    json_decref(res.tests);
    json_decref(res.cases);
    json_decref(res.sans);
    json_decref(res.hints);
    json_decref(res.speed);
    json_decref(res.timing);
    return doc;
}
