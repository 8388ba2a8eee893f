/*
 * app.c - the application's life: open the database, load labs/ and
 * rubrics/, serve, stop. See api.h.
 */
#include "server/api.h"
#include "server/course.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/pages.h"

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
    return auth_request_user(app->db, req, user);
}

void api_deadlines(struct app *app, const struct app_lab *l, long long user_id, double *due,
                   double *hard)
{
    *due = l->has_rubric ? l->rubric.due : 0;
    *hard = l->has_rubric ? l->rubric.hard_deadline : 0;
    if (user_id <= 0)
        return;
    sqlite3_stmt *st = db_stmt(app->db, "SELECT due, hard_deadline FROM extensions"
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

static char *json_canonical(const json_t *doc)
{
    return json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
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
        int changed = 1;
        st = db_stmt(app->db, "SELECT doc FROM rubrics WHERE lab = ?1 AND created_by IS NULL"
                              " ORDER BY version DESC LIMIT 1");
        if (!st) {
            rc = -EIO;
            goto out;
        }
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
            if (!st) {
                rc = -EIO;
                goto out;
            }
            char *doc = json_dumps(file, JSON_COMPACT);
            sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, maxv + 1);
            sqlite3_bind_text(st, 3, doc, -1, SQLITE_TRANSIENT);
            sqlite3_bind_double(st, 4, db_now());
            rc = db_step_done(st);
            free(doc);
            if (rc)
                goto out;
            maxv++;
            if (maxv > 1)
                fprintf(stderr, "cugrade-server: %s changed on disk: stored as rubric version %d\n",
                        path, maxv);
        }
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

static void app_queue_changed(void *arg, long long id)
{
    api_cache_invalidate(arg, id);
}

int app_open(struct app *app, uv_loop_t *loop, const struct app_config *cfg, char *err,
             size_t errlen)
{
    struct lab *labs = NULL;
    int rc, n;

    memset(app, 0, sizeof(*app));
    app->loop = loop;
    app->cfg = *cfg;
    if (app->cfg.lease_s <= 0)
        app->cfg.lease_s = 60;
    if (app->cfg.sweep_s <= 0)
        app->cfg.sweep_s = 1;
    if (app->cfg.max_wait_s <= 0)
        app->cfg.max_wait_s = 30;
    if (app->cfg.header_timeout_s <= 0)
        app->cfg.header_timeout_s = 10;
    if (app->cfg.idle_timeout_s <= 0)
        app->cfg.idle_timeout_s = 60;
    if (app->cfg.max_conns == 0)
        app->cfg.max_conns = 10000;
    if (app->cfg.max_conns_per_client == 0)
        app->cfg.max_conns_per_client = 64;
    if (app->cfg.auth_fail_window_s <= 0)
        app->cfg.auth_fail_window_s = 60;
    if (app->cfg.min_free_mb < 0)
        app->cfg.min_free_mb = 0;
    app->started_at = db_now();
    rc = auth_throttle_new(app->cfg.auth_fail_limit, app->cfg.auth_fail_window_s, &app->throttle);
    if (rc)
        return rc;
    rc = db_open(cfg->db_path, DB_CHECK, &app->db);
    if (rc == -EBADMSG) {
        /* Refuse to start rather than serve: every write would go into a
         * damaged file and could spread the damage; reads would be wrong in
         * ways nobody sees. The pages at fault are in the lines above. */
        snprintf(err, errlen,
                 "%s is damaged (PRAGMA quick_check failed, see above): not serving it, so that "
                 "nothing is written into it. Stop here, keep a copy of the file, and restore "
                 "the last backup (docs/deploy.md, \"Backups and restore\") or recover what "
                 "can be read with `sqlite3 %s .recover`.",
                 cfg->db_path, cfg->db_path);
        return rc;
    }
    if (rc == -EROFS) {
        snprintf(err, errlen,
                 "%s can only be opened read-only (its mode, its owner, or a read-only "
                 "filesystem): the server must write it. Make it writable by this user "
                 "(uid %d).",
                 cfg->db_path, (int)getuid());
        return rc;
    }
    if (rc == -ENOENT || rc == -ENODATA) {
        snprintf(err, errlen,
                 "%s: no initialized database here; run `cugrade-server init --db %s` first",
                 cfg->db_path, cfg->db_path);
        return rc;
    }
    if (rc) {
        snprintf(err, errlen, "%s: cannot open the database: %s", cfg->db_path, strerror(-rc));
        return rc;
    }
    n = lab_load_all(cfg->labs_dir, &labs, err, errlen);
    if (n < 0) {
        if (n != -ENOENT)
            goto fail_labs;
        fprintf(stderr, "cugrade-server: %s: no labs directory; serving no labs\n", cfg->labs_dir);
        n = 0;
        labs = NULL;
    }
    app->labs = calloc(n ? (size_t)n : 1, sizeof(*app->labs));
    if (!app->labs) {
        rc = -ENOMEM;
        lab_free_all(labs, (size_t)n);
        goto fail;
    }
    for (int i = 0; i < n; i++)
        app->labs[i].lab = labs[i]; /* moved: labs[] itself is freed below */
    app->nlabs = (size_t)n;
    free(labs);
    rc = db_begin(app->db, 1);
    if (rc)
        goto fail;
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
        goto fail;
    }
    rc = db_commit(app->db);
    if (rc)
        goto fail;
    rc = queue_new(loop, app->db, app->cfg.sweep_s, &app->queue);
    if (rc)
        goto fail;
    queue_on_change(app->queue, app_queue_changed, app);
    n = queue_recover(app->queue, app->cfg.lease_s);
    if (n > 0)
        app_log("%d job%s in progress when the server stopped: leases renewed, the attempt not "
                "charged", n, n == 1 ? " was" : "s were");
    return 0;
fail_labs:
    rc = n;
fail:
    app_close(app);
    return rc;
}

#define ROLE_BIT(r) (1u << (r))
#define ANYONE (~0u)
#define SIGNED_IN 0u

/* Who may get past admission to API route rt (NULL: a page or an unknown
 * API path), by the API's layout (docs/api.md): /healthz anyone, /metrics
 * admins and runners, /api/runner/... runners, /api/admin/... staff, any other
 * route anyone signed in (SIGNED_IN); otherwise a mask of ROLE_BIT()s.
 * Coarse on purpose: each handler checks the exact roles again; this gate
 * keeps a client that may not use a route from making us buffer its body. */
static unsigned admit_roles(const struct route *rt)
{
    if (!rt || strcmp(rt->pattern, "/healthz") == 0)
        return ANYONE;
    if (strcmp(rt->pattern, "/metrics") == 0)
        return ROLE_BIT(AUTH_ADMIN) | ROLE_BIT(AUTH_RUNNER);
    if (strncmp(rt->pattern, "/api/runner/", 12) == 0)
        return ROLE_BIT(AUTH_RUNNER);
    if (strncmp(rt->pattern, "/api/admin/", 11) == 0)
        return ROLE_BIT(AUTH_TA) | ROLE_BIT(AUTH_ADMIN);
    return SIGNED_IN;
}

/* Seconds on the monotonic clock (throttle windows). */
static double app_clock(void)
{
    return (double)uv_hrtime() / 1e9;
}

/* The web UI's sign-in form: a token check that pages.c makes from the
 * body, so admission cannot see its outcome (see app_http_done). */
static int is_signin(const struct http_request *req)
{
    return req->method == HTTP_POST && strcmp(req->path, "/login") == 0;
}

static void app_http_done(void *a, struct http_request *req)
{
    struct app *app = a;
    router_record(&app->router, req);
    if (req->status == 401 && is_signin(req))
        auth_throttle_fail(app->throttle, req->client, app_clock());
}

/* Fill req with the API's JSON error and return its status, counted. */
static int admit_refuse(struct app *app, struct http_request *req, int status, const char *code,
                        int retry_after, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int admit_refuse(struct app *app, struct http_request *req, int status, const char *code,
                        int retry_after, const char *fmt, ...)
{
    struct api_error e = {.status = status, .code = code, .retry_after = retry_after};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof(e.message), fmt, ap);
    va_end(ap);
    api_error_send(req, &e);
    if (req->status == 0) /* out of memory: the status still goes out */
        http_response_status(req, status);
    app->admit_refused[status == 401 ? 0 : status == 403 ? 1 : 2]++;
    return status;
}

/* http_callbacks.admit: who is asking and how much body they may send,
 * from the head alone, before any body byte is buffered.
 *
 * Measured before this existed: 75 anonymous 8 MiB result bodies held open
 * took 600 MiB, because the route's cap applied to anyone. Now a route that
 * needs credentials answers 401 (403 for a role that may not use it) from
 * the headers, and a request that may go on anonymously (a page, the
 * sign-in form, an unknown API path) gets APP_ANON_BODY_MAX at most. A
 * client over its failed-check limit gets 429 before any lookup. */
static int app_http_admit(void *a, struct http_request *req, size_t *body_max)
{
    struct app *app = a;
    size_t max;
    const struct route *rt = router_lookup(&app->router, req, &max);
    unsigned roles = admit_roles(rt);
    int creds = auth_request_has_credentials(req);
    struct auth_user u;
    int rc = -ENOENT;

    if (creds || is_signin(req)) {
        int wait = auth_throttle_wait(app->throttle, req->client, app_clock());
        if (wait)
            return admit_refuse(app, req, 429, "rate_limited", wait,
                                "Too many failed sign-ins (tokens or sessions) from your address; "
                                "try again in %d s.",
                                wait);
    }
    if (creds) {
        rc = app_auth(app, req, &u);
        if (rc == -EACCES)
            auth_throttle_fail(app->throttle, req->client, app_clock());
    }
    if (roles == ANYONE) {
        /* A page decides for itself who sees what; here only the body cap
         * depends on who asks. */
        if (rc != 0 && max > APP_ANON_BODY_MAX) {
            *body_max = APP_ANON_BODY_MAX;
            req->body_note = "without a token or session a request may carry at most 4 KiB.";
        } else {
            *body_max = max;
        }
        return 0;
    }
    if (rc == -ENOENT)
        return admit_refuse(
            app, req, 401, "unauthorized", 0,
            "This needs a token: send the header 'Authorization: Bearer <your token>'.");
    if (rc == -EACCES)
        return admit_refuse(app, req, 401, "unauthorized", 0,
                            "Your token or session is not valid (mistyped, revoked or expired); "
                            "ask the course staff for a new one.");
    if (rc) {
        int busy = rc == -EBUSY;
        if (busy)
            http_response_header(req, "Retry-After", "1");
        http_response_error(req, busy ? 503 : 500, "internal",
                            busy ? "The database is busy; try again in a moment."
                                 : "Internal error (%s); the staff can see it in the server log.",
                            strerror(-rc));
        return busy ? 503 : 500;
    }
    if (roles != SIGNED_IN && !(ROLE_BIT(u.role) & roles)) {
        if (u.role == AUTH_RUNNER)
            return admit_refuse(app, req, 403, "forbidden", 0,
                                "Runner tokens may only use /api/runner/* and /metrics.");
        if (roles == ROLE_BIT(AUTH_RUNNER))
            return admit_refuse(app, req, 403, "forbidden",
                                0, "Only runner tokens may use /api/runner/*.");
        return admit_refuse(app, req, 403, "forbidden", 0,
                            "Your role (%s) may not use %s %s.", auth_role_name(u.role),
                            req->method_name, req->path);
    }
    *body_max = max;
    return 0;
}

int app_metrics_write(struct app *app, struct http_buf *out)
{
    uint64_t global = 0, client = 0;
    if (app->http)
        http_server_refused(app->http, &global, &client);
    int rc = http_buf_printf(
        out,
        "# HELP cugrade_http_connections_refused_total Connections closed as soon as accepted: "
        "over the server's cap, or over one client address's.\n"
        "# TYPE cugrade_http_connections_refused_total counter\n"
        "cugrade_http_connections_refused_total{reason=\"server\"} %llu\n"
        "cugrade_http_connections_refused_total{reason=\"client\"} %llu\n"
        "# HELP cugrade_http_admission_refused_total Requests refused from their headers, "
        "before any body byte was read.\n"
        "# TYPE cugrade_http_admission_refused_total counter\n"
        "cugrade_http_admission_refused_total{code=\"401\"} %llu\n"
        "cugrade_http_admission_refused_total{code=\"403\"} %llu\n"
        "cugrade_http_admission_refused_total{code=\"429\"} %llu\n",
        (unsigned long long)global, (unsigned long long)client,
        (unsigned long long)app->admit_refused[0], (unsigned long long)app->admit_refused[1],
        (unsigned long long)app->admit_refused[2]);
    return rc ? -ENOMEM : 0;
}

static int app_http_handle(void *a, struct http_request *req)
{
    struct app *app = a;
    return router_dispatch(&app->router, app, req);
}

int app_listen(struct app *app, const char *host, int port)
{
    static const struct http_callbacks cb = {
        .admit = app_http_admit,
        .handle = app_http_handle,
        .done = app_http_done,
    };
    struct route *routes;
    size_t nroutes;
    int rc = course_routes_merge(api_routes, api_nroutes, &routes, &nroutes);
    if (rc)
        return rc;
    rc = router_init(&app->router, routes, nroutes, pages_handle, PAGES_BODY_MAX);
    if (rc)
        return rc;
    struct http_limits lim = {.header_timeout_s = app->cfg.header_timeout_s,
                              .idle_timeout_s = app->cfg.idle_timeout_s,
                              .write_timeout_s = 30,
                              .max_conns = app->cfg.max_conns,
                              .max_conns_per_client = app->cfg.max_conns_per_client};
    memcpy(lim.trusted_proxies, app->cfg.trusted_proxies, sizeof(lim.trusted_proxies));
    rc = http_server_start(app->loop, host, port, &lim, &cb, app, &app->http);
    if (rc == 0)
        course_start(app);
    return rc;
}

struct app_stop {
    struct app *app;
    void (*done)(void *arg);
    void *arg;
};

static void app_http_stopped(void *arg)
{
    struct app_stop *s = arg;
    s->app->http = NULL;
    void (*done)(void *) = s->done;
    void *darg = s->arg;
    free(s);
    if (done)
        done(darg);
}

void app_shutdown(struct app *app, void (*done)(void *arg), void *arg)
{
    struct app_stop *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->app = app;
    s->done = done;
    s->arg = arg;
    course_shutdown(app);
    if (app->http)
        http_server_shutdown(app->http, 10.0, app_http_stopped, s);
    /* Parked claims answer 204 now (with Connection: close). */
    if (app->queue)
        queue_drain(app->queue);
    if (!app->http)
        app_http_stopped(s);
}

void app_close(struct app *app)
{
    if (app->queue) {
        queue_close(app->queue);
        app->queue = NULL;
    }
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
    api_cache_invalidate(app, 0);
    free(app->subcache);
    app->subcache = NULL;
    router_free(&app->router);
    course_routes_free();
    auth_throttle_free(app->throttle);
    app->throttle = NULL;
    auth_cache_clear();
    db_close(app->db);
    app->db = NULL;
}
