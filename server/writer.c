/*
 * writer.c - one thread, one connection, group commit. See writer.h.
 *
 * Why one thread and not libuv's pool: SQLite lets one connection write at
 * a time anyway, and a single writer batches naturally -- while one batch
 * waits for its fsync, the next fills up -- so 300 submissions at once cost
 * a handful of fsyncs instead of 300 (docs/server.md).
 */
#include "server/writer.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

struct writer_job {
    writer_run_fn run;
    writer_done_fn done;
    void *arg;
    size_t bytes;
    int rc;
    struct writer_job *next;
};

/* A FIFO of jobs (head to tail). */
struct writer_list {
    struct writer_job *head, *tail;
};

struct writer {
    uv_loop_t *loop;
    uv_async_t async; /* the thread's "jobs are done" signal to the loop */
    struct db *db;    /* the writer thread's alone once it runs */
    pthread_t thread;
    pthread_t loop_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct writer_list todo; /* under mu: waiting for the thread */
    struct writer_list done; /* under mu: waiting for the loop */
    int stopping;            /* under mu */
    int stopped;             /* loop thread: writer_stop ran */
    struct writer_stats stats; /* under mu */
};

static void list_push(struct writer_list *l, struct writer_job *j)
{
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
}

/* Take the whole list, or (max > 0) its first max jobs but stop once they
 * add up to max_bytes (at least one job is taken). */
static struct writer_job *list_take(struct writer_list *l, size_t max, size_t max_bytes,
                                    size_t *n)
{
    struct writer_job *first = l->head, *last = NULL, *j = l->head;
    size_t k = 0, bytes = 0;
    while (j && (max == 0 || (k < max && (k == 0 || bytes + j->bytes <= max_bytes)))) {
        bytes += j->bytes;
        last = j;
        j = j->next;
        k++;
    }
    if (last)
        last->next = NULL;
    l->head = j;
    if (!j)
        l->tail = NULL;
    *n = k;
    return k ? first : NULL;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One transaction for the batch: a savepoint per job, one COMMIT. Sets each
 * job's rc. */
static void writer_batch(struct writer *w, struct writer_job *batch)
{
    /* Into a file renamed away or deleted, a commit is lost at the next
     * start: refuse it (503) while /healthz says why. */
    int rc = db_file_check(w->db);
    if (!rc)
        rc = db_begin(w->db, 1);
    for (struct writer_job *j = batch; j; j = j->next) {
        if (rc) {
            j->rc = rc;
            continue;
        }
        int sp = db_exec(w->db, "SAVEPOINT job");
        if (sp) {
            j->rc = sp;
            continue;
        }
        j->rc = j->run(w->db, j->arg);
        /* Cannot undo one job: fail the batch. A full disk (SQLITE_FULL)
         * has SQLite roll the whole transaction back, savepoint and all:
         * then the batch fails with the job's own error (503 "disk is
         * full", which a runner retries), not "no such savepoint" (500). */
        if (j->rc && (sp = db_exec(w->db, "ROLLBACK TO job")) != 0)
            rc = sqlite3_get_autocommit(db_handle(w->db)) ? j->rc : -EIO;
        if (!rc && (sp = db_exec(w->db, "RELEASE job")) != 0)
            rc = sp == -ENOSPC ? sp : -EIO;
        if (rc)
            j->rc = rc;
    }
    if (!rc)
        rc = db_commit(w->db); /* synchronous=FULL: the WAL is fsync'd here */
    else
        db_rollback(w->db);
    if (rc) /* nothing of the batch is stored: no job may say it is */
        for (struct writer_job *j = batch; j; j = j->next)
            if (j->rc == 0)
                j->rc = rc;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    db_thread_adopt(w->db);
    writer_thread_background();
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->todo.head && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        size_t n;
        struct writer_job *batch = list_take(&w->todo, WRITER_BATCH_MAX, WRITER_BATCH_BYTES, &n);
        if (!batch)
            break; /* stopping and nothing left */
        pthread_mutex_unlock(&w->mu);
        double t0 = mono_s();
        writer_batch(w, batch);
        double took = mono_s() - t0;
        pthread_mutex_lock(&w->mu);
        w->stats.batches++;
        w->stats.jobs += n;
        if (n > w->stats.max_batch)
            w->stats.max_batch = n;
        if (took > w->stats.commit_max_s)
            w->stats.commit_max_s = took;
        while (batch) {
            struct writer_job *next = batch->next;
            list_push(&w->done, batch);
            batch = next;
        }
        uv_async_send(&w->async);
    }
    pthread_mutex_unlock(&w->mu);
    db_close(w->db);
    w->db = NULL;
    return NULL;
}

/* Loop thread: run the done callbacks of the finished jobs, in order. */
static void writer_deliver(uv_async_t *a)
{
    struct writer *w = a->data;
    assert(pthread_equal(pthread_self(), w->loop_thread));
    size_t n;
    pthread_mutex_lock(&w->mu);
    struct writer_job *j = list_take(&w->done, 0, 0, &n);
    w->stats.queued -= n;
    pthread_mutex_unlock(&w->mu);
    while (j) {
        struct writer_job *next = j->next;
        j->done(j->arg, j->rc);
        free(j);
        j = next;
    }
}

void writer_thread_background(void)
{
    static __thread int done;
    if (done)
        return;
    done = 1;
    /* Linux: a thread id names one thread, and nice is per thread; failure
     * only costs latency. */
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (now != -1 || errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), now + WRITER_NICE);
}

static void writer_closed(uv_handle_t *h)
{
    struct writer *w = h->data;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

int writer_start(uv_loop_t *loop, const char *db_path, struct writer **out)
{
    struct writer *w = calloc(1, sizeof(*w));
    sigset_t all, old;
    int rc;
    *out = NULL;
    if (!w)
        return -ENOMEM;
    w->loop = loop;
    w->loop_thread = pthread_self();
    rc = db_open(db_path, 0, &w->db);
    if (rc) {
        free(w);
        return rc;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    rc = uv_async_init(loop, &w->async, writer_deliver);
    if (rc) {
        db_close(w->db);
        free(w);
        return rc;
    }
    w->async.data = w;
    /* Signals stay with the loop (uv_signal): the thread blocks them all. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = -pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        db_close(w->db); /* still the loop thread's: the thread never ran */
        w->db = NULL;
        uv_close((uv_handle_t *)&w->async, writer_closed); /* frees w */
        return rc;
    }
    pthread_setname_np(w->thread, "cugrade-writer");
    *out = w;
    return 0;
}

int writer_submit(struct writer *w, writer_run_fn run, writer_done_fn done, void *arg,
                  size_t bytes)
{
    assert(pthread_equal(pthread_self(), w->loop_thread));
    assert(run && done);
    if (w->stopped)
        return -ESHUTDOWN;
    struct writer_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->run = run;
    j->done = done;
    j->arg = arg;
    j->bytes = bytes;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        free(j);
        return -ESHUTDOWN;
    }
    list_push(&w->todo, j);
    w->stats.queued++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void writer_stats_get(struct writer *w, struct writer_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->stats;
    pthread_mutex_unlock(&w->mu);
}

void writer_stop(struct writer *w)
{
    if (!w || w->stopped)
        return;
    assert(pthread_equal(pthread_self(), w->loop_thread));
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL); /* every queued job committed (or failed) */
    assert(w->db == NULL);
    w->stopped = 1;
    writer_deliver(&w->async);
    assert(w->stats.queued == 0);
    uv_close((uv_handle_t *)&w->async, writer_closed);
}
