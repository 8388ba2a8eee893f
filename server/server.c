/*
 * server.c - the server's life: open, admit, serve, stop. See server.h.
 */
#include "server/server.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server/api.h"
#include "server/page.h"
#include "server/reader.h"
#include "server/similarity.h"
#include "server/submission.h"
#include "server/views.h"
#include "server/writer.h"

static void app_queue_changed(void *arg, long long id)
{
    api_cache_invalidate(arg, id);
}

int app_open(struct app *app, uv_loop_t *loop, const struct app_config *cfg, char *err,
             size_t errlen)
{
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
    rc = app_labs_load(app, err, errlen);
    if (rc)
        goto fail;
    rc = queue_new(loop, app->db, app->cfg.sweep_s, &app->queue);
    if (rc)
        goto fail;
    queue_on_change(app->queue, app_queue_changed, app);
    /* Durable writes go to the writer thread, which also checkpoints the
     * WAL (its autocheckpoint): a checkpoint's writes and fsync never run on
     * the loop's connection. */
    rc = writer_start(loop, cfg->db_path, &app->writer);
    if (!rc)
        rc = db_exec(app->db, "PRAGMA wal_autocheckpoint=0");
    if (rc) {
        snprintf(err, errlen, "%s: cannot start the writer thread: %s", cfg->db_path,
                 strerror(rc < 0 ? -rc : rc));
        goto fail;
    }
    /* Credential lookups and exports read off the loop (server/reader.h). */
    rc = reader_new(loop, db_path(app->db), &app->reader);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    n = queue_recover(app->queue, app->cfg.lease_s);
    if (n > 0)
        app_log("%d job%s in progress when the server stopped: leases renewed, the attempt not "
                "charged", n, n == 1 ? " was" : "s were");
    return 0;
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

/* The web UI's sign-in form: a token check that signin_page.c makes from the
 * body, so admission cannot see its outcome (see app_http_done). */
static int is_signin(const struct http_request *req)
{
    return req->method == HTTP_POST && strcmp(req->path, "/login") == 0;
}

/* Characters of a credential that key the failed-check throttle: 80 bits
 * of a token after its "cgs_", never the whole secret. */
#define THROTTLE_KEY_CHARS 24

/* The throttle's key for the credential req presents (what would fail):
 * "t:" and the token's first characters, or "s:" and the session cookie's.
 * Keyed to the credential, not the address: a class behind one NAT address
 * shares it, and one student's bad tokens locked out every classmate's
 * valid one. 0, or -ENOENT when req carries none. */
static int throttle_key(const struct http_request *req, char *key, size_t len)
{
    char cookie[160];
    const char *h = http_request_header(req, "Authorization");
    if (h) {
        if (strncasecmp(h, "Bearer ", 7) == 0)
            for (h += 7; *h == ' ';)
                h++;
        snprintf(key, len, "t:%.*s", THROTTLE_KEY_CHARS, h);
        return 0;
    }
    int rc = auth_session_cookie(req, cookie, sizeof(cookie));
    if (rc == -ENOENT)
        return -ENOENT;
    if (rc == 0)
        snprintf(key, len, "s:%.*s", THROTTLE_KEY_CHARS, cookie);
    else /* two, or too long: never valid, counted per client */
        snprintf(key, len, "s*%s", req->client);
    return 0;
}

/* The sign-in form's key: the token typed in (the body's "token" field,
 * as sent), as throttle_key keys a token. */
static void signin_key(const struct http_request *req, char *key, size_t len)
{
    const char *b = req->body, *v = NULL;
    for (const char *p = b; p && *p; p = strchr(p, '&'), p = p ? p + 1 : NULL)
        if (strncmp(p, "token=", 6) == 0) {
            v = p + 6;
            break;
        }
    size_t n = v ? strcspn(v, "&") : 0;
    snprintf(key, len, "t:%.*s", (int)(n < THROTTLE_KEY_CHARS ? n : THROTTLE_KEY_CHARS),
             v ? v : "");
}

static void app_http_done(void *a, struct http_request *req)
{
    struct app *app = a;
    char key[HTTP_CLIENT_KEY_MAX];
    router_record(&app->router, req);
    if (req->status == 401 && is_signin(req) && req->body) {
        signin_key(req, key, sizeof(key));
        auth_throttle_fail(app->throttle, key, app_clock());
    }
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

/* A lookup on the reader: a token not in the cache, or any session. */
struct cred_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    struct auth_credential c;
    unsigned gen; /* auth_cache_generation() when it began */
    struct auth_user u;
};

/* Reader thread. */
static int cred_run(struct db *db, void *arg)
{
    struct cred_job *j = arg;
    return auth_credential_check(db, &j->c, &j->u);
}

/* Loop thread: the answer goes to the request, whose admission goes on. */
static void cred_done(void *arg, int rc)
{
    struct cred_job *j = arg;
    struct app *app = j->app;
    if (!rc)
        auth_credential_remember(&j->c, &j->u, j->gen);
    struct http_request *req = http_hold_end(&j->hold);
    if (req) {
        struct app_cred *ac = req->user;
        ac->rc = rc;
        ac->u = j->u;
        http_request_admit_resume(req);
    }
    free(j);
    app_work_end(app); /* last: it may finish a stop */
}

/* Resolve the credential of ac's request: from the cache, or on the loop's
 * connection when the reader cannot (a database in memory); else queue the
 * lookup and answer HTTP_DEFERRED. Otherwise 0 with ac->rc set. */
static int cred_resolve(struct app *app, struct http_request *req, struct app_cred *ac)
{
    struct auth_credential c;
    int rc = auth_credential_get(req, &c);
    if (!rc)
        rc = auth_credential_cached(&c, &ac->u);
    if (rc == -EAGAIN && reader_sync(app->reader)) {
        rc = auth_credential_check(app->db, &c, &ac->u);
        if (!rc)
            auth_credential_remember(&c, &ac->u, auth_cache_generation());
    } else if (rc == -EAGAIN) {
        struct cred_job *j = calloc(1, sizeof(*j));
        if (!j) {
            ac->rc = -ENOMEM;
            return 0;
        }
        j->app = app;
        j->c = c;
        j->gen = auth_cache_generation();
        rc = reader_submit(app->reader, cred_run, cred_done, j);
        if (rc) {
            free(j);
            ac->rc = rc;
            return 0;
        }
        app_work_begin(app);
        ac->rc = -EINPROGRESS;
        http_hold_start(&j->hold, req);
        return HTTP_DEFERRED;
    }
    ac->rc = rc;
    return 0;
}

/* Admission's credential check (req carries one): 429 (answered) when it
 * failed too many times (503 out of memory), HTTP_DEFERRED while the
 * reader looks it up, else app_auth's answer (-EACCES counted by the
 * throttle). Keyed to the credential, not the address (see throttle_key). */
static int admit_credential(struct app *app, struct http_request *req, struct auth_user *u)
{
    char key[HTTP_CLIENT_KEY_MAX];
    int keyed = throttle_key(req, key, sizeof(key)) == 0;
    struct app_cred *ac = req->user;
    if (!ac) { /* the first call: the second comes with the reader's answer */
        int wait = keyed ? auth_throttle_wait(app->throttle, key, app_clock()) : 0;
        if (wait)
            return admit_refuse(app, req, 429, "rate_limited", wait,
                                "This token or session failed too many checks (mistyped, revoked "
                                "or expired); try again in %d s, or ask the staff for a new one.",
                                wait);
        if (!(ac = calloc(1, sizeof(*ac))))
            return admit_refuse(app, req, 503, "internal", 1, "Out of memory; try again.");
        req->user = ac;
        if (cred_resolve(app, req, ac) == HTTP_DEFERRED)
            return HTTP_DEFERRED;
    }
    assert(ac->rc != -EINPROGRESS);
    if (ac->rc == -EACCES && keyed && !ac->counted) {
        ac->counted = 1;
        auth_throttle_fail(app->throttle, key, app_clock());
    }
    if (!ac->rc)
        *u = ac->u;
    return ac->rc;
}

/* http_callbacks.admit: who is asking and how much body they may send,
 * from the head alone, before any body byte is buffered.
 *
 * Measured before this existed: 75 anonymous 8 MiB result bodies held open
 * took 600 MiB, because the route's cap applied to anyone. Now a route that
 * needs credentials answers 401 (403 for a role that may not use it) from
 * the headers, and a request that may go on anonymously (a page, the
 * sign-in form, an unknown API path) gets APP_ANON_BODY_MAX at most. A
 * credential over its failed-check limit gets 429 before any lookup. */
static int app_http_admit(void *a, struct http_request *req, size_t *body_max)
{
    struct app *app = a;
    size_t max;
    const struct route *rt = router_lookup(&app->router, req, &max);
    unsigned roles = admit_roles(rt);
    struct auth_user u = {0};
    int rc = -ENOENT;

    if (auth_request_has_credentials(req)) {
        rc = admit_credential(app, req, &u);
        if (rc == HTTP_DEFERRED || rc >= 400) /* looked up later, or answered */
            return rc;
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

static int app_http_handle(void *a, struct http_request *req)
{
    struct app *app = a;
    if (is_signin(req)) { /* its token is in the body: checked only now */
        char key[HTTP_CLIENT_KEY_MAX];
        signin_key(req, key, sizeof(key));
        int wait = auth_throttle_wait(app->throttle, key, app_clock());
        if (wait) {
            admit_refuse(app, req, 429, "rate_limited", wait,
                         "This token failed too many sign-ins; try again in %d s.", wait);
            return HTTP_DONE;
        }
    }
    return router_dispatch(&app->router, app, req);
}

int app_listen(struct app *app, const char *host, int port)
{
    static const struct http_callbacks cb = {
        .admit = app_http_admit,
        .handle = app_http_handle,
        .done = app_http_done,
    };
    const struct route_table views[] = {
        {health_api_routes, health_api_nroutes},         {course_api_routes, course_api_nroutes},
        {submission_api_routes, submission_api_nroutes}, {scoreboard_api_routes, scoreboard_api_nroutes},
        {runner_api_routes, runner_api_nroutes},         {page_routes, page_nroutes},
        {signin_page_routes, signin_page_nroutes},       {lab_page_routes, lab_page_nroutes},
        {submission_page_routes, submission_page_nroutes},
        {scoreboard_page_routes, scoreboard_page_nroutes},
        {audit_page_routes, audit_page_nroutes},         {user_page_routes, user_page_nroutes},
        {rubric_page_routes, rubric_page_nroutes},       {deadline_page_routes, deadline_page_nroutes},
        {queue_page_routes, queue_page_nroutes},         {export_page_routes, export_page_nroutes},
        {lateday_api_routes, lateday_api_nroutes},       {regrade_api_routes, regrade_api_nroutes},
        {similarity_api_routes, similarity_api_nroutes}, {lateday_page_routes, lateday_page_nroutes},
        {regrade_page_routes, regrade_page_nroutes},     {similarity_page_routes, similarity_page_nroutes},
        {bundle_routes, bundle_nroutes},
    };
    int rc = router_init(&app->router, views, sizeof(views) / sizeof(views[0]), pages_handle,
                         PAGES_BODY_MAX, pages_run);
    if (rc)
        return rc;
    struct http_limits lim = {.header_timeout_s = app->cfg.header_timeout_s,
                              .idle_timeout_s = app->cfg.idle_timeout_s,
                              .write_timeout_s = 30,
                              .max_conns = app->cfg.max_conns,
                              .max_conns_per_client = app->cfg.max_conns_per_client,
                              .max_buffered = app->cfg.max_buffered};
    memcpy(lim.trusted_proxies, app->cfg.trusted_proxies, sizeof(lim.trusted_proxies));
    rc = http_server_start(app->loop, host, port, &lim, &cb, app, &app->http);
    if (rc == 0) /* the similarity checks due after a lab's last deadline */
        similarity_schedule(app);
    return rc;
}

struct app_stop {
    struct app *app;
    void (*done)(void *arg);
    void *arg;
};

void app_work_begin(struct app *app)
{
    app->works++;
}

static void app_http_stopped(void *arg);

void app_work_end(struct app *app)
{
    assert(app->works > 0);
    if (--app->works == 0 && app->stopping) {
        struct app_stop *s = app->stopping;
        app->stopping = NULL;
        app_http_stopped(s);
    }
}

static void app_http_stopped(void *arg)
{
    struct app_stop *s = arg;
    s->app->http = NULL;
    if (s->app->works > 0) { /* the last app_work_end goes on */
        s->app->stopping = s;
        return;
    }
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
    similarity_shutdown(app); /* a running check is killed, its run marked so */
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
    /* First: its last done callbacks still use the queue and the caches. */
    writer_stop(app->writer);
    app->writer = NULL;
    reader_free(app->reader); /* its jobs are done: app_shutdown waited */
    app->reader = NULL;
    if (app->queue) {
        queue_close(app->queue);
        app->queue = NULL;
    }
    app_labs_free(app);
    submission_cache_free(app);
    router_free(&app->router);
    auth_throttle_free(app->throttle);
    app->throttle = NULL;
    auth_cache_clear();
    db_close(app->db);
    app->db = NULL;
}
