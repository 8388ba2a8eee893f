/*
 * reader.h - reads off the event loop (docs/server.md, "The loop never
 * waits for the disk").
 *
 * A read on the loop's connection waits for the disk when its pages are not
 * in memory, and for SQLite's locks on the WAL index: a stalled disk, or a
 * process holding those locks, stalled /healthz and every client with it.
 * Reads that may wait go through the reader instead: a job runs on libuv's
 * pool (the lease sweep's way: a connection of its own, adopted by the pool
 * thread for the job) and its done callback runs on the loop.
 *
 * The reader keeps up to READER_CONNS connections (WAL readers: they never
 * wait for the writer). A job's run function gets one of them and its own
 * argument only: never struct app, never the loop's connection (copy what
 * it needs first). Rows it must create on the way (a scoreboard's missing
 * pseudonyms) are written on that connection as before on the loop's.
 */
#ifndef CUGRADE_READER_H
#define CUGRADE_READER_H

#include <uv.h>

#include "server/db.h"

#define READER_CONNS 4 /* libuv's pool has 4 threads */

struct reader;

/* On a pool thread: the job's reads on db. Returns 0 or -errno. */
typedef int (*reader_run_fn)(struct db *db, void *arg);

/* On the loop thread: rc is what run returned (or -errno when no
 * connection could be opened). Called exactly once per accepted job. */
typedef void (*reader_done_fn)(void *arg, int rc);

/* A reader for the database at db_path (open and initialized by the loop
 * already). "" (in memory): reader_sync is 1 and the caller reads on the
 * loop, as before. Returns 0 and *out (free with reader_free), or -ENOMEM. */
int reader_new(uv_loop_t *loop, const char *db_path, struct reader **out);

/* 1 when jobs cannot run off the loop (a database in memory): the caller
 * does its reads itself, on the loop's connection. */
int reader_sync(const struct reader *r);

/* Queue a job (loop thread). Returns 0, or -errno (-ESHUTDOWN once
 * reader_free began, -ENOTSUP when reader_sync): then neither callback is
 * ever called. */
int reader_submit(struct reader *r, reader_run_fn run, reader_done_fn done, void *arg);

/* Jobs queued and not yet done (loop thread). */
unsigned reader_pending(const struct reader *r);

/* Close the connections (loop thread, once no job is pending: the caller's
 * stop waits for its done callbacks, app_work_end) and free r. NULL is fine. */
void reader_free(struct reader *r);

#endif
