/*
 * api.c - the JSON API of docs/api.md and the helpers the pages reuse.
 * See api.h. Handlers parse HTTP, call a helper, and send its JSON or error.
 */
#include "server/api.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <http_parser.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>

#include "server/lateday.h"
#include "server/multipart.h"
#include "server/regrade.h"
#include "server/roster.h"

#define ROLE(r) (1u << (r))
#define HUMANS (ROLE(AUTH_STUDENT) | ROLE(AUTH_TA) | ROLE(AUTH_ADMIN))
#define STAFF (ROLE(AUTH_TA) | ROLE(AUTH_ADMIN))
#define ADMIN ROLE(AUTH_ADMIN)
#define RUNNER ROLE(AUTH_RUNNER)

/* ---- errors ---- */

int api_fail(struct api_error *e, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    e->code = code;
    e->retry_after = 0;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    switch (status) {
    case 400:
        return -EINVAL;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return -ENOENT;
    case 409:
        return -EEXIST;
    case 413:
        return -EFBIG;
    case 415:
        return -ENOTSUP;
    case 429:
        return -EAGAIN;
    default:
        return -EIO;
    }
}

int api_internal(struct api_error *e, int rc)
{
    if (rc == -EBUSY)
        return api_fail(e, 503, "internal", "The database is busy; try again in a moment.");
    if (rc == -ENOSPC)
        return api_fail(e, 503, "internal",
                        "The server's disk is full, so nothing could be saved; the staff have "
                        "been alerted by /healthz. Try again later.");
    return api_fail(e, 500, "internal",
                    "Internal error (%s); the staff can see it in the server log.",
                    strerror(rc < 0 ? -rc : rc));
}

void api_error_send(struct http_request *req, const struct api_error *e)
{
    if (e->status == 429) {
        char ra[24];
        snprintf(ra, sizeof(ra), "%d", e->retry_after);
        http_response_header(req, "Retry-After", ra);
        json_t *j = json_pack("{s:{s:s,s:s,s:i}}", "error", "code", e->code, "message", e->message,
                              "retry_after", e->retry_after);
        if (j) {
            http_response_json(req, 429, j);
            json_decref(j);
            return;
        }
    }
    if (e->status == 401)
        http_response_header(req, "WWW-Authenticate", "Bearer realm=\"cugrade\"");
    if (e->status == 503)
        http_response_header(req, "Retry-After", "1");
    http_response_error(req, e->status ? e->status : 500, e->code ? e->code : "internal", "%s",
                        e->message);
}

static int send_json(struct http_request *req, int status, json_t *j)
{
    if (!j) {
        http_response_error(req, 500, "internal", "Out of memory.");
        return HTTP_DONE;
    }
    http_response_json(req, status, j);
    json_decref(j);
    return HTTP_DONE;
}

static int send_err(struct http_request *req, const struct api_error *e)
{
    api_error_send(req, e);
    return HTTP_DONE;
}

/* Authenticate and check the role; on failure the response is filled and
 * -1 returned. */
static int need(struct app *app, struct http_request *req, struct auth_user *u, unsigned roles)
{
    struct api_error e;
    int rc = app_auth(app, req, u);
    if (rc == -ENOENT) {
        api_fail(&e, 401, "unauthorized",
                 "This needs a token: send the header 'Authorization: Bearer <your token>'.");
        send_err(req, &e);
        return -1;
    }
    if (rc == -EACCES) {
        api_fail(&e, 401, "unauthorized",
                 "Your token or session is not valid (mistyped, revoked or expired); ask the "
                 "course staff for a new one.");
        send_err(req, &e);
        return -1;
    }
    if (rc) {
        api_internal(&e, rc);
        send_err(req, &e);
        return -1;
    }
    /* Cross-site request forgery: a browser sends the session cookie with
     * any request to us, so a state-changing API call authenticated by the
     * cookie alone must also prove it came from our pages. */
    if (u->via_session && req->method != HTTP_GET && req->method != HTTP_HEAD) {
        const char *t = http_request_header(req, "X-CSRF-Token");
        if (!t || !auth_equal(t, u->csrf)) {
            api_fail(&e, 403, "forbidden",
                     "A request signed in by the session cookie must send the page's X-CSRF-Token "
                     "header.");
            send_err(req, &e);
            return -1;
        }
    }
    if (!(ROLE(u->role) & roles)) {
        if (u->role == AUTH_RUNNER)
            api_fail(&e, 403, "forbidden", "Runner tokens may only use /api/runner/*.");
        else if (roles == RUNNER)
            api_fail(&e, 403, "forbidden", "Only runner tokens may use /api/runner/*.");
        else if (roles == ADMIN)
            api_fail(&e, 403, "forbidden", "Only admins may do this; you are signed in as %s (%s).",
                     u->name, auth_role_name(u->role));
        else
            api_fail(&e, 403, "forbidden", "Your role (%s) may not do this.",
                     auth_role_name(u->role));
        send_err(req, &e);
        return -1;
    }
    req->user = u;
    return 0;
}

int api_json_parse(const char *body, size_t len, int allow_empty, json_t **out, struct api_error *e)
{
    json_error_t jerr;
    *out = NULL;
    size_t n = len;
    const char *b = body;
    while (n && isspace((unsigned char)*b)) {
        b++;
        n--;
    }
    if (n == 0) {
        if (allow_empty) {
            *out = json_object();
            return *out ? 0 : api_internal(e, -ENOMEM);
        }
        return api_fail(e, 400, "malformed_json", "The request body is empty; send a JSON object.");
    }
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        return api_fail(e, 400, "malformed_json",
                        "The body is not valid JSON: %s (line %d, column %d).", jerr.text,
                        jerr.line, jerr.column);
    if (!json_is_object(j)) {
        json_decref(j);
        return api_fail(e, 400, "malformed_json", "The body must be a JSON object.");
    }
    *out = j;
    return 0;
}

int api_need(struct app *app, struct http_request *req, struct auth_user *u, unsigned roles)
{
    return need(app, req, u, roles);
}

int api_send_json(struct http_request *req, int status, json_t *j)
{
    return send_json(req, status, j);
}

static int json_body_err(struct http_request *req, json_t **out, int allow_empty,
                         struct api_error *e)
{
    return api_json_parse(req->body, req->body_len, allow_empty, out, e);
}

static int parse_id(const char *s, long long *out)
{
    if (!s || !*s || strlen(s) > 18)
        return -EINVAL;
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (*p - '0');
    }
    if (v <= 0)
        return -EINVAL;
    *out = v;
    return 0;
}

/* ---- time and lab state ---- */

static json_t *json_time(double t)
{
    char buf[40];
    if (t <= 0)
        return json_null();
    api_time_iso(t, buf, sizeof(buf));
    return json_string(buf);
}

static int lab_open_now(const struct app_lab *l, double due, double hard, double now)
{
    if (!l->has_rubric)
        return 0;
    if (l->rubric.opens > 0 && now < l->rubric.opens)
        return 0;
    if (due > 0 && now > due) {
        if (l->rubric.late_policy == RUBRIC_LATE_REFUSE)
            return 0;
        if (hard > 0 && now > hard)
            return 0;
    }
    return 1;
}

int api_labs_list(struct app *app, const struct auth_user *viewer, json_t **out,
                  struct api_error *e)
{
    json_t *arr = json_array();
    double now = db_now();
    if (!arr)
        return api_internal(e, -ENOMEM);
    for (size_t i = 0; i < app->nlabs; i++) {
        struct app_lab *l = &app->labs[i];
        double due, hard;
        api_deadlines(app, l, viewer ? viewer->id : 0, &due, &hard);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o,s:b}", "lab", l->lab.name, "title",
                                             l->lab.title ? l->lab.title : l->lab.name, "due",
                                             json_time(due), "hard_deadline", json_time(hard),
                                             "open", lab_open_now(l, due, hard, now)));
    }
    *out = json_pack("{s:o}", "labs", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_lab_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    double due, hard;
    api_deadlines(app, l, viewer ? viewer->id : 0, &due, &hard);
    *out = json_pack(
        "{s:s,s:s,s:o,s:o,s:s,s:s?,s:b,s:o,s:i,s:o}", "lab", l->lab.name, "title",
        l->lab.title ? l->lab.title : l->lab.name, "due", json_time(due), "hard_deadline",
        json_time(hard), "interface", l->lab.interface ? l->lab.interface : "", "handout",
        l->lab.handout, "open", lab_open_now(l, due, hard, db_now()), "opens",
        json_time(l->has_rubric ? l->rubric.opens : 0), "rubric_version", l->rubric_version,
        "max_score", l->has_rubric ? json_real(l->rubric.max_score) : json_null());
    return *out ? 0 : api_internal(e, -ENOMEM);
}

/* ---- submissions ---- */

#define SUB_COLS                                                                                   \
    "s.id, s.lab, u.name, s.status, s.phase, s.detail, s.filename, s.sha256, s.size, s.late,"      \
    " s.created_at, s.updated_at, s.attempts, s.score, s.max_score, s.rubric_version,"             \
    " s.user_id, (SELECT o.score FROM overrides o WHERE o.submission_id = s.id"                    \
    " ORDER BY o.id DESC LIMIT 1), s.speedup, s.late_days, s.max_attempts, s.graded_at"

enum {
    C_ID,
    C_LAB,
    C_USER,
    C_STATUS,
    C_PHASE,
    C_DETAIL,
    C_FILENAME,
    C_SHA,
    C_SIZE,
    C_LATE,
    C_CREATED,
    C_UPDATED,
    C_ATTEMPTS,
    C_SCORE,
    C_MAX,
    C_RV,
    C_UID,
    C_OVERRIDE,
    C_SPEEDUP,
    C_LATE_DAYS,
    C_MAX_ATTEMPTS,
    C_GRADED,
    C_RESULT
};

static json_t *col_number(sqlite3_stmt *st, int c)
{
    if (sqlite3_column_type(st, c) == SQLITE_NULL)
        return json_null();
    return json_real(sqlite3_column_double(st, c));
}

/* Which correctness cases / tests a student may not see yet. */
static int visible_to_student(const char *vis, double due, double now)
{
    if (!vis || strcmp(vis, "visible") == 0)
        return 1;
    if (strcmp(vis, "after_due_date") == 0)
        return due > 0 && now > due;
    return 0; /* hidden, after_published (no publishing yet) */
}

/* ---- what a student may not see yet ----
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
        if (!visible_to_student(rl->visibility, due, now) && hidden_add(h, rl->case_name))
            return -ENOMEM;
    }
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "tests"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *vis = json_string_value(json_object_get(t, "visibility"));
        if (name && strncmp(name, "correctness: ", 13) == 0 && !visible_to_student(vis, due, now) &&
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
static json_t *result_filter(struct app *app, const char *lab, long long uid, const json_t *res)
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
            if (!visible_to_student(vis, due, now)) {
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
static char *detail_filter(struct app *app, const char *lab, long long uid, const char *detail)
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

/* 1 if a runner is parked in a claim or talked to us in the last 2 minutes. */
static int runners_active(struct app *app)
{
    if (queue_waiting(app->queue) > 0)
        return 1;
    sqlite3_stmt *st = db_stmt(app->db, "SELECT MAX(last_seen) FROM runners");
    if (!st)
        return 1;
    int active = sqlite3_step(st) == SQLITE_ROW && db_now() - sqlite3_column_double(st, 0) < 120;
    sqlite3_reset(st);
    return active;
}

static json_t *submission_json(struct app *app, sqlite3_stmt *st, const struct auth_user *viewer,
                               int with_result)
{
    char created[40], updated[40];
    const char *status = db_col_text(st, C_STATUS);
    long long id = sqlite3_column_int64(st, C_ID);
    api_time_iso(sqlite3_column_double(st, C_CREATED), created, sizeof(created));
    api_time_iso(sqlite3_column_double(st, C_UPDATED), updated, sizeof(updated));
    json_t *score = sqlite3_column_type(st, C_OVERRIDE) != SQLITE_NULL ? col_number(st, C_OVERRIDE)
                                                                       : col_number(st, C_SCORE);
    json_t *qpos = json_null(), *eta = json_null();
    const char *detail = db_col_text(st, C_DETAIL);
    char *scrubbed = NULL;
    if (viewer->role == AUTH_STUDENT) {
        scrubbed =
            detail_filter(app, db_col_text(st, C_LAB), sqlite3_column_int64(st, C_UID), detail);
        detail = scrubbed ? scrubbed : "";
    }
    if (strcmp(status, "queued") == 0) {
        long long pos = queue_position(app->queue, id);
        double rate = queue_rate(app->queue);
        qpos = json_integer(pos);
        /* The ETA from the measured service rate: the jobs ahead and this
         * one, at the rate verdicts came in over the last minutes. */
        if (pos > 0 && rate > 0)
            eta = json_integer((json_int_t)ceil((double)pos / rate));
        /* Jobs wait visibly: say so when no GPU runner is there to take them. */
        if (!*detail && !runners_active(app))
            detail = "waiting for a GPU runner: none is connected right now";
    }
    json_t *o = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:b,s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:i}",
        "id", (json_int_t)id, "lab", db_col_text(st, C_LAB), "user", db_col_text(st, C_USER),
        "status", status, "phase", db_col_text(st, C_PHASE), "detail", detail, "filename",
        db_col_text(st, C_FILENAME), "sha256", db_col_text(st, C_SHA), "size",
        (json_int_t)sqlite3_column_int64(st, C_SIZE), "late", sqlite3_column_int(st, C_LATE),
        "created_at", created, "updated_at", updated, "attempts",
        sqlite3_column_int(st, C_ATTEMPTS), "queue_position", qpos, "eta_seconds", eta, "score",
        score, "max_score",
        col_number(st, C_MAX), "rubric_version",
        sqlite3_column_type(st, C_RV) == SQLITE_NULL ? json_null()
                                                     : json_integer(sqlite3_column_int(st, C_RV)),
        "overridden", sqlite3_column_type(st, C_OVERRIDE) != SQLITE_NULL, "speedup",
        col_number(st, C_SPEEDUP), "graded_at", json_time(sqlite3_column_double(st, C_GRADED)),
        "max_attempts", sqlite3_column_int(st, C_MAX_ATTEMPTS));
    free(scrubbed);
    if (!o)
        return NULL;
    if (sqlite3_column_int(st, C_LATE)) {
        struct app_lab *l = app_lab_find(app, db_col_text(st, C_LAB));
        /* Pooled late days cover part of the lateness (lateday.h). */
        int pooled = lateday_covered(app->db, id);
        double pct = l && l->has_rubric ? l->rubric.penalty_percent_per_day *
                                              fmax(0, sqlite3_column_double(st, C_LATE_DAYS) - pooled)
                                        : 0;
        json_object_set_new(o, "late_days_pooled", json_integer(pooled));
        json_object_set_new(o, "late_days", json_real(sqlite3_column_double(st, C_LATE_DAYS)));
        json_object_set_new(o, "late_penalty_percent", json_real(pct > 100 ? 100 : pct));
    }
    if (with_result) {
        json_t *res = NULL;
        if (queue_status_final(status) && sqlite3_column_type(st, C_RESULT) != SQLITE_NULL) {
            json_t *full = json_loads(db_col_text(st, C_RESULT), 0, NULL);
            if (full && viewer->role == AUTH_STUDENT) {
                res = result_filter(app, db_col_text(st, C_LAB), sqlite3_column_int64(st, C_UID),
                                    full);
                json_decref(full);
            } else {
                res = full;
            }
        }
        json_object_set_new(o, "result", res ? res : json_null());
        json_t *rr = NULL;
        struct api_error ign;
        if (regrade_request_list(app, viewer, NULL, NULL, NULL, id, &rr, &ign) == 0)
            json_object_set_new(o, "regrade_requests", json_incref(json_object_get(rr, "requests")));
        json_decref(rr);
    }
    return o;
}

/* The rendered-submission cache: GET /api/submissions/{id} of a finished
 * submission is read far more often than it changes. One slot per (id mod
 * N, view). Invalidated by id on every change of the row. */
#define SUBCACHE_N 2048

struct subcache_entry {
    long long id; /* 0: empty */
    long long owner;
    double valid_until; /* 0: until invalidated */
    struct http_buf body;
};

struct app_subcache {
    struct subcache_entry e[SUBCACHE_N][2]; /* [.][0] staff view, [.][1] student view */
};

void api_cache_invalidate(struct app *app, long long id)
{
    struct app_subcache *c = app->subcache;
    if (!c)
        return;
    if (id == 0) {
        for (size_t i = 0; i < SUBCACHE_N; i++)
            for (int v = 0; v < 2; v++) {
                http_buf_free(&c->e[i][v].body);
                c->e[i][v].id = 0;
            }
        return;
    }
    for (int v = 0; v < 2; v++) {
        struct subcache_entry *en = &c->e[(unsigned long long)id % SUBCACHE_N][v];
        if (en->id == id) {
            en->id = 0;
            en->body.len = 0;
        }
    }
}

static void scoreboard_invalidate(struct app *app, const char *lab)
{
    for (size_t i = 0; i < app->nlabs; i++) {
        if (lab && strcmp(app->labs[i].lab.name, lab) != 0)
            continue;
        for (int k = 0; k < 4; k++)
            app->labs[i].sb_valid[k] = 0;
    }
}

static int submission_load(struct app *app, long long id, sqlite3_stmt **out)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT " SUB_COLS ", s.result FROM submissions s"
                                        " JOIN users u ON u.id = s.user_id WHERE s.id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
    }
    *out = st;
    return 0;
}

int api_submission_get(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                       struct api_error *e)
{
    sqlite3_stmt *st;
    int rc = submission_load(app, id, &st);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    if (rc)
        return api_internal(e, rc);
    if (viewer->role == AUTH_STUDENT && sqlite3_column_int64(st, C_UID) != viewer->id) {
        sqlite3_reset(st);
        /* Same answer as for a missing id would hide which ids exist, but
         * the contract says 403 for another student's submission. */
        return api_fail(e, 403, "forbidden", "Submission %lld belongs to another student.", id);
    }
    *out = submission_json(app, st, viewer, 1);
    sqlite3_reset(st);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

/* GET /api/submissions/{id} with the cache in front. */
static int submission_get_cached(struct app *app, struct http_request *req,
                                 const struct auth_user *u, long long id)
{
    struct api_error e;
    int view = u->role == AUTH_STUDENT;
    if (!app->subcache)
        app->subcache = calloc(1, sizeof(*app->subcache));
    struct subcache_entry *en =
        app->subcache ? &app->subcache->e[(unsigned long long)id % SUBCACHE_N][view] : NULL;
    if (en && en->id == id && en->body.len &&
        (en->valid_until == 0 || db_now() < en->valid_until)) {
        if (view && en->owner != u->id) {
            api_fail(&e, 403, "forbidden", "Submission %lld belongs to another student.", id);
            return send_err(req, &e);
        }
        http_response_body_borrowed(req, 200, "application/json", en->body.data, en->body.len);
        return HTTP_DONE;
    }
    sqlite3_stmt *st;
    int rc = submission_load(app, id, &st);
    if (rc == -ENOENT) {
        api_fail(&e, 404, "not_found", "There is no submission %lld.", id);
        return send_err(req, &e);
    }
    if (rc) {
        api_internal(&e, rc);
        return send_err(req, &e);
    }
    long long owner = sqlite3_column_int64(st, C_UID);
    if (view && owner != u->id) {
        sqlite3_reset(st);
        api_fail(&e, 403, "forbidden", "Submission %lld belongs to another student.", id);
        return send_err(req, &e);
    }
    int final = queue_status_final(db_col_text(st, C_STATUS));
    char lab[65];
    snprintf(lab, sizeof(lab), "%s", db_col_text(st, C_LAB));
    json_t *j = submission_json(app, st, u, 1);
    sqlite3_reset(st);
    if (!j) {
        api_internal(&e, -ENOMEM);
        return send_err(req, &e);
    }
    http_response_json(req, 200, j);
    json_decref(j);
    if (en && final && req->status == 200) {
        double valid_until = 0;
        if (view) {
            /* The student's view changes when the due date passes
             * (after_due_date tests appear): cache only until then. */
            struct app_lab *l = app_lab_find(app, lab);
            double due = 0, hard = 0;
            if (l)
                api_deadlines(app, l, owner, &due, &hard);
            if (due > db_now())
                valid_until = due;
        }
        en->id = 0;
        en->body.len = 0;
        if (http_buf_append(&en->body, req->res_body.data, req->res_body.len) == 0) {
            en->id = id;
            en->owner = owner;
            en->valid_until = valid_until;
        }
    }
    return HTTP_DONE;
}

int api_submission_source(struct app *app, const struct auth_user *viewer, long long id, char **src,
                          size_t *len, char filename[72], struct api_error *e)
{
    sqlite3_stmt *st =
        db_stmt(app->db, "SELECT user_id, filename, source FROM submissions WHERE id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        if (rc == SQLITE_DONE)
            return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
        return api_internal(e, db_errno(rc));
    }
    if (viewer->role == AUTH_STUDENT && sqlite3_column_int64(st, 0) != viewer->id) {
        sqlite3_reset(st);
        return api_fail(e, 403, "forbidden", "Submission %lld belongs to another student.", id);
    }
    snprintf(filename, 72, "%s", db_col_text(st, 1));
    *len = (size_t)sqlite3_column_bytes(st, 2);
    *src = malloc(*len + 1);
    if (!*src) {
        sqlite3_reset(st);
        return api_internal(e, -ENOMEM);
    }
    if (*len)
        memcpy(*src, sqlite3_column_blob(st, 2), *len);
    (*src)[*len] = '\0';
    sqlite3_reset(st);
    return 0;
}

static int status_valid(const char *s)
{
    return strcmp(s, "queued") == 0 || queue_status_in_progress(s) || queue_status_final(s);
}

int api_submissions_list(struct app *app, const struct auth_user *viewer, const char *lab,
                         const char *user, const char *status, int limit, int offset, json_t **out,
                         struct api_error *e)
{
    long long uid = 0;
    if (user && *user) {
        if (viewer->role == AUTH_STUDENT && strcmp(user, viewer->name) != 0)
            return api_fail(e, 403, "forbidden", "Students may list only their own submissions.");
        struct auth_user u;
        int rc = auth_user_get(app->db, user, &u);
        if (rc == -ENOENT)
            return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", user);
        if (rc)
            return api_internal(e, rc);
        uid = u.id;
    }
    if (viewer->role == AUTH_STUDENT)
        uid = viewer->id;
    if (lab && *lab && !app_lab_find(app, lab))
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (status && *status && !status_valid(status))
        return api_fail(e, 400, "bad_request", "status '%.32s' is not a submission status.",
                        status);
    if (limit <= 0)
        limit = 50;
    if (limit > 500)
        limit = 500;
    if (offset < 0)
        offset = 0;
    /* One statement per pair of filters, each with its index: written as
     * "(?1 = 0 OR s.user_id = ?1)" the planner could use none and scanned
     * every submission of the term on each lab page (12 ms at 10,000
     * students, tests/bench/capacity_bench). Status stays a residual filter. */
#define LIST_SQL(where)                                                                            \
    "SELECT " SUB_COLS " FROM submissions s JOIN users u ON u.id = s.user_id WHERE " where         \
    " AND (?3 IS NULL OR s.status = ?3) ORDER BY s.id DESC LIMIT ?4 OFFSET ?5"
    static const char *const list_sql[2][2] = {
        {LIST_SQL("?1 = 0 AND ?2 IS NULL"), LIST_SQL("?1 = 0 AND s.lab = ?2")},
        {LIST_SQL("s.user_id = ?1 AND ?2 IS NULL"), LIST_SQL("s.user_id = ?1 AND s.lab = ?2")}};
#undef LIST_SQL
    sqlite3_stmt *st = db_stmt(app->db, list_sql[uid != 0][lab && *lab]);
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, uid);
    if (lab && *lab)
        sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    if (status && *status)
        sqlite3_bind_text(st, 3, status, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, limit);
    sqlite3_bind_int(st, 5, offset);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, submission_json(app, st, viewer, 0));
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return api_internal(e, db_errno(rc));
    }
    *out = json_pack("{s:o}", "submissions", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_queue_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff may see the queue.");
    sqlite3_stmt *st = db_stmt(
        app->db,
        "SELECT " SUB_COLS " FROM submissions s JOIN users u ON u.id = s.user_id"
        " WHERE s.status IN ('queued','compiling','checking','running','timing','system_error')"
        " ORDER BY CASE s.status WHEN 'system_error' THEN 0 WHEN 'queued' THEN 2 ELSE 1 END, s.id"
        " LIMIT 1000");
    if (!st)
        return api_internal(e, -EIO);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(arr, submission_json(app, st, viewer, 0));
    sqlite3_reset(st);
    *out = json_pack("{s:o,s:I,s:I}", "queue", arr, "depth", (json_int_t)queue_depth(app->queue),
                     "runners_waiting", (json_int_t)queue_waiting(app->queue));
    return *out ? 0 : api_internal(e, -ENOMEM);
}

/* Valid UTF-8 (no overlongs, no surrogates) and no NUL bytes. */
static int source_text_ok(const unsigned char *s, size_t n)
{
    return http_utf8_valid((const char *)s, n);
}

int api_submit(struct app *app, const struct auth_user *viewer, const char *labname,
               const char *filename, const char *source, size_t len, json_t **out,
               struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, labname);
    double now = db_now(), due = 0, hard = 0;
    char when[40];
    int late = 0;
    double late_days = 0;
    int rc;

    if (!auth_role_human(viewer->role))
        return api_fail(e, 403, "forbidden", "Runner tokens cannot submit.");
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", labname);
    if (!l->has_rubric)
        return api_fail(e, 403, "lab_closed",
                        "Lab %s is not open for submissions yet (it has no rubric).", l->lab.name);
    if (!multipart_filename_valid(filename))
        return api_fail(e, 400, "bad_request",
                        "The file name '%.64s' is not allowed: use 1-64 letters, digits, '_', '-' "
                        "or '.', ending in .cu (no folders).",
                        filename);
    if (len == 0)
        return api_fail(e, 400, "bad_request", "The source file is empty.");
    if (len > API_SOURCE_MAX)
        return api_fail(e, 413, "payload_too_large",
                        "The source file is %zu bytes; source files may be at most 256 KiB.", len);
    if (!source_text_ok((const unsigned char *)source, len))
        return api_fail(
            e, 400, "binary_source",
            "The file is not text: source files must be UTF-8 or ASCII without NUL bytes.");
    if (viewer->role == AUTH_STUDENT) {
        if (l->rubric.opens > 0 && now < l->rubric.opens) {
            api_time_iso(l->rubric.opens, when, sizeof(when));
            return api_fail(e, 403, "lab_closed", "Lab %s opens at %s.", l->lab.name, when);
        }
        api_deadlines(app, l, viewer->id, &due, &hard);
        if (due > 0 && now > due) {
            if (l->rubric.late_policy == RUBRIC_LATE_REFUSE) {
                api_time_iso(due, when, sizeof(when));
                return api_fail(
                    e, 403, "deadline_passed",
                    "The deadline of %s was %s and this lab accepts no late submissions.",
                    l->lab.name, when);
            }
            if (hard > 0 && now > hard) {
                api_time_iso(hard, when, sizeof(when));
                return api_fail(e, 403, "deadline_passed",
                                "The hard deadline of %s was %s; submissions are closed.",
                                l->lab.name, when);
            }
            late = 1;
            late_days = ceil((now - due) / 86400.0);
        }
        /* Rate limits: at most max_in_flight being graded, max_per_hour per
         * hour. A still-queued submission does not count: this one
         * supersedes it (queue_enqueue), and superseded ones are never
         * counted against the hourly limit either. */
        sqlite3_stmt *st = db_stmt(
            app->db, "SELECT COUNT(*), MIN(id) FROM submissions WHERE user_id = ?1 AND lab = ?2"
                     " AND status IN ('compiling','checking','running','timing')");
        if (!st)
            return api_internal(e, -EIO);
        sqlite3_bind_int64(st, 1, viewer->id);
        sqlite3_bind_text(st, 2, l->lab.name, -1, SQLITE_STATIC);
        int inflight = 0;
        long long first = 0;
        if (sqlite3_step(st) == SQLITE_ROW) {
            inflight = sqlite3_column_int(st, 0);
            first = sqlite3_column_int64(st, 1);
        }
        sqlite3_reset(st);
        if (inflight >= l->rubric.max_in_flight) {
            rc = api_fail(e, 429, "rate_limited",
                          "You already have %d submission%s in flight for %s (#%lld); wait until "
                          "it is graded, then submit again.",
                          inflight, inflight == 1 ? "" : "s", l->lab.name, first);
            e->retry_after = 10;
            return rc;
        }
        st = db_stmt(app->db,
                     "SELECT COUNT(*) FILTER (WHERE status <> 'superseded'),"
                     " MIN(created_at) FILTER (WHERE status <> 'superseded'), COUNT(*)"
                     " FROM submissions WHERE user_id = ?1 AND lab = ?2 AND created_at > ?3");
        if (!st)
            return api_internal(e, -EIO);
        sqlite3_bind_int64(st, 1, viewer->id);
        sqlite3_bind_text(st, 2, l->lab.name, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, now - 3600);
        int hour = 0, stored = 0;
        double oldest = now;
        if (sqlite3_step(st) == SQLITE_ROW) {
            hour = sqlite3_column_int(st, 0);
            if (sqlite3_column_type(st, 1) != SQLITE_NULL)
                oldest = sqlite3_column_double(st, 1);
            stored = sqlite3_column_int(st, 2);
        }
        sqlite3_reset(st);
        /* Superseded submissions are free, but each is a stored file: past
         * SUPERSEDE_FACTOR times the hourly limit in an hour, resubmitting
         * in a loop is refused too (the database is not a free disk). */
        if (l->rubric.max_per_hour > 0 &&
            stored >= API_SUPERSEDE_FACTOR * l->rubric.max_per_hour) {
            rc = api_fail(e, 429, "rate_limited",
                          "You stored %d submissions to %s in the last hour, most of them replaced "
                          "before they were graded; wait a few minutes before submitting again.",
                          stored, l->lab.name);
            e->retry_after = 300;
            return rc;
        }
        if (l->rubric.max_per_hour > 0 && hour >= l->rubric.max_per_hour) { /* 0: no limit */
            int wait = (int)ceil(oldest + 3600 - now);
            if (wait < 1)
                wait = 1;
            rc = api_fail(e, 429, "rate_limited",
                          "You submitted %d times to %s in the last hour (the limit is %d); try "
                          "again in %d seconds.",
                          hour, l->lab.name, l->rubric.max_per_hour, wait);
            e->retry_after = wait;
            return rc;
        }
    }
    struct queue_submit qs = {.user_id = viewer->id,
                              .lab = l->lab.name,
                              .filename = filename,
                              .source = source,
                              .size = len,
                              .late = late,
                              .late_days = late_days,
                              .max_attempts = l->rubric.max_attempts};
    long long id = 0;
    int superseded = 0;
    rc = queue_enqueue(app->queue, &qs, &id, &superseded);
    if (rc)
        return api_internal(e, rc);
    char url[64];
    snprintf(url, sizeof(url), "/api/submissions/%lld", id);
    app_log("submission %lld queued: %s, lab %s, %zu bytes%s%s", id, viewer->name, l->lab.name, len,
            late ? ", late" : "", superseded ? ", superseding the queued one" : "");
    *out = json_pack("{s:I,s:s,s:s,s:b,s:i}", "id", (json_int_t)id, "status", "queued", "url", url,
                     "late", late, "superseded", superseded);
    if (*out && late) {
        /* Pooled late days: spent now, before any penalty (lateday.h). */
        struct lateday_quote q;
        if (lateday_spend(app, l, viewer->id, id, (int)late_days, &q) == 0)
            lateday_quote_json(&q, *out);
    }
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_regrade(struct app *app, const struct auth_user *viewer, long long id, struct api_error *e)
{
    /* TAs regrade too (they handle regrade requests); only admins change rubrics and users. */
    if (viewer->role != AUTH_ADMIN && viewer->role != AUTH_TA)
        return api_fail(e, 403, "forbidden", "Only TAs and admins may regrade.");
    char lab[65] = "";
    sqlite3_stmt *st = db_stmt(app->db, "SELECT lab FROM submissions WHERE id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(lab, sizeof(lab), "%s", db_col_text(st, 0));
    sqlite3_reset(st);
    if (!lab[0])
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    int rc = queue_regrade(app->queue, id);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    if (rc)
        return api_internal(e, rc);
    char target[32];
    snprintf(target, sizeof(target), "submission:%lld", id);
    db_audit(app->db, viewer->id, "regrade", target, lab);
    app_log("submission %lld requeued for regrade by %s", id, viewer->name);
    api_cache_invalidate(app, id);
    scoreboard_invalidate(app, lab);
    return 0;
}

int api_override_add(struct app *app, const struct auth_user *viewer, long long id, double score,
                     const char *reason, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff may override scores.");
    if (!reason || !*reason)
        return api_fail(e, 400, "bad_request", "An override needs a reason.");
    if (!isfinite(score) || score < 0)
        return api_fail(e, 400, "bad_request", "score must be a number >= 0.");
    char lab[65] = "";
    sqlite3_stmt *st = db_stmt(app->db, "SELECT lab FROM submissions WHERE id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(lab, sizeof(lab), "%s", db_col_text(st, 0));
    sqlite3_reset(st);
    if (!lab[0])
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    st = db_stmt(app->db, "INSERT INTO overrides(submission_id, score, reason, by_user, created_at)"
                          " VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, score);
    sqlite3_bind_text(st, 3, reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, viewer->id);
    sqlite3_bind_double(st, 5, db_now());
    int rc = db_step_done(st);
    if (rc)
        return api_internal(e, rc);
    char target[32], detail[600];
    snprintf(target, sizeof(target), "submission:%lld", id);
    snprintf(detail, sizeof(detail), "score=%g reason=%.500s", score, reason);
    db_audit(app->db, viewer->id, "override", target, detail);
    api_cache_invalidate(app, id);
    scoreboard_invalidate(app, lab);
    return 0;
}

int api_extension_set(struct app *app, const struct auth_user *viewer, const char *user,
                      const char *lab, double due, double hard, struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may grant extensions.");
    struct auth_user u;
    int rc = auth_user_get(app->db, user, &u);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", user);
    if (rc)
        return api_internal(e, rc);
    if (!app_lab_find(app, lab))
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    sqlite3_stmt *st = db_stmt(app->db, "INSERT INTO extensions(user_id, lab, due, hard_deadline)"
                                        " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(user_id, lab)"
                                        " DO UPDATE SET due = ?3, hard_deadline = ?4");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, u.id);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    if (due > 0)
        sqlite3_bind_double(st, 3, due);
    if (hard > 0)
        sqlite3_bind_double(st, 4, hard);
    rc = db_step_done(st);
    if (rc)
        return api_internal(e, rc);
    char detail[128];
    snprintf(detail, sizeof(detail), "lab=%s due=%.0f hard_deadline=%.0f", lab, due, hard);
    db_audit(app->db, viewer->id, "extension", user, detail);
    api_cache_invalidate(app, 0);
    return 0;
}

int api_show_name_set(struct app *app, const struct auth_user *viewer, int show,
                      struct api_error *e)
{
    sqlite3_stmt *st = db_stmt(app->db, "UPDATE users SET show_name = ?1 WHERE id = ?2");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int(st, 1, show ? 1 : 0);
    sqlite3_bind_int64(st, 2, viewer->id);
    int rc = db_step_done(st);
    if (rc)
        return api_internal(e, rc);
    auth_cache_clear();
    scoreboard_invalidate(app, NULL);
    return 0;
}

/* ---- scoreboard ---- */

struct sb_row {
    long long user_id;
    char user[65], display[129], pseudonym[65];
    int show_name;
    double score, max_score, speedup;
    int has_speedup, late;
    long long submission;
    double submitted_at;
};

/* Best submission per student in lab, ranked: score, then speedup, then
 * earliest. Overrides replace scores. *rows is malloc'd (caller frees). */
struct sb_override {
    long long submission;
    double score;
};

static int sb_override_cmp(const void *a, const void *b)
{
    long long x = ((const struct sb_override *)a)->submission;
    long long y = ((const struct sb_override *)b)->submission;
    return x < y ? -1 : x > y;
}

/* Ranking: score, then speedup (higher first, none last), then earliest. */
static int sb_better(const struct sb_row *a, const struct sb_row *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    if (a->has_speedup != b->has_speedup)
        return a->has_speedup;
    if (a->has_speedup && a->speedup != b->speedup)
        return a->speedup > b->speedup;
    if (a->submitted_at != b->submitted_at)
        return a->submitted_at < b->submitted_at;
    return a->submission < b->submission;
}

static int sb_row_cmp(const void *a, const void *b)
{
    const struct sb_row *x = a, *y = b;
    return sb_better(x, y) ? -1 : sb_better(y, x) ? 1 : 0;
}

/* Best submission per student in lab, ranked by sb_better. Overrides replace
 * scores. One pass over a covering index (no table rows, no sort in SQL):
 * the scoreboard is rebuilt after every result, on the event loop.
 * *rows is malloc'd (caller frees). */
static int scoreboard_rows(struct app *app, const char *lab, struct sb_row **rows, size_t *n)
{
    struct app_lab *l = app_lab_find(app, lab);
    struct sb_override *ov = NULL;
    size_t nov = 0, capov = 0, cap = 0;
    struct sb_row best;
    long long cur_user = 0;
    int have = 0, rc;

    *rows = NULL;
    *n = 0;
    /* The latest override of each submission (rare: a few per lab). */
    sqlite3_stmt *st = db_stmt(app->db, "SELECT o.submission_id, o.score FROM overrides o"
                                        " JOIN submissions s ON s.id = o.submission_id"
                                        " WHERE s.lab = ?1 ORDER BY o.submission_id, o.id");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long long sid = sqlite3_column_int64(st, 0);
        if (nov && ov[nov - 1].submission == sid) {
            ov[nov - 1].score = sqlite3_column_double(st, 1); /* a later one */
            continue;
        }
        if (nov == capov) {
            capov = capov ? capov * 2 : 16;
            struct sb_override *p = realloc(ov, capov * sizeof(*ov));
            if (!p) {
                sqlite3_reset(st);
                rc = -ENOMEM;
                goto fail;
            }
            ov = p;
        }
        ov[nov].submission = sid;
        ov[nov].score = sqlite3_column_double(st, 1);
        nov++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rc = db_errno(rc);
        goto fail;
    }

    st = db_stmt(app->db, "SELECT user_id, id, score, speedup, created_at, max_score, late"
                          " FROM submissions WHERE lab = ?1 ORDER BY user_id");
    if (!st) {
        rc = -EIO;
        goto fail;
    }
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    for (;;) {
        rc = sqlite3_step(st);
        int row = rc == SQLITE_ROW;
        long long uid = row ? sqlite3_column_int64(st, 0) : -1;
        if ((!row || uid != cur_user) && have) {
            /* The previous student's best is final. */
            if (*n == cap) {
                cap = cap ? cap * 2 : 64;
                struct sb_row *p = realloc(*rows, cap * sizeof(**rows));
                if (!p) {
                    sqlite3_reset(st);
                    rc = -ENOMEM;
                    goto fail;
                }
                *rows = p;
            }
            (*rows)[(*n)++] = best;
            have = 0;
        }
        if (!row)
            break;
        cur_user = uid;
        struct sb_row r;
        memset(&r, 0, sizeof(r));
        r.submission = sqlite3_column_int64(st, 1);
        struct sb_override key = {.submission = r.submission}, *o = NULL;
        if (nov)
            o = bsearch(&key, ov, nov, sizeof(*ov), sb_override_cmp);
        if (o) {
            r.score = o->score;
        } else if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
            r.score = sqlite3_column_double(st, 2);
        } else {
            continue; /* not graded: not on the board */
        }
        r.has_speedup = sqlite3_column_type(st, 3) != SQLITE_NULL;
        r.speedup = sqlite3_column_double(st, 3);
        r.submitted_at = sqlite3_column_double(st, 4);
        r.max_score = sqlite3_column_type(st, 5) != SQLITE_NULL ? sqlite3_column_double(st, 5)
                      : l && l->has_rubric                      ? l->rubric.max_score
                                                                : 0;
        r.late = sqlite3_column_int(st, 6);
        r.user_id = uid;
        if (!have || sb_better(&r, &best)) {
            best = r; /* names are filled in below, for winners only */
            have = 1;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rc = db_errno(rc);
        goto fail;
    }

    /* Names, and only students: staff test submissions stay off the board.
     * The pseudonym is the student's one for this lab. */
    st = db_stmt(app->db, "SELECT u.name, u.display_name, p.pseudonym, u.show_name, u.role"
                          " FROM users u LEFT JOIN pseudonyms p ON p.user_id = u.id AND p.lab = ?2"
                          " WHERE u.id = ?1");
    if (!st) {
        rc = -EIO;
        goto fail;
    }
    size_t k = 0, missing = 0;
    for (size_t i = 0; i < *n; i++) {
        struct sb_row *r = &(*rows)[i];
        sqlite3_bind_int64(st, 1, r->user_id);
        sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && strcmp(db_col_text(st, 4), "student") == 0) {
            snprintf(r->user, sizeof(r->user), "%s", db_col_text(st, 0));
            snprintf(r->display, sizeof(r->display), "%s", db_col_text(st, 1));
            snprintf(r->pseudonym, sizeof(r->pseudonym), "%s", db_col_text(st, 2));
            missing += r->pseudonym[0] == '\0';
            r->show_name = sqlite3_column_int(st, 3);
            (*rows)[k++] = *r;
        }
        sqlite3_reset(st);
    }
    *n = k;
    /* Students new to this lab's board get their pseudonym now, all in one
     * transaction (one fsync, not one per student, on the event loop). */
    if (missing) {
        int own = sqlite3_get_autocommit(db_handle(app->db));
        rc = own ? db_begin(app->db, 1) : 0;
        for (size_t i = 0; !rc && i < *n; i++)
            if (!(*rows)[i].pseudonym[0])
                rc = auth_pseudonym(app->db, (*rows)[i].user_id, lab, 1, (*rows)[i].pseudonym);
        if (own && rc)
            db_rollback(app->db);
        else if (own)
            rc = db_commit(app->db);
        if (rc)
            goto fail;
    }
    if (*n > 1) /* qsort(NULL, 0, ...) is undefined: an empty board has no array */
        qsort(*rows, *n, sizeof(**rows), sb_row_cmp);
    free(ov);
    return 0;
fail:
    free(ov);
    free(*rows);
    *rows = NULL;
    *n = 0;
    return rc;
}

static const char *sb_name(const struct sb_row *r, int student_view)
{
    return student_view && !r->show_name ? r->pseudonym : r->user;
}

static const char *sb_display(const struct sb_row *r, int student_view)
{
    return student_view && !r->show_name ? r->pseudonym : r->display;
}

/* The day (UTC) of t, "2026-12-03": what a student's view says of when
 * a row's submission came, instead of the second (which, with the
 * submission's id, linked rows across labs and to other pages). */
static void sb_day(double t, char *buf, size_t len)
{
    char iso[40];
    api_time_iso(t, iso, sizeof(iso));
    snprintf(buf, len, "%.10s", iso);
}

static json_t *scoreboard_json(const char *lab, const struct sb_row *rows, size_t n,
                               int student_view)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct sb_row *r = &rows[i];
        char at[40];
        json_t *o = json_pack("{s:I,s:s,s:s,s:f,s:f,s:o}", "rank", (json_int_t)(i + 1), "user",
                              sb_name(r, student_view), "display_name", sb_display(r, student_view),
                              "score", r->score, "max_score", r->max_score, "speedup",
                              r->has_speedup ? json_real(r->speedup) : json_null());
        if (!o)
            break;
        if (student_view) {
            sb_day(r->submitted_at, at, sizeof(at));
            json_object_set_new(o, "submitted_on", json_string(at));
        } else {
            api_time_iso(r->submitted_at, at, sizeof(at));
            json_object_set_new(o, "submission", json_integer(r->submission));
            json_object_set_new(o, "submitted_at", json_string(at));
        }
        json_array_append_new(arr, o);
    }
    return json_pack("{s:s,s:o}", "lab", lab, "rows", arr);
}

/* Spreadsheet formula injection: a cell starting with = + - @ (or a tab or
 * CR) runs as a formula when a TA opens the CSV; prefix it with a quote. */
static void csv_cell(struct http_buf *b, const char *s)
{
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    int formula =
        s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r';
    if (!quote && !formula) {
        http_buf_append(b, s, strlen(s));
        return;
    }
    http_buf_append(b, "\"", 1);
    if (formula)
        http_buf_append(b, "'", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            http_buf_append(b, "\"", 1);
        http_buf_append(b, p, 1);
    }
    http_buf_append(b, "\"", 1);
}

static void scoreboard_csv(struct http_buf *b, const struct sb_row *rows, size_t n,
                           int student_view)
{
    http_buf_printf(b, student_view
                           ? "rank,user,display_name,score,max_score,speedup,submitted_on\r\n"
                           : "rank,user,display_name,score,max_score,speedup,submission,"
                             "submitted_at\r\n");
    for (size_t i = 0; i < n; i++) {
        const struct sb_row *r = &rows[i];
        char at[40], sp[40] = "";
        if (r->has_speedup)
            snprintf(sp, sizeof(sp), "%g", r->speedup);
        http_buf_printf(b, "%zu,", i + 1);
        csv_cell(b, sb_name(r, student_view));
        http_buf_append(b, ",", 1);
        csv_cell(b, sb_display(r, student_view));
        if (student_view) {
            sb_day(r->submitted_at, at, sizeof(at));
            http_buf_printf(b, ",%g,%g,%s,%s\r\n", r->score, r->max_score, sp, at);
        } else {
            api_time_iso(r->submitted_at, at, sizeof(at));
            http_buf_printf(b, ",%g,%g,%s,%lld,%s\r\n", r->score, r->max_score, sp, r->submission,
                            at);
        }
    }
}

/* The rendered scoreboard (kind: 0 json staff, 1 json student, 2 csv staff,
 * 3 csv student), from the cache or built now. */
static int scoreboard_render(struct app *app, struct app_lab *l, int kind,
                             const struct http_buf **out)
{
    if (l->sb_valid[kind]) {
        *out = &l->sb_cache[kind];
        return 0;
    }
    struct sb_row *rows;
    size_t n;
    int rc = scoreboard_rows(app, l->lab.name, &rows, &n);
    if (rc)
        return rc;
    struct http_buf *b = &l->sb_cache[kind];
    b->len = 0;
    if (kind < 2) {
        json_t *j = scoreboard_json(l->lab.name, rows, n, kind == 1);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(j);
        if (!s) {
            free(rows);
            return -ENOMEM;
        }
        http_buf_append(b, s, strlen(s));
        http_buf_append(b, "\n", 1);
        free(s);
    } else {
        scoreboard_csv(b, rows, n, kind == 3);
    }
    free(rows);
    if (!b->data)
        return -ENOMEM;
    l->sb_valid[kind] = 1;
    *out = b;
    return 0;
}

int api_scoreboard(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, viewer->role == AUTH_STUDENT ? 1 : 0, &b);
    if (rc)
        return api_internal(e, rc);
    *out = json_loadb(b->data, b->len, 0, NULL);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_scoreboard_mine(struct app *app, const struct auth_user *viewer, const char *lab, int *rank,
                        long long *submission)
{
    struct app_lab *l = app_lab_find(app, lab);
    const struct http_buf *b;
    *rank = 0;
    *submission = 0;
    if (!l)
        return -ENOENT;
    /* The staff rendering (cached) has names and ids; only the viewer's own
     * row is read from it. */
    int rc = scoreboard_render(app, l, 0, &b);
    if (rc)
        return rc;
    json_t *sb = json_loadb(b->data, b->len, 0, NULL), *row;
    if (!sb)
        return -ENOMEM;
    size_t i;
    rc = -ENOENT;
    json_array_foreach(json_object_get(sb, "rows"), i, row)
    {
        const char *u = json_string_value(json_object_get(row, "user"));
        if (u && strcmp(u, viewer->name) == 0) {
            *rank = (int)json_integer_value(json_object_get(row, "rank"));
            *submission = json_integer_value(json_object_get(row, "submission"));
            rc = 0;
            break;
        }
    }
    json_decref(sb);
    return rc;
}

int api_scoreboard_csv(struct app *app, const struct auth_user *viewer, const char *lab,
                       struct http_buf *out, struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, viewer->role == AUTH_STUDENT ? 3 : 2, &b);
    if (rc)
        return api_internal(e, rc);
    return http_buf_append(out, b->data, b->len) ? api_internal(e, -ENOMEM) : 0;
}

int api_grades_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may export grades.");
    http_buf_printf(out, "user,display_name,lab,score,max_score,late,submission%s\r\n",
                    lateday_csv_header);
    for (size_t i = 0; i < app->nlabs; i++) {
        struct sb_row *rows;
        size_t n;
        int rc = scoreboard_rows(app, app->labs[i].lab.name, &rows, &n);
        if (rc)
            return api_internal(e, rc);
        for (size_t k = 0; k < n; k++) {
            csv_cell(out, rows[k].user);
            http_buf_append(out, ",", 1);
            csv_cell(out, rows[k].display);
            http_buf_append(out, ",", 1);
            csv_cell(out, app->labs[i].lab.name);
            http_buf_printf(out, ",%g,%g,%s,%lld", rows[k].score, rows[k].max_score,
                            rows[k].late ? "true" : "false", rows[k].submission);
            lateday_csv_cells(app->db, rows[k].user_id, app->labs[i].lab.name, out);
            http_buf_append(out, "\r\n", 2);
        }
        free(rows);
    }
    return 0;
}

/* ---- rubrics ---- */

int api_rubric_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may read rubrics here.");
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (!l->has_rubric)
        return api_fail(e, 404, "not_found", "Lab %s has no rubric yet; PUT one.", lab);
    *out = json_pack("{s:i,s:O}", "version", l->rubric_version, "rubric", l->rubric_doc);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_rubric_put(struct app *app, const struct auth_user *viewer, const char *lab,
                   const json_t *doc, int *version, struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may change rubrics.");
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (!json_is_object(doc))
        return api_fail(e, 400, "bad_request", "A rubric is a JSON object.");
    const char *dl = json_string_value(json_object_get(doc, "lab"));
    if (dl && strcmp(dl, lab) != 0)
        return api_fail(e, 400, "bad_request", "lab: the rubric says '%.64s' but this is lab %s.",
                        dl, lab);
    struct rubric r;
    char perr[300];
    if (rubric_parse(doc, &l->lab, &r, perr, sizeof(perr)) != 0)
        return api_fail(e, 400, "bad_request", "%s", perr);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_t *copy = json_deep_copy(doc);
    if (!text || !copy) {
        free(text);
        json_decref(copy);
        rubric_free(&r);
        return api_internal(e, -ENOMEM);
    }
    int v = l->rubric_version + 1, rc = db_begin(app->db, 1);
    sqlite3_stmt *st = NULL;
    if (!rc) {
        st = db_stmt(app->db, "SELECT COALESCE(MAX(version), 0) + 1 FROM rubrics WHERE lab = ?1");
        if (st) {
            sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int(st, 0);
            sqlite3_reset(st);
        }
        st = db_stmt(app->db, "INSERT INTO rubrics(lab, version, doc, created_at, created_by)"
                              " VALUES(?1, ?2, ?3, ?4, ?5)");
        rc = st ? 0 : -EIO;
    }
    if (!rc) {
        sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, v);
        sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, db_now());
        sqlite3_bind_int64(st, 5, viewer->id);
        rc = db_step_done(st);
    }
    if (!rc) {
        char detail[32];
        snprintf(detail, sizeof(detail), "version %d", v);
        rc = db_audit(app->db, viewer->id, "rubric_change", lab, detail);
    }
    if (!rc)
        rc = db_commit(app->db);
    else
        db_rollback(app->db);
    free(text);
    if (rc) {
        json_decref(copy);
        rubric_free(&r);
        return api_internal(e, rc);
    }
    if (l->has_rubric)
        rubric_free(&l->rubric);
    json_decref(l->rubric_doc);
    l->rubric = r;
    l->rubric_doc = copy;
    app_log("lab %s: rubric version %d stored by %s", lab, v, viewer->name);
    l->rubric_version = v;
    l->has_rubric = 1;
    *version = v;
    scoreboard_invalidate(app, lab);
    api_cache_invalidate(app, 0);
    return 0;
}

/* ---- users ---- */

static int users_add_rows(struct app *app, const struct auth_user *viewer, size_t n,
                          const char *const *names, const char *const *roles,
                          const char *const *displays, const int *lines, json_t **out,
                          struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may add users.");
    json_t *arr = json_array();
    int rc = db_begin(app->db, 1);
    if (rc) {
        json_decref(arr);
        return api_internal(e, rc);
    }
    for (size_t i = 0; i < n; i++) {
        enum auth_role role;
        char where[32];
        if (lines)
            snprintf(where, sizeof(where), "line %d", lines[i]);
        else
            snprintf(where, sizeof(where), "users[%zu]", i);
        if (auth_role_parse(roles[i], &role)) {
            rc = api_fail(e, 400, "bad_request",
                          "%s: role '%.32s' is not one of student, ta, admin, runner.", where,
                          roles[i] ? roles[i] : "");
            goto fail;
        }
        if (!names[i] || !auth_name_valid(names[i])) {
            rc = api_fail(e, 400, "bad_request",
                          "%s: name must be 1-64 letters, digits, '_', '.', '@' or '-'.", where);
            goto fail;
        }
        if (displays[i] && strlen(displays[i]) > 128) {
            rc = api_fail(e, 400, "bad_request", "%s: display_name is longer than 128 characters.",
                          where);
            goto fail;
        }
        char token[AUTH_TOKEN_LEN + 1];
        rc = auth_user_add(app->db, names[i], role, displays[i], token);
        if (rc == -EEXIST) {
            rc = api_fail(e, 409, "conflict", "%s: a user called '%s' already exists.", where,
                          names[i]);
            goto fail;
        }
        if (rc == -EINVAL) {
            rc = api_fail(e, 400, "bad_request", "%s: display_name must be UTF-8 text.", where);
            goto fail;
        }
        if (rc) {
            rc = api_internal(e, rc);
            goto fail;
        }
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", names[i], "role",
                                             auth_role_name(role), "token", token));
        db_audit(app->db, viewer->id, "user_add", names[i], auth_role_name(role));
    }
    rc = db_commit(app->db);
    if (rc) {
        json_decref(arr);
        return api_internal(e, rc);
    }
    *out = json_pack("{s:o}", "users", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
fail:
    db_rollback(app->db);
    json_decref(arr);
    return rc;
}

int api_users_add(struct app *app, const struct auth_user *viewer, const json_t *users,
                  json_t **out, struct api_error *e)
{
    if (!json_is_array(users) || json_array_size(users) == 0)
        return api_fail(
            e, 400, "bad_request",
            "users: expected a non-empty array of {\"name\",\"role\",\"display_name\"}.");
    size_t n = json_array_size(users);
    if (n > ROSTER_MAX_ROWS)
        return api_fail(e, 400, "bad_request", "users: at most %d at a time.", ROSTER_MAX_ROWS);
    const char **names = calloc(n, sizeof(char *)), **roles = calloc(n, sizeof(char *)),
               **disp = calloc(n, sizeof(char *));
    int rc;
    if (!names || !roles || !disp) {
        rc = api_internal(e, -ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *u = json_array_get(users, i);
        if (!json_is_object(u)) {
            rc = api_fail(e, 400, "bad_request", "users[%zu]: expected an object.", i);
            goto out;
        }
        names[i] = json_string_value(json_object_get(u, "name"));
        roles[i] = json_string_value(json_object_get(u, "role"));
        disp[i] = json_string_value(json_object_get(u, "display_name"));
        if (!names[i]) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].name: missing or not a string.", i);
            goto out;
        }
        if (!roles[i]) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].role: missing or not a string.", i);
            goto out;
        }
        json_t *dn = json_object_get(u, "display_name");
        if (dn && !json_is_string(dn) && !json_is_null(dn)) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].display_name: must be a string.", i);
            goto out;
        }
    }
    rc = users_add_rows(app, viewer, n, names, roles, disp, NULL, out, e);
out:
    free(names);
    free(roles);
    free(disp);
    return rc;
}

int api_users_add_csv(struct app *app, const struct auth_user *viewer, const char *csv, size_t len,
                      json_t **out, struct api_error *e)
{
    struct roster_row *rows;
    size_t n;
    char err[256];
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may add users.");
    int rc = roster_parse(csv, len, &rows, &n, err, sizeof(err));
    if (rc == -ENOMEM)
        return api_internal(e, rc);
    if (rc)
        return api_fail(e, 400, "bad_request", "Roster: %s", err);
    const char **names = calloc(n, sizeof(char *)), **roles = calloc(n, sizeof(char *)),
               **disp = calloc(n, sizeof(char *));
    int *lines = calloc(n, sizeof(int));
    if (!names || !roles || !disp || !lines) {
        rc = api_internal(e, -ENOMEM);
    } else {
        for (size_t i = 0; i < n; i++) {
            names[i] = rows[i].name;
            roles[i] = rows[i].role;
            disp[i] = rows[i].display_name[0] ? rows[i].display_name : NULL;
            lines[i] = rows[i].line;
        }
        rc = users_add_rows(app, viewer, n, names, roles, disp, lines, out, e);
    }
    free(names);
    free(roles);
    free(disp);
    free(lines);
    free(rows);
    return rc;
}

int api_users_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff may list users.");
    sqlite3_stmt *st = db_stmt(app->db, "SELECT id, name, role, display_name, pseudonym, show_name,"
                                        " created_at FROM users ORDER BY id");
    if (!st)
        return api_internal(e, -EIO);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(
            arr, json_pack("{s:I,s:s,s:s,s:s,s:s,s:b,s:o}", "id",
                           (json_int_t)sqlite3_column_int64(st, 0), "name", db_col_text(st, 1),
                           "role", db_col_text(st, 2), "display_name", db_col_text(st, 3),
                           "pseudonym", db_col_text(st, 4), "show_name", sqlite3_column_int(st, 5),
                           "created_at", json_time(sqlite3_column_double(st, 6))));
    sqlite3_reset(st);
    *out = json_pack("{s:o}", "users", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_user_revoke(struct app *app, const struct auth_user *viewer, const char *name, json_t **out,
                    struct api_error *e)
{
    int ntok = 0, nses = 0;
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may revoke tokens.");
    int rc = auth_token_revoke_all(app->db, name, &ntok, &nses);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", name);
    if (rc)
        return api_internal(e, rc);
    char detail[64];
    snprintf(detail, sizeof(detail), "%d tokens, %d sessions", ntok, nses);
    db_audit(app->db, viewer->id, "token_revoke", name, detail);
    app_log("every token of %s revoked by %s (%d live, %d sessions ended)", name, viewer->name,
            ntok, nses);
    *out = json_pack("{s:s,s:i,s:i}", "user", name, "tokens_revoked", ntok, "sessions_ended", nses);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

/* ======================= HTTP handlers ======================= */

int api_disk_free(struct app *app, double *free_mb)
{
    char dir[1024];
    struct statvfs sv;
    const char *slash = strrchr(app->cfg.db_path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s",
                 (int)(slash == app->cfg.db_path ? 1 : slash - app->cfg.db_path), app->cfg.db_path);
    if (statvfs(dir, &sv) != 0)
        return -errno;
    /* f_bavail: what an unprivileged writer may still use (root's reserve
     * is not ours to count on). */
    *free_mb = (double)sv.f_bavail * (double)sv.f_frsize / (1024.0 * 1024.0);
    return 0;
}

/* /healthz: 200 only when the database answers, no damage was seen (the
 * start's quick_check passed, and SQLite has met no damaged page since),
 * and the database's filesystem has at least --min-free-mb free: a full
 * disk fails every submission and result, so the probe says so first. */
static int h_healthz(struct app *app, struct http_request *req)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT 1");
    int db_ok = st && sqlite3_step(st) == SQLITE_ROW;
    if (st)
        sqlite3_reset(st);
    double free_mb = 0;
    int disk_rc = api_disk_free(app, &free_mb);
    const char *disk = disk_rc ? "error" : free_mb < app->cfg.min_free_mb ? "low" : "ok";
    long damaged = db_corruption_count();
    int ok = db_ok && damaged == 0 && strcmp(disk, "ok") == 0;
    json_t *j = json_pack("{s:b,s:s,s:s,s:s,s:o,s:f}", "ok", ok, "db", db_ok ? "ok" : "error",
                          "integrity", damaged ? "damaged" : "ok", "disk", disk, "free_mb",
                          disk_rc ? json_null() : json_integer((json_int_t)free_mb), "min_free_mb",
                          app->cfg.min_free_mb);
    /* 512, not 512.0, for a whole number of MiB. */
    if (j && app->cfg.min_free_mb == floor(app->cfg.min_free_mb))
        json_object_set_new(j, "min_free_mb", json_integer((json_int_t)app->cfg.min_free_mb));
    if (!j) {
        static const char bad[] = "{\"ok\":false,\"db\":\"error\"}\n";
        http_response_body(req, 503, "application/json", bad, sizeof(bad) - 1);
        return HTTP_DONE;
    }
    return send_json(req, ok ? 200 : 503, j);
}

static int h_metrics(struct app *app, struct http_request *req)
{
    /* Not for anyone: it names runners and costs queries (issue 14).
     * Prometheus sends a bearer token (authorization: credentials_file). */
    struct auth_user u;
    if (need(app, req, &u, ADMIN | RUNNER))
        return HTTP_DONE;
    struct http_buf *b = &req->res_body;
    req->status = 200;
    req->content_type = "text/plain; version=0.0.4; charset=utf-8";
    b->len = 0;
    double now = db_now();
    http_buf_printf(b,
                    "# HELP cugrade_queue_depth Submissions waiting for a runner.\n"
                    "# TYPE cugrade_queue_depth gauge\ncugrade_queue_depth %lld\n",
                    queue_depth(app->queue));
    http_buf_printf(b, "# HELP cugrade_jobs Submissions by status.\n# TYPE cugrade_jobs gauge\n");
    static const char *const statuses[] = {
        "queued",        "compiling", "checking",      "running", "timing",       "graded",
        "compile_error", "rejected",  "runtime_error", "timeout", "system_error", "superseded"};
    enum { NSTATUS = sizeof(statuses) / sizeof(statuses[0]) };
    long long counts[NSTATUS] = {0};
    sqlite3_stmt *st = db_stmt(app->db, "SELECT status, COUNT(*) FROM submissions GROUP BY status");
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < NSTATUS; i++)
            if (strcmp(db_col_text(st, 0), statuses[i]) == 0)
                counts[i] = sqlite3_column_int64(st, 1);
    }
    if (st)
        sqlite3_reset(st);
    for (int i = 0; i < NSTATUS; i++)
        http_buf_printf(b, "cugrade_jobs{status=\"%s\"} %lld\n", statuses[i], counts[i]);
    http_buf_printf(b, "# HELP cugrade_runners_seen Runners that ever claimed a job.\n"
                       "# TYPE cugrade_runners_seen gauge\n");
    long long nr = 0, recent = 0;
    st = db_stmt(app->db, "SELECT name, gpu, last_seen, jobs_done FROM runners ORDER BY name");
    struct http_buf per = {0};
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        nr++;
        double ls = sqlite3_column_double(st, 2);
        if (now - ls < 120)
            recent++;
        /* Runner names come from runners; keep label values printable. */
        char name[80];
        snprintf(name, sizeof(name), "%s", db_col_text(st, 0));
        for (char *p = name; *p; p++)
            if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                *p = '_';
        http_buf_printf(&per,
                        "cugrade_runner_last_seen_seconds{runner=\"%s\"} %.3f\n"
                        "cugrade_runner_jobs_done_total{runner=\"%s\"} %lld\n",
                        name, ls, name, (long long)sqlite3_column_int64(st, 3));
    }
    if (st)
        sqlite3_reset(st);
    http_buf_printf(b, "cugrade_runners_seen %lld\n", nr);
    http_buf_printf(b,
                    "# HELP cugrade_runners_active Runners seen in the last 120 seconds.\n"
                    "# TYPE cugrade_runners_active gauge\ncugrade_runners_active %lld\n",
                    recent);
    http_buf_printf(b,
                    "# HELP cugrade_runners_waiting Runners parked in a claim long poll.\n"
                    "# TYPE cugrade_runners_waiting gauge\ncugrade_runners_waiting %zu\n",
                    queue_waiting(app->queue));
    http_buf_printf(
        b, "# HELP cugrade_runner_last_seen_seconds Unix time a runner last talked to us.\n"
           "# TYPE cugrade_runner_last_seen_seconds gauge\n"
           "# HELP cugrade_runner_jobs_done_total Results a runner posted.\n"
           "# TYPE cugrade_runner_jobs_done_total counter\n");
    if (per.len)
        http_buf_append(b, per.data, per.len);
    http_buf_free(&per);
    http_buf_printf(b,
                    "# HELP cugrade_http_connections Open HTTP connections.\n"
                    "# TYPE cugrade_http_connections gauge\ncugrade_http_connections %zu\n",
                    app->http ? http_server_conns(app->http) : 0);
    double free_mb;
    if (api_disk_free(app, &free_mb) == 0)
        http_buf_printf(b,
                        "# HELP cugrade_disk_free_bytes Free space on the database's filesystem.\n"
                        "# TYPE cugrade_disk_free_bytes gauge\ncugrade_disk_free_bytes %.0f\n",
                        free_mb * 1024 * 1024);
    http_buf_printf(b,
                    "# HELP cugrade_uptime_seconds Seconds since the server started.\n"
                    "# TYPE cugrade_uptime_seconds gauge\ncugrade_uptime_seconds %.0f\n",
                    now - app->started_at);
    router_metrics_write(&app->router, b);
    app_metrics_write(app, b);
    return HTTP_DONE;
}

static int h_me(struct app *app, struct http_request *req)
{
    struct auth_user u;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    /* The viewer's pseudonym in each lab where they have one (a student gets
     * one when they first appear on a lab's scoreboard). */
    json_t *ps = json_object();
    for (size_t i = 0; ps && i < app->nlabs; i++) {
        char p[65];
        if (auth_pseudonym(app->db, u.id, app->labs[i].lab.name, 0, p) == 0)
            json_object_set_new(ps, app->labs[i].lab.name, json_string(p));
    }
    return send_json(req, 200,
                     json_pack("{s:I,s:s,s:s,s:s,s:o,s:b}", "id", (json_int_t)u.id, "name", u.name,
                               "role", auth_role_name(u.role), "display_name", u.display_name,
                               "pseudonyms", ps ? ps : json_null(), "show_name", u.show_name));
}

static int h_me_patch(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    json_t *sn = json_object_get(body, "show_name");
    if (!json_is_boolean(sn)) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "show_name: expected true or false.");
        return send_err(req, &e);
    }
    int rc = api_show_name_set(app, &u, json_is_true(sn), &e);
    json_decref(body);
    if (rc)
        return send_err(req, &e);
    return h_me(app, req);
}

static int h_labs(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_labs_list(app, &u, &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_lab(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_lab_get(app, &u, http_request_param(req, "lab"), &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int ct_is(const char *ct, const char *type)
{
    size_t n = strlen(type);
    while (ct && *ct == ' ')
        ct++;
    return ct && strncasecmp(ct, type, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int h_submit(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    const char *lab = http_request_param(req, "lab");
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (!app_lab_find(app, lab)) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.", lab);
        return send_err(req, &e);
    }
    const char *ct = http_request_header(req, "Content-Type");
    const char *filename, *src;
    size_t len;
    struct multipart_part parts[MULTIPART_MAX_PARTS];
    if (ct && ct_is(ct, "multipart/form-data")) {
        char boundary[80], err[200];
        size_t n;
        if (multipart_boundary(ct, boundary, sizeof(boundary))) {
            api_fail(
                &e, 400, "bad_request",
                "The multipart boundary in Content-Type is missing or invalid (1-70 characters).");
            return send_err(req, &e);
        }
        if (multipart_parse(req->body, req->body_len, boundary, parts, MULTIPART_MAX_PARTS, &n, err,
                            sizeof(err))) {
            api_fail(&e, 400, "bad_request", "Bad multipart body: %s", err);
            return send_err(req, &e);
        }
        const struct multipart_part *p = multipart_find(parts, n, "file");
        if (!p) {
            api_fail(&e, 400, "bad_request",
                     "The form has no part named 'file'; send it as: curl -F file=@kernel.cu ...");
            return send_err(req, &e);
        }
        filename = p->has_filename ? p->filename : "kernel.cu";
        src = p->data;
        len = p->len;
    } else if (!ct || ct_is(ct, "application/octet-stream") || ct_is(ct, "text/plain") ||
               ct_is(ct, "application/x-www-form-urlencoded") || ct_is(ct, "text/x-cuda") ||
               ct_is(ct, "text/x-c")) {
        /* curl --data-binary sends x-www-form-urlencoded unless told
         * otherwise: it is still the raw file, never decoded. */
        filename = http_request_query(req, "filename");
        if (!filename)
            filename = "kernel.cu";
        src = req->body;
        len = req->body_len;
    } else {
        api_fail(&e, 415, "unsupported_media_type",
                 "Send the file as multipart/form-data (curl -F file=@kernel.cu) or as a raw body "
                 "(curl --data-binary @kernel.cu), not %.64s.",
                 ct);
        return send_err(req, &e);
    }
    if (api_submit(app, &u, lab, filename, src, len, &j, &e))
        return send_err(req, &e);
    http_response_header(req, "Location", json_string_value(json_object_get(j, "url")));
    return send_json(req, 202, j);
}

static int h_submission(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Submission ids are positive integers.");
        return send_err(req, &e);
    }
    return submission_get_cached(app, req, &u, id);
}

static int h_source(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    char *src, fname[72];
    size_t len;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Submission ids are positive integers.");
        return send_err(req, &e);
    }
    if (api_submission_source(app, &u, id, &src, &len, fname, &e))
        return send_err(req, &e);
    char cd[128];
    snprintf(cd, sizeof(cd), "inline; filename=\"%s\"", fname);
    http_response_header(req, "Content-Disposition", cd);
    /* The source is the student's text: never let a browser sniff it into
     * HTML (stored XSS through a submission). */
    http_response_header(req, "X-Content-Type-Options", "nosniff");
    http_response_body(req, 200, "text/plain; charset=utf-8", src, len);
    free(src);
    return HTTP_DONE;
}

static int query_int(struct http_request *req, const char *name, int dflt, int *out)
{
    const char *v = http_request_query(req, name);
    if (!v || !*v) {
        *out = dflt;
        return 0;
    }
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1000000000)
        return -EINVAL;
    *out = (int)x;
    return 0;
}

static int h_submissions(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    int limit, offset;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (query_int(req, "limit", 50, &limit) || query_int(req, "offset", 0, &offset)) {
        api_fail(&e, 400, "bad_request", "limit and offset must be non-negative integers.");
        return send_err(req, &e);
    }
    if (api_submissions_list(app, &u, http_request_query(req, "lab"),
                             http_request_query(req, "user"), http_request_query(req, "status"),
                             limit, offset, &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_scoreboard(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    if (need(app, req, &u, HUMANS))
        return HTTP_DONE;
    struct app_lab *l = app_lab_find(app, http_request_param(req, "lab"));
    if (!l) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.",
                 http_request_param(req, "lab"));
        return send_err(req, &e);
    }
    const char *fmt = http_request_query(req, "format");
    int csv = fmt && strcmp(fmt, "csv") == 0;
    if (fmt && !csv && strcmp(fmt, "json") != 0) {
        api_fail(&e, 400, "bad_request", "format must be json or csv.");
        return send_err(req, &e);
    }
    int kind = (csv ? 2 : 0) + (u.role == AUTH_STUDENT ? 1 : 0);
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, kind, &b);
    if (rc) {
        api_internal(&e, rc);
        return send_err(req, &e);
    }
    if (csv) {
        char cd[128];
        snprintf(cd, sizeof(cd), "attachment; filename=\"%s-scoreboard.csv\"", l->lab.name);
        http_response_header(req, "Content-Disposition", cd);
    }
    http_response_body_borrowed(req, 200, csv ? "text/csv; charset=utf-8" : "application/json",
                                b->data, b->len);
    return HTTP_DONE;
}

static int h_admin_users(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j = NULL, *body;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    const char *ct = http_request_header(req, "Content-Type");
    int rc;
    if (ct && (ct_is(ct, "text/csv") || ct_is(ct, "application/csv"))) {
        rc = api_users_add_csv(app, &u, req->body, req->body_len, &j, &e);
    } else {
        if (json_body_err(req, &body, 0, &e))
            return send_err(req, &e);
        rc = api_users_add(app, &u, json_object_get(body, "users"), &j, &e);
        json_decref(body);
    }
    if (rc)
        return send_err(req, &e);
    return send_json(req, 201, j);
}

static int h_admin_users_list(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_users_list(app, &u, &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_admin_user_revoke(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_user_revoke(app, &u, http_request_param(req, "name"), &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_rubric_get(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_rubric_get(app, &u, http_request_param(req, "lab"), &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_rubric_put(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    int v;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (!app_lab_find(app, http_request_param(req, "lab"))) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.",
                 http_request_param(req, "lab"));
        return send_err(req, &e);
    }
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    /* Accept the document itself, or {"rubric":{...}} as GET returns it. */
    json_t *doc = body;
    if (json_object_size(body) <= 2 && json_is_object(json_object_get(body, "rubric")))
        doc = json_object_get(body, "rubric");
    int rc = api_rubric_put(app, &u, http_request_param(req, "lab"), doc, &v, &e);
    json_decref(body);
    if (rc)
        return send_err(req, &e);
    return send_json(req, 200, json_pack("{s:i}", "version", v));
}

static int h_regrade(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    if (need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Submission ids are positive integers.");
        return send_err(req, &e);
    }
    if (api_regrade(app, &u, id, &e))
        return send_err(req, &e);
    return send_json(req, 202, json_pack("{s:I,s:s}", "id", (json_int_t)id, "status", "queued"));
}

static int h_override(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Submission ids are positive integers.");
        return send_err(req, &e);
    }
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    json_t *sc = json_object_get(body, "score");
    const char *reason = json_string_value(json_object_get(body, "reason"));
    double score = json_number_value(sc); /* sc dies with body below */
    int rc = json_is_number(sc) ? api_override_add(app, &u, id, score, reason, &e)
                                : api_fail(&e, 400, "bad_request", "score: expected a number.");
    json_decref(body);
    if (rc)
        return send_err(req, &e);
    return send_json(req, 200, json_pack("{s:I,s:f}", "id", (json_int_t)id, "score", score));
}

static int h_extension(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    const char *user = json_string_value(json_object_get(body, "user"));
    const char *lab = json_string_value(json_object_get(body, "lab"));
    const char *due_s = json_string_value(json_object_get(body, "due"));
    const char *hard_s = json_string_value(json_object_get(body, "hard_deadline"));
    double due = 0, hard = 0;
    int rc;
    if (!user || !lab)
        rc =
            api_fail(&e, 400, "bad_request", "Send {\"user\",\"lab\",\"due\",\"hard_deadline\"?}.");
    else if ((due_s && rubric_time_parse(due_s, &due)) ||
             (hard_s && rubric_time_parse(hard_s, &hard)))
        rc = api_fail(&e, 400, "bad_request",
                      "due, hard_deadline: use ISO 8601 UTC like 2026-12-04T23:59:00Z.");
    else
        rc = api_extension_set(app, &u, user, lab, due, hard, &e);
    json_decref(body);
    if (rc)
        return send_err(req, &e);
    return send_json(req, 200, json_pack("{s:b}", "ok", 1));
}

static int h_queue(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (api_queue_list(app, &u, &j, &e))
        return send_err(req, &e);
    return send_json(req, 200, j);
}

static int h_grades(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    if (need(app, req, &u, ADMIN))
        return HTTP_DONE;
    req->res_body.len = 0;
    if (api_grades_csv(app, &u, &req->res_body, &e))
        return send_err(req, &e);
    req->status = 200;
    req->content_type = "text/csv; charset=utf-8";
    http_response_header(req, "Content-Disposition", "attachment; filename=\"grades.csv\"");
    return HTTP_DONE;
}

/* ---- runner protocol ---- */

static void runner_seen(struct app *app, const char *name, const char *gpu)
{
    sqlite3_stmt *st =
        db_stmt(app->db, "INSERT INTO runners(name, gpu, last_seen) VALUES(?1, ?2, ?3)"
                         " ON CONFLICT(name) DO UPDATE SET gpu = COALESCE(?2, gpu),"
                         " last_seen = ?3");
    if (!st)
        return;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (gpu)
        sqlite3_bind_text(st, 2, gpu, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, db_now());
    db_step_done(st);
}

static int rubric_version_of(void *ctx, const char *lab)
{
    struct app_lab *l = app_lab_find(ctx, lab);
    return l && l->has_rubric ? l->rubric_version : 0;
}

/* Try to claim a job for the runner and answer 200 with it. Returns 1 when
 * answered (a job or an error), 0 when nothing is queued. */
static int claim_now(struct app *app, struct http_request *req, const char *runner, long long uid)
{
    struct queue_job job;
    struct api_error e;
    int rc = queue_claim(app->queue, runner, uid, app->cfg.lease_s, rubric_version_of, app, &job);
    if (rc == -ENOENT)
        return 0;
    if (rc) {
        api_internal(&e, rc);
        send_err(req, &e);
        return 1;
    }
    char seed[33];
    if (auth_random_hex(16, seed)) {
        free(job.source);
        api_internal(&e, -EIO);
        send_err(req, &e);
        return 1;
    }
    struct app_lab *l = app_lab_find(app, job.lab);
    json_t *j = json_pack(
        "{s:{s:I,s:s,s:i,s:I,s:s,s:s%,s:s,s:s,s:i,s:O?}}", "job", "id", (json_int_t)job.id, "lab",
        job.lab, "attempt", job.attempt, "lease_seconds", (json_int_t)app->cfg.lease_s, "filename",
        job.filename, "source", job.source, job.size, "sha256", job.sha256, "seed", seed,
        "rubric_version", l ? l->rubric_version : 0, "rubric", l ? l->rubric_doc : NULL);
    free(job.source);
    api_cache_invalidate(app, job.id);
    app_log("job %lld claimed by %s (attempt %d, lab %s)", job.id, runner, job.attempt, job.lab);
    send_json(req, 200, j);
    return 1;
}

static int claim_wake(struct queue *q, struct http_request *req, int wake, const char *runner,
                      void *data)
{
    struct app *app = req->app;
    long long uid = (long long)(intptr_t)data;
    (void)q;
    if (wake)
        return claim_now(app, req, runner, uid);
    http_response_status(req, 204);
    return 1;
}

static int runner_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-:@", s[i]))
            return 0;
    return 1;
}

static int h_claim(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (json_body_err(req, &body, 1, &e))
        return send_err(req, &e);
    json_t *jr = json_object_get(body, "runner"), *jg = json_object_get(body, "gpu"),
           *jw = json_object_get(body, "wait");
    char runner[72], gpu[160] = "";
    if (jr && (!json_is_string(jr) || !runner_name_ok(json_string_value(jr)))) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "runner: 1-64 letters, digits or ._-:@");
        return send_err(req, &e);
    }
    if (jw && !json_is_number(jw)) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "wait: expected seconds (a number, at most 30).");
        return send_err(req, &e);
    }
    if (jr)
        snprintf(runner, sizeof(runner), "%s", json_string_value(jr));
    else
        snprintf(runner, sizeof(runner), "%s", u.name);
    if (json_is_string(jg))
        snprintf(gpu, sizeof(gpu), "%s", json_string_value(jg));
    double wait = jw ? json_number_value(jw) : 0;
    json_decref(body);
    if (!(wait >= 0))
        wait = 0;
    if (wait > app->cfg.max_wait_s)
        wait = app->cfg.max_wait_s;
    runner_seen(app, runner, gpu[0] ? gpu : NULL);
    if (claim_now(app, req, runner, u.id))
        return HTTP_DONE;
    if (wait > 0 &&
        queue_wait(app->queue, req, wait, runner, claim_wake, (void *)(intptr_t)u.id) == 0)
        return HTTP_DEFERRED;
    http_response_status(req, 204);
    return HTTP_DONE;
}

static int job_lease_args(json_t *body, const char **runner, int *attempt)
{
    json_t *jr = json_object_get(body, "runner"), *ja = json_object_get(body, "attempt");
    *runner = json_string_value(jr);
    *attempt = json_is_integer(ja) ? (int)json_integer_value(ja) : 0;
    return 0;
}

static int h_progress(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Job ids are positive integers.");
        return send_err(req, &e);
    }
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    const char *phase = json_string_value(json_object_get(body, "phase"));
    json_t *jd = json_object_get(body, "detail");
    const char *detail = json_string_value(jd);
    const char *runner;
    int attempt, rc;
    job_lease_args(body, &runner, &attempt);
    if (!phase || !queue_status_in_progress(phase)) {
        rc =
            api_fail(&e, 400, "bad_request", "phase: one of compiling, checking, running, timing.");
    } else if (jd && !json_is_string(jd)) {
        rc = api_fail(&e, 400, "bad_request", "detail: expected a string.");
    } else if (detail && strlen(detail) > 200) {
        rc = api_fail(&e, 400, "bad_request", "detail: at most 200 characters.");
    } else {
        rc = queue_progress(app->queue, id, u.id, runner, attempt, phase, detail, app->cfg.lease_s);
        if (rc == -ENOENT)
            api_fail(&e, 404, "not_found", "There is no job %lld.", id);
        else if (rc == -ESTALE)
            api_fail(&e, 409, "conflict",
                     "This runner no longer holds the lease of job %lld; abandon it.", id);
        else if (rc)
            api_internal(&e, rc);
    }
    if (!rc && runner)
        runner_seen(app, runner, NULL);
    json_decref(body);
    if (rc)
        return send_err(req, &e);
    return send_json(req, 200,
                     json_pack("{s:I}", "lease_expires_in", (json_int_t)app->cfg.lease_s));
}

static int h_result(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Job ids are positive integers.");
        return send_err(req, &e);
    }
    if (json_body_err(req, &body, 0, &e))
        return send_err(req, &e);
    const char *status = json_string_value(json_object_get(body, "status"));
    json_t *result = json_object_get(body, "result");
    const char *runner;
    int attempt, rc = 0;
    char *text = NULL;
    char lab[65] = "";
    job_lease_args(body, &runner, &attempt);
    /* A result must name its lease: without them a stale runner's late
     * result matched whatever lease the job had now and overwrote the
     * current holder's. */
    if (!runner || !*runner || attempt <= 0) {
        rc = api_fail(&e, 400, "bad_request",
                      "runner and attempt: a result must name its lease (the runner name sent "
                      "on claim and the claim's attempt).");
        goto out;
    }
    if (!status || !queue_status_verdict(status)) {
        rc = api_fail(&e, 400, "bad_request",
                      "status: one of graded, compile_error, rejected, runtime_error, timeout, "
                      "system_error.");
        goto out;
    }
    if (result && !json_is_object(result) && !json_is_null(result)) {
        rc = api_fail(&e, 400, "bad_request", "result: expected an object.");
        goto out;
    }
    if (strcmp(status, "system_error") != 0 && !json_is_object(result)) {
        rc = api_fail(&e, 400, "bad_request",
                      "result: a %s result needs its result document (an object).", status);
        goto out;
    }
    if (strcmp(status, "graded") == 0 && (!json_is_number(json_object_get(result, "score")) ||
                                          !json_is_number(json_object_get(result, "max_score")))) {
        rc = api_fail(&e, 400, "bad_request",
                      "result.score and result.max_score: a graded result needs both numbers.");
        goto out;
    }
    struct queue_result qr = {.status = status};
    json_t *js = json_object_get(result, "score"), *jm = json_object_get(result, "max_score");
    if ((js && !json_is_number(js)) || (jm && !json_is_number(jm))) {
        rc = api_fail(&e, 400, "bad_request", "result.score and result.max_score must be numbers.");
        goto out;
    }
    /* The late penalty applies to the stored score; the document stays verbatim. */
    double late_days = 0, pct = 0;
    sqlite3_stmt *st =
        db_stmt(app->db, "SELECT lab, late, late_days FROM submissions WHERE id = ?1");
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            snprintf(lab, sizeof(lab), "%s", db_col_text(st, 0));
            if (sqlite3_column_int(st, 1))
                late_days = sqlite3_column_double(st, 2);
        }
        sqlite3_reset(st);
    }
    struct app_lab *l = app_lab_find(app, lab);
    if (late_days > 0) /* the days the pool covers carry no penalty */
        late_days = fmax(0, late_days - lateday_covered(app->db, id));
    if (l && l->has_rubric)
        pct = l->rubric.penalty_percent_per_day * late_days;
    if (pct > 100)
        pct = 100;
    if (js) {
        qr.has_score = 1;
        qr.score = json_number_value(js) * (1 - pct / 100.0);
        if (qr.score < 0)
            qr.score = 0;
        qr.max_score = jm ? json_number_value(jm) : l && l->has_rubric ? l->rubric.max_score : 0;
    }
    json_t *sp =
        json_object_get(json_object_get(json_object_get(result, "cugrade"), "timing"), "speedup");
    if (json_is_number(sp) && isfinite(json_number_value(sp))) {
        qr.has_speedup = 1;
        qr.speedup = json_number_value(sp);
    }
    text = result && json_is_object(result)
               ? json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(15))
               : NULL;
    qr.result_json = text;
    const char *final = status;
    rc = queue_result(app->queue, id, u.id, runner, attempt, &qr, &final);
    if (rc == -ENOENT) {
        api_fail(&e, 404, "not_found", "There is no job %lld.", id);
        goto out;
    }
    if (rc == -ESTALE) {
        api_fail(&e, 409, "conflict",
                 "This runner no longer holds the lease of job %lld; the result was not stored.",
                 id);
        goto out;
    }
    if (rc) {
        api_internal(&e, rc);
        goto out;
    }
    st = db_stmt(app->db,
                 "UPDATE runners SET jobs_done = jobs_done + 1, last_seen = ?1 WHERE name = ?2");
    if (st && runner) {
        sqlite3_bind_double(st, 1, db_now());
        sqlite3_bind_text(st, 2, runner, -1, SQLITE_STATIC);
        db_step_done(st);
    }
    scoreboard_invalidate(app, lab);
    api_cache_invalidate(app, id);
    if (qr.has_score)
        app_log("job %lld: %s -> %s, score %g/%g%s", id, status, final, qr.score, qr.max_score,
                pct > 0 ? " (late penalty applied)" : "");
    else
        app_log("job %lld: %s -> %s", id, status, final);
    json_t *ans = json_pack("{s:I,s:s}", "id", (json_int_t)id, "status", final);
    json_decref(body); /* final may point into body */
    free(text);
    return send_json(req, 200, ans);
out:
    json_decref(body);
    free(text);
    return send_err(req, &e);
}

#define KiB 1024
const struct route api_routes[] = {
    {HTTP_GET, "/healthz", h_healthz, 0, NULL},
    {HTTP_GET, "/metrics", h_metrics, 0, NULL},
    {HTTP_GET, "/api/me", h_me, 0, NULL},
    {HTTP_PATCH, "/api/me", h_me_patch, 4 * KiB, NULL},
    {HTTP_GET, "/api/labs", h_labs, 0, NULL},
    {HTTP_GET, "/api/labs/{lab}", h_lab, 0, NULL},
    /* The cap leaves room for multipart framing; the file itself is held to
     * 256 KiB by api_submit. */
    {HTTP_POST, "/api/labs/{lab}/submissions", h_submit, API_SOURCE_MAX + 16 * KiB,
     "source files may be at most 256 KiB."},
    {HTTP_GET, "/api/labs/{lab}/scoreboard", h_scoreboard, 0, NULL},
    {HTTP_GET, "/api/submissions", h_submissions, 0, NULL},
    {HTTP_GET, "/api/submissions/{id}", h_submission, 0, NULL},
    {HTTP_GET, "/api/submissions/{id}/source", h_source, 0, NULL},
    {HTTP_POST, "/api/admin/users", h_admin_users, 4096 * KiB, "a roster may be at most 4 MiB."},
    {HTTP_GET, "/api/admin/users", h_admin_users_list, 0, NULL},
    {HTTP_POST, "/api/admin/users/{name}/revoke", h_admin_user_revoke, 4 * KiB, NULL},
    {HTTP_GET, "/api/admin/labs/{lab}/rubric", h_rubric_get, 0, NULL},
    {HTTP_PUT, "/api/admin/labs/{lab}/rubric", h_rubric_put, 256 * KiB,
     "a rubric may be at most 256 KiB."},
    {HTTP_POST, "/api/admin/submissions/{id}/regrade", h_regrade, 4 * KiB, NULL},
    {HTTP_POST, "/api/admin/submissions/{id}/override", h_override, 16 * KiB, NULL},
    {HTTP_POST, "/api/admin/extensions", h_extension, 16 * KiB, NULL},
    {HTTP_GET, "/api/admin/queue", h_queue, 0, NULL},
    {HTTP_GET, "/api/admin/export/grades.csv", h_grades, 0, NULL},
    {HTTP_POST, "/api/runner/claim", h_claim, 16 * KiB, NULL},
    {HTTP_POST, "/api/runner/jobs/{id}/progress", h_progress, 16 * KiB, NULL},
    {HTTP_POST, "/api/runner/jobs/{id}/result", h_result, 8192 * KiB,
     "a result may be at most 8 MiB."},
};
const size_t api_nroutes = sizeof(api_routes) / sizeof(api_routes[0]);
