/*
 * app.c - the course state: labs and rubrics loaded into struct app, the
 * rules of time (deadlines, open, late penalty), errors. See app.h.
 */
#include "server/app.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

int api_fail(struct api_error *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

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
    if (rc == -ENOLINK)
        return api_fail(e, 503, "internal",
                        "The server's database file was moved or deleted while it runs, so "
                        "nothing could be saved; the staff have been alerted by /healthz. Try "
                        "again later.");
    return api_fail(e, 500, "internal",
                    "Internal error (%s); the staff can see it in the server log.",
                    strerror(rc < 0 ? -rc : rc));
}

int api_user_get(struct db *db, const char *name, struct auth_user *u, struct api_error *e)
{
    int rc = auth_user_get(db, name, u);
    if (rc == -ENOENT)
        return api_fail(e, 404, "not_found", "There is no user called '%.64s'.", name);
    return rc ? api_internal(e, rc) : 0;
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

void api_time_iso(double t, char *buf, size_t len)
{
    if (t <= 0) {
        if (len)
            buf[0] = '\0';
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void app_log(const char *fmt, ...)
{
    char when[32], msg[600];
    va_list ap;
    api_time_iso(db_now(), when, sizeof(when));
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s cugrade-server: %s\n", when, msg);
}

struct app_lab *app_lab_find(struct app *app, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < app->nlabs; i++)
        if (strcmp(app->labs[i].lab.name, name) == 0)
            return &app->labs[i];
    return NULL;
}

int app_auth(struct app *app, const struct http_request *req, struct auth_user *user)
{
    const struct app_cred *ac = req->user;
    if (ac && ac->rc != -EINPROGRESS) {
        if (ac->rc == 0)
            *user = ac->u;
        return ac->rc;
    }
    return auth_request_user(app->db, req, user);
}

void api_deadlines(struct app *app, const struct app_lab *l, long long user_id, double *due,
                   double *hard)
{
    api_deadlines_on(app->db, l, user_id, due, hard);
}

void api_deadlines_on(struct db *db, const struct app_lab *l, long long user_id, double *due,
                      double *hard)
{
    *due = l->has_rubric ? l->rubric.due : 0;
    *hard = l->has_rubric ? l->rubric.hard_deadline : 0;
    if (user_id <= 0)
        return;
    sqlite3_stmt *st = db_stmt(db, "SELECT due, hard_deadline FROM extensions"
                                        " WHERE user_id = ?1 AND lab = ?2");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, l->lab.name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        double d = sqlite3_column_double(st, 0), h = sqlite3_column_double(st, 1);
        if (d > 0)
            *due = d;
        if (h > 0)
            *hard = h;
        if (*hard > 0 && *hard < *due)
            *hard = *due;
    }
    sqlite3_reset(st);
}

json_t *app_json_time(double t)
{
    char buf[40];
    if (t <= 0)
        return json_null();
    api_time_iso(t, buf, sizeof(buf));
    return json_string(buf);
}

enum app_lab_state app_lab_state(const struct app_lab *l, double due, double hard, double now)
{
    assert(l);
    if (!l->has_rubric)
        return APP_LAB_NO_RUBRIC;
    if (l->rubric.opens > 0 && now < l->rubric.opens)
        return APP_LAB_NOT_YET;
    if (due > 0 && now > due) {
        if (l->rubric.late_policy == RUBRIC_LATE_REFUSE)
            return APP_LAB_LATE_REFUSED;
        if (hard > 0 && now > hard)
            return APP_LAB_CLOSED;
        return APP_LAB_LATE;
    }
    return APP_LAB_OPEN;
}

int app_lab_open_now(const struct app_lab *l, double due, double hard, double now)
{
    enum app_lab_state s = app_lab_state(l, due, hard, now);
    return s == APP_LAB_OPEN || s == APP_LAB_LATE;
}

double app_late_penalty_percent(const struct app_lab *l, double late_days)
{
    assert(late_days >= 0);
    double pct = l && l->has_rubric ? l->rubric.penalty_percent_per_day * late_days : 0;
    return pct > 100 ? 100 : pct;
}

int app_db_ok(struct app *app)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT 1");
    int ok = st && sqlite3_step(st) == SQLITE_ROW;
    if (st)
        sqlite3_reset(st);
    return ok;
}

static char *json_canonical(const json_t *doc)
{
    return json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
}

/* Store the rubric file's document (file, canonical text file_c) as
 * lab l's version *maxv + 1 when it differs from the last version that
 * came from the file; *maxv is then the new version. 0 or -errno. */
static int rubric_file_store(struct app *app, struct app_lab *l, json_t *file, const char *file_c,
                             const char *path, int *maxv)
{
    sqlite3_stmt *st;
    int rc = 0;
    int changed = 1;
    st = db_stmt(app->db, "SELECT doc FROM rubrics WHERE lab = ?1 AND created_by IS NULL"
                          " ORDER BY version DESC LIMIT 1");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        json_t *prev = json_loads(db_col_text(st, 0), 0, NULL);
        char *prev_c = prev ? json_canonical(prev) : NULL;
        changed = !prev_c || strcmp(prev_c, file_c) != 0;
        free(prev_c);
        json_decref(prev);
    }
    sqlite3_reset(st);
    if (changed) {
        st = db_stmt(app->db, "INSERT INTO rubrics(lab, version, doc, created_at, created_by)"
                              " VALUES(?1, ?2, ?3, ?4, NULL)");
        if (!st)
            return -EIO;
        char *doc = json_dumps(file, JSON_COMPACT);
        sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, *maxv + 1);
        sqlite3_bind_text(st, 3, doc, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 4, db_now());
        rc = db_step_done(st);
        free(doc);
        if (rc)
            return rc;
        (*maxv)++;
        if (*maxv > 1)
            fprintf(stderr, "cugrade-server: %s changed on disk: stored as rubric version %d\n",
                    path, *maxv);
    }
    return rc;
}

/* Make the lab's current rubric the newest stored version, after storing
 * rubrics/<lab>.json as a new version when it is new or was edited on disk
 * since it was last loaded. */
static int app_rubric_load(struct app *app, struct app_lab *l, char *err, size_t errlen)
{
    char path[1024];
    json_error_t jerr;
    json_t *file = NULL, *latest = NULL;
    char *file_c = NULL;
    int rc = 0, maxv = 0;

    snprintf(path, sizeof(path), "%s/%s.json", app->cfg.rubrics_dir, l->lab.name);
    file = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!file) {
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
            return -EINVAL;
        }
    } else {
        struct rubric r;
        char perr[256];
        if (rubric_parse(file, &l->lab, &r, perr, sizeof(perr)) != 0) {
            snprintf(err, errlen, "%s: %s", path, perr);
            json_decref(file);
            return -EINVAL;
        }
        rubric_free(&r);
        file_c = json_canonical(file);
    }
    /* The last version that came from the file, and the newest version. */
    sqlite3_stmt *st = db_stmt(app->db, "SELECT MAX(version) FROM rubrics WHERE lab = ?1");
    if (!st) {
        rc = -EIO;
        goto out;
    }
    sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        maxv = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    if (file_c) {
        rc = rubric_file_store(app, l, file, file_c, path, &maxv);
        if (rc)
            goto out;
    }
    if (maxv == 0) {
        fprintf(stderr, "cugrade-server: lab %s has no rubric (%s): submissions are refused\n",
                l->lab.name, path);
        goto out;
    }
    st = db_stmt(app->db, "SELECT doc FROM rubrics WHERE lab = ?1 AND version = ?2");
    if (!st) {
        rc = -EIO;
        goto out;
    }
    sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, maxv);
    if (sqlite3_step(st) == SQLITE_ROW)
        latest = json_loads(db_col_text(st, 0), 0, NULL);
    sqlite3_reset(st);
    if (!latest) {
        snprintf(err, errlen, "lab %s: rubric version %d in the database is not JSON", l->lab.name,
                 maxv);
        rc = -EINVAL;
        goto out;
    }
    char perr[256];
    if (rubric_parse(latest, &l->lab, &l->rubric, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "lab %s: rubric version %d: %s", l->lab.name, maxv, perr);
        json_decref(latest);
        rc = -EINVAL;
        goto out;
    }
    l->rubric_doc = latest;
    l->rubric_version = maxv;
    l->has_rubric = 1;
out:
    free(file_c);
    json_decref(file);
    return rc;
}

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

int app_labs_load(struct app *app, char *err, size_t errlen)
{
    struct lab *labs = NULL;
    int rc, n;

    n = lab_load_all(app->cfg.labs_dir, &labs, err, errlen);
    if (n < 0) {
        if (n != -ENOENT)
            return n;
        fprintf(stderr, "cugrade-server: %s: no labs directory; serving no labs\n", app->cfg.labs_dir);
        n = 0;
        labs = NULL;
    }
    app->labs = calloc(n ? (size_t)n : 1, sizeof(*app->labs));
    if (!app->labs) {
        rc = -ENOMEM;
        lab_free_all(labs, (size_t)n);
        return rc;
    }
    for (int i = 0; i < n; i++)
        app->labs[i].lab = labs[i]; /* moved: labs[] itself is freed below */
    app->nlabs = (size_t)n;
    free(labs);
    rc = db_begin(app->db, 1);
    if (rc)
        return rc;
    for (size_t i = 0; i < app->nlabs; i++) {
        struct app_lab *l = &app->labs[i];
        sqlite3_stmt *st =
            db_stmt(app->db, "INSERT INTO labs(lab, title, lab_json) VALUES(?1, ?2, ?3)"
                             " ON CONFLICT(lab) DO UPDATE SET title = ?2, lab_json = ?3");
        char *doc = l->lab.doc ? json_dumps(l->lab.doc, JSON_COMPACT) : NULL;
        if (!st) {
            free(doc);
            rc = -EIO;
            break;
        }
        sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, l->lab.title, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, doc, -1, SQLITE_TRANSIENT);
        rc = db_step_done(st);
        free(doc);
        if (!rc)
            rc = app_rubric_load(app, l, err, errlen);
        if (rc)
            break;
    }
    if (rc) {
        db_rollback(app->db);
        if (!err[0])
            snprintf(err, errlen, "loading labs and rubrics: %s", strerror(-rc));
        return rc;
    }
    return db_commit(app->db);
}

void app_labs_free(struct app *app)
{
    for (size_t i = 0; i < app->nlabs; i++) {
        struct app_lab *l = &app->labs[i];
        lab_free(&l->lab);
        if (l->has_rubric)
            rubric_free(&l->rubric);
        json_decref(l->rubric_doc);
        for (int k = 0; k < 4; k++)
            http_buf_free(&l->sb_cache[k]);
    }
    free(app->labs);
    app->labs = NULL;
    app->nlabs = 0;
    while (app->retired) {
        struct app_retired *r = app->retired;
        app->retired = r->next;
        if (r->has_rubric)
            rubric_free(&r->rubric);
        json_decref(r->doc);
        free(r);
    }
}
