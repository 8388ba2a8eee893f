/*
 * grades_lms.c - the one-row-per-student grades CSV. See grades_lms.h.
 */
#include "server/grades_lms.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "server/scoreboard.h"

/* The best counted score of user_id in lab into *score: 1 when there is
 * one, 0 when the student has no counted submission, -errno. The latest
 * override of a submission replaces its score; a system error (our fault:
 * retried, never charged) is no attempt of the student's, and a
 * submission without a score (queued, superseded) counts for nothing. */
static int lms_best(struct db *db, long long user_id, const char *lab, double *score)
{
    sqlite3_stmt *st = db_stmt(
        db, "SELECT MAX(COALESCE((SELECT o.score FROM overrides o WHERE o.submission_id = s.id"
            " ORDER BY o.id DESC LIMIT 1), s.score)) FROM submissions s"
            " WHERE s.user_id = ?1 AND s.lab = ?2 AND s.status != 'system_error'");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), have = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *score = sqlite3_column_double(st, 0);
        have = 1;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? have : db_errno(rc);
}

/* One student's row: name, display name, a cell per lab. 0 or -errno. */
static int lms_row(struct app *app, long long user_id, const char *name, const char *display,
                   struct http_buf *out)
{
    scoreboard_csv_cell(out, name);
    http_buf_append(out, ",", 1);
    scoreboard_csv_cell(out, display);
    for (size_t i = 0; i < app->nlabs; i++) {
        double score = 0;
        int rc = lms_best(app->db, user_id, app->labs[i].lab.name, &score);
        if (rc < 0)
            return rc;
        if (rc)
            http_buf_printf(out, ",%g", score);
        else
            http_buf_append(out, ",", 1);
    }
    return http_buf_append(out, "\r\n", 2) ? -ENOMEM : 0;
}

int grades_lms_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e)
{
    assert(app && viewer && out);
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may export grades.");
    http_buf_append(out, "user,display_name", 17);
    for (size_t i = 0; i < app->nlabs; i++) {
        http_buf_append(out, ",", 1);
        scoreboard_csv_cell(out, app->labs[i].lab.name);
    }
    http_buf_append(out, "\r\n", 2);
    sqlite3_stmt *st = db_stmt(app->db, "SELECT id, name, COALESCE(display_name, name) FROM users"
                                        " WHERE role = 'student' ORDER BY name");
    if (!st)
        return api_internal(e, -EIO);
    int rc = SQLITE_DONE, lrc = 0;
    while (!lrc && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        /* lms_row's statements are others than st: st stays on its row. */
        lrc =
            lms_row(app, sqlite3_column_int64(st, 0), db_col_text(st, 1), db_col_text(st, 2), out);
    }
    sqlite3_reset(st);
    if (lrc)
        return api_internal(e, lrc);
    if (rc != SQLITE_DONE)
        return api_internal(e, db_errno(rc));
    return out->data ? 0 : api_internal(e, -ENOMEM);
}

void grades_lms_filename(double t, char *buf, size_t len)
{
    char iso[40];
    api_time_iso(t, iso, sizeof(iso));
    snprintf(buf, len, "grades-lms-%.10s.csv", iso);
}
