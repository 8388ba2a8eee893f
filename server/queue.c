/*
 * queue.c - the submissions table as a durable queue. See queue.h.
 */
#include "server/queue.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"

struct queue_waiter {
    struct queue *q;
    struct http_request *req;
    uv_timer_t timer;
    queue_wait_cb cb;
    void *data;
    char runner[72];
    double wait_s;
    struct queue_waiter *prev, *next;
    int done;    /* answered or gone: out of the list, its timer closing */
    int busy;    /* the callback's claim is under way (QUEUE_WAIT_BUSY) */
    int again;   /* woken while busy: claim again if that one found nothing */
    int expired; /* its time ran out while busy: 204 if that one found nothing */
    int gone;    /* the client went away while busy */
};

/* The fair order of the queued jobs, computed by fair_order() and kept
 * until the queue changes (gen). Positions are read from it, so a status
 * poll costs a scan of an array, not a query over the whole queue. */
struct queue_order {
    long long *ids;
    size_t n, cap;
    unsigned gen;
    int valid;
};

/* The measured service rate: jobs that reached a verdict per second over
 * the last RATE_WINDOW_S seconds, refreshed at most once a second. */
#define RATE_WINDOW_S 600.0

struct queue {
    uv_loop_t *loop;
    struct db *db;
    unsigned gen; /* bumped by every change of a job's status */
    struct queue_order order;
    double rate, rate_at;
    uv_timer_t sweeper;
    uv_timer_t waker;
    /* The sweep runs on libuv's pool with a connection of its own: on the
     * loop it waited for the write lock (another process's transaction)
     * up to the busy timeout, and every client with it. */
    struct db *sweep_db; /* NULL: sweep on the loop (an in-memory database) */
    uv_work_t sweep_work;
    int sweeping, swept;
    double sweep_now;
    /* ...and, every integrity_s, PRAGMA quick_check there: a page damaged
     * where no request reads it left /healthz at 200. */
    double integrity_s, integrity_at;
    struct queue_waiter *head, *tail;
    size_t nwaiting;
    int closing, handles;
    void (*on_change)(void *arg, long long id);
    void *on_change_arg;
};

#define QUEUE_INTEGRITY_S 600.0 /* seconds between background quick_checks */

/* A job entered or left the queue, or started or stopped being graded:
 * the fair order must be read again. */
static void reordered(struct queue *q)
{
    q->gen++;
}

static void changed(struct queue *q, long long id)
{
    if (q->on_change)
        q->on_change(q->on_change_arg, id);
}

static int sweep_on(struct db *db, double now);
static void queue_free_if_done(struct queue *q);

static void sweep_report(struct queue *q, int n)
{
    if (n > 0) {
        reordered(q);
        changed(q, 0);
        fprintf(stderr, "cugrade-server: %d expired lease%s requeued (or ended in system_error)\n",
                n, n == 1 ? "" : "s");
        queue_notify(q);
    }
}

/* Pool thread: the sweep on q->sweep_db (one sweep at a time). */
static void sweep_work_cb(uv_work_t *w)
{
    struct queue *q = w->data;
    db_thread_adopt(q->sweep_db);
    q->swept = sweep_on(q->sweep_db, q->sweep_now);
    if (q->sweep_now - q->integrity_at >= q->integrity_s) {
        q->integrity_at = q->sweep_now;
        db_integrity_check(q->sweep_db);
    }
}

static void sweep_after_cb(uv_work_t *w, int status)
{
    struct queue *q = w->data;
    q->sweeping = 0;
    if (status == 0 && !q->closing)
        sweep_report(q, q->swept);
    q->handles--;
    queue_free_if_done(q);
}

static void sweep_cb(uv_timer_t *t)
{
    struct queue *q = t->data;
    if (!q->sweep_db) {
        sweep_report(q, sweep_on(q->db, db_now()));
        return;
    }
    if (q->sweeping || q->closing)
        return;
    q->sweep_now = db_now();
    q->sweep_work.data = q;
    if (uv_queue_work(q->loop, &q->sweep_work, sweep_work_cb, sweep_after_cb) == 0) {
        q->sweeping = 1;
        q->handles++;
    }
}

int queue_new(uv_loop_t *loop, struct db *db, double sweep_interval_s, struct queue **out)
{
    struct queue *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->loop = loop;
    q->db = db;
    uv_timer_init(loop, &q->sweeper);
    uv_timer_init(loop, &q->waker);
    q->sweeper.data = q;
    q->waker.data = q;
    q->handles = 2;
    const char *path = db_path(db);
    if (sweep_interval_s > 0 && path[0] && db_open(path, 0, &q->sweep_db) != 0)
        q->sweep_db = NULL; /* swept on the loop, as before */
    const char *every = getenv("CUGRADE_INTEGRITY_S"); /* tests: seconds */
    q->integrity_s = every && atof(every) > 0 ? atof(every) : QUEUE_INTEGRITY_S;
    q->integrity_at = db_now(); /* the start ran quick_check already */
    if (sweep_interval_s > 0) {
        uint64_t ms = (uint64_t)(sweep_interval_s * 1000);
        uv_timer_start(&q->sweeper, sweep_cb, ms, ms);
    }
    *out = q;
    return 0;
}

void queue_on_change(struct queue *q, void (*fn)(void *arg, long long id), void *arg)
{
    q->on_change = fn;
    q->on_change_arg = arg;
}

static void queue_free_if_done(struct queue *q)
{
    if (q->handles == 0) {
        if (q->sweep_db) {
            db_thread_adopt(q->sweep_db);
            db_close(q->sweep_db);
        }
        free(q->order.ids);
        free(q);
    }
}

static void queue_handle_closed(uv_handle_t *h)
{
    struct queue *q = h->data;
    q->handles--;
    queue_free_if_done(q);
}

static void waiter_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Take w out of the list of parked claims. */
static void waiter_detach(struct queue_waiter *w)
{
    struct queue *q = w->q;
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->prev = w->next = NULL;
    q->nwaiting--;
}

static void waiter_unlink(struct queue_waiter *w)
{
    waiter_detach(w);
    w->done = 1;
    uv_close((uv_handle_t *)&w->timer, waiter_closed);
}

/* Answer a waiter with wake (0: timeout/shutdown) and forget it if it
 * answered. Returns 1 when the waiter is gone. */
static int waiter_fire(struct queue_waiter *w, int wake)
{
    assert(!w->busy && !w->done);
    struct http_request *req = w->req;
    int answered = w->cb(w->q, w, req, wake, w->runner, w->data);
    if (answered == QUEUE_WAIT_BUSY) {
        assert(wake);
        w->busy = 1;
        w->again = 0;
        return 0;
    }
    if (!wake || answered) {
        req->on_abort = NULL;
        waiter_unlink(w);
        http_request_finish(req);
        return 1;
    }
    return 0;
}

void queue_drain(struct queue *q)
{
    q->closing = 1;
    /* A waiter whose claim is under way answers when it ends. */
    for (struct queue_waiter *w = q->head, *next; w; w = next) {
        next = w->next;
        if (!w->busy)
            waiter_fire(w, 0);
    }
}

void queue_close(struct queue *q)
{
    queue_drain(q);
    uv_close((uv_handle_t *)&q->sweeper, queue_handle_closed);
    uv_close((uv_handle_t *)&q->waker, queue_handle_closed);
}

static void wake_cb(uv_timer_t *t)
{
    struct queue *q = t->data;
    /* First come, first served: each waiter's claim starts in arrival
     * order (an asynchronous claim's job is queued behind the earlier
     * ones'); a synchronous one that found nothing stops the round. */
    for (struct queue_waiter *w = q->head, *next; w && !q->closing; w = next) {
        next = w->next;
        if (w->busy)
            w->again = 1;
        else if (!waiter_fire(w, 1) && !w->busy)
            break;
    }
}

void queue_notify(struct queue *q)
{
    /* From the loop, not from inside the handler that enqueued: the 202
     * goes out first, and no handler runs nested in another. */
    if (q->head && !q->closing)
        uv_timer_start(&q->waker, wake_cb, 0, 0);
}

static void waiter_timeout(uv_timer_t *t)
{
    struct queue_waiter *w = t->data;
    if (w->done)
        return;
    if (w->busy)
        w->expired = 1; /* a claim under way may still find a job */
    else
        waiter_fire(w, 0);
}

/* The first try of a waiter parked with now = 1, on the loop's next turn. */
static void waiter_first(uv_timer_t *t)
{
    struct queue_waiter *w = t->data;
    uint64_t ms = (uint64_t)(w->wait_s * 1000);
    uv_timer_start(&w->timer, waiter_timeout, ms, 0);
    if (!w->busy) /* else a wake came first */
        waiter_fire(w, 1);
}

static void waiter_abort(struct http_request *req, void *data)
{
    struct queue_waiter *w = data;
    (void)req;
    if (w->done)
        return;
    if (!w->busy) {
        waiter_unlink(w);
        return;
    }
    /* Out of the list now; freed when its claim settles. */
    w->gone = 1;
    w->req = NULL;
    waiter_detach(w);
}

struct http_request *queue_wait_req(struct queue_waiter *w)
{
    assert(w->busy);
    return w->gone ? NULL : w->req;
}

void queue_wait_settle(struct queue_waiter *w, int answered)
{
    assert(w->busy && !w->done);
    w->busy = 0;
    if (w->gone) {
        w->done = 1;
        uv_close((uv_handle_t *)&w->timer, waiter_closed);
        return;
    }
    struct http_request *req = w->req;
    if (answered) {
        req->on_abort = NULL;
        waiter_unlink(w);
        http_request_finish(req);
    } else if (w->expired || w->q->closing) {
        waiter_fire(w, 0);
    } else if (w->again) {
        waiter_fire(w, 1); /* a job may have come while it looked */
    }
}

int queue_wait(struct queue *q, struct http_request *req, double wait_s, const char *runner,
               int now, queue_wait_cb cb, void *data)
{
    if (q->closing)
        return -ESHUTDOWN;
    struct queue_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->q = q;
    w->req = req;
    w->cb = cb;
    w->data = data;
    w->wait_s = wait_s > 0 ? wait_s : 0;
    snprintf(w->runner, sizeof(w->runner), "%s", runner ? runner : "");
    uv_timer_init(q->loop, &w->timer);
    w->timer.data = w;
    if (now)
        uv_timer_start(&w->timer, waiter_first, 0, 0);
    else
        uv_timer_start(&w->timer, waiter_timeout, (uint64_t)(w->wait_s * 1000), 0);
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->nwaiting++;
    req->on_abort = waiter_abort;
    req->abort_data = w;
    return 0;
}

size_t queue_waiting(struct queue *q)
{
    return q->nwaiting;
}

int queue_view_new(const struct queue *q, struct queue **out)
{
    assert(q && out);
    struct queue *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->gen = q->gen;
    v->rate = q->rate;
    v->rate_at = q->rate_at;
    v->nwaiting = q->nwaiting;
    v->closing = 1; /* no waiter, no timer: nothing is ever woken */
    if (q->order.valid && q->order.gen == q->gen && q->order.n > 0) {
        v->order.ids = malloc(q->order.n * sizeof(*v->order.ids));
        if (v->order.ids) { /* else read again on the view's connection */
            memcpy(v->order.ids, q->order.ids, q->order.n * sizeof(*v->order.ids));
            v->order.n = v->order.cap = q->order.n;
            v->order.gen = v->gen;
            v->order.valid = 1;
        }
    }
    *out = v;
    return 0;
}

void queue_view_db(struct queue *view, struct db *db)
{
    assert(view && view->closing && !view->head);
    view->db = db;
}

void queue_view_free(struct queue *view)
{
    if (!view)
        return;
    assert(view->closing && !view->head);
    free(view->order.ids);
    free(view);
}

/* Mark the user's older still-queued submissions to the same lab as
 * superseded by id (inside the caller's transaction). Returns the number
 * of rows changed (>= 0) or -errno. */
static int supersede_older(struct db *db, long long user_id, const char *lab, long long id,
                           double now)
{
    char detail[64];
    snprintf(detail, sizeof(detail), "replaced by submission %lld", id);
    sqlite3_stmt *st = db_stmt(
        db, "UPDATE submissions SET status = 'superseded', phase = '', detail = ?1,"
               " updated_at = ?2 WHERE user_id = ?3 AND lab = ?4 AND status = 'queued' AND id < ?5");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, detail, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 2, now);
    sqlite3_bind_int64(st, 3, user_id);
    sqlite3_bind_text(st, 4, lab, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, id);
    int rc = db_step_done(st);
    return rc ? rc : db_changes(db);
}

int queue_enqueue_in(struct db *db, const struct queue_submit *in, long long *id_out,
                     int *superseded)
{
    char hash[65];
    auth_sha256_hex(in->source, in->size, hash);
    double now = db_now();
    int rc;
    sqlite3_stmt *st = db_stmt(
        db,
        "INSERT INTO submissions(user_id, lab, filename, source, sha256, size, late, late_days,"
        " status, phase, detail, attempts, max_attempts, created_at, updated_at)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', '', '', 0, ?9, ?10, ?10)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, in->user_id);
    sqlite3_bind_text(st, 2, in->lab, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, in->filename, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, in->source, (int)in->size, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, hash, 64, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (long long)in->size);
    sqlite3_bind_int(st, 7, in->late ? 1 : 0);
    sqlite3_bind_double(st, 8, in->late_days);
    sqlite3_bind_int(st, 9, in->max_attempts > 0 ? in->max_attempts : 3);
    sqlite3_bind_double(st, 10, now);
    rc = db_step_done(st);
    if (rc)
        return rc;
    *id_out = db_last_id(db);
    /* Same transaction: a claim sees either the old job queued and no new
     * one, or the new one and the old one superseded, never both. */
    rc = supersede_older(db, in->user_id, in->lab, *id_out, now);
    if (rc < 0)
        return rc;
    if (superseded)
        *superseded = rc;
    return 0;
}

int queue_enqueue(struct queue *q, const struct queue_submit *in, long long *id_out,
                  int *superseded)
{
    int rc = db_begin(q->db, 1);
    if (rc)
        return rc;
    rc = queue_enqueue_in(q->db, in, id_out, superseded);
    if (rc) {
        db_rollback(q->db);
        return rc;
    }
    /* COMMIT with synchronous=FULL: on disk before the caller answers 202. */
    rc = db_commit(q->db);
    if (rc)
        return rc;
    queue_written(q, 0, 1);
    return 0;
}

void queue_written(struct queue *q, long long id, int wake)
{
    reordered(q);
    if (id)
        changed(q, id);
    if (wake)
        queue_notify(q);
}

/* The fair order. A queued job's turn is how many jobs of its student are
 * ahead of it: being graded now, or queued earlier. Claims take the lowest
 * turn, then the oldest: students are served in turn (round-robin), each
 * student's jobs in submission order, and a student with forty jobs queued
 * delays a student with one by at most one job per runner. */
#define FAIR_ORDER_SQL                                                                              \
    "WITH busy AS (SELECT user_id, COUNT(*) AS n FROM submissions WHERE status IN " QUEUE_IN_PROGRESS   \
    "   GROUP BY user_id)"                                                                          \
    " SELECT id FROM (SELECT s.id AS id, COALESCE(b.n, 0) + ROW_NUMBER() OVER"                     \
    "   (PARTITION BY s.user_id ORDER BY s.id) AS turn"                                             \
    "   FROM submissions s LEFT JOIN busy b ON b.user_id = s.user_id WHERE s.status = 'queued')"    \
    " ORDER BY turn, id"

/* Refill q->order from the database when the queue changed since it was
 * computed. Returns 0 or -errno (the order is then invalid). */
static int fair_order(struct queue *q)
{
    struct queue_order *o = &q->order;
    if (o->valid && o->gen == q->gen)
        return 0;
    o->valid = 0;
    o->n = 0;
    sqlite3_stmt *st = db_stmt(q->db, FAIR_ORDER_SQL);
    if (!st)
        return -EIO;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (o->n == o->cap) {
            size_t cap = o->cap ? 2 * o->cap : 256;
            long long *ids = realloc(o->ids, cap * sizeof(*ids));
            if (!ids) {
                sqlite3_reset(st);
                return -ENOMEM;
            }
            o->ids = ids;
            o->cap = cap;
        }
        o->ids[o->n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_errno(rc);
    o->gen = q->gen;
    o->valid = 1;
    return 0;
}

int queue_runner_restarted_in(struct db *db, const char *runner, long long runner_user,
                              int *expired)
{
    *expired = 0;
    sqlite3_stmt *st = db_stmt(db, "UPDATE submissions SET lease_expires = 0 WHERE status IN "
                                   QUEUE_IN_PROGRESS " AND lease_runner = ?1 AND lease_user = ?2");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, runner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, runner_user);
    int rc = db_step_done(st);
    if (!rc)
        *expired = db_changes(db);
    return rc;
}

double queue_first_lease(double lease_s)
{
    double first = lease_s / 4;
    if (first < QUEUE_FIRST_LEASE_MIN_S)
        first = QUEUE_FIRST_LEASE_MIN_S;
    return first < lease_s ? first : lease_s;
}

int queue_claim_in(struct db *db, const char *runner, long long runner_user, double lease_s,
                   int (*rubric_version)(void *ctx, const char *lab), void *ctx,
                   struct queue_job *job)
{
    double now = db_now();
    memset(job, 0, sizeof(*job));
    /* The first job in the fair order, read inside the write transaction
     * (the cached order may be stale when another process claimed). */
    sqlite3_stmt *st =
        db_stmt(db, "SELECT id, user_id, lab, filename, sha256, attempts, source FROM submissions"
                    " WHERE id = (" FAIR_ORDER_SQL " LIMIT 1)");
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
    }
    job->id = sqlite3_column_int64(st, 0);
    job->user_id = sqlite3_column_int64(st, 1);
    snprintf(job->lab, sizeof(job->lab), "%s", db_col_text(st, 2));
    snprintf(job->filename, sizeof(job->filename), "%s", db_col_text(st, 3));
    snprintf(job->sha256, sizeof(job->sha256), "%s", db_col_text(st, 4));
    job->attempt = sqlite3_column_int(st, 5) + 1;
    const void *src = sqlite3_column_blob(st, 6);
    job->size = (size_t)sqlite3_column_bytes(st, 6);
    job->source = malloc(job->size + 1);
    if (job->source && job->size)
        memcpy(job->source, src, job->size);
    sqlite3_reset(st);
    if (!job->source)
        return -ENOMEM;
    job->source[job->size] = '\0';
    int rv = rubric_version ? rubric_version(ctx, job->lab) : 0;
    st = db_stmt(db,
                 "UPDATE submissions SET status = 'compiling', phase = 'compiling', detail = '',"
                 " attempts = attempts + 1, lease_runner = ?1, lease_user = ?2, lease_expires = ?3,"
                 " rubric_version = ?4, updated_at = ?5 WHERE id = ?6 AND status = 'queued'");
    rc = st ? 0 : -EIO;
    if (st) {
        sqlite3_bind_text(st, 1, runner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, runner_user);
        sqlite3_bind_double(st, 3, now + queue_first_lease(lease_s));
        if (rv > 0)
            sqlite3_bind_int(st, 4, rv);
        sqlite3_bind_double(st, 5, now);
        sqlite3_bind_int64(st, 6, job->id);
        rc = db_step_done(st);
    }
    if (rc) {
        free(job->source);
        job->source = NULL;
    }
    return rc;
}

int queue_claim(struct queue *q, const char *runner, long long runner_user, double lease_s,
                int (*rubric_version)(void *ctx, const char *lab), void *ctx, struct queue_job *job)
{
    memset(job, 0, sizeof(*job));
    /* BEGIN IMMEDIATE takes the write lock first: two claimers (threads,
     * processes, a second server on the same file) cannot pick the same row. */
    int rc = db_begin(q->db, 1);
    if (rc)
        return rc;
    rc = queue_claim_in(q->db, runner, runner_user, lease_s, rubric_version, ctx, job);
    if (rc) {
        db_rollback(q->db);
        return rc;
    }
    rc = db_commit(q->db);
    if (rc) {
        free(job->source);
        job->source = NULL;
        return rc;
    }
    queue_written(q, job->id, 0);
    return 0;
}

int queue_progress(struct queue *q, long long id, long long runner_user, const char *runner,
                   int attempt, const char *phase, const char *detail, double lease_s)
{
    int rc = queue_progress_in(q->db, id, runner_user, runner, attempt, phase, detail, lease_s);
    if (!rc) {
        reordered(q); /* a status changed */
        changed(q, id);
    }
    return rc;
}

int queue_result(struct queue *q, long long id, long long runner_user, const char *runner,
                 int attempt, const struct queue_result *res, const char **final_status)
{
    int rc = db_begin(q->db, 1);
    if (rc)
        return rc;
    rc = queue_result_in(q->db, id, runner_user, runner, attempt, res, final_status);
    if (rc) {
        db_rollback(q->db);
        return rc;
    }
    rc = db_commit(q->db);
    if (rc)
        return rc;
    queue_written(q, id, strcmp(*final_status, "queued") == 0);
    return 0;
}

int queue_regrade_in(struct db *db, long long id)
{
    sqlite3_stmt *st = db_stmt(
        db, "UPDATE submissions SET status = 'queued', phase = '', detail = 'regrade requested',"
            " attempts = 0, profile_key = NULL, lease_runner = NULL, lease_user = NULL,"
            " lease_expires = NULL, updated_at = ?1 WHERE id = ?2");
    if (!st)
        return -EIO;
    sqlite3_bind_double(st, 1, db_now());
    sqlite3_bind_int64(st, 2, id);
    int rc = db_step_done(st);
    return rc ? rc : db_changes(db) == 0 ? -ENOENT : 0;
}

int queue_regrade(struct queue *q, long long id)
{
    int rc = queue_regrade_in(q->db, id);
    if (!rc)
        queue_written(q, id, 1);
    return rc;
}

int queue_sweep(struct queue *q, double now)
{
    int n = sweep_on(q->db, now);
    if (n > 0) {
        reordered(q);
        changed(q, 0);
    }
    return n;
}

/* Requeue (or end) the expired leases on db: how many, or -errno. */
static int sweep_on(struct db *db, double now)
{
    int n = 0;
    /* Look before taking the write lock: most sweeps find nothing, and the
     * CLI (another process) should not wait on an empty sweep. */
    sqlite3_stmt *probe = db_stmt(db, "SELECT 1 FROM submissions WHERE status IN " QUEUE_IN_PROGRESS
                                         " AND lease_expires < ?1 LIMIT 1");
    if (!probe)
        return -EIO;
    sqlite3_bind_double(probe, 1, now);
    int found = sqlite3_step(probe) == SQLITE_ROW;
    sqlite3_reset(probe);
    if (!found)
        return 0;
    int rc = db_begin(db, 1);
    if (rc)
        return rc;
    sqlite3_stmt *st = db_stmt(
        db,
        "UPDATE submissions SET status = CASE WHEN attempts >= max_attempts THEN 'system_error'"
        " ELSE 'queued' END,"
        " detail = CASE WHEN attempts >= max_attempts THEN 'the runner stopped answering '"
        "   || attempts || ' times; an admin has been notified' ELSE 'lease expired; requeued' END,"
        " phase = '', lease_runner = NULL, lease_user = NULL, lease_expires = NULL, updated_at = ?1"
        " WHERE status IN " QUEUE_IN_PROGRESS " AND lease_expires < ?1");
    if (!st) {
        rc = -EIO;
        goto fail;
    }
    sqlite3_bind_double(st, 1, now);
    rc = db_step_done(st);
    if (rc)
        goto fail;
    n = db_changes(db);
    rc = db_commit(db);
    if (rc)
        return rc;
    return n;
fail:
    db_rollback(db);
    return rc;
}

long long queue_position(struct queue *q, long long id)
{
    /* The cached order is only as fresh as this process knows: a job
     * queued by another process (the CLI) is found after a re-read. */
    for (int pass = 0; pass < 2; pass++) {
        if (fair_order(q) != 0)
            return 0;
        for (size_t i = 0; i < q->order.n; i++)
            if (q->order.ids[i] == id)
                return (long long)i + 1;
        q->order.valid = 0;
    }
    return 0;
}

double queue_rate(struct queue *q)
{
    double now = db_now();
    if (q->rate_at > 0 && now - q->rate_at < 1.0)
        return q->rate;
    q->rate_at = now;
    q->rate = 0;
    /* Verdicts in the window, over the time from the first of them to now
     * (a burst that began a minute ago is not diluted over ten). */
    sqlite3_stmt *st = db_stmt(q->db, "SELECT COUNT(*), MIN(graded_at) FROM submissions"
                                      " WHERE graded_at > ?1 AND status <> 'superseded'");
    if (!st)
        return 0;
    sqlite3_bind_double(st, 1, now - RATE_WINDOW_S);
    if (sqlite3_step(st) == SQLITE_ROW) {
        long long n = sqlite3_column_int64(st, 0);
        double first = sqlite3_column_double(st, 1);
        /* Too few verdicts say nothing about the rate yet. */
        if (n >= 3 && now - first > 1.0)
            q->rate = (double)n / (now - first);
    }
    sqlite3_reset(st);
    return q->rate;
}

int queue_recover(struct queue *q, double lease_s)
{
    /* A lease that was running when this server stopped was cut by us, not
     * by the runner: the runner gets a full lease to come back (its
     * heartbeat and result posts retry), and if it does not, the attempt is
     * not the student's to lose (one more allowed). */
    sqlite3_stmt *st = db_stmt(
        q->db, "UPDATE submissions SET max_attempts = max_attempts + 1,"
               " lease_expires = MAX(COALESCE(lease_expires, 0), ?1) WHERE status IN " QUEUE_IN_PROGRESS);
    if (!st)
        return -EIO;
    sqlite3_bind_double(st, 1, db_now() + lease_s);
    int rc = db_step_done(st);
    if (rc)
        return rc;
    int n = db_changes(q->db);
    if (n > 0) {
        reordered(q);
        changed(q, 0);
    }
    return n;
}

unsigned queue_generation(struct queue *q)
{
    return q->gen;
}

long long queue_depth(struct queue *q)
{
    sqlite3_stmt *st = db_stmt(q->db, "SELECT COUNT(*) FROM submissions WHERE status = 'queued'");
    if (!st)
        return 0;
    long long n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return n;
}
