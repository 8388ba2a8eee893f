/*
 * staff_write.c - the staff's small changes, checked and written by the
 * writer thread. See staff_write.h.
 */
#include "server/staff_write.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/writer.h"

struct staff_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    staff_write_answer *answer;
    struct staff_write w;
    char *reason; /* w.reason's copy */
};

int staff_write_check(struct app *app, const struct staff_write *w, struct api_error *e)
{
    enum auth_role r = w->viewer.role;
    switch (w->kind) {
    case STAFF_OVERRIDE:
        if (!auth_role_staff(r))
            return api_fail(e, 403, "forbidden", "Only the course staff may override scores.");
        if (!w->reason || !*w->reason)
            return api_fail(e, 400, "bad_request", "An override needs a reason.");
        if (!isfinite(w->score) || w->score < 0)
            return api_fail(e, 400, "bad_request", "score must be a number >= 0.");
        return 0;
    case STAFF_REGRADE:
        /* TAs regrade too (they handle regrade requests); only admins
         * change rubrics and users. */
        if (r != AUTH_ADMIN && r != AUTH_TA)
            return api_fail(e, 403, "forbidden", "Only TAs and admins may regrade.");
        return 0;
    case STAFF_EXTENSION:
        if (r != AUTH_ADMIN)
            return api_fail(e, 403, "forbidden", "Only admins may grant extensions.");
        if (!app_lab_find(app, w->lab))
            return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", w->lab);
        return 0;
    case STAFF_SHOW_NAME:
        return 0;
    case STAFF_REVOKE:
        if (r != AUTH_ADMIN)
            return api_fail(e, 403, "forbidden", "Only admins may revoke tokens.");
        return 0;
    case STAFF_TOKEN:
        if (r != AUTH_ADMIN)
            return api_fail(e, 403, "forbidden", "Only admins may issue tokens.");
        return 0;
    }
    return api_fail(e, 400, "bad_request", "Unknown change.");
}

/* The lab of submission id on db: 0, or -errno with e (404 when none). */
static int submission_lab_on(struct db *db, long long id, char lab[65], struct api_error *e)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT lab FROM submissions WHERE id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        snprintf(lab, 65, "%s", db_col_text(st, 0));
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return api_fail(e, 404, "not_found", "There is no submission %lld.", id);
    return rc == SQLITE_ROW ? 0 : api_internal(e, db_errno(rc));
}

static int override_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    int rc = submission_lab_on(db, w->id, w->lab, e);
    if (rc)
        return rc;
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO overrides(submission_id, score, reason, by_user,"
                                   " created_at) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, w->id);
    sqlite3_bind_double(st, 2, w->score);
    sqlite3_bind_text(st, 3, w->reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, w->viewer.id);
    sqlite3_bind_double(st, 5, db_now());
    if ((rc = db_step_done(st)) != 0)
        return api_internal(e, rc);
    char target[32], detail[600];
    snprintf(target, sizeof(target), "submission:%lld", w->id);
    snprintf(detail, sizeof(detail), "score=%g reason=%.500s", w->score, w->reason);
    db_audit(db, w->viewer.id, "override", target, detail);
    return 0;
}

static int regrade_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    int rc = submission_lab_on(db, w->id, w->lab, e);
    if (rc)
        return rc;
    rc = queue_regrade_in(db, w->id);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no submission %lld.", w->id);
    if (rc)
        return api_internal(e, rc);
    char target[32];
    snprintf(target, sizeof(target), "submission:%lld", w->id);
    db_audit(db, w->viewer.id, "regrade", target, w->lab);
    return 0;
}

static int extension_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    struct auth_user u;
    int rc = api_user_get(db, w->user, &u, e);
    if (rc)
        return rc;
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO extensions(user_id, lab, due, hard_deadline)"
                                   " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(user_id, lab)"
                                   " DO UPDATE SET due = ?3, hard_deadline = ?4");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, u.id);
    sqlite3_bind_text(st, 2, w->lab, -1, SQLITE_STATIC);
    if (w->due > 0)
        sqlite3_bind_double(st, 3, w->due);
    if (w->hard > 0)
        sqlite3_bind_double(st, 4, w->hard);
    if ((rc = db_step_done(st)) != 0)
        return api_internal(e, rc);
    char detail[128];
    snprintf(detail, sizeof(detail), "lab=%s due=%.0f hard_deadline=%.0f", w->lab, w->due,
             w->hard);
    db_audit(db, w->viewer.id, "extension", w->user, detail);
    return 0;
}

static int show_name_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    sqlite3_stmt *st = db_stmt(db, "UPDATE users SET show_name = ?1 WHERE id = ?2");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int(st, 1, w->show ? 1 : 0);
    sqlite3_bind_int64(st, 2, w->viewer.id);
    int rc = db_step_done(st);
    return rc ? api_internal(e, rc) : 0;
}

static int revoke_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    int rc = auth_token_revoke_rows(db, w->user, &w->tokens, &w->sessions);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", w->user);
    if (rc)
        return api_internal(e, rc);
    char detail[64];
    snprintf(detail, sizeof(detail), "%d tokens, %d sessions", w->tokens, w->sessions);
    db_audit(db, w->viewer.id, "token_revoke", w->user, detail);
    return 0;
}

/* Every old token of w->user revoked, their sessions ended, one new token
 * (w->token, w->role; w->user set to the name as stored). */
static int token_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    struct auth_user u;
    int rc = api_user_get(db, w->user, &u, e);
    if (rc)
        return rc;
    snprintf(w->user, sizeof(w->user), "%s", u.name);
    w->role = u.role;
    rc = auth_token_revoke_rows(db, u.name, &w->tokens, &w->sessions);
    if (!rc)
        rc = auth_token_new(db, u.name, w->token);
    char detail[64];
    snprintf(detail, sizeof(detail), "%d tokens revoked, %d sessions ended", w->tokens,
             w->sessions);
    if (!rc)
        rc = db_audit(db, w->viewer.id, "token_regenerate", u.name, detail);
    return rc ? api_internal(e, rc) : 0;
}

int staff_write_on(struct db *db, struct staff_write *w, struct api_error *e)
{
    switch (w->kind) {
    case STAFF_OVERRIDE:
        return override_on(db, w, e);
    case STAFF_REGRADE:
        return regrade_on(db, w, e);
    case STAFF_EXTENSION:
        return extension_on(db, w, e);
    case STAFF_SHOW_NAME:
        return show_name_on(db, w, e);
    case STAFF_REVOKE:
        return revoke_on(db, w, e);
    case STAFF_TOKEN:
        return token_on(db, w, e);
    }
    return api_internal(e, -EINVAL);
}

void staff_write_after(struct app *app, const struct staff_write *w)
{
    switch (w->kind) {
    case STAFF_OVERRIDE:
        api_cache_invalidate(app, w->id);
        scoreboard_invalidate(app, w->lab);
        break;
    case STAFF_REGRADE:
        queue_written(app->queue, w->id, 1);
        app_log("submission %lld requeued for regrade by %s", w->id, w->viewer.name);
        api_cache_invalidate(app, w->id);
        scoreboard_invalidate(app, w->lab);
        break;
    case STAFF_EXTENSION:
        api_cache_invalidate(app, 0);
        break;
    case STAFF_SHOW_NAME:
        auth_cache_clear(); /* the cached credential carries show_name */
        scoreboard_invalidate(app, NULL);
        break;
    case STAFF_REVOKE:
        /* A lookup cached since the clear before the write: gone now,
         * before anyone hears that the tokens are revoked. */
        auth_cache_clear();
        app_log("every token of %s revoked by %s (%d live, %d sessions ended)", w->user,
                w->viewer.name, w->tokens, w->sessions);
        break;
    case STAFF_TOKEN:
        auth_cache_clear(); /* as for a revocation */
        app_log("a new token for %s issued by %s (%d revoked, %d sessions ended)", w->user,
                w->viewer.name, w->tokens, w->sessions);
        break;
    }
}

static int staff_run(struct db *db, void *arg)
{
    struct staff_job *j = arg;
    return staff_write_on(db, &j->w, &j->w.e);
}

static void staff_done(void *arg, int rc)
{
    struct staff_job *j = arg;
    if (!rc)
        staff_write_after(j->app, &j->w);
    else if (!j->w.e.status)
        api_internal(&j->w.e, rc);
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req && j->answer(j->app, req, &j->w, rc) != HTTP_DEFERRED)
        http_request_finish(req);
    free(j->reason);
    free(j);
}

int staff_write_start(struct app *app, struct http_request *req, const struct staff_write *w,
                      staff_write_answer *answer, struct api_error *e)
{
    assert(answer);
    int rc = staff_write_check(app, w, e);
    if (rc)
        return rc;
    struct staff_job *j = calloc(1, sizeof(*j));
    if (!j)
        return api_internal(e, -ENOMEM);
    j->app = app;
    j->answer = answer;
    j->w = *w;
    memset(&j->w.e, 0, sizeof(j->w.e));
    if (w->reason && !(j->reason = strdup(w->reason))) {
        free(j);
        return api_internal(e, -ENOMEM);
    }
    j->w.reason = j->reason;
    if (w->kind == STAFF_REVOKE || w->kind == STAFF_TOKEN)
        auth_cache_clear(); /* no lookup from now on is cached valid */
    if ((rc = writer_submit(app->writer, staff_run, staff_done, j, 0)) != 0) {
        free(j->reason);
        free(j);
        return api_internal(e, rc);
    }
    http_hold_start(&j->client, req);
    return 0;
}

int staff_write_now(struct app *app, struct staff_write *w, struct api_error *e)
{
    int rc = staff_write_check(app, w, e);
    if (rc)
        return rc;
    if (w->kind == STAFF_REVOKE || w->kind == STAFF_TOKEN)
        auth_cache_clear();
    rc = staff_write_on(app->db, w, e);
    if (!rc)
        staff_write_after(app, w);
    return rc;
}
