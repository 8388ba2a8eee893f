/*
 * rubric.c - parse and validate a rubric document (format: docs/formats.md),
 * and the two pieces of scoring arithmetic both binaries must agree on: which
 * speed tier a value meets and what the maximum score is.
 *
 * A rubric comes from a file or from an admin's PUT. Every mistake is caught
 * here with a sentence that names the field ("correctness[3].points: must be a
 * number >= 0"), because a rubric that parses but means something else (a typo
 * in "visibility" that shows a hidden case, a key spelt "dew" that is silently
 * ignored) leaks tests or mis-scores a whole class.
 */
#include "rubric.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void rubric__err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rubric__err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *const rubric__visibilities[] = {"visible", "hidden", "after_due_date",
                                                   "after_published", NULL};

static int rubric__in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return 1;
    return 0;
}

/* Reject keys that are not in allowed: a misspelt key would otherwise be
 * ignored and its default silently used. */
static int rubric__keys_known(const json_t *obj, const char *const *allowed, const char *where,
                              char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        (void)v;
        if (!rubric__in(key, allowed)) {
            rubric__err(err, errlen, "%s%s%s: unknown field", where, *where ? "." : "", key);
            return -EINVAL;
        }
    }
    return 0;
}

/* Optional number in [min, max]; dflt when absent. */
static int rubric__number(const json_t *obj, const char *key, double dflt, double min,
                          double max, double *out, const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    double x;
    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || x < min || x > max) {
        if (max >= 1e300)
            rubric__err(err, errlen, "%s%s%s: must be a number >= %g", where, *where ? "." : "",
                        key, min);
        else
            rubric__err(err, errlen, "%s%s%s: must be a number in [%g, %g]", where,
                        *where ? "." : "", key, min, max);
        return -EINVAL;
    }
    *out = x;
    return 0;
}

static int rubric__int(const json_t *obj, const char *key, int dflt, int min, int max, int *out,
                       const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        rubric__err(err, errlen, "%s%s%s: must be an integer in [%d, %d]", where,
                    *where ? "." : "", key, min, max);
        return -EINVAL;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

/* Optional (required when required != 0) ISO 8601 time; 0 when absent. */
static int rubric__time(const json_t *obj, const char *key, int required, double *out,
                        const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    const char *dot = *where ? "." : "";
    *out = 0;
    if (v == NULL || json_is_null(v)) {
        if (!required)
            return 0;
        rubric__err(err, errlen, "%s%s%s: missing (an ISO 8601 UTC time, e.g. "
                    "\"2026-12-04T23:59:00Z\")", where, dot, key);
        return -EINVAL;
    }
    if (!json_is_string(v) || rubric_time_parse(json_string_value(v), out) != 0) {
        rubric__err(err, errlen, "%s%s%s: must be an ISO 8601 time such as "
                    "\"2026-12-04T23:59:00Z\"", where, dot, key);
        return -EINVAL;
    }
    return 0;
}

static int rubric__bool(const json_t *obj, const char *key, int dflt, int *out, const char *where,
                        char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) {
        rubric__err(err, errlen, "%s.%s: must be true or false", where, key);
        return -EINVAL;
    }
    *out = json_is_true(v);
    return 0;
}

static int rubric__parse_correctness(const json_t *arr, const struct lab *lab, struct rubric *r,
                                     char *err, size_t errlen)
{
    static const char *const keys[] = {"case", "points", "visibility", "comment", NULL};
    const json_t *c;
    size_t i;
    char where[64];

    if (arr == NULL)
        return 0;
    if (!json_is_array(arr)) {
        rubric__err(err, errlen, "correctness: must be an array");
        return -EINVAL;
    }
    if (json_array_size(arr) == 0)
        return 0;
    r->correctness = calloc(json_array_size(arr), sizeof(*r->correctness));
    if (r->correctness == NULL)
        return -ENOMEM;
    json_array_foreach((json_t *)arr, i, c) {
        struct rubric_line *l = &r->correctness[i];
        const json_t *v;
        const char *name, *vis = "visible";
        snprintf(where, sizeof(where), "correctness[%zu]", i);
        if (!json_is_object(c)) {
            rubric__err(err, errlen, "%s: must be an object", where);
            return -EINVAL;
        }
        if (rubric__keys_known(c, keys, where, err, errlen) < 0)
            return -EINVAL;
        v = json_object_get(c, "case");
        if (!json_is_string(v) || json_string_length(v) == 0) {
            rubric__err(err, errlen, "%s.case: must be a case name", where);
            return -EINVAL;
        }
        name = json_string_value(v);
        if (lab != NULL && lab_case_find(lab, name) == NULL) {
            rubric__err(err, errlen, "%s.case: \"%s\" is not a case of lab %s", where, name,
                        lab->name);
            return -EINVAL;
        }
        for (size_t j = 0; j < r->ncorrectness; j++)
            if (strcmp(r->correctness[j].case_name, name) == 0) {
                rubric__err(err, errlen, "%s.case: \"%s\" is listed twice", where, name);
                return -EINVAL;
            }
        if (json_object_get(c, "points") == NULL) {
            rubric__err(err, errlen, "%s.points: missing", where);
            return -EINVAL;
        }
        if (rubric__number(c, "points", 0, 0, 1e300, &l->points, where, err, errlen) < 0)
            return -EINVAL;
        v = json_object_get(c, "visibility");
        if (v != NULL) {
            if (!json_is_string(v) || !rubric__in(json_string_value(v), rubric__visibilities)) {
                rubric__err(err, errlen, "%s.visibility: must be one of visible, hidden, "
                            "after_due_date, after_published", where);
                return -EINVAL;
            }
            vis = json_string_value(v);
        }
        l->case_name = strdup(name);
        l->visibility = strdup(vis);
        r->ncorrectness = i + 1;
        if (l->case_name == NULL || l->visibility == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int rubric__parse_sanitizer(const json_t *s, struct rubric *r, char *err, size_t errlen)
{
    static const char *const keys[] = {"points", "tools", "case", "comment", NULL};
    const json_t *tools, *t;
    size_t i;

    if (s == NULL || json_is_null(s))
        return 0;
    if (!json_is_object(s)) {
        rubric__err(err, errlen, "sanitizer: must be an object");
        return -EINVAL;
    }
    if (rubric__keys_known(s, keys, "sanitizer", err, errlen) < 0)
        return -EINVAL;
    if (rubric__number(s, "points", 0, 0, 1e300, &r->sanitizer_points, "sanitizer", err, errlen) <
        0)
        return -EINVAL;
    tools = json_object_get(s, "tools");
    if (tools == NULL) {   /* default: both tools */
        r->sanitize_memcheck = r->sanitize_racecheck = 1;
        return 0;
    }
    if (!json_is_array(tools)) {
        rubric__err(err, errlen, "sanitizer.tools: must be an array of \"memcheck\", \"racecheck\"");
        return -EINVAL;
    }
    json_array_foreach((json_t *)tools, i, t) {
        const char *name = json_is_string(t) ? json_string_value(t) : "";
        if (strcmp(name, "memcheck") == 0)
            r->sanitize_memcheck = 1;
        else if (strcmp(name, "racecheck") == 0)
            r->sanitize_racecheck = 1;
        else {
            rubric__err(err, errlen, "sanitizer.tools[%zu]: must be \"memcheck\" or \"racecheck\"",
                        i);
            return -EINVAL;
        }
    }
    if (r->sanitizer_points > 0 && !r->sanitize_memcheck && !r->sanitize_racecheck) {
        rubric__err(err, errlen, "sanitizer.tools: points are given but no tool is listed");
        return -EINVAL;
    }
    return 0;
}

static int rubric__parse_tiers(const json_t *arr, struct rubric_speed *sp, const char *where,
                               char *err, size_t errlen)
{
    static const char *const keys[] = {"name", "threshold", "points", "comment", NULL};
    const json_t *t;
    size_t i;
    char w[96];

    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        rubric__err(err, errlen, "%s.tiers: must be a non-empty array", where);
        return -EINVAL;
    }
    if (json_array_size(arr) > RUBRIC_MAX_TIERS) {
        rubric__err(err, errlen, "%s.tiers: at most %d tiers", where, RUBRIC_MAX_TIERS);
        return -EINVAL;
    }
    sp->tiers = calloc(json_array_size(arr), sizeof(*sp->tiers));
    if (sp->tiers == NULL)
        return -ENOMEM;
    json_array_foreach((json_t *)arr, i, t) {
        struct rubric_tier *tier = &sp->tiers[i];
        const json_t *v;
        snprintf(w, sizeof(w), "%s.tiers[%zu]", where, i);
        if (!json_is_object(t)) {
            rubric__err(err, errlen, "%s: must be an object", w);
            return -EINVAL;
        }
        if (rubric__keys_known(t, keys, w, err, errlen) < 0)
            return -EINVAL;
        v = json_object_get(t, "name");
        if (!json_is_string(v) || json_string_length(v) == 0) {
            rubric__err(err, errlen, "%s.name: must be a non-empty string", w);
            return -EINVAL;
        }
        if (json_object_get(t, "threshold") == NULL || json_object_get(t, "points") == NULL) {
            rubric__err(err, errlen, "%s.%s: missing", w,
                        json_object_get(t, "threshold") == NULL ? "threshold" : "points");
            return -EINVAL;
        }
        /* The metric's largest honest threshold (a share's is 1: more could
         * only be met by a flagged, too fast result). */
        if (rubric__number(t, "threshold", 0, 1e-9, sp->metric->max_threshold, &tier->threshold,
                           w, err, errlen) < 0)
            return -EINVAL;
        if (rubric__number(t, "points", 0, 0, 1e300, &tier->points, w, err, errlen) < 0)
            return -EINVAL;
        tier->name = strdup(json_string_value(v));
        sp->ntiers = i + 1;
        if (tier->name == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int rubric__parse_speed(const json_t *arr, struct rubric *r, char *err, size_t errlen)
{
    static const char *const keys[] = {"name", "metric", "requires_correct", "tiers", "comment",
                                       NULL};
    const json_t *s;
    size_t i;
    char where[64];

    if (arr == NULL)
        return 0;
    if (!json_is_array(arr)) {
        rubric__err(err, errlen, "speed: must be an array");
        return -EINVAL;
    }
    if (json_array_size(arr) == 0)
        return 0;
    r->speed = calloc(json_array_size(arr), sizeof(*r->speed));
    if (r->speed == NULL)
        return -ENOMEM;
    json_array_foreach((json_t *)arr, i, s) {
        struct rubric_speed *sp = &r->speed[i];
        const json_t *v;
        int rc;
        snprintf(where, sizeof(where), "speed[%zu]", i);
        r->nspeed = i + 1;
        if (!json_is_object(s)) {
            rubric__err(err, errlen, "%s: must be an object", where);
            return -EINVAL;
        }
        if (rubric__keys_known(s, keys, where, err, errlen) < 0)
            return -EINVAL;
        v = json_object_get(s, "name");
        if (!json_is_string(v) || json_string_length(v) == 0) {
            rubric__err(err, errlen, "%s.name: must be a non-empty string", where);
            return -EINVAL;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->speed[j].name, json_string_value(v)) == 0) {
                rubric__err(err, errlen, "%s.name: \"%s\" is used twice", where,
                            json_string_value(v));
                return -EINVAL;
            }
        if ((sp->name = strdup(json_string_value(v))) == NULL)
            return -ENOMEM;
        v = json_object_get(s, "metric");
        sp->metric = metric_find(json_string_value(v));
        if (sp->metric == NULL) {
            char names[256];
            metric_names(names, sizeof names);
            rubric__err(err, errlen, "%s.metric: %s%s%s is not a metric; must be one of %s",
                        where, json_is_string(v) ? "\"" : "",
                        json_is_string(v) ? json_string_value(v) : "a non-string",
                        json_is_string(v) ? "\"" : "", names);
            return -EINVAL;
        }
        if (rubric__bool(s, "requires_correct", 1, &sp->requires_correct, where, err, errlen) < 0)
            return -EINVAL;
        rc = rubric__parse_tiers(json_object_get(s, "tiers"), sp, where, err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* "late": the policy (refuse unless "accept"), the hard deadline (not
 * before due) and the penalty. Returns 0 or -EINVAL with err set. */
static int rubric__parse_late(const json_t *doc, struct rubric *out, char *err, size_t errlen)
{
    static const char *const late_keys[] = {"policy", "hard_deadline", "penalty_percent_per_day",
                                            "comment", NULL};
    const json_t *late = json_object_get(doc, "late"), *v;

    out->late_policy = RUBRIC_LATE_REFUSE;
    if (late == NULL)
        return 0;
    if (!json_is_object(late)) {
        rubric__err(err, errlen, "late: must be an object");
        return -EINVAL;
    }
    if (rubric__keys_known(late, late_keys, "late", err, errlen) < 0)
        return -EINVAL;
    v = json_object_get(late, "policy");
    if (!json_is_string(v) || (strcmp(json_string_value(v), "accept") != 0 &&
                               strcmp(json_string_value(v), "refuse") != 0)) {
        rubric__err(err, errlen, "late.policy: must be \"accept\" or \"refuse\"");
        return -EINVAL;
    }
    out->late_policy =
        strcmp(json_string_value(v), "accept") == 0 ? RUBRIC_LATE_ACCEPT : RUBRIC_LATE_REFUSE;
    if (rubric__time(late, "hard_deadline", 0, &out->hard_deadline, "late", err, errlen) < 0)
        return -EINVAL;
    if (out->hard_deadline != 0 && out->hard_deadline < out->due) {
        rubric__err(err, errlen, "late.hard_deadline: must not be before due");
        return -EINVAL;
    }
    if (rubric__number(late, "penalty_percent_per_day", 0, 0, 100, &out->penalty_percent_per_day,
                       "late", err, errlen) < 0)
        return -EINVAL;
    return 0;
}

/* "limits": how many submissions a student may have in flight, per hour,
 * and attempts; defaults for what is left out. Returns 0 or -EINVAL. */
static int rubric__parse_limits(const json_t *doc, struct rubric *out, char *err, size_t errlen)
{
    static const char *const limit_keys[] = {"max_in_flight", "max_per_hour", "max_attempts",
                                             "comment", NULL};
    const json_t *limits = json_object_get(doc, "limits");

    if (limits != NULL && !json_is_object(limits)) {
        rubric__err(err, errlen, "limits: must be an object");
        return -EINVAL;
    }
    if (limits != NULL && rubric__keys_known(limits, limit_keys, "limits", err, errlen) < 0)
        return -EINVAL;
    int rc = rubric__int(limits, "max_in_flight", 1, 1, 1000, &out->max_in_flight, "limits", err,
                         errlen);
    if (rc == 0)
        rc = rubric__int(limits, "max_per_hour", 30, 0, 100000, &out->max_per_hour, "limits", err,
                         errlen);
    if (rc == 0)
        rc = rubric__int(limits, "max_attempts", 3, 1, 100, &out->max_attempts, "limits", err,
                         errlen);
    return rc;
}

/* The most a submission can score: the sanitizer's points, every
 * correctness line's, and each speed metric's best tier. */
static void rubric__max_score(struct rubric *out)
{
    out->max_score = out->sanitizer_points;
    for (size_t i = 0; i < out->ncorrectness; i++)
        out->max_score += out->correctness[i].points;
    for (size_t i = 0; i < out->nspeed; i++) {
        double best = 0;
        for (size_t j = 0; j < out->speed[i].ntiers; j++)
            if (out->speed[i].tiers[j].points > best)
                best = out->speed[i].tiers[j].points;
        out->max_score += best;
    }
}

/* Parse and validate a rubric document; see rubric.h. On success *out owns
 * copies of every string (doc may be freed); on failure *out is zeroed. */
int rubric_parse(const json_t *doc, const struct lab *lab, struct rubric *out, char *err,
                 size_t errlen)
{
    static const char *const top[] = {"lab", "title", "comment", "version", "opens", "due",
                                      "late", "limits", "correctness", "sanitizer", "speed",
                                      "profile", NULL};
    const json_t *v;
    int rc = -EINVAL;

    memset(out, 0, sizeof(*out));
    if (err && errlen)
        err[0] = '\0';
    if (!json_is_object(doc)) {
        rubric__err(err, errlen, "rubric: must be a JSON object");
        return -EINVAL;
    }
    if (rubric__keys_known(doc, top, "", err, errlen) < 0)
        return -EINVAL;
    v = json_object_get(doc, "lab");
    if (!json_is_string(v) || json_string_length(v) == 0) {
        rubric__err(err, errlen, "lab: must be the lab's name");
        return -EINVAL;
    }
    if (lab != NULL && strcmp(lab->name, json_string_value(v)) != 0) {
        rubric__err(err, errlen, "lab: \"%s\" but this is the rubric of lab %s",
                    json_string_value(v), lab->name);
        return -EINVAL;
    }
    if ((out->lab = strdup(json_string_value(v))) == NULL)
        goto nomem;

    if (rubric__time(doc, "opens", 0, &out->opens, "", err, errlen) < 0 ||
        rubric__time(doc, "due", 1, &out->due, "", err, errlen) < 0)
        goto fail;
    if (out->opens != 0 && out->opens >= out->due) {
        rubric__err(err, errlen, "opens: must be before due");
        goto fail;
    }

    if (rubric__parse_late(doc, out, err, errlen) < 0)
        goto fail;

    /* Profiling feedback (docs/runner.md "Profiling hints"): on unless
     * "profile": false. */
    v = json_object_get(doc, "profile");
    if (v != NULL && !json_is_boolean(v)) {
        rubric__err(err, errlen, "profile: must be true or false");
        goto fail;
    }
    out->profile = v == NULL || json_is_true(v);

    if (rubric__parse_limits(doc, out, err, errlen) < 0)
        goto fail;

    if ((rc = rubric__parse_correctness(json_object_get(doc, "correctness"), lab, out, err,
                                        errlen)) < 0)
        goto fail_rc;
    if ((rc = rubric__parse_sanitizer(json_object_get(doc, "sanitizer"), out, err, errlen)) < 0)
        goto fail_rc;
    if ((rc = rubric__parse_speed(json_object_get(doc, "speed"), out, err, errlen)) < 0)
        goto fail_rc;

    rubric__max_score(out);
    return 0;

nomem:
    rc = -ENOMEM;
    goto fail_rc;
fail:
    rc = -EINVAL;
fail_rc:
    if (rc == -ENOMEM && err && errlen && err[0] == '\0')
        rubric__err(err, errlen, "rubric: out of memory");
    rubric_free(out);
    return rc;
}

/* Points of the best tier (most points) met by value; 0 and *tier_name = NULL
 * when none is met or value is not a number (a failed or flagged timing). */
double rubric_speed_points(const struct rubric_speed *s, double value, const char **tier_name)
{
    double best = 0;
    const char *name = NULL;
    if (tier_name)
        *tier_name = NULL;
    if (s == NULL || !isfinite(value))
        return 0;
    for (size_t i = 0; i < s->ntiers; i++) {
        const struct rubric_tier *t = &s->tiers[i];
        int met = s->metric->lower_is_better ? value <= t->threshold : value >= t->threshold;
        if (met && (name == NULL || t->points > best)) {
            best = t->points;
            name = t->name;
        }
    }
    if (tier_name)
        *tier_name = name;
    return best;
}

/* One tier's threshold as a student reads it: see rubric_tiers_text. */
static void rubric__threshold_text(const struct metric *m, double t, char *buf, size_t len)
{
    if (m->formula == METRIC_SHARE_OF_COPY) /* a share: a percentage */
        snprintf(buf, len, "%g%%", t * 100);
    else if (m->lower_is_better)
        snprintf(buf, len, "within %g%s", t, m->unit);
    else
        snprintf(buf, len, "%g%s or more", t, m->unit);
}

void rubric_tiers_text(const struct rubric_speed *s, char *buf, size_t len)
{
    size_t o = 0, done = 0;
    assert(buf && len > 0);
    buf[0] = '\0';
    if (!s || s->ntiers == 0) {
        snprintf(buf, len, "no speed points");
        return;
    }
    unsigned char used[RUBRIC_MAX_TIERS] = {0};
    assert(s->ntiers <= RUBRIC_MAX_TIERS); /* rubric__parse_tiers refuses more */
    while (done < s->ntiers && o < len) {
        size_t best = s->ntiers;
        for (size_t i = 0; i < s->ntiers; i++)
            if (!used[i] && (best == s->ntiers || s->tiers[i].points > s->tiers[best].points))
                best = i;
        used[best] = 1;
        char th[64];
        rubric__threshold_text(s->metric, s->tiers[best].threshold, th, sizeof th);
        int n = done == 0
                    ? snprintf(buf + o, len - o, "**%s: %g points**", th, s->tiers[best].points)
                    : snprintf(buf + o, len - o, ", %s: %g", th, s->tiers[best].points);
        if (n < 0)
            return;
        o += (size_t)n;
        done++;
    }
}

char *rubric_handout(const struct rubric *r, const char *text)
{
    static const char key[] = "{{tiers:";
    if (!text)
        return NULL;
    size_t cap = strlen(text) + 1, o = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        const char *end = strncmp(p, key, sizeof key - 1) == 0 ? strstr(p, "}}") : NULL;
        char piece[1024], name[64];
        size_t nlen = end ? (size_t)(end - p) - (sizeof key - 1) : 0;
        const char *add = p;
        size_t alen = 1, step = 1;
        /* a metric's name: [a-z0-9_] (anything else is left as written) */
        if (end && nlen > 0 && nlen < sizeof name &&
            strspn(p + sizeof key - 1, "abcdefghijklmnopqrstuvwxyz0123456789_") == nlen) {
            const struct rubric_speed *sp = NULL;
            memcpy(name, p + sizeof key - 1, nlen);
            name[nlen] = '\0';
            for (size_t i = 0; r && i < r->nspeed && !sp; i++)
                if (strcmp(r->speed[i].metric->name, name) == 0)
                    sp = &r->speed[i];
            rubric_tiers_text(sp, piece, sizeof piece);
            add = piece;
            alen = strlen(piece);
            step = (size_t)(end - p) + 2;
        }
        if (o + alen + 1 > cap) {
            size_t nc = (o + alen + 1) * 2;
            char *nb = realloc(out, nc);
            if (!nb) {
                free(out);
                return NULL;
            }
            out = nb;
            cap = nc;
        }
        memcpy(out + o, add, alen);
        o += alen;
        p += step;
    }
    out[o] = '\0';
    return out;
}

/* Free everything r owns and zero it; safe on a zeroed rubric. */
void rubric_free(struct rubric *r)
{
    if (r == NULL)
        return;
    free(r->lab);
    for (size_t i = 0; i < r->ncorrectness; i++) {
        free(r->correctness[i].case_name);
        free(r->correctness[i].visibility);
    }
    free(r->correctness);
    for (size_t i = 0; i < r->nspeed; i++) {
        free(r->speed[i].name);
        for (size_t j = 0; j < r->speed[i].ntiers; j++)
            free(r->speed[i].tiers[j].name);
        free(r->speed[i].tiers);
    }
    free(r->speed);
    memset(r, 0, sizeof(*r));
}

static int rubric__digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

/* Parse "YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)" into Unix seconds.
 * A time without a zone is refused: "23:59" in whose time zone is exactly the
 * question that makes a deadline ambiguous. Returns 0 or -EINVAL. */
int rubric_time_parse(const char *s, double *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int Y, M, D, h, m, sec, oh = 0, om = 0, sign = 0;
    double frac = 0;
    struct tm tm;
    time_t t;
    const char *p = s;

    if (s == NULL || out == NULL)
        return -EINVAL;
    if (rubric__digits(&p, 4, &Y) || *p++ != '-' || rubric__digits(&p, 2, &M) || *p++ != '-' ||
        rubric__digits(&p, 2, &D) || (*p != 'T' && *p != 't') || !*p++ ||
        rubric__digits(&p, 2, &h) || *p++ != ':' || rubric__digits(&p, 2, &m) || *p++ != ':' ||
        rubric__digits(&p, 2, &sec))
        return -EINVAL;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (rubric__digits(&p, 2, &oh) || *p++ != ':' || rubric__digits(&p, 2, &om) || oh > 23 ||
            om > 59)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    if (*p != '\0')
        return -EINVAL;
    if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 || sec > 60)
        return -EINVAL;
    if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0))
        return -EINVAL;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    t = timegm(&tm);
    if (t == (time_t)-1)
        return -EINVAL;
    *out = (double)t + frac - sign * (oh * 3600.0 + om * 60.0);
    return 0;
}

/* Format Unix seconds as "YYYY-MM-DDTHH:MM:SSZ" (whole seconds, UTC) into
 * buf (at least 21 bytes; shorter buffers get a truncated string). */
void rubric_time_format(double t, char *buf, size_t len)
{
    struct tm tm;
    time_t tt = (time_t)floor(t);
    if (buf == NULL || len == 0)
        return;
    if (gmtime_r(&tt, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%s", "");
}
