/*
 * queue.h - the durable job queue: submissions rows in SQLite are the queue.
 *
 *   enqueue  source + hash + queue row in one transaction (before the 202);
 *            the student's older still-queued job to the same lab becomes
 *            superseded in the same transaction
 *   claim    BEGIN IMMEDIATE; the first job in the fair order (students in
 *            turn, then submission order); lease to a runner
 *   progress the holder reports a phase; the lease is extended
 *   result   the holder posts the verdict; system_error requeues until
 *            max_attempts, then stays system_error
 *   sweep    a libuv timer requeues jobs whose lease expired (same rule)
 *
 * Runners long-poll for claims: queue_wait parks a request and calls back
 * when a job may be available (enqueue, requeue, regrade) or on timeout.
 */
#ifndef CUGRADE_QUEUE_H
#define CUGRADE_QUEUE_H

#include "server/db.h"
#include "server/http.h"
#include <jansson.h>
#include <stddef.h>
#include <uv.h>

/* The statuses of a job a runner holds the lease of (SQL, for IN). */
#define QUEUE_IN_PROGRESS "('compiling','checking','running','timing')"

struct queue;

struct queue_submit {
    long long user_id;
    const char *lab;
    const char *filename;
    const char *source;
    size_t size;
    int late;
    double late_days;
    int max_attempts;
};

struct queue_job {
    long long id;
    long long user_id;
    char lab[65];
    char filename[72];
    char sha256[65];
    int attempt;
    char *source; /* malloc'd, NUL-terminated; caller frees */
    size_t size;
};

struct queue_waiter;

/* Called for parked claims (w is the waiter of req): wake=1 when a job may
 * be available: claim now, answer and return 1; return 0 to keep waiting;
 * or start a claim elsewhere (the writer thread) and return
 * QUEUE_WAIT_BUSY: the waiter stays parked, is not woken again and does not
 * time out until the claim ends with queue_wait_settle. wake=0 on timeout
 * or shutdown: answer 204 (the return value is ignored). */
typedef int (*queue_wait_cb)(struct queue *q, struct queue_waiter *w, struct http_request *req,
                             int wake, const char *runner, void *data);
#define QUEUE_WAIT_BUSY 2

/* Create the queue. sweep_interval_s: how often expired leases are looked
 * for (0: never; tests call queue_sweep). The timer's sweeps run on libuv's
 * pool with a connection of their own (opened here on db's file; an
 * in-memory db is swept on the loop): a sweep waits for the write lock,
 * and on the loop every client waited with it. Every 10 minutes
 * (CUGRADE_INTEGRITY_S seconds in tests) that connection also runs
 * db_integrity_check. Returns 0 or -errno. */
int queue_new(uv_loop_t *loop, struct db *db, double sweep_interval_s, struct queue **out);

/* Answer every parked claim (wake=0); later queue_wait calls fail with
 * -ESHUTDOWN. The queue keeps working otherwise (shutdown in progress). */
void queue_drain(struct queue *q);

/* Drain, stop the sweeper; frees the queue once its handles are closed
 * (the loop must run). */
void queue_close(struct queue *q);

/* Called after a sweep changed jobs (to invalidate caches). */
void queue_on_change(struct queue *q, void (*fn)(void *arg, long long id), void *arg);

/* Store a new submission as queued (one transaction, synchronous=FULL);
 * the same user's still-queued submissions to the same lab become
 * 'superseded' (never graded) in that transaction. Returns 0, the id and
 * (when superseded is not NULL) how many were superseded, or -errno.
 * Wakes parked claims. */
int queue_enqueue(struct queue *q, const struct queue_submit *in, long long *id_out,
                  int *superseded);

/* The SQL of queue_enqueue alone, inside the caller's transaction on db
 * (the writer thread's connection, server/writer.h). After the commit, the
 * loop calls queue_written(q, 0, 1). 0 or -errno. */
int queue_enqueue_in(struct db *db, const struct queue_submit *in, long long *id_out,
                     int *superseded);

/* Loop thread, after a write made on another connection committed: the
 * fair order is read again, cached renderings of job id are dropped (id 0:
 * none), and parked claims wake when wake is 1. */
void queue_written(struct queue *q, long long id, int wake);

/* A runner started again under its name (its first claim says "fresh"):
 * the leases it held in its earlier life, for the same runner account,
 * expire now, and the next sweep requeues them (or ends them in
 * system_error past max_attempts) as any expired lease; *expired says how
 * many. 0 or -errno, as a writer job returns (writer.h). Inside the
 * caller's write transaction. */
int queue_runner_restarted_in(struct db *db, const char *runner, long long runner_user,
                              int *expired);

/* A claim's first lease, until its runner's first progress renews it to
 * lease_s: a quarter of lease_s, at least QUEUE_FIRST_LEASE_MIN_S seconds
 * and at most lease_s. A runner gone between the claim's answer and its
 * first word (a crash, a kill, a lost answer) leaves its job waiting that
 * long, not the whole lease; a runner posts its first progress as soon as
 * it has the job (runner/service/serve.c). */
#define QUEUE_FIRST_LEASE_MIN_S 5.0
double queue_first_lease(double lease_s);

/* The SQL of queue_claim alone, inside the caller's write transaction on
 * db (the writer thread's connection, server/writer.h); the loop then calls
 * queue_written(q, job->id, 0). Same returns. */
int queue_claim_in(struct db *db, const char *runner, long long runner_user, double lease_s,
                   int (*rubric_version)(void *ctx, const char *lab), void *ctx,
                   struct queue_job *job);

/* Claim the first queued job in the fair order for runner (runner_user:
 * the token's user). A job's turn is the number of its student's jobs
 * ahead of it (being graded, or queued earlier); the lowest turn goes
 * first, then the oldest: students are served in turn.
 * rubric_version is recorded on the row. Returns 0 and fills job (free its
 * source), -ENOENT when nothing is queued, -errno. */
int queue_claim(struct queue *q, const char *runner, long long runner_user, double lease_s,
                int (*rubric_version)(void *ctx, const char *lab), void *ctx,
                struct queue_job *job);

/* Give back job id, claimed for attempt by runner_user (runner): queued
 * again at once, without the attempt counted (nobody ran it to a verdict).
 * handed_back 0: the claim was never handed over (the runner hung up while
 * it was written), so the row must still be as the claim left it.
 * handed_back 1: the runner gives back a job it holds and has not judged
 * (it waited for its GPU's memory while another GPU of the host had room:
 * docs/runner.md "Hand-back"), in any phase short of a verdict. On db
 * inside the caller's write transaction (the writer's); the loop then
 * calls queue_written(q, id, 1). Returns 0, -ESTALE when the lease is no
 * longer that claim's, or -errno. */
int queue_release_in(struct db *db, long long id, long long runner_user, const char *runner,
                     int attempt, int handed_back);

/* Extend the lease of job id held by runner_user (and by runner / attempt
 * when they are not NULL / 0) and record phase and detail. Returns 0,
 * -ENOENT (no such job), -ESTALE (the lease is not held: answer 409). */
int queue_progress(struct queue *q, long long id, long long runner_user, const char *runner,
                   int attempt, const char *phase, const char *detail, double lease_s);

/* The SQL of queue_progress alone, on db (the writer's connection); the
 * loop then calls queue_written(q, id, 0). Same returns. */
int queue_progress_in(struct db *db, long long id, long long runner_user, const char *runner,
                      int attempt, const char *phase, const char *detail, double lease_s);

struct queue_result {
    const char *status;      /* graded | compile_error | ... | system_error */
    const char *result_json; /* stored verbatim */
    int has_score;
    double score, max_score; /* score after the late penalty */
    int has_speedup;
    double speedup;
    const char *profile_key; /* NULL, or the runner's key of the profile to follow */
};

/* Store a result for job id (same lease rules as queue_progress). A
 * system_error requeues the job while attempts < max_attempts. Sets
 * *final_status to the status the row ends in. Returns 0, -ENOENT, -ESTALE,
 * -errno. */
int queue_result(struct queue *q, long long id, long long runner_user, const char *runner,
                 int attempt, const struct queue_result *res, const char **final_status);

/* The SQL of queue_result alone, inside the caller's transaction on db; the
 * loop then calls queue_written(q, id, *final_status is "queued").
 * *final_status is a string literal or res->status. 0, -ENOENT, -ESTALE,
 * -errno. */
int queue_result_in(struct db *db, long long id, long long runner_user, const char *runner,
                    int attempt, const struct queue_result *res, const char **final_status);

/* Merge a profile update (docs/api.md: {"profile", "hints", "hint_details"}
 * of update, others ignored) into the stored result of job id, inside the
 * caller's transaction: only while the row holds the verdict whose result
 * named key for this runner_user, runner and attempt. Posting it again
 * stores the same. Returns 0, -ENOENT, -ESTALE (regraded, retried, or
 * another lease's), -ENOMEM or -errno. */
int queue_profile_in(struct db *db, long long id, long long runner_user, const char *runner,
                     int attempt, const char *key, const json_t *update);

/* Put a submission back in the queue (admin regrade): attempts reset, old
 * result kept until the new one arrives. Returns 0, -ENOENT, -errno. */
int queue_regrade(struct queue *q, long long id);

/* The SQL of queue_regrade alone, on db (the writer's connection); the loop
 * then calls queue_written(q, id, 1). Same returns. */
int queue_regrade_in(struct db *db, long long id);

/* Requeue jobs whose lease expired before now; jobs at max_attempts become
 * system_error. Returns the number of rows changed (>= 0) or -errno. */
int queue_sweep(struct queue *q, double now);

/* 1-based position of a queued job in the fair order (the claim order),
 * 0 when it is not queued. Reads a cached order, re-read after changes. */
long long queue_position(struct queue *q, long long id);

/* Verdicts per second over the last 10 minutes (superseded jobs not
 * counted), 0 when fewer than 3 verdicts say nothing yet. Cached 1 s. */
double queue_rate(struct queue *q);

/* At start: every job that was being graded when the server stopped gets
 * a fresh lease (its runner may come back) and one more allowed attempt
 * (a lease cut by our own restart is not the student's to lose). Returns
 * the number of jobs (>= 0) or -errno. */
int queue_recover(struct queue *q, double lease_s);

/* A number that changes whenever a job's status changed in this process
 * (for caches of counts by status). */
unsigned queue_generation(struct queue *q);

/* Jobs with status 'queued'. */
long long queue_depth(struct queue *q);

/* Park req until a job may be available or wait_s passed; runner (copied)
 * and data are handed to cb. now: the first try (cb with wake=1) runs on
 * the loop's next turn, and a try that finds nothing keeps waiting (wait_s
 * 0: answered 204 then). The http layer's abort callback is installed (the
 * client may hang up; then cb is not called again). Returns 0 or -errno. */
int queue_wait(struct queue *q, struct http_request *req, double wait_s, const char *runner,
               int now, queue_wait_cb cb, void *data);

/* For the claim a QUEUE_WAIT_BUSY callback started: its request, or NULL
 * when the client went away meanwhile (then answer nobody). */
struct http_request *queue_wait_req(struct queue_waiter *w);

/* That claim ended (loop thread), after the request was answered when
 * answered is 1 (nothing is sent when the client went away). answered 0:
 * nothing was found; the waiter keeps waiting (claims again at once when
 * woken meanwhile), or is answered 204 when its time ran out meanwhile or
 * the queue is draining. w may be freed on return. */
void queue_wait_settle(struct queue_waiter *w, int answered);

/* Parked claims now. */
size_t queue_waiting(struct queue *q);

/* Wake parked claims (they try to claim in arrival order). */
void queue_notify(struct queue *q);

/* A read-only view of q for a reader job (server/reader.h): what the pages
 * read of a queue (queue_position, queue_rate, queue_depth, queue_waiting)
 * answered from db, the job's connection, instead of the loop's: the
 * parked claims, the rate and the fair order as q has them now (a status
 * poll of each queued submission every second must not sort the queue
 * again each time); an order q has not read yet, or an id not in it, is
 * read on db. Made on the loop (0 and *out, or -ENOMEM); the
 * job sets its connection with queue_view_db; nothing else may be called
 * on a view. Free with queue_view_free (either thread, NULL is fine). */
int queue_view_new(const struct queue *q, struct queue **out);
void queue_view_db(struct queue *view, struct db *db);
void queue_view_free(struct queue *view);

/* Status names and classes: common/status.h (status_in_progress,
 * status_verdict, status_final). */

#endif
