/*
 * runner.c - the runners table. See runner.h.
 */
#include "server/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/writer.h"

void runner_seen(struct db *db, const char *name, const char *gpu)
{
    sqlite3_stmt *st =
        db_stmt(db, "INSERT INTO runners(name, gpu, last_seen) VALUES(?1, ?2, ?3)"
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

struct seen_job {
    char name[72];
    char gpu[160]; /* "": unchanged */
};

static int seen_run(struct db *db, void *arg)
{
    struct seen_job *j = arg;
    runner_seen(db, j->name, j->gpu[0] ? j->gpu : NULL);
    return 0;
}

static void seen_done(void *arg, int rc)
{
    (void)rc; /* a lost last-seen time is corrected by the runner's next call */
    free(arg);
}

void runner_seen_later(struct app *app, const char *name, const char *gpu)
{
    struct seen_job *j = calloc(1, sizeof(*j));
    if (!j)
        return;
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->gpu, sizeof(j->gpu), "%s", gpu ? gpu : "");
    if (writer_submit(app->writer, seen_run, seen_done, j, 0))
        free(j);
}

void runner_job_done(struct db *db, const char *name)
{
    sqlite3_stmt *st =
        db_stmt(db, "UPDATE runners SET jobs_done = jobs_done + 1, last_seen = ?1 WHERE name = ?2");
    if (!st || !name)
        return;
    sqlite3_bind_double(st, 1, db_now());
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    db_step_done(st);
}

double runner_last_seen(struct app *app)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT MAX(last_seen) FROM runners");
    double t = 0;
    if (!st)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        t = sqlite3_column_double(st, 0);
    sqlite3_reset(st);
    return t;
}

int runner_any_active(struct app *app)
{
    if (queue_waiting(app->queue) > 0)
        return 1;
    return db_now() - runner_last_seen(app) < 120;
}

static json_t *runner_row(sqlite3_stmt *st)
{
    return json_pack("{s:s,s:s,s:f,s:I}", "name", db_col_text(st, 0), "gpu", db_col_text(st, 1),
                     "last_seen", sqlite3_column_double(st, 2), "jobs_done",
                     (json_int_t)sqlite3_column_int64(st, 3));
}

int runner_list(struct app *app, int by_name, json_t **out)
{
    static const char *const sql[2] = {
        "SELECT name, gpu, last_seen, jobs_done FROM runners ORDER BY last_seen DESC",
        "SELECT name, gpu, last_seen, jobs_done FROM runners ORDER BY name"};
    sqlite3_stmt *st = db_stmt(app->db, sql[by_name != 0]);
    *out = NULL;
    if (!st)
        return -EIO;
    return db_rows_json(st, runner_row, out);
}
