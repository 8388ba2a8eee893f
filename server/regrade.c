/*
 * regrade.c - regrade requests. See regrade.h.
 */
#include "server/regrade.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/submission.h"
#include "server/writer.h"

const char regrade_schema[] =
    "CREATE TABLE IF NOT EXISTS regrade_requests("
    " id INTEGER PRIMARY KEY,"
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " lab TEXT NOT NULL,"
    " reason TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK(status IN ('open','answered')),"
    " answer TEXT,"
    " action TEXT CHECK(action IN ('none','regrade','override')),"
    " new_score REAL,"
    " answered_by INTEGER REFERENCES users(id),"
    " created_at REAL NOT NULL,"
    " answered_at REAL);"
    /* One open request per submission: the database refuses a second. */
    "CREATE UNIQUE INDEX IF NOT EXISTS regrade_requests_open ON regrade_requests(submission_id)"
    " WHERE status = 'open';"
    "CREATE INDEX IF NOT EXISTS regrade_requests_status ON regrade_requests(status, id);"
    "CREATE INDEX IF NOT EXISTS regrade_requests_user ON regrade_requests(user_id, id);";

#define RR_COLS                                                                                    \
    "r.id, r.submission_id, r.lab, u.name, r.reason, r.status, r.answer, r.action, r.new_score,"   \
    " a.name, r.created_at, r.answered_at, r.user_id"
#define RR_FROM                                                                                    \
    " FROM regrade_requests r JOIN users u ON u.id = r.user_id"                                    \
    " LEFT JOIN users a ON a.id = r.answered_by"

/* Code points in a valid UTF-8 string. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* 1 when s has something besides white space. */
static int has_text(const char *s)
{
    return s && s[strspn(s, " \t\r\n")] != '\0';
}

static json_t *time_or_null(sqlite3_stmt *st, int c)
{
    char buf[40];
    if (sqlite3_column_type(st, c) == SQLITE_NULL)
        return json_null();
    api_time_iso(sqlite3_column_double(st, c), buf, sizeof(buf));
    return json_string(buf);
}

/* The request object of the row st is on. */
static json_t *row_json(sqlite3_stmt *st)
{
    return json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
                     (json_int_t)sqlite3_column_int64(st, 0), "submission",
                     (json_int_t)sqlite3_column_int64(st, 1), "lab", db_col_text(st, 2), "user",
                     db_col_text(st, 3), "reason", db_col_text(st, 4), "status", db_col_text(st, 5),
                     "answer", db_col_json_text(st, 6), "action", db_col_json_text(st, 7), "new_score",
                     sqlite3_column_type(st, 8) == SQLITE_NULL
                         ? json_null()
                         : json_real(sqlite3_column_double(st, 8)),
                     "answered_by", db_col_json_text(st, 9), "created_at", time_or_null(st, 10),
                     "answered_at", time_or_null(st, 11));
}

/* Load request rid from db: *out the object, *owner its student. 0,
 * -ENOENT, -errno. */
static int request_load(struct db *db, long long rid, json_t **out, long long *owner)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT " RR_COLS RR_FROM " WHERE r.id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, rid);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
    }
    *owner = sqlite3_column_int64(st, 12);
    *out = row_json(st);
    sqlite3_reset(st);
    return *out ? 0 : -ENOMEM;
}

int regrade_request_get(struct app *app, const struct auth_user *viewer, long long rid,
                        json_t **out, struct api_error *e)
{
    long long owner = 0;
    if (!auth_role_human(viewer->role))
        return api_fail(e, 403, "forbidden", "Runner tokens may only use /api/runner/*.");
    int rc = request_load(app->db, rid, out, &owner);
    if (rc == 0 && viewer->role == AUTH_STUDENT && owner != viewer->id) {
        json_decref(*out);
        *out = NULL;
        rc = -ENOENT;
    }
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no regrade request %lld.", rid);
    return rc ? api_internal(e, rc) : 0;
}

/* ---- writes: checked on the loop, read and written on the writer ---- */

struct regrade_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    regrade_write_answer *answer;
    struct regrade_write w;
    char *text;            /* w.text's copy */
    char act_reason[600];  /* w.act.reason: an override's */
};

/* Writer: the student's request about submission w->id. 0 or -errno with
 * w->e. */
static int open_on(struct db *db, struct regrade_write *w)
{
    struct api_error *e = &w->e;
    sqlite3_stmt *st = db_stmt(db, "SELECT user_id, lab, status FROM submissions WHERE id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, w->id);
    long long owner = 0;
    char lab[65] = "", status[32] = "";
    if (sqlite3_step(st) == SQLITE_ROW) {
        owner = sqlite3_column_int64(st, 0);
        snprintf(lab, sizeof(lab), "%s", db_col_text(st, 1));
        snprintf(status, sizeof(status), "%s", db_col_text(st, 2));
    }
    sqlite3_reset(st);
    if (owner != w->viewer.id) /* missing, or another student's: the same answer */
        return api_fail(e, 404, "not_found", "You have no submission %lld.", w->id);
    if (strcmp(status, "graded") != 0)
        return api_fail(e, 409, "not_graded",
                        "Submission %lld is %s, not graded: a regrade request is about a graded "
                        "result. Fix the problem and submit again instead.",
                        w->id, status);
    st = db_stmt(db, "INSERT INTO regrade_requests(submission_id, user_id, lab, reason,"
                     " status, created_at) VALUES(?1, ?2, ?3, ?4, 'open', ?5)");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, w->id);
    sqlite3_bind_int64(st, 2, w->viewer.id);
    sqlite3_bind_text(st, 3, lab, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, w->text, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, db_now());
    int rc = db_step_done(st);
    if (rc == -EEXIST)
        return api_fail(e, 409, "conflict",
                        "Submission %lld already has an open regrade request; wait for the "
                        "staff's answer (it shows on the submission's page).",
                        w->id);
    if (rc)
        return api_internal(e, rc);
    w->sid = w->id;
    w->rid = db_last_id(db);
    char target[40], detail[2100];
    snprintf(target, sizeof(target), "regrade_request:%lld", w->rid);
    snprintf(detail, sizeof(detail), "submission=%lld lab=%s reason=%.2000s", w->id, lab, w->text);
    db_audit(db, w->viewer.id, "regrade_request", target, detail);
    rc = request_load(db, w->rid, &w->out, &owner);
    return rc ? api_internal(e, rc) : 0;
}

/* Writer: the staff's answer to request w->id, with its regrade or
 * override. 0 or -errno with w->e. */
static int answer_on(struct db *db, struct regrade_write *w)
{
    struct api_error *e = &w->e;
    json_t *req = NULL;
    long long owner;
    int rc = request_load(db, w->id, &req, &owner);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no regrade request %lld.", w->id);
    if (rc)
        return api_internal(e, rc);
    w->rid = w->id;
    w->sid = json_integer_value(json_object_get(req, "submission"));
    int open = strcmp(json_string_value(json_object_get(req, "status")), "open") == 0;
    json_decref(req);
    if (!open)
        return api_fail(e, 409, "conflict",
                        "Regrade request %lld is already answered; the student can open a new "
                        "one if they disagree.",
                        w->rid);
    int act = strcmp(w->action, "none") != 0;
    w->act.id = w->sid;
    if (act && (rc = staff_write_on(db, &w->act, e)) != 0)
        return rc;
    sqlite3_stmt *st = db_stmt(db, "UPDATE regrade_requests SET status = 'answered',"
                                   " answer = ?2, action = ?3, new_score = ?4,"
                                   " answered_by = ?5, answered_at = ?6"
                                   " WHERE id = ?1 AND status = 'open'");
    if (!st)
        return api_internal(e, -EIO);
    int override = strcmp(w->action, "override") == 0;
    sqlite3_bind_int64(st, 1, w->rid);
    sqlite3_bind_text(st, 2, w->text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, w->action, -1, SQLITE_STATIC);
    if (override)
        sqlite3_bind_double(st, 4, w->score);
    sqlite3_bind_int64(st, 5, w->viewer.id);
    sqlite3_bind_double(st, 6, db_now());
    if ((rc = db_step_done(st)) != 0)
        return api_internal(e, rc);
    char target[40], detail[2200];
    snprintf(target, sizeof(target), "regrade_request:%lld", w->rid);
    snprintf(detail, sizeof(detail), "submission=%lld action=%s%s answer=%.2000s", w->sid,
             w->action, override ? " (score set)" : "", w->text);
    db_audit(db, w->viewer.id, "regrade_answer", target, detail);
    rc = request_load(db, w->rid, &w->out, &owner);
    return rc ? api_internal(e, rc) : 0;
}

static int regrade_run(struct db *db, void *arg)
{
    struct regrade_job *j = arg;
    return j->w.answering ? answer_on(db, &j->w) : open_on(db, &j->w);
}

/* Loop, after the batch: drop what the write made stale, then answer. */
static void regrade_done(void *arg, int rc)
{
    struct regrade_job *j = arg;
    struct regrade_write *w = &j->w;
    if (!rc) {
        if (w->answering && strcmp(w->action, "none") != 0)
            staff_write_after(j->app, &w->act);
        if (w->answering)
            app_log("regrade request %lld answered by %s (%s)", w->rid, w->viewer.name,
                    w->action);
        else
            app_log("regrade request %lld opened by %s for submission %lld", w->rid,
                    w->viewer.name, w->sid);
        api_cache_invalidate(j->app, w->sid);
    } else if (!w->e.status) {
        api_internal(&w->e, rc);
    }
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req && j->answer(j->app, req, w, rc) != HTTP_DEFERRED)
        http_request_finish(req);
    json_decref(w->out);
    free(j->text);
    free(j);
}

/* Loop: queue w (checked) on the writer and defer req. */
static int job_start(struct app *app, struct http_request *req, const struct regrade_write *w,
                     regrade_write_answer *answer, struct api_error *e)
{
    assert(answer && w->text);
    struct regrade_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->text = strdup(w->text))) {
        free(j);
        return api_internal(e, -ENOMEM);
    }
    j->app = app;
    j->answer = answer;
    j->w = *w;
    j->w.text = j->text;
    j->w.out = NULL;
    memset(&j->w.e, 0, sizeof(j->w.e));
    if (w->answering && strcmp(w->action, "override") == 0)
        snprintf(j->act_reason, sizeof(j->act_reason), "regrade request #%lld: %.500s", w->id,
                 w->text);
    j->w.act.reason = j->act_reason; /* the caller's is gone once this returns */
    int rc = writer_submit(app->writer, regrade_run, regrade_done, j, 0);
    if (rc) {
        free(j->text);
        free(j);
        return api_internal(e, rc);
    }
    http_hold_start(&j->client, req);
    return 0;
}

int regrade_open_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                       long long id, const char *reason, regrade_write_answer *answer,
                       struct api_error *e)
{
    if (viewer->role != AUTH_STUDENT)
        return api_fail(e, 403, "forbidden",
                        "Students ask for regrades of their own submissions; staff answer them "
                        "(see /regrades) or regrade directly.");
    if (!has_text(reason))
        return api_fail(e, 400, "bad_request",
                        "reason: say what you think was graded wrongly (for example which case "
                        "and why), then send the request again.");
    if (!http_utf8_valid(reason, strlen(reason)) || utf8_chars(reason) > REGRADE_REASON_MAX)
        return api_fail(e, 400, "bad_request",
                        "reason: at most %d characters of text; shorten it and send it again.",
                        REGRADE_REASON_MAX);
    struct regrade_write w = {.viewer = *viewer, .id = id, .text = reason};
    return job_start(app, req, &w, answer, e);
}

/* The action's own string (static), or NULL when it is none of them. */
static const char *action_name(const char *action)
{
    static const char *const names[] = {"none", "regrade", "override"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!action || strcmp(action, names[i]) == 0)
            return action ? names[i] : names[0];
    return NULL;
}

int regrade_answer_start(struct app *app, struct http_request *req,
                         const struct auth_user *viewer, long long rid, const char *text,
                         const char *action, double score, regrade_write_answer *answer,
                         struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff answer regrade requests.");
    if (!(action = action_name(action)))
        return api_fail(e, 400, "bad_request", "action: one of none, regrade, override.");
    if (!has_text(text))
        return api_fail(e, 400, "bad_request",
                        "answer: write the answer the student will read, then send it again.");
    if (!http_utf8_valid(text, strlen(text)) || utf8_chars(text) > REGRADE_ANSWER_MAX)
        return api_fail(e, 400, "bad_request", "answer: at most %d characters.",
                        REGRADE_ANSWER_MAX);
    int override = strcmp(action, "override") == 0;
    if (override && (!isfinite(score) || score < 0))
        return api_fail(e, 400, "bad_request", "score: an override needs a number >= 0.");
    struct regrade_write w = {
        .answering = 1, .viewer = *viewer, .id = rid, .text = text, .action = action,
        .score = score,
        .act = {.kind = override ? STAFF_OVERRIDE : STAFF_REGRADE, .viewer = *viewer,
                .score = score, .reason = text}};
    int rc = strcmp(action, "none") != 0 ? staff_write_check(app, &w.act, e) : 0;
    return rc ? rc : job_start(app, req, &w, answer, e);
}

int regrade_request_list(struct app *app, const struct auth_user *viewer, const char *status,
                         const char *lab, const char *user, long long submission, json_t **out,
                         struct api_error *e)
{
    if (!auth_role_human(viewer->role))
        return api_fail(e, 403, "forbidden", "Runner tokens may only use /api/runner/*.");
    if (status && *status && strcmp(status, "open") != 0 && strcmp(status, "answered") != 0 &&
        strcmp(status, "all") != 0)
        return api_fail(e, 400, "bad_request", "status: open, answered or all.");
    if (status && (!*status || strcmp(status, "all") == 0))
        status = NULL;
    if (lab && !*lab)
        lab = NULL;
    if (user && !*user)
        user = NULL;
    sqlite3_stmt *st =
        db_stmt(app->db, "SELECT " RR_COLS RR_FROM " WHERE (?1 IS NULL OR r.status = ?1)"
                         " AND (?2 IS NULL OR r.lab = ?2) AND (?3 IS NULL OR u.name = ?3)"
                         " AND (?4 = 0 OR r.user_id = ?4) AND (?5 = 0 OR r.submission_id = ?5)"
                         " ORDER BY r.status = 'open' DESC, r.id DESC LIMIT 500");
    json_t *arr;
    if (!st)
        return api_internal(e, -EIO);
    if (status)
        sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
    if (lab)
        sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    if (user)
        sqlite3_bind_text(st, 3, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, viewer->role == AUTH_STUDENT ? viewer->id : 0);
    sqlite3_bind_int64(st, 5, submission);
    int rc = db_rows_json(st, row_json, &arr);
    if (rc)
        return api_internal(e, rc);
    *out = json_pack("{s:o}", "requests", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int regrade_open_count(struct app *app)
{
    sqlite3_stmt *st =
        db_stmt(app->db, "SELECT COUNT(*) FROM regrade_requests WHERE status = 'open'");
    int n = 0;
    if (!st)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return n;
}

