/*
 * reader.c - reads off the event loop on libuv's pool, each job on a
 * connection of the reader's own. See reader.h.
 */
#include "server/reader.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/writer.h"

struct reader_job {
    uv_work_t work;
    struct reader *r;
    reader_run_fn run;
    reader_done_fn done;
    void *arg;
    int rc;
};

struct reader {
    uv_loop_t *loop;
    char *path;
    unsigned pending;
    int closing;
    pthread_mutex_t lock; /* guards idle[], nidle */
    struct db *idle[16];  /* connections not in use by a job */
    size_t nidle;
};

int reader_new(uv_loop_t *loop, const char *db_path, struct reader **out)
{
    struct reader *r = calloc(1, sizeof(*r));
    if (!r || !(r->path = strdup(db_path ? db_path : ""))) {
        free(r);
        return -ENOMEM;
    }
    r->loop = loop;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

int reader_sync(const struct reader *r)
{
    return !r || r->path[0] == '\0';
}

unsigned reader_pending(const struct reader *r)
{
    return r ? r->pending : 0;
}

/* Pool thread: an idle connection, or a new one (at most one per pool
 * thread is ever in use). 0 and *out, or -errno. */
static int reader_conn_take(struct reader *r, struct db **out)
{
    pthread_mutex_lock(&r->lock);
    struct db *db = r->nidle ? r->idle[--r->nidle] : NULL;
    pthread_mutex_unlock(&r->lock);
    if (!db) {
        int rc = db_open(r->path, 0, &db);
        if (rc)
            return rc;
    }
    db_thread_adopt(db);
    *out = db;
    return 0;
}

/* Pool thread: give db back (closed when the idle list is full). */
static void reader_conn_give(struct reader *r, struct db *db)
{
    pthread_mutex_lock(&r->lock);
    if (r->nidle < sizeof(r->idle) / sizeof(r->idle[0])) {
        r->idle[r->nidle++] = db;
        db = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    db_close(db);
}

static void reader_work(uv_work_t *w)
{
    struct reader_job *j = w->data;
    struct db *db;
    writer_thread_background();
    j->rc = reader_conn_take(j->r, &db);
    if (j->rc)
        return;
    j->rc = j->run(db, j->arg);
    reader_conn_give(j->r, db);
}

static void reader_after(uv_work_t *w, int status)
{
    struct reader_job *j = w->data;
    struct reader *r = j->r;
    assert(r->pending > 0);
    r->pending--;
    reader_done_fn done = j->done;
    void *arg = j->arg;
    int rc = status ? status : j->rc;
    free(j);
    done(arg, rc);
}

int reader_submit(struct reader *r, reader_run_fn run, reader_done_fn done, void *arg)
{
    assert(run && done);
    if (reader_sync(r))
        return -ENOTSUP;
    if (r->closing)
        return -ESHUTDOWN;
    struct reader_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->r = r;
    j->run = run;
    j->done = done;
    j->arg = arg;
    j->work.data = j;
    int rc = uv_queue_work(r->loop, &j->work, reader_work, reader_after);
    if (rc) {
        free(j);
        return rc;
    }
    r->pending++;
    return 0;
}

void reader_free(struct reader *r)
{
    if (!r)
        return;
    assert(r->pending == 0);
    r->closing = 1;
    for (size_t i = 0; i < r->nidle; i++) {
        db_thread_adopt(r->idle[i]);
        db_close(r->idle[i]);
    }
    pthread_mutex_destroy(&r->lock);
    free(r->path);
    free(r);
}
