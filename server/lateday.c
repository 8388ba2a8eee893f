/*
 * lateday.c - pooled late days. See lateday.h for the rules and
 * docs/late-days.md for the course staff's version of them.
 */
#include "server/lateday.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/html.h"
#include "server/writer.h"

#define LATEDAY_GRANT_MAX 365
#define LATEDAY_DEFAULT_MAX 365

const char lateday_schema[] =
    "CREATE TABLE IF NOT EXISTS late_day_policy("
    " id INTEGER PRIMARY KEY CHECK(id = 1),"
    " default_days INTEGER NOT NULL CHECK(default_days >= 0),"
    " updated_by INTEGER,"
    " updated_at REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS late_day_grants("
    " id INTEGER PRIMARY KEY,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " days INTEGER NOT NULL,"
    " reason TEXT NOT NULL,"
    " by_user INTEGER,"
    " created_at REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS late_day_grants_user ON late_day_grants(user_id);"
    /* One row per late submission that the pool covered: days is the lab's
     * charge after this submission (a charge only rises). */
    "CREATE TABLE IF NOT EXISTS late_day_spends("
    " submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " lab TEXT NOT NULL,"
    " days INTEGER NOT NULL CHECK(days >= 0),"
    " created_at REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS late_day_spends_user ON late_day_spends(user_id, lab);";

/* Submissions in these states never count against the pool. */
#define COUNTED " s.status NOT IN ('superseded','system_error')"

int lateday_days_late(double t, double due)
{
    if (due <= 0 || t <= due)
        return 0;
    return (int)ceil((t - due) / 86400.0);
}

static int default_days(struct db *db)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT default_days FROM late_day_policy WHERE id = 1");
    int d = 0;
    if (!st)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        d = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return d;
}

/* The lab's charge for user: the most days a counted submission covered. */
static int lab_charge(struct db *db, long long user_id, const char *lab)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT COALESCE(MAX(d.days), 0) FROM late_day_spends d"
                                   " JOIN submissions s ON s.id = d.submission_id"
                                   " WHERE d.user_id = ?1 AND d.lab = ?2 AND" COUNTED);
    int d = 0;
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        d = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return d;
}

int lateday_pool_get(struct db *db, long long user_id, struct lateday_pool *out)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT COALESCE(SUM(days), 0) FROM late_day_grants"
                                   " WHERE user_id = ?1");
    memset(out, 0, sizeof(*out));
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, user_id);
    int rc = sqlite3_step(st);
    int granted = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return db_errno(rc) ? db_errno(rc) : -EIO;
    st = db_stmt(db, "SELECT COALESCE(SUM(c), 0) FROM (SELECT MAX(d.days) AS c"
                     " FROM late_day_spends d JOIN submissions s ON s.id = d.submission_id"
                     " WHERE d.user_id = ?1 AND" COUNTED " GROUP BY d.lab)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, user_id);
    rc = sqlite3_step(st);
    out->used = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return db_errno(rc) ? db_errno(rc) : -EIO;
    out->budget = default_days(db) + granted;
    out->remaining = out->budget > out->used ? out->budget - out->used : 0;
    return 0;
}

/* Fill q for a submission late by days_late to lab. */
static int quote_fill(struct db *db, long long user_id, const char *lab, int days_late,
                      struct lateday_quote *q)
{
    memset(q, 0, sizeof(*q));
    int rc = lateday_pool_get(db, user_id, &q->pool);
    if (rc)
        return rc;
    q->days_late = days_late;
    q->lab_charged = lab_charge(db, user_id, lab);
    if (days_late > q->lab_charged) {
        int need = days_late - q->lab_charged;
        q->would_use = need < q->pool.remaining ? need : q->pool.remaining;
    }
    q->covered = q->lab_charged + q->would_use;
    if (q->covered > days_late)
        q->covered = days_late;
    q->penalty_days = days_late - q->covered;
    assert(q->penalty_days >= 0 && q->would_use <= q->pool.remaining);
    return 0;
}

int lateday_quote(struct app *app, const struct app_lab *l, long long user_id, double now,
                  struct lateday_quote *out)
{
    double due = 0, hard = 0;
    api_deadlines(app, l, user_id, &due, &hard);
    return quote_fill(app->db, user_id, l->lab.name, lateday_days_late(now, due), out);
}

int lateday_spend(struct db *db, const char *lab, long long user_id, long long id, int days_late,
                  struct lateday_quote *q)
{
    assert(lab && id > 0);
    int rc = quote_fill(db, user_id, lab, days_late, q);
    if (rc || days_late <= 0 || q->covered <= 0)
        return rc;
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO late_day_spends(submission_id, user_id, lab,"
                                        " days, created_at) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, user_id);
    sqlite3_bind_text(st, 3, lab, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, q->covered);
    sqlite3_bind_double(st, 5, db_now());
    rc = db_step_done(st);
    if (rc == 0 && q->would_use > 0) {
        char target[32], detail[96];
        snprintf(target, sizeof(target), "submission:%lld", id);
        snprintf(detail, sizeof(detail), "lab=%s days_late=%d spent=%d remaining=%d", lab,
                 days_late, q->would_use, q->pool.remaining - q->would_use);
        db_audit(db, user_id, "late_days_spent", target, detail);
    }
    return rc;
}

int lateday_covered(struct db *db, long long id)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT days FROM late_day_spends WHERE submission_id = ?1");
    int d = 0;
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        d = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return d;
}

void lateday_quote_json(const struct lateday_quote *q, json_t *o)
{
    json_object_set_new(o, "days_late", json_integer(q->days_late));
    json_object_set_new(o, "late_days_used", json_integer(q->would_use));
    json_object_set_new(o, "late_days_covered", json_integer(q->covered));
    json_object_set_new(o, "late_days_remaining", json_integer(q->pool.remaining - q->would_use));
    json_object_set_new(o, "late_days_budget", json_integer(q->pool.budget));
    json_object_set_new(o, "late_penalty_days", json_integer(q->penalty_days));
}

/* ---- grades export ---- */

const char lateday_csv_header[] = ",lab_late_days,late_days_used,late_days_remaining";

void lateday_csv_cells(struct db *db, long long user_id, const char *lab, struct http_buf *out)
{
    struct lateday_pool pool;
    if (lateday_pool_get(db, user_id, &pool) != 0)
        memset(&pool, 0, sizeof(pool));
    http_buf_printf(out, ",%d,%d,%d", lab_charge(db, user_id, lab), pool.used, pool.remaining);
}

/* ---- the lab page's notice ---- */

/* See lateday.h. */
void lateday_quote_sentence(const struct lateday_quote *q, double pct_per_day, char *buf, size_t len)
{
    int r = q->pool.remaining;
    if (q->would_use > 0 && q->penalty_days == 0)
        snprintf(buf, len,
                 "This submission will use %d of your %d remaining late day%s (%d day%s late); no "
                 "late penalty applies.",
                 q->would_use, r, r == 1 ? "" : "s", q->days_late, q->days_late == 1 ? "" : "s");
    else if (q->would_use > 0)
        snprintf(buf, len,
                 "This submission will use your last %d late day%s; it is %d days late, so the "
                 "late penalty applies to the other %d day%s (%.0f%% off).",
                 q->would_use, q->would_use == 1 ? "" : "s", q->days_late, q->penalty_days,
                 q->penalty_days == 1 ? "" : "s", fmin(100, pct_per_day * q->penalty_days));
    else if (q->covered >= q->days_late)
        snprintf(buf, len,
                 "This lab already used %d of your late days, which cover this submission: it "
                 "uses no more (%d remaining).",
                 q->lab_charged, r);
    else
        snprintf(buf, len,
                 "You have no late days left: this submission is %d day%s late and the late "
                 "penalty applies (%.0f%% off). Ask the course staff if you need more days.",
                 q->days_late, q->days_late == 1 ? "" : "s",
                 fmin(100, pct_per_day * q->penalty_days));
}

int lateday_notice_html(struct app *app, struct html_buf *b, const struct auth_user *viewer,
                        const char *lab)
{
    struct app_lab *l = app_lab_find(app, lab);
    struct lateday_quote q;
    char msg[400];
    if (!l || !l->has_rubric || viewer->role != AUTH_STUDENT)
        return 0;
    if (lateday_quote(app, l, viewer->id, db_now(), &q) != 0 || q.days_late == 0)
        return 0;
    lateday_quote_sentence(&q, l->rubric.penalty_percent_per_day, msg, sizeof(msg));
    html_fmt(b,
             "<div class=\"notice warn lateday\" id=\"late-days\"><p>%s</p>"
             "<p class=\"small\">Late days: %d in all, %d used, %d left "
             "(<a href=\"/me/late-days\">details</a>).</p></div>\n",
             msg, q.pool.budget, q.pool.used, q.pool.remaining);
    return 1;
}

/* ---- admin ---- */

/* ---- the admin's changes: checked on the loop, written on the writer ---- */

struct lateday_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    lateday_write_answer *answer;
    struct lateday_write w;
    char *reason; /* w.reason's copy */
};

/* Writer: the course default budget. 0 or -errno with w->e. */
static int default_on(struct db *db, struct lateday_write *w)
{
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO late_day_policy(id, default_days, updated_by,"
                                   " updated_at) VALUES(1, ?1, ?2, ?3) ON CONFLICT(id) DO"
                                   " UPDATE SET default_days = ?1, updated_by = ?2,"
                                   " updated_at = ?3");
    if (!st)
        return api_internal(&w->e, -EIO);
    sqlite3_bind_int(st, 1, w->days);
    sqlite3_bind_int64(st, 2, w->viewer.id);
    sqlite3_bind_double(st, 3, db_now());
    int rc = db_step_done(st);
    if (rc)
        return api_internal(&w->e, rc);
    char detail[48];
    snprintf(detail, sizeof(detail), "default_days=%d", w->days);
    db_audit(db, w->viewer.id, "late_days_default", "course", detail);
    return 0;
}

/* Writer: a grant to the student w->user. 0 or -errno with w->e. */
static int grant_on(struct db *db, struct lateday_write *w)
{
    struct auth_user u;
    int rc = api_user_get(db, w->user, &u, &w->e);
    if (rc)
        return rc;
    if (u.role != AUTH_STUDENT)
        return api_fail(&w->e, 400, "bad_request", "%s is not a student.", u.name);
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO late_day_grants(user_id, days, reason,"
                                   " by_user, created_at) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return api_internal(&w->e, -EIO);
    sqlite3_bind_int64(st, 1, u.id);
    sqlite3_bind_int(st, 2, w->days);
    sqlite3_bind_text(st, 3, w->reason, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, w->viewer.id);
    sqlite3_bind_double(st, 5, db_now());
    if ((rc = db_step_done(st)) != 0)
        return api_internal(&w->e, rc);
    char detail[600];
    snprintf(detail, sizeof(detail), "days=%d reason=%.500s", w->days, w->reason);
    db_audit(db, w->viewer.id, "late_days_grant", u.name, detail);
    return 0;
}

static int lateday_run(struct db *db, void *arg)
{
    struct lateday_job *j = arg;
    return j->w.grant ? grant_on(db, &j->w) : default_on(db, &j->w);
}

/* Loop, after the batch: the pools are read fresh by every page and
 * answer (nothing cached), so only the client is answered. */
static void lateday_done(void *arg, int rc)
{
    struct lateday_job *j = arg;
    if (rc && !j->w.e.status)
        api_internal(&j->w.e, rc);
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req && j->answer(j->app, req, &j->w, rc) != HTTP_DEFERRED)
        http_request_finish(req);
    free(j->reason);
    free(j);
}

/* Loop: queue w (checked) on the writer and defer req. */
static int job_start(struct app *app, struct http_request *req, const struct lateday_write *w,
                     lateday_write_answer *answer, struct api_error *e)
{
    assert(answer);
    struct lateday_job *j = calloc(1, sizeof(*j));
    if (!j || (w->reason && !(j->reason = strdup(w->reason)))) {
        free(j);
        return api_internal(e, -ENOMEM);
    }
    j->app = app;
    j->answer = answer;
    j->w = *w;
    j->w.reason = j->reason;
    memset(&j->w.e, 0, sizeof(j->w.e));
    int rc = writer_submit(app->writer, lateday_run, lateday_done, j, 0);
    if (rc) {
        free(j->reason);
        free(j);
        return api_internal(e, rc);
    }
    http_hold_start(&j->client, req);
    return 0;
}

int lateday_default_start(struct app *app, struct http_request *req,
                          const struct auth_user *viewer, int days, lateday_write_answer *answer,
                          struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins set the late-day budget.");
    if (days < 0 || days > LATEDAY_DEFAULT_MAX)
        return api_fail(e, 400, "bad_request", "default_days: a whole number from 0 to %d.",
                        LATEDAY_DEFAULT_MAX);
    struct lateday_write w = {.viewer = *viewer, .days = days};
    return job_start(app, req, &w, answer, e);
}

int lateday_grant_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                        const char *user, int days, const char *reason,
                        lateday_write_answer *answer, struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins grant late days.");
    if (days < 1 || days > LATEDAY_GRANT_MAX)
        return api_fail(e, 400, "bad_request", "days: a whole number from 1 to %d.",
                        LATEDAY_GRANT_MAX);
    if (!reason || !reason[strspn(reason, " \t\r\n")])
        return api_fail(e, 400, "bad_request",
                        "reason: say why the student gets more days (it goes in the audit log).");
    if (strlen(reason) > 500)
        return api_fail(e, 400, "bad_request", "reason: at most 500 characters.");
    if (!user || !*user || strlen(user) >= sizeof(((struct lateday_write *)0)->user))
        return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", user ? user : "");
    struct lateday_write w = {.grant = 1, .viewer = *viewer, .days = days, .reason = reason};
    snprintf(w.user, sizeof(w.user), "%s", user);
    return job_start(app, req, &w, answer, e);
}

/* {"lab": days, ...} of user's charged labs. */
static json_t *labs_json(struct db *db, long long user_id)
{
    json_t *o = json_object();
    sqlite3_stmt *st =
        db_stmt(db, "SELECT d.lab, MAX(d.days) FROM late_day_spends d"
                    " JOIN submissions s ON s.id = d.submission_id"
                    " WHERE d.user_id = ?1 AND" COUNTED " GROUP BY d.lab ORDER BY d.lab");
    if (!st || !o)
        return o;
    sqlite3_bind_int64(st, 1, user_id);
    while (sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_int(st, 1) > 0)
            json_object_set_new(o, db_col_text(st, 0), json_integer(sqlite3_column_int(st, 1)));
    sqlite3_reset(st);
    return o;
}

int lateday_overview(struct app *app, const struct auth_user *viewer, json_t **out,
                     struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see everyone's late days.");
    json_t *arr = json_array();
    sqlite3_stmt *st = db_stmt(app->db, "SELECT id, name, COALESCE(display_name, '') FROM users"
                                        " WHERE role = 'student' ORDER BY name");
    if (!st || !arr) {
        json_decref(arr);
        return api_internal(e, -EIO);
    }
    /* Collect first: the pool queries use other cached statements. */
    struct row {
        long long id;
        char name[65], display[129];
    } *rows = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            void *p = realloc(rows, cap * sizeof(*rows));
            if (!p)
                break;
            rows = p;
        }
        rows[n].id = sqlite3_column_int64(st, 0);
        snprintf(rows[n].name, sizeof(rows[n].name), "%s", db_col_text(st, 1));
        snprintf(rows[n].display, sizeof(rows[n].display), "%s", db_col_text(st, 2));
        n++;
    }
    sqlite3_reset(st);
    for (size_t i = 0; i < n; i++) {
        struct lateday_pool p;
        if (lateday_pool_get(app->db, rows[i].id, &p) != 0)
            continue;
        json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:i,s:i,s:o}", "user", rows[i].name,
                                             "display_name", rows[i].display, "budget", p.budget,
                                             "used", p.used, "remaining", p.remaining, "labs",
                                             labs_json(app->db, rows[i].id)));
    }
    free(rows);
    *out = json_pack("{s:i,s:o}", "default_days", default_days(app->db), "students", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

static json_t *grants_json(struct db *db, long long user_id)
{
    json_t *a = json_array();
    sqlite3_stmt *st = db_stmt(db, "SELECT g.days, g.reason, g.created_at, u.name FROM"
                                   " late_day_grants g LEFT JOIN users u ON u.id = g.by_user"
                                   " WHERE g.user_id = ?1 ORDER BY g.id");
    if (!st || !a)
        return a;
    sqlite3_bind_int64(st, 1, user_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char when[40];
        api_time_iso(sqlite3_column_double(st, 2), when, sizeof(when));
        json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:s}", "days", sqlite3_column_int(st, 0),
                                           "reason", db_col_text(st, 1), "at", when, "by",
                                           db_col_text(st, 3)));
    }
    sqlite3_reset(st);
    return a;
}

int lateday_user_json(struct app *app, const struct auth_user *viewer, const char *name,
                      json_t **out, struct api_error *e)
{
    struct auth_user u = *viewer;
    if (name && *name && strcmp(name, viewer->name) != 0) {
        if (!auth_role_staff(viewer->role))
            return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", name);
        int rc = auth_user_get(app->db, name, &u);
        if (rc == -ENOENT)
            return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", name);
        if (rc)
            return api_internal(e, rc);
    }
    struct lateday_pool p;
    int rc = lateday_pool_get(app->db, u.id, &p);
    if (rc)
        return api_internal(e, rc);
    *out = json_pack("{s:s,s:i,s:i,s:i,s:i,s:o,s:o}", "user", u.name, "default_days",
                     default_days(app->db), "budget", p.budget, "used", p.used, "remaining",
                     p.remaining, "labs", labs_json(app->db, u.id), "grants",
                     grants_json(app->db, u.id));
    return *out ? 0 : api_internal(e, -ENOMEM);
}

