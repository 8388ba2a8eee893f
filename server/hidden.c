/*
 * hidden.c - what a student may not see yet of a result. See hidden.h.
 */
#include "server/hidden.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which correctness cases / tests a student may not see yet. */
int hidden_visible_to_student(const char *vis, double due, double now)
{
    if (!vis || strcmp(vis, "visible") == 0)
        return 1;
    if (strcmp(vis, "after_due_date") == 0)
        return due > 0 && now > due;
    return 0; /* hidden, after_published (no publishing yet) */
}

/* What a student may not see yet.
 *
 * tests[] and cugrade.cases[] entries of hidden cases are removed, but the
 * runner's free text names cases too ("Your code broke the GPU context in
 * case 2^26", "3 of 8 correctness cases passed") and a result is the
 * runner's document, stored verbatim. So the student's copy is also
 * scrubbed: every string that names a hidden case goes, and counts in the
 * summary and the progress detail (which count hidden cases too) are
 * replaced by the visible ones. Staff see the document as stored. */

/* Names of the correctness cases a student may not see yet. The strings
 * point into the rubric or the result document they came from, which must
 * outlive the set. */
struct hidden_cases {
    const char **names;
    size_t n, cap;
};

static const char hidden_note[] =
    "(not shown: this is about a case that stays hidden until it becomes visible)";

/* program_output is what the student's code printed in one run of every
 * case, hidden ones included ("n=67108864"), with nothing that tells which
 * case a line came from: while any case is hidden, none of it is shown. */
static const char hidden_output_note[] =
    "(not shown yet: your program's output includes what it printed during cases that stay "
    "hidden until they become visible, such as after the due date)";

static int hidden_add(struct hidden_cases *h, const char *name)
{
    if (!name || !*name)
        return 0;
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->names[i], name) == 0)
            return 0;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        const char **p = realloc(h->names, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        h->names = p;
        h->cap = cap;
    }
    h->names[h->n++] = name;
    return 0;
}

/* The cases of lab that a student whose due date is due may not see now:
 * the current rubric's lines, and (res may be NULL) every "correctness:
 * NAME" test that the result itself marks so, since it may have been graded
 * with another rubric version. 0, or -ENOMEM: the caller must then show
 * nothing (fail closed). */
static int hidden_cases_get(const struct app_lab *l, const json_t *res, double due, double now,
                            struct hidden_cases *h)
{
    memset(h, 0, sizeof(*h));
    for (size_t k = 0; l && l->has_rubric && k < l->rubric.ncorrectness; k++) {
        const struct rubric_line *rl = &l->rubric.correctness[k];
        if (!hidden_visible_to_student(rl->visibility, due, now) && hidden_add(h, rl->case_name))
            return -ENOMEM;
    }
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "tests"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *vis = json_string_value(json_object_get(t, "visibility"));
        if (name && strncmp(name, "correctness: ", 13) == 0 && !hidden_visible_to_student(vis, due, now) &&
            hidden_add(h, name + 13))
            return -ENOMEM;
    }
    return 0;
}

static void hidden_cases_free(struct hidden_cases *h)
{
    free(h->names);
    memset(h, 0, sizeof(*h));
}

/* Characters that continue a case name or a number: a name must not be
 * glued to them to count as named ("1000" is not named in "10000" nor in
 * "1.5", "2^26" not in "2^26+1"). */
static int name_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '^';
}

static int word_at(const char *t, size_t len, size_t i, size_t n)
{
    if (i > 0) {
        unsigned char b = (unsigned char)t[i - 1];
        if (name_char(b) ||
            ((b == '.' || b == '+' || b == '-') && i > 1 && name_char((unsigned char)t[i - 2])))
            return 0;
    }
    if (i + n < len) {
        unsigned char a = (unsigned char)t[i + n];
        if (name_char(a) || ((a == '.' || a == '+' || a == '-') && i + n + 1 < len &&
                             name_char((unsigned char)t[i + n + 1])))
            return 0;
    }
    return 1;
}

/* 1 if the len bytes at t name a hidden case as a word. */
static int text_names_hidden(const char *t, size_t len, const struct hidden_cases *h)
{
    for (size_t k = 0; k < h->n; k++) {
        size_t n = strlen(h->names[k]);
        for (const char *p = t; n && (size_t)(t + len - p) >= n;) {
            p = memmem(p, (size_t)(t + len - p), h->names[k], n);
            if (!p)
                break;
            if (word_at(t, len, (size_t)(p - t), n))
                return 1;
            p++;
        }
    }
    return 0;
}

/* 1 if the len bytes at t hold a count such as "3 of 8" or "3/8". */
static int text_has_count(const char *t, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)t[i]) || (i > 0 && isdigit((unsigned char)t[i - 1])))
            continue;
        size_t k = i;
        while (k < len && isdigit((unsigned char)t[k]))
            k++;
        if (k + 4 <= len && memcmp(t + k, " of ", 4) == 0)
            k += 4;
        else if (k < len && t[k] == '/')
            k++;
        else
            continue;
        if (k < len && isdigit((unsigned char)t[k]))
            return 1;
    }
    return 0;
}

/* t without the sentences a student may not see: a sentence that names a
 * hidden case is dropped; one that holds a count is replaced by counts the
 * first time (counts may be "") and dropped after. A sentence ends after
 * '.', '!' or '?' before white space, or at a newline. Returns a new
 * string (caller frees), or NULL when out of memory. */
static char *text_scrub(const char *t, const struct hidden_cases *h, const char *counts)
{
    size_t len = strlen(t), clen = strlen(counts), o = 0, i = 0;
    int replaced = 0;
    char *out = malloc(len + clen + 2);
    if (!out)
        return NULL;
    while (i < len) {
        size_t j = i;
        while (j < len) {
            char c = t[j++];
            if (c == '\n' ||
                ((c == '.' || c == '!' || c == '?') && (j == len || isspace((unsigned char)t[j]))))
                break;
        }
        while (j < len && t[j] == ' ')
            j++;
        if (text_has_count(t + i, j - i)) {
            if (!replaced && clen) {
                memcpy(out + o, counts, clen);
                o += clen;
                out[o++] = ' ';
            }
            replaced = 1;
        } else if (!text_names_hidden(t + i, j - i, h)) {
            memcpy(out + o, t + i, j - i);
            o += j - i;
        }
        i = j;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
    assert(o <= len + clen + 1);
    return out;
}

/* Below v, every string that names a hidden case: one that is only the
 * name (cugrade.timing.case) becomes null, an element of an array (hints)
 * is removed, any other is replaced by hidden_note. compile_log is left
 * alone: the compiler's text about the student's own file, before any case
 * ran. 0 or -ENOMEM. */
static int json_scrub(json_t *v, const struct hidden_cases *h)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        void *it;
        json_object_foreach_safe(v, it, k, x)
        {
            if (strcmp(k, "compile_log") == 0)
                continue;
            if (!json_is_string(x)) {
                if (json_scrub(x, h))
                    return -ENOMEM;
                continue;
            }
            const char *str = json_string_value(x);
            size_t n = json_string_length(x);
            if (!text_names_hidden(str, n, h))
                continue;
            int whole = 0;
            for (size_t i = 0; i < h->n; i++)
                whole |= strcmp(str, h->names[i]) == 0;
            if (json_object_set_new(v, k, whole ? json_null() : json_string(hidden_note)))
                return -ENOMEM;
        }
    } else if (json_is_array(v)) {
        for (size_t i = json_array_size(v); i-- > 0;) {
            json_t *x = json_array_get(v, i);
            if (json_is_string(x)) {
                if (text_names_hidden(json_string_value(x), json_string_length(x), h))
                    json_array_remove(v, i);
            } else if (json_scrub(x, h)) {
                return -ENOMEM;
            }
        }
    }
    return 0;
}

/* A copy of result as the student uid may see it now (see above). Returns
 * a new reference, or NULL (out of memory: the caller shows no result). */
json_t *hidden_result_filter(struct app *app, const char *lab, long long uid, const json_t *res)
{
    struct app_lab *l = app_lab_find(app, lab);
    struct hidden_cases h = {0};
    double due = 0, hard = 0, now = db_now();
    if (l)
        api_deadlines(app, l, uid, &due, &hard);
    json_t *out = json_deep_copy(res);
    if (!out || hidden_cases_get(l, res, due, now, &h)) {
        json_decref(out);
        hidden_cases_free(&h);
        return NULL;
    }
    json_t *tests = json_object_get(out, "tests");
    size_t shown = 0, passed = 0;
    if (json_is_array(tests)) {
        for (size_t i = json_array_size(tests); i-- > 0;) {
            json_t *t = json_array_get(tests, i);
            const char *vis = json_string_value(json_object_get(t, "visibility"));
            const char *name = json_string_value(json_object_get(t, "name"));
            if (!hidden_visible_to_student(vis, due, now)) {
                json_array_remove(tests, i);
            } else if (name && strncmp(name, "correctness: ", 13) == 0) {
                shown++;
                passed += json_is_string(json_object_get(t, "status")) &&
                          strcmp(json_string_value(json_object_get(t, "status")), "passed") == 0;
            }
        }
    }
    json_t *cases = json_object_get(json_object_get(out, "cugrade"), "cases");
    for (size_t i = json_array_size(cases); i-- > 0;) {
        const char *name = json_string_value(json_object_get(json_array_get(cases, i), "name"));
        for (size_t k = 0; name && k < h.n; k++) {
            if (strcmp(h.names[k], name) == 0) {
                json_array_remove(cases, i);
                break;
            }
        }
    }
    int rc = 0;
    if (h.n > 0) {
        /* "3 of 8 correctness cases passed" counts the hidden ones too. */
        char counts[96] = "";
        if (shown)
            snprintf(counts, sizeof(counts), "%zu of %zu visible correctness cases passed.", passed,
                     shown);
        const char *summary = json_string_value(json_object_get(out, "output"));
        if (summary) {
            char *clean = text_scrub(summary, &h, counts);
            rc = !clean || json_object_set_new(out, "output", json_string(clean));
            free(clean);
        }
        if (!rc)
            rc = json_scrub(out, &h);
        json_t *cg = json_object_get(out, "cugrade");
        if (!rc && json_is_string(json_object_get(cg, "program_output")))
            rc = json_object_set_new(cg, "program_output", json_string(hidden_output_note));
    }
    hidden_cases_free(&h);
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The progress detail as the student uid may see it: while a lab has
 * hidden cases, "checking 3/8" counts them and "timing 2^26" may name one.
 * Returns a new string (caller frees) or NULL when out of memory. */
char *hidden_detail_filter(struct app *app, const char *lab, long long uid, const char *detail)
{
    struct app_lab *l = app_lab_find(app, lab);
    struct hidden_cases h;
    double due = 0, hard = 0;
    if (!*detail || !l)
        return strdup(detail);
    api_deadlines(app, l, uid, &due, &hard);
    if (hidden_cases_get(l, NULL, due, db_now(), &h)) {
        hidden_cases_free(&h);
        return NULL;
    }
    char *out = h.n ? text_scrub(detail, &h, "") : strdup(detail);
    hidden_cases_free(&h);
    return out;
}
