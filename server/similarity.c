/*
 * similarity.c - similarity checks with similarity-tester: a run's start,
 * the scheduler and the reports. The run itself (sim's child process) is
 * similarity_run.c. See similarity.h.
 */
#include "server/similarity.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "server/api.h"
#include "server/appview.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/scoreboard.h"
#include "server/similarity_run.h"
#include "server/reader.h"
#include "server/submission.h"
#include "server/writer.h"

const char similarity_schema[] =
    "CREATE TABLE IF NOT EXISTS similarity_runs("
    " id INTEGER PRIMARY KEY,"
    " lab TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK(status IN ('running','done','failed')),"
    " tool TEXT NOT NULL,"
    " files INTEGER NOT NULL DEFAULT 0,"
    " starter_excluded INTEGER NOT NULL DEFAULT 0,"
    " detail TEXT NOT NULL DEFAULT '',"
    " by_user INTEGER REFERENCES users(id),"
    " started_at REAL NOT NULL,"
    " finished_at REAL);"
    "CREATE INDEX IF NOT EXISTS similarity_runs_lab ON similarity_runs(lab, id);"
    "CREATE TABLE IF NOT EXISTS similarity_pairs("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES similarity_runs(id),"
    " sub_a INTEGER NOT NULL REFERENCES submissions(id),"
    " sub_b INTEGER NOT NULL REFERENCES submissions(id),"
    " percent REAL NOT NULL,"
    " percent_a REAL NOT NULL DEFAULT 0," /* how much of a is found in b */
    " percent_b REAL NOT NULL DEFAULT 0,"
    " regions TEXT NOT NULL DEFAULT '[]');"
    "CREATE INDEX IF NOT EXISTS similarity_pairs_run ON similarity_pairs(run_id, percent);";

/* ---- starting a run ---- */

/* A lab a start may run over: the staff's one lab (end 0), or one of the
 * labs the scheduler found past their last deadline (end: that deadline). */
struct sim_cand {
    char name[65];
    double end;
};

/* A start on its way (docs/server.md, "The loop never waits for the
 * disk"): the due look, the sources and the files for sim on the reader,
 * the run's row on the writer, sim spawned by the loop. */
struct sim_start {
    struct app *app;
    struct app view; /* server/appview.h; valid while viewing */
    int viewing;
    struct http_hold hold; /* the request (none: the scheduler's), until the client leaves */
    similarity_answer_fn *answer;
    struct auth_user viewer;
    struct sim_cand *cands;
    size_t ncands;
    struct sim_job *job; /* the run once its files are written */
    struct api_error e;  /* a refusal or failure (e.status != 0) */
};

static struct sim_start *starting; /* one start at a time */
static int sim_stopping;            /* similarity_shutdown ran */

/* The lab's starter (labs/<lab>/starter.<want>, else the other of .cu and
 * .py): its text, malloc'd, and the extension; NULL when the lab has none. */
static char *starter_read(const struct app_lab *l, const char *want, const char **ext, size_t *len)
{
    static const char *const by_want[2][2] = {{"cu", "py"}, {"py", "cu"}};
    const char *const *exts = by_want[strcmp(want, "py") == 0];
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/starter.%s", l->lab.dir, exts[i]);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        char *buf = malloc(256 * 1024 + 1);
        size_t n = buf ? fread(buf, 1, 256 * 1024, f) : 0;
        fclose(f);
        if (!buf)
            return NULL;
        buf[n] = '\0';
        *ext = exts[i];
        *len = n;
        return buf;
    }
    return NULL;
}

/* Load each best submission's source into j->files (reads on view). */
static int files_load(struct app *view, struct sim_job *j, const struct auth_user *viewer,
                      struct api_error *e)
{
    json_t *board = NULL, *row;
    size_t i;
    if (api_scoreboard(view, viewer, j->lab, &board, e))
        return -EIO;
    json_t *rows = json_object_get(board, "rows");
    j->files = calloc(json_array_size(rows) + 1, sizeof(*j->files));
    if (!j->files) {
        json_decref(board);
        return api_internal(e, -ENOMEM);
    }
    json_array_foreach(rows, i, row)
    {
        long long sub = json_integer_value(json_object_get(row, "submission"));
        char fname[72];
        struct sim_file *f = &j->files[j->nfiles];
        struct api_error skip; /* a source that cannot be read is left out */
        if (sub <= 0 ||
            api_submission_source(view, viewer, sub, &f->src, &f->len, fname, &skip) != 0)
            continue;
        /* sim_text when any file is Python: sim_c would lex it as C. */
        if (strlen(fname) > 3 && strcmp(fname + strlen(fname) - 3, ".py") == 0)
            j->ext = "py";
        f->sub = sub;
        j->nfiles++;
    }
    json_decref(board);
    return 0;
}

/* Write s<sub>.<ext> for every file and the starter. */
static int files_write(struct sim_job *j, const char *starter, size_t slen)
{
    char name[64];
    for (size_t i = 0; i < j->nfiles; i++) {
        snprintf(name, sizeof(name), "s%lld.%s", j->files[i].sub, j->ext);
        int rc = sim_write_file(j->dir, name, j->files[i].src, j->files[i].len);
        if (rc)
            return rc;
    }
    if (starter) {
        snprintf(name, sizeof(name), "starter.%s", j->ext);
        return sim_write_file(j->dir, name, starter, slen);
    }
    return 0;
}

/* Reader: 1 when no check of lab started after end (its last deadline). */
static int sched_due(struct db *db, const char *lab, double end)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT COUNT(*) FROM similarity_runs"
                                   " WHERE lab = ?1 AND started_at >= ?2");
    int n = 1;
    if (!st)
        return 0;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, end);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return n == 0;
}

/* Reader: the starter and the files for sim in a new temporary folder. */
static int files_prepare(struct sim_job *j, const struct app_lab *l, struct api_error *e)
{
    const char *sext = NULL;
    size_t slen = 0;
    char *starter = starter_read(l, j->ext, &sext, &slen);
    if (!starter || !sext || strcmp(sext, j->ext) != 0) {
        free(starter);
        starter = NULL;
        if (sext && j->nfiles == 0)
            j->ext = sext;
    }
    j->has_starter = starter != NULL;
    j->tool = strcmp(j->ext, "py") == 0 ? "sim_text" : "sim_c";
    const char *tmp = getenv("TMPDIR");
    snprintf(j->dir, sizeof(j->dir), "%s/cugrade-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(j->dir)) {
        j->dir[0] = '\0';
        free(starter);
        return api_internal(e, -errno);
    }
    int rc = files_write(j, starter, slen);
    free(starter);
    return rc ? api_internal(e, rc) : 0;
}

/* Reader: the first candidate due (the staff's lab is) with two students
 * or more becomes s->job, its files written; else s->e says why. */
static int start_read(struct db *db, void *arg)
{
    struct sim_start *s = arg;
    app_view_db(&s->view, db);
    for (size_t i = 0; i < s->ncands; i++) {
        const struct sim_cand *c = &s->cands[i];
        const struct app_lab *l = app_lab_find(&s->view, c->name);
        if (!l || (c->end > 0 && !sched_due(db, c->name, c->end)))
            continue;
        struct sim_job *j = calloc(1, sizeof(*j));
        if (!j)
            return api_internal(&s->e, -ENOMEM);
        j->app = s->app; /* used on the loop only */
        snprintf(j->lab, sizeof(j->lab), "%s", c->name);
        j->ext = "cu";
        memset(&s->e, 0, sizeof(s->e));
        int rc = files_load(&s->view, j, &s->viewer, &s->e);
        if (rc && !s->e.status)
            api_internal(&s->e, rc);
        else if (!rc && j->nfiles < 2)
            api_fail(&s->e, 409, "conflict",
                     "Lab %s has %zu student%s with a graded submission; a similarity check "
                     "needs at least two. Run it after the deadline.",
                     c->name, j->nfiles, j->nfiles == 1 ? "" : "s");
        else if (!rc)
            files_prepare(j, l, &s->e);
        if (!s->e.status) {
            s->job = j;
            return 0;
        }
        sim_job_free(j); /* the scheduler's next lab; a lab with fewer than two is retried */
    }
    if (!s->e.status)
        api_fail(&s->e, 409, "conflict", "No lab is due for a similarity check.");
    return 0;
}

/* Writer: a run left 'running' by a server that stopped is failed; the
 * new run's row ('running') and its audit row. */
static int start_write(struct db *db, void *arg)
{
    struct sim_start *s = arg;
    struct sim_job *j = s->job;
    db_exec(db, "UPDATE similarity_runs SET status = 'failed', detail = 'the server stopped "
                "during the run' WHERE status = 'running'");
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO similarity_runs(lab, status, tool, files,"
                                   " starter_excluded, by_user, started_at)"
                                   " VALUES(?1, 'running', ?2, ?3, ?4, ?5, ?6)");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, j->lab, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, j->tool, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int)j->nfiles);
    sqlite3_bind_int(st, 4, j->has_starter);
    if (s->viewer.id > 0) /* 0: the scheduler */
        sqlite3_bind_int64(st, 5, s->viewer.id);
    sqlite3_bind_double(st, 6, db_now());
    int rc = db_step_done(st);
    if (rc)
        return rc;
    j->run_id = db_last_id(db);
    char target[40], detail[120];
    snprintf(target, sizeof(target), "similarity_run:%lld", j->run_id);
    snprintf(detail, sizeof(detail), "lab=%s files=%zu tool=%s", j->lab, j->nfiles, j->tool);
    db_audit(db, s->viewer.id, "similarity_run", target, detail);
    return 0;
}

/* Loop: the start is over (rc 0: s->job runs; else s->e says why): the
 * client answered if still there, s freed. */
static void start_end(struct sim_start *s, int rc)
{
    assert(starting == s);
    starting = NULL;
    if (rc && !s->e.status)
        api_internal(&s->e, rc);
    long long id = rc ? 0 : s->job->run_id;
    if (!rc && s->viewer.id == 0)
        app_log("similarity run %lld (%s) started by the scheduler: the lab's deadlines are past",
                id, s->job->lab);
    struct http_request *req = http_hold_end(&s->hold);
    if (req) {
        if (s->answer(s->app, req, s->job ? s->job->lab : "", id, rc ? &s->e : NULL) !=
            HTTP_DEFERRED)
            http_request_finish(req);
    }
    if (s->viewing)
        app_view_end(s->app, &s->view);
    free(s->cands);
    free(s);
}

/* Loop: the run's row is stored (or not): spawn sim's first step. */
static void start_written(void *arg, int rc)
{
    struct sim_start *s = arg;
    struct sim_job *j = s->job;
    if (!rc && sim_stopping)
        rc = api_fail(&s->e, 503, "internal", "The server is stopping; start the check again.");
    if (!rc) {
        j->step = j->has_starter ? STEP_MASK : STEP_PERCENT;
        sim_active = j;
        if ((rc = sim_step_spawn(j)) != 0) {
            sim_run_finish(j, "failed", "the files for sim could not be written");
            api_internal(&s->e, rc);
        }
    }
    if (rc) {
        sim_job_free(j);
        s->job = NULL;
    }
    start_end(s, rc);
}

/* Loop: the files are written (or not): the run's row goes to the
 * writer. 0 (start_written follows), or rc once s is ended (freed). */
static int start_read_done(struct sim_start *s, int rc)
{
    if (s->viewing) {
        app_view_end(s->app, &s->view);
        s->viewing = 0;
    }
    if (!rc && s->e.status)
        rc = -EPERM;
    if (!rc && sim_stopping)
        rc = api_fail(&s->e, 503, "internal", "The server is stopping; start the check again.");
    if (!rc)
        rc = writer_submit(s->app->writer, start_write, start_written, s, 0);
    if (rc) {
        if (s->job)
            sim_job_free(s->job);
        s->job = NULL;
        start_end(s, rc);
    }
    return rc;
}

/* Reader's done callback (loop). */
static void start_read_after(void *arg, int rc)
{
    struct app *app = ((struct sim_start *)arg)->app;
    start_read_done(arg, rc);
    app_work_end(app); /* last: it may finish a stop */
}

/* Loop: start s (its candidates set; req NULL for the scheduler) off the
 * loop. 0 (s answers req later), or -errno with e (s freed, req not
 * answered). */
static int start_go(struct sim_start *s, struct http_request *req, struct api_error *e)
{
    struct app *app = s->app;
    int rc = app_view_begin(app, &s->view);
    if (rc) {
        free(s->cands);
        free(s);
        return api_internal(e, rc);
    }
    s->viewing = 1;
    starting = s;
    if (reader_sync(app->reader)) { /* a database in memory: read here */
        app_view_db(&s->view, app->db);
        start_read(app->db, s);
        struct api_error se = s->e;
        if ((rc = start_read_done(s, 0)) != 0) {
            if (se.status)
                *e = se;
            else
                api_internal(e, rc);
            return rc;
        }
    } else if ((rc = reader_submit(app->reader, start_read, start_read_after, s)) != 0) {
        start_end(s, rc);
        return api_internal(e, rc);
    } else {
        app_work_begin(app);
    }
    if (req) /* answered by start_end, never before this returns */
        http_hold_start(&s->hold, req);
    return 0;
}

/* The lab of the check running or starting, for a 409. */
static const char *busy_lab(void)
{
    if (sim_active)
        return sim_active->lab;
    return starting->ncands == 1 ? starting->cands[0].name : "due after its deadline";
}

int similarity_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                     const char *lab, similarity_answer_fn *answer, struct api_error *e)
{
    assert(answer && req);
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff run similarity checks.");
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (sim_active || starting)
        return api_fail(e, 409, "conflict", "A similarity check (lab %s) is running; wait until "
                        "it ends, then start this one.", busy_lab());
    struct sim_start *s = calloc(1, sizeof(*s));
    if (!s || !(s->cands = calloc(1, sizeof(*s->cands)))) {
        free(s);
        return api_internal(e, -ENOMEM);
    }
    s->app = app;
    s->answer = answer;
    s->viewer = *viewer;
    s->ncands = 1;
    snprintf(s->cands[0].name, sizeof(s->cands[0].name), "%s", l->lab.name);
    return start_go(s, req, e);
}

/* ---- the scheduler: one check per lab after its last deadline ---- */

static uv_timer_t sched;
static int sched_on;

/* The labs whose deadlines are all past (the loop's copy of the rubrics);
 * whether a check started after them is the reader's look (sched_due). */
static void on_sched(uv_timer_t *t)
{
    struct app *app = t->data;
    struct api_error e;
    if (sim_active || starting || sim_stopping)
        return;
    struct sim_start *s = calloc(1, sizeof(*s));
    if (!s || !(s->cands = calloc(app->nlabs ? app->nlabs : 1, sizeof(*s->cands)))) {
        free(s);
        return;
    }
    double now = db_now();
    for (size_t i = 0; i < app->nlabs; i++) {
        const struct app_lab *l = &app->labs[i];
        double end = l->rubric.hard_deadline > l->rubric.due ? l->rubric.hard_deadline
                                                               : l->rubric.due;
        if (!l->has_rubric || end <= 0 || now < end)
            continue;
        struct sim_cand *c = &s->cands[s->ncands++];
        snprintf(c->name, sizeof(c->name), "%s", l->lab.name);
        c->end = end;
    }
    if (!s->ncands) {
        free(s->cands);
        free(s);
        return;
    }
    s->app = app;
    s->viewer.role = AUTH_ADMIN; /* id 0: the system */
    snprintf(s->viewer.name, sizeof(s->viewer.name), "cugrade (scheduled)");
    start_go(s, NULL, &e); /* nothing due, or fewer than two students: the next tick */
}

void similarity_schedule(struct app *app)
{
    const char *s = getenv("CUGRADE_SIMILARITY_AUTO_S");
    char *end;
    double every = SIMILARITY_AUTO_S;
    if (s && *s) {
        every = strtod(s, &end);
        if (*end || !(every >= 0))
            every = SIMILARITY_AUTO_S;
    }
    if (every <= 0 || sched_on)
        return;
    uv_timer_init(app->loop, &sched);
    sched.data = app;
    uv_timer_start(&sched, on_sched, (uint64_t)(every * 1000), (uint64_t)(every * 1000));
    sched_on = 1;
}

void similarity_shutdown(struct app *app)
{
    (void)app;
    sim_stopping = 1; /* a start on its way ends without spawning */
    if (sched_on) {
        uv_timer_stop(&sched);
        uv_close((uv_handle_t *)&sched, NULL);
        sched_on = 0;
    }
    if (sim_active && !sim_active->stopping) {
        sim_active->stopping = 1;
        if (!sim_active->exited)
            uv_process_kill(&sim_active->proc, SIGKILL);
    }
}

/* ---- reports ---- */

static json_t *run_json(sqlite3_stmt *st)
{
    char started[40], finished[40] = "";
    api_time_iso(sqlite3_column_double(st, 6), started, sizeof(started));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL)
        api_time_iso(sqlite3_column_double(st, 7), finished, sizeof(finished));
    return json_pack("{s:I,s:s,s:s,s:i,s:b,s:s,s:s,s:s?,s:s}", "id",
                     (json_int_t)sqlite3_column_int64(st, 0), "status", db_col_text(st, 1), "tool",
                     db_col_text(st, 2), "files", sqlite3_column_int(st, 3), "starter_excluded",
                     sqlite3_column_int(st, 4), "detail", db_col_text(st, 5), "started_at", started,
                     "finished_at", finished[0] ? finished : NULL, "by", db_col_text(st, 8));
}

#define PAIR_COLS                                                                                  \
    "p.id, p.percent, p.sub_a, ua.name, p.percent_a, p.sub_b, ub.name, p.percent_b, p.regions,"    \
    " p.run_id, r.lab"
#define PAIR_FROM                                                                                  \
    " FROM similarity_pairs p JOIN similarity_runs r ON r.id = p.run_id"                           \
    " JOIN submissions sa ON sa.id = p.sub_a JOIN users ua ON ua.id = sa.user_id"                  \
    " JOIN submissions sb ON sb.id = p.sub_b JOIN users ub ON ub.id = sb.user_id"

static json_t *pair_json(sqlite3_stmt *st, int with_regions)
{
    json_t *o = json_pack(
        "{s:I,s:f,s:{s:s,s:I,s:f},s:{s:s,s:I,s:f},s:I,s:s}", "id",
        (json_int_t)sqlite3_column_int64(st, 0), "percent", sqlite3_column_double(st, 1), "a",
        "user", db_col_text(st, 3), "submission", (json_int_t)sqlite3_column_int64(st, 2),
        "percent", sqlite3_column_double(st, 4), "b", "user", db_col_text(st, 6), "submission",
        (json_int_t)sqlite3_column_int64(st, 5), "percent", sqlite3_column_double(st, 7), "run",
        (json_int_t)sqlite3_column_int64(st, 9), "lab", db_col_text(st, 10));
    if (o && with_regions) {
        json_t *r = json_loads(db_col_text(st, 8), 0, NULL);
        json_object_set_new(o, "regions", r ? r : json_array());
    }
    return o;
}

int similarity_report(struct app *app, const struct auth_user *viewer, const char *lab,
                      json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    if (!app_lab_find(app, lab))
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    sqlite3_stmt *st = db_stmt(
        app->db, "SELECT r.id, r.status, r.tool, r.files, r.starter_excluded, r.detail,"
                 " r.started_at, r.finished_at, COALESCE(u.name, '') FROM similarity_runs r"
                 " LEFT JOIN users u ON u.id = r.by_user WHERE r.lab = ?1 ORDER BY r.id DESC"
                 " LIMIT 1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    json_t *run = json_null();
    long long run_id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        run_id = sqlite3_column_int64(st, 0);
        run = run_json(st);
    }
    sqlite3_reset(st);
    json_t *pairs = json_array();
    st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.run_id = ?1"
                          " ORDER BY p.percent DESC, p.id LIMIT 500");
    if (st && pairs) {
        sqlite3_bind_int64(st, 1, run_id);
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(pairs, pair_json(st, 0));
        sqlite3_reset(st);
    }
    *out = json_pack("{s:s,s:o,s:o}", "lab", lab, "run", run ? run : json_null(), "pairs",
                     pairs ? pairs : json_array());
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int similarity_pair(struct app *app, const struct auth_user *viewer, long long pair_id,
                    json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    sqlite3_stmt *st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, pair_id);
    *out = sqlite3_step(st) == SQLITE_ROW ? pair_json(st, 1) : NULL;
    sqlite3_reset(st);
    if (!*out)
        return api_fail(e, 404, "not_found", "There is no similar pair %lld.", pair_id);
    return 0;
}
