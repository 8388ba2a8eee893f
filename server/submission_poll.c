/*
 * submission_poll.c - GET /api/submissions/{id}, a submission's status poll
 * (the client and the notebook ask every second or so while it is graded),
 * and the rendered-submission cache in front of it. See submission.h.
 *
 * A finished submission is read far more often than it changes: its
 * rendering is cached, one slot per (id mod N, view), and answered on the
 * loop. Everything else (a submission still in the queue, the first read of
 * a finished one) is read on the reader (server/reader.h) in a view of the
 * app (server/appview.h): on the loop's connection a stalled disk stalled
 * /healthz and every client with it (tests/server/read_stall.t). A finished
 * submission read there is cached on the loop, unless its slot was
 * invalidated while it was read (the row may have changed since).
 */
#include "server/submission.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/appview.h"
#include "server/reader.h"

#define SUBCACHE_N 2048

struct subcache_entry {
    long long id; /* 0: empty */
    long long owner;
    double valid_until; /* 0: until invalidated */
    struct http_buf body;
};

struct app_subcache {
    struct subcache_entry e[SUBCACHE_N][2]; /* [.][0] staff view, [.][1] student view */
    unsigned gen[SUBCACHE_N];               /* bumped by each invalidation of an id of the slot */
    unsigned gen_all;                       /* bumped by each invalidation of every id */
};

void api_cache_invalidate(struct app *app, long long id)
{
    assert(id >= 0);
    struct app_subcache *c = app->subcache;
    if (!c)
        return;
    if (id == 0) {
        c->gen_all++;
        for (size_t i = 0; i < SUBCACHE_N; i++)
            for (int v = 0; v < 2; v++) {
                http_buf_free(&c->e[i][v].body);
                c->e[i][v].id = 0;
            }
        return;
    }
    size_t slot = (size_t)((unsigned long long)id % SUBCACHE_N);
    c->gen[slot]++;
    for (int v = 0; v < 2; v++) {
        struct subcache_entry *en = &c->e[slot][v];
        if (en->id == id) {
            en->id = 0;
            en->body.len = 0;
        }
    }
}

void submission_cache_free(struct app *app)
{
    api_cache_invalidate(app, 0);
    free(app->subcache);
    app->subcache = NULL;
}

/* A read of one submission for one viewer, on the loop or the reader. */
struct poll_read {
    long long id;
    struct auth_user u;
    int rc; /* 0: body is the answer; -errno: e is */
    struct api_error e;
    struct http_buf body;
    struct submission_meta m;
    double valid_until; /* for the cache, when m.final */
};

/* Read r's submission on app's connection (the loop's, or a view's). */
static void poll_read(struct app *app, struct poll_read *r)
{
    json_t *j;
    struct http_request tmp = {0};
    r->rc = submission_read(app, &r->u, r->id, &j, &r->m, &r->e);
    if (r->rc)
        return;
    if (http_response_json(&tmp, 200, j) != 0)
        r->rc = api_internal(&r->e, -ENOMEM);
    json_decref(j);
    r->body = tmp.res_body;
    r->valid_until = 0;
    if (!r->rc && r->m.final && r->u.role == AUTH_STUDENT) {
        /* The student's view changes when the due date passes
         * (after_due_date tests appear): cache only until then. */
        struct app_lab *l = app_lab_find(app, r->m.lab);
        double due = 0, hard = 0;
        if (l)
            api_deadlines(app, l, r->m.owner, &due, &hard);
        if (due > db_now())
            r->valid_until = due;
    }
}

/* Loop thread: r's answer into the cache (a finished submission's). */
static void cache_put(struct app *app, const struct poll_read *r)
{
    if (!app->subcache || r->rc || !r->m.final)
        return;
    struct subcache_entry *en =
        &app->subcache->e[(unsigned long long)r->id % SUBCACHE_N][r->u.role == AUTH_STUDENT];
    en->id = 0;
    en->body.len = 0;
    if (http_buf_append(&en->body, r->body.data, r->body.len) == 0) {
        en->id = r->id;
        en->owner = r->m.owner;
        en->valid_until = r->valid_until;
    }
}

/* Loop thread: r's answer to req (its body taken). */
static void poll_answer(struct http_request *req, struct poll_read *r)
{
    if (r->rc) {
        api_send_err(req, &r->e);
        return;
    }
    http_buf_free(&req->res_body);
    req->res_body = r->body;
    memset(&r->body, 0, sizeof(r->body));
    req->body_ext = NULL;
    req->status = 200;
    req->content_type = "application/json";
}

/* A cache miss read on the reader. */
struct poll_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    struct app view;
    unsigned gen, gen_all; /* the slot's and the cache's when it began */
    struct poll_read r;
};

/* Reader thread. */
static int poll_run(struct db *db, void *arg)
{
    struct poll_job *j = arg;
    app_view_db(&j->view, db);
    poll_read(&j->view, &j->r);
    return 0;
}

/* Loop thread: cached when nothing invalidated the slot meanwhile, then
 * the answer (a reader that could not read: 503 or 500). */
static void poll_after(void *arg, int rc)
{
    struct poll_job *j = arg;
    struct app *app = j->app;
    struct app_subcache *c = app->subcache;
    if (rc) {
        http_buf_free(&j->r.body);
        j->r.rc = api_internal(&j->r.e, rc);
    } else if (c && c->gen_all == j->gen_all &&
               c->gen[(unsigned long long)j->r.id % SUBCACHE_N] == j->gen) {
        cache_put(app, &j->r);
    }
    struct http_request *req = http_hold_end(&j->hold);
    if (req) {
        poll_answer(req, &j->r);
        http_request_finish(req);
    }
    app_view_end(app, &j->view);
    http_buf_free(&j->r.body);
    free(j);
    app_work_end(app); /* last: it may finish a stop */
}

/* Start r's read on the reader. HTTP_DEFERRED, or -errno. */
static int poll_start(struct app *app, struct http_request *req, const struct poll_read *r)
{
    struct poll_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    int rc = app_view_begin(app, &j->view);
    if (rc) {
        free(j);
        return rc;
    }
    j->app = app;
    j->r = *r;
    j->gen = app->subcache->gen[(unsigned long long)r->id % SUBCACHE_N];
    j->gen_all = app->subcache->gen_all;
    if ((rc = reader_submit(app->reader, poll_run, poll_after, j)) != 0) {
        app_view_end(app, &j->view);
        free(j);
        return rc;
    }
    app_work_begin(app);
    http_hold_start(&j->hold, req);
    return HTTP_DEFERRED;
}

int submission_get_cached(struct app *app, struct http_request *req, const struct auth_user *u,
                          long long id, struct api_error *e)
{
    int view = u->role == AUTH_STUDENT;
    if (!app->subcache)
        app->subcache = calloc(1, sizeof(*app->subcache));
    struct subcache_entry *en =
        app->subcache ? &app->subcache->e[(unsigned long long)id % SUBCACHE_N][view] : NULL;
    if (en && en->id == id && en->body.len &&
        (en->valid_until == 0 || db_now() < en->valid_until)) {
        if (!submission_visible(u, en->owner))
            return api_fail(e, 403, "forbidden", "Submission %lld belongs to another student.", id);
        http_response_body_borrowed(req, 200, "application/json", en->body.data, en->body.len);
        return HTTP_DONE;
    }
    struct poll_read r = {.id = id, .u = *u};
    if (app->subcache && !reader_sync(app->reader)) {
        int rc = poll_start(app, req, &r);
        if (rc == HTTP_DEFERRED)
            return rc;
        return api_internal(e, rc);
    }
    poll_read(app, &r); /* a database in memory, or no memory for the cache */
    cache_put(app, &r);
    if (r.rc) {
        http_buf_free(&r.body);
        *e = r.e;
        return r.rc;
    }
    poll_answer(req, &r);
    return HTTP_DONE;
}
