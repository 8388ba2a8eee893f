/*
 * submission.c - the submissions table and its rules. See submission.h.
 */
#include "server/submission.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"
#include "server/hidden.h"
#include "server/lateday.h"
#include "server/multipart.h"
#include "server/regrade.h"
#include "server/runner.h"
#include "server/scoreboard.h"
#include "server/staff_write.h"

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
            hidden_detail_filter(app, db_col_text(st, C_LAB), sqlite3_column_int64(st, C_UID), detail);
        detail = scrubbed ? scrubbed : "";
    }
    if (strcmp(status, "queued") == 0 && app->queue) { /* none in an export's view */
        long long pos = queue_position(app->queue, id);
        double rate = queue_rate(app->queue);
        qpos = json_integer(pos);
        /* The ETA from the measured service rate: the jobs ahead and this
         * one, at the rate verdicts came in over the last minutes. */
        if (pos > 0 && rate > 0)
            eta = json_integer((json_int_t)ceil((double)pos / rate));
        /* Jobs wait visibly: say so when no GPU runner is there to take them. */
        if (!*detail && !runner_any_active(app))
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
        col_number(st, C_SPEEDUP), "graded_at", app_json_time(sqlite3_column_double(st, C_GRADED)),
        "max_attempts", sqlite3_column_int(st, C_MAX_ATTEMPTS));
    free(scrubbed);
    if (!o)
        return NULL;
    if (sqlite3_column_int(st, C_LATE)) {
        struct app_lab *l = app_lab_find(app, db_col_text(st, C_LAB));
        double days = sqlite3_column_double(st, C_LATE_DAYS);
        /* Pooled late days cover part of the lateness (lateday.h). */
        int pooled = lateday_covered(app->db, id);
        json_object_set_new(o, "late_days_pooled", json_integer(pooled));
        json_object_set_new(o, "late_days", json_real(days));
        json_object_set_new(o, "late_penalty_percent",
                            json_real(app_late_penalty_percent(l, fmax(0, days - pooled))));
    }
    if (with_result) {
        json_t *res = NULL;
        if (status_final(status) && sqlite3_column_type(st, C_RESULT) != SQLITE_NULL) {
            json_t *full = json_loads(db_col_text(st, C_RESULT), 0, NULL);
            if (full && viewer->role == AUTH_STUDENT) {
                res = hidden_result_filter(app, db_col_text(st, C_LAB), sqlite3_column_int64(st, C_UID),
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

int submission_read(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                    struct submission_meta *m, struct api_error *e)
{
    sqlite3_stmt *st = NULL;
    int rc = submission_load(app, id, &st);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    if (rc)
        return api_internal(e, rc);
    long long owner = sqlite3_column_int64(st, C_UID);
    if (!submission_visible(viewer, owner)) {
        sqlite3_reset(st);
        /* Same answer as for a missing id would hide which ids exist, but
         * the contract says 403 for another student's submission. */
        return api_fail(e, 403, "forbidden", "Submission %lld belongs to another student.", id);
    }
    if (m) {
        m->owner = owner;
        m->final = status_final(db_col_text(st, C_STATUS));
        snprintf(m->lab, sizeof(m->lab), "%s", db_col_text(st, C_LAB));
    }
    *out = submission_json(app, st, viewer, 1);
    sqlite3_reset(st);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_submission_get(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                       struct api_error *e)
{
    return submission_read(app, viewer, id, out, NULL, e);
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
    if (!submission_visible(viewer, sqlite3_column_int64(st, 0))) {
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
    return status_parse(s) >= 0;
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

/* A student's submission to l at now against their deadlines: the one
 * rule (app_lab_state) with the sentence for each way it is closed. 0 when
 * it may go in (on time or late). */
static int submit_deadline_check(const struct app_lab *l, double due, double hard, double now,
                                 struct api_error *e)
{
    char when[40];
    switch (app_lab_state(l, due, hard, now)) {
    case APP_LAB_OPEN:
    case APP_LAB_LATE:
        return 0;
    case APP_LAB_NO_RUBRIC:
        return api_fail(e, 403, "lab_closed",
                        "Lab %s is not open for submissions yet (it has no rubric).", l->lab.name);
    case APP_LAB_NOT_YET:
        api_time_iso(l->rubric.opens, when, sizeof(when));
        return api_fail(e, 403, "lab_closed", "Lab %s opens at %s.", l->lab.name, when);
    case APP_LAB_LATE_REFUSED:
        api_time_iso(due, when, sizeof(when));
        return api_fail(e, 403, "deadline_passed",
                        "The deadline of %s was %s and this lab accepts no late submissions.",
                        l->lab.name, when);
    case APP_LAB_CLOSED:
        api_time_iso(hard, when, sizeof(when));
        return api_fail(e, 403, "deadline_passed",
                        "The hard deadline of %s was %s; submissions are closed.", l->lab.name,
                        when);
    }
    assert(0 && "unknown lab state");
    return api_internal(e, -EINVAL);
}

int submission_rate_check(struct db *db, long long uid, const char *lab, int max_in_flight,
                          int max_per_hour, double now, struct api_error *e)
{
    int rc;
    /* Rate limits: at most max_in_flight being graded, max_per_hour per
     * hour. A still-queued submission does not count: this one
     * supersedes it (queue_enqueue), and superseded ones are never
     * counted against the hourly limit either. */
    sqlite3_stmt *st = db_stmt(
        db, "SELECT COUNT(*), MIN(id) FROM submissions WHERE user_id = ?1 AND lab = ?2"
                 " AND status IN ('compiling','checking','running','timing')");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, uid);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    int inflight = 0;
    long long first = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        inflight = sqlite3_column_int(st, 0);
        first = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    if (inflight >= max_in_flight) {
        rc = api_fail(e, 429, "rate_limited",
                      "You already have %d submission%s in flight for %s (#%lld); wait until "
                      "it is graded, then submit again.",
                      inflight, inflight == 1 ? "" : "s", lab, first);
        e->retry_after = 10;
        return rc;
    }
    st = db_stmt(db,
                 "SELECT COUNT(*) FILTER (WHERE status <> 'superseded'),"
                 " MIN(created_at) FILTER (WHERE status <> 'superseded'), COUNT(*)"
                 " FROM submissions WHERE user_id = ?1 AND lab = ?2 AND created_at > ?3");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, uid);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
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
    if (max_per_hour > 0 &&
        stored >= API_SUPERSEDE_FACTOR * max_per_hour) {
        rc = api_fail(e, 429, "rate_limited",
                      "You stored %d submissions to %s in the last hour, most of them replaced "
                      "before they were graded; wait a few minutes before submitting again.",
                      stored, lab);
        e->retry_after = 300;
        return rc;
    }
    if (max_per_hour > 0 && hour >= max_per_hour) { /* 0: no limit */
        int wait = (int)ceil(oldest + 3600 - now);
        if (wait < 1)
            wait = 1;
        rc = api_fail(e, 429, "rate_limited",
                      "You submitted %d times to %s in the last hour (the limit is %d); try "
                      "again in %d seconds.",
                      hour, lab, max_per_hour, wait);
        e->retry_after = wait;
        return rc;
    }
    return 0;
}

void submission_lab_languages(const struct app_lab *l, int *cuda, int *python)
{
    static const char *const py[] = {"lab.py", "starter.py"}, *const cu[] = {"harness.cu",
                                                                              "starter.cu"};
    char path[512];
    *cuda = *python = 0;
    if (!l) {
        *cuda = 1;
        return;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", l->lab.dir, py[i]);
        *python |= access(path, R_OK) == 0;
        snprintf(path, sizeof(path), "%s/%s", l->lab.dir, cu[i]);
        *cuda |= access(path, R_OK) == 0;
    }
    if (l->lab.python_only) {
        *python = 1;
        *cuda = 0;
        return;
    }
    *cuda |= !*python;
}

/* 400 when filename's extension (.cu or .py) is a language lab l does not
 * take, naming the ones it does; 0 otherwise. */
static int language_check(const struct app_lab *l, const char *filename, struct api_error *e)
{
    int cuda, python;
    size_t n = strlen(filename);
    int is_py = n > 3 && strcmp(filename + n - 3, ".py") == 0;
    submission_lab_languages(l, &cuda, &python);
    if (is_py ? python : cuda)
        return 0;
    return api_fail(e, 400, "wrong_language",
                    "Lab %s takes only %s files; '%.64s' is %s. Submit your %s file instead "
                    "(nothing was replaced: a queued submission keeps its place).",
                    l->lab.name, python ? "Python (.py)" : "CUDA C (.cu)", filename,
                    is_py ? "Python" : "CUDA C", python ? ".py" : ".cu");
}

int submission_check(struct app *app, const struct auth_user *viewer, const char *labname,
                     const char *filename, const char *source, size_t len, int text_ok,
                     struct app_lab **lp, struct submission_deadlines *dl, struct api_error *e)
{
    struct app_lab *l = *lp = app_lab_find(app, labname);
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
                        "or '.', not starting with '-' or '.', ending in .cu or .py (no folders).",
                        filename);
    rc = language_check(l, filename, e);
    if (rc)
        return rc;
    if (len == 0)
        return api_fail(e, 400, "bad_request", "The source file is empty.");
    if (len > API_SOURCE_MAX)
        return api_fail(e, 413, "payload_too_large",
                        "The source file is %zu bytes; source files may be at most 256 KiB.", len);
    if (text_ok < 0)
        text_ok = source_text_ok((const unsigned char *)source, len);
    if (!text_ok)
        return api_fail(
            e, 400, "binary_source",
            "The file is not text: source files must be UTF-8 or ASCII without NUL bytes.");
    *dl = (struct submission_deadlines){.student = viewer->role == AUTH_STUDENT,
                                        .has_rubric = l->has_rubric,
                                        .late_refuse = l->rubric.late_policy == RUBRIC_LATE_REFUSE,
                                        .opens = l->rubric.opens,
                                        .due = l->rubric.due,
                                        .hard = l->rubric.hard_deadline};
    return 0;
}

int submission_deadline_in(struct db *db, const struct submission_deadlines *dl, long long uid,
                           const char *lab, double now, int *late, double *late_days,
                           struct api_error *e)
{
    *late = 0;
    *late_days = 0;
    if (!dl->student)
        return 0;
    /* The lab as far as the one rule (app_lab_state) looks at it. */
    struct app_lab l = {.lab = {.name = (char *)lab}, .has_rubric = dl->has_rubric};
    l.rubric.opens = dl->opens;
    l.rubric.late_policy = dl->late_refuse ? RUBRIC_LATE_REFUSE : RUBRIC_LATE_ACCEPT;
    l.rubric.due = dl->due;
    l.rubric.hard_deadline = dl->hard;
    double due, hard;
    api_deadlines_on(db, &l, uid, &due, &hard);
    int rc = submit_deadline_check(&l, due, hard, now, e);
    if (rc)
        return rc;
    if (due > 0 && now > due) {
        *late = 1;
        *late_days = ceil((now - due) / 86400.0);
    }
    return 0;
}

int submission_visible(const struct auth_user *viewer, long long owner)
{
    assert(viewer);
    return viewer->role != AUTH_STUDENT || owner == viewer->id;
}

/* The lab of submission id into lab and its late days (0 when on time).
 * 0, -ENOENT, -errno. */
static int lab_and_late(struct app *app, long long id, char lab[65], double *late_days)
{
    lab[0] = '\0';
    *late_days = 0;
    sqlite3_stmt *st = db_stmt(app->db, "SELECT lab, late, late_days FROM submissions WHERE id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(lab, 65, "%s", db_col_text(st, 0));
        if (sqlite3_column_int(st, 1))
            *late_days = sqlite3_column_double(st, 2);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
}

void submission_late_days(struct app *app, long long id, char lab[65], double *late_days)
{
    lab_and_late(app, id, lab, late_days);
}

int submission_count_by_status(struct app *app, long long *counts)
{
    for (int i = 0; i < STATUS_COUNT; i++)
        counts[i] = 0;
    sqlite3_stmt *st = db_stmt(app->db, "SELECT status, COUNT(*) FROM submissions GROUP BY status");
    if (!st)
        return -EIO;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int s = status_parse(db_col_text(st, 0));
        if (s >= 0)
            counts[s] = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_errno(rc);
}

int submission_override_reason(struct app *app, long long sub, char *reason, size_t len)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT reason FROM overrides WHERE submission_id = ?1 "
                                           "ORDER BY id DESC LIMIT 1");
    int found = 0;

    reason[0] = '\0';

    if (st == NULL)
        return 0;
    sqlite3_bind_int64(st, 1, sub);
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(reason, len, "%s", db_col_text(st, 0));
        found = 1;
    }
    sqlite3_reset(st);
    return found;
}

size_t submission_ids_affected(struct app *app, const char *lab, long long *ids, size_t max)
{
    return submission_ids_affected_on(app->db, lab, ids, max);
}

size_t submission_ids_affected_on(struct db *db, const char *lab, long long *ids, size_t max)
{
    sqlite3_stmt *st = db_stmt(
        db,
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY id DESC) AS rl, "
        " ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY COALESCE(score, -1) DESC, id) AS rb "
        " FROM submissions WHERE lab = ?1 AND status IN ('graded','compile_error','rejected',"
        " 'runtime_error','timeout')) WHERE rl = 1 OR rb = 1 ORDER BY id");
    size_t n = 0;

    if (st == NULL)
        return 0;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n < max)
            ids[n] = sqlite3_column_int64(st, 0);
        n++;
    }
    sqlite3_reset(st);
    return n;
}

static json_t *override_row(sqlite3_stmt *st)
{
    return json_pack("{s:f,s:s,s:f,s:s}", "score", sqlite3_column_double(st, 0), "reason",
                     db_col_text(st, 1), "created_at", sqlite3_column_double(st, 2), "by",
                     db_col_text(st, 3));
}

int submission_overrides(struct app *app, long long id, json_t **out)
{
    sqlite3_stmt *st = db_stmt(app->db,
                               "SELECT o.score, o.reason, o.created_at, u.name FROM overrides o "
                               "LEFT JOIN users u ON u.id = o.by_user WHERE o.submission_id = ?1 "
                               "ORDER BY o.id DESC LIMIT 50");
    *out = NULL;
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    return db_rows_json(st, override_row, out);
}
