/*
 * writer.h - the server's one writing thread: durable writes leave the
 * event loop (docs/server.md, "The loop never waits for the disk").
 *
 * The writer owns a second SQLite connection to the same WAL database
 * (synchronous=FULL, as the loop's). Jobs are queued from the loop thread;
 * the writer takes every job waiting (up to WRITER_BATCH_MAX), runs them in
 * one transaction, each inside its own savepoint (a job that fails is
 * rolled back alone), commits once -- group commit: one fsync of the WAL for
 * the whole batch -- and only then hands the jobs back to the loop, in
 * order, where their done callbacks answer the clients. So a done callback
 * that sees rc == 0 knows its rows are on disk: a 202 sent from it is as
 * durable as the synchronous COMMIT it replaced.
 *
 * Threads and connections (assert()ed in db.c): the loop thread uses only
 * the loop's connection (app->db), the writer thread only its own. A job's
 * run function gets the writer's connection and must touch nothing else the
 * loop owns (copy what it needs into its argument first); its done
 * function runs on the loop and must not touch the writer's connection.
 *
 * A job that answers an HTTP request (a submission, a staff change, a
 * late-day grant, a regrade request) holds the request in a struct
 * http_hold inside its argument (http.h), started once the job is queued:
 * the client may hang up while the job waits, and its done function asks
 * the hold for the request (NULL: nobody to answer) -- the writer itself
 * knows nothing of HTTP.
 */
#ifndef CUGRADE_WRITER_H
#define CUGRADE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/db.h"

#define WRITER_BATCH_MAX 256               /* jobs per transaction */
#define WRITER_BATCH_BYTES (64 * 1024 * 1024) /* ...and about this much data */

struct writer;

/* On the writer thread, inside the batch's transaction: do the job's SQL on
 * db. Returns 0, or -errno (then everything the job wrote is rolled back;
 * the other jobs of the batch are not affected). */
typedef int (*writer_run_fn)(struct db *db, void *arg);

/* On the loop thread, after the batch committed (or failed): rc is what run
 * returned, or the error of BEGIN/COMMIT (then nothing the job wrote is
 * stored). Called exactly once per accepted job. */
typedef void (*writer_done_fn)(void *arg, int rc);

struct writer_stats {
    uint64_t jobs;      /* jobs finished */
    uint64_t batches;   /* transactions committed or failed */
    uint64_t max_batch; /* most jobs in one transaction */
    uint64_t queued;    /* jobs waiting or running now */
    double commit_max_s; /* the longest transaction (BEGIN to COMMIT) */
};

/* Open a second connection to the database at db_path (it must exist and be
 * initialized: the loop's connection opened it first) and start the writer
 * thread on it. Completions are delivered on loop. Returns 0 and the writer
 * in *out, or -errno. */
int writer_start(uv_loop_t *loop, const char *db_path, struct writer **out);

/* Queue a job (loop thread). run and done as above; arg is theirs; bytes:
 * about how much it writes (a batch closes past WRITER_BATCH_BYTES, so that
 * thirty 8 MiB results are not one 240 MiB transaction). Returns 0, or
 * -ENOMEM / -ESHUTDOWN (writer_stop began): then neither callback is ever
 * called. */
int writer_submit(struct writer *w, writer_run_fn run, writer_done_fn done, void *arg,
                  size_t bytes);

/* Copy the counters (loop thread). */
void writer_stats_get(struct writer *w, struct writer_stats *out);

/* Lower the calling thread's CPU priority by WRITER_NICE (once per thread,
 * relative to the nice it was created with, the loop's): on a busy machine
 * the loop thread must win the CPU over the threads that parse and write
 * for it (the writer itself, libuv's pool), without these starving behind
 * every other process. */
#define WRITER_NICE 5
void writer_thread_background(void);

/* Stop (loop thread): refuse new jobs, let the thread finish every queued
 * one (committed as usual), join it, close its connection, then run the
 * done callbacks still undelivered before returning. The writer's memory is
 * freed once its handle closed (the loop must run). NULL is fine. */
void writer_stop(struct writer *w);

#endif
