/*
 * server_queue.c - unit tests (TAP) for the database layer, tokens and
 * sessions, and the durable queue: enqueue, atomic claims across processes,
 * progress and leases, lease expiry, attempts ending in system_error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/auth.h"
#include "server/db.h"
#include "server/queue.h"

#include "tests/unit/tap.h"

static char dir[256], path[300];

static const char *status_of(struct db *db, long long id, int *attempts)
{
    static char buf[32];
    sqlite3_stmt *st = db_stmt(db, "SELECT status, attempts FROM submissions WHERE id = ?1");
    sqlite3_bind_int64(st, 1, id);
    buf[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(buf, sizeof(buf), "%s", db_col_text(st, 0));
        if (attempts)
            *attempts = sqlite3_column_int(st, 1);
    }
    sqlite3_reset(st);
    return buf;
}

static void test_db_and_auth(void)
{
    struct db *db;
    struct auth_user u;
    char tok[AUTH_TOKEN_LEN + 1], tok2[AUTH_TOKEN_LEN + 1];

    ok(db_open(path, 0, &db) == -ENOENT, "opening a missing database without create: -ENOENT");
    FILE *f = fopen(path, "w");
    fclose(f);
    ok(db_open(path, 0, &db) == -ENODATA, "an empty file is not an initialized database: -ENODATA");
    ok(db_open(path, 1, &db) == 0, "create the schema");
    sqlite3_stmt *st = db_stmt(db, "PRAGMA journal_mode");
    ok(st && sqlite3_step(st) == SQLITE_ROW && strcmp(db_col_text(st, 0), "wal") == 0,
       "journal_mode is WAL");
    sqlite3_reset(st);
    st = db_stmt(db, "PRAGMA synchronous");
    ok(st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2,
       "synchronous is FULL");
    sqlite3_reset(st);
    static const char sel1[] = "SELECT 1";
    sqlite3_stmt *s1 = db_stmt(db, sel1);
    ok(s1 && db_stmt(db, sel1) == s1, "a statement is prepared once and cached");
    ok(db_exec(db, "INSERT INTO nosuchtable VALUES(1)") == -EIO, "an SQL error becomes -EIO");
    ok(db_errno(SQLITE_BUSY) == -EBUSY && db_errno(SQLITE_CONSTRAINT) == -EEXIST &&
           db_errno(SQLITE_DONE) == 0 && db_errno(SQLITE_FULL) == -ENOSPC,
       "SQLite codes map to -errno");
    db_close(db);
    ok(db_open(path, 0, &db) == 0, "reopen an initialized database without create");

    ok(auth_user_add(db, "alice", AUTH_STUDENT, "Alice", tok) == 0, "add a student");
    ok(strncmp(tok, "cgs_", 4) == 0 && strlen(tok) == 68, "student token: cgs_ + 64 hex");
    ok(auth_user_add(db, "alice", AUTH_TA, NULL, tok2) == -EEXIST, "a taken name: -EEXIST");
    ok(auth_user_add(db, "../bad", AUTH_TA, NULL, tok2) == -EINVAL, "a bad name: -EINVAL");
    ok(auth_user_add(db, "root", AUTH_ADMIN, NULL, tok2) == 0 && strncmp(tok2, "cga_", 4) == 0,
       "admin token: cga_");
    char tok2_root[AUTH_TOKEN_LEN + 1];
    memcpy(tok2_root, tok2, sizeof(tok2_root));
    st = db_stmt(db, "SELECT COUNT(*) FROM tokens WHERE hash = ?1");
    sqlite3_bind_text(st, 1, tok, -1, SQLITE_STATIC);
    ok(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0,
       "tokens are not stored in clear");
    sqlite3_reset(st);
    ok(auth_token_check(db, tok, &u) == 0 && strcmp(u.name, "alice") == 0 && u.role == AUTH_STUDENT,
       "token resolves to its user and role");
    ok(u.pseudonym[0] != '\0', "a pseudonym was assigned (%s)", u.pseudonym);
    char wrong[AUTH_TOKEN_LEN + 1];
    strcpy(wrong, tok);
    wrong[40] = wrong[40] == 'a' ? 'b' : 'a';
    ok(auth_token_check(db, wrong, &u) == -ENOENT, "one changed character: -ENOENT");
    char relabeled[AUTH_TOKEN_LEN + 1];
    strcpy(relabeled, tok);
    memcpy(relabeled, "cga_", 4);
    ok(auth_token_check(db, relabeled, &u) == -ENOENT,
       "a student token relabeled cga_ is not an admin token");
    ok(auth_token_check(db, "", &u) == -ENOENT && auth_token_check(db, "cgs_", &u) == -ENOENT,
       "empty and short tokens: -ENOENT");
    ok(auth_token_new(db, "alice", tok2) == 0 && auth_token_check(db, tok2, &u) == 0 &&
           auth_token_check(db, tok, &u) == 0,
       "a second token works beside the first");
    ok(auth_token_revoke_all(db, "alice", NULL, NULL) == 0 &&
           auth_token_check(db, tok, &u) == -ENOENT && auth_token_check(db, tok2, &u) == -ENOENT,
       "revoked tokens stop working");
    ok(auth_equal("abc", "abc") && !auth_equal("abc", "abd") && !auth_equal("abc", "abcd"),
       "constant-time equality");

    char cookie[65], csrf[65];
    struct auth_user root;
    ok(auth_token_check(db, tok2_root, &root) == 0 && root.token_id > 0,
       "a token lookup names the token (token_id %lld)", root.token_id);
    ok(auth_session_create(db, root.id, 999999, cookie, csrf) == -EINVAL,
       "no session from a token that does not exist");
    ok(auth_session_create(db, root.id, root.token_id, cookie, csrf) == 0 && strlen(cookie) == 64 &&
           strlen(csrf) == 64,
       "session created");
    ok(auth_session_check(db, cookie, &u) == 0 && u.id == root.id && u.via_session &&
           strcmp(u.csrf, csrf) == 0,
       "session resolves with its CSRF token");
    ok(auth_session_destroy(db, cookie) == 0 && auth_session_check(db, cookie, &u) == -ENOENT,
       "a destroyed session is gone");
    char cookie2[65], csrf2[65];
    int nt = -1, ns = -1;
    ok(auth_session_create(db, root.id, root.token_id, cookie, csrf) == 0 &&
           auth_session_create(db, root.id, root.token_id, cookie2, csrf2) == 0 &&
           auth_session_check(db, cookie, &u) == 0,
       "two sessions from one token");
    /* The row alone must end the session, whatever the cache holds: mark the
     * token revoked behind auth.c's back, as another process would. */
    st = db_stmt(db, "UPDATE tokens SET revoked = 1 WHERE id = ?1");
    sqlite3_bind_int64(st, 1, root.token_id);
    db_step_done(st);
    ok(auth_session_check(db, cookie, &u) == -ENOENT,
       "a session ends with its token, even when the sessions row is still there");
    ok(auth_session_create(db, root.id, root.token_id, cookie, csrf) == -EINVAL,
       "a revoked token starts no session (even if a cached lookup said it was fine)");
    ok(auth_token_revoke_all(db, "root", &nt, &ns) == 0 && nt == 0 && ns == 2,
       "revoke_all deletes the user's sessions (%d tokens, %d sessions)", nt, ns);
    db_close(db);
}

static int rv_cb(void *ctx, const char *lab)
{
    (void)ctx;
    return strcmp(lab, "matmul") == 0 ? 7 : 1;
}

/* Enqueue src for uid in lab; returns the id or -1. *superseded (when not
 * NULL) gets how many older queued jobs it replaced. */
static long long submit_to(struct queue *q, long long uid, const char *lab, const char *src,
                           int *superseded)
{
    struct queue_submit s = {.user_id = uid,
                             .lab = lab,
                             .filename = "kernel.cu",
                             .source = src,
                             .size = strlen(src),
                             .max_attempts = 3};
    long long id = 0;
    return queue_enqueue(q, &s, &id, superseded) == 0 ? id : -1;
}

static long long submit(struct queue *q, long long uid, const char *src)
{
    return submit_to(q, uid, "matmul", src, NULL);
}

/* Claim the next job; returns its id (0 when none). */
static long long claim_next(struct queue *q, long long runner_id, double lease_s)
{
    struct queue_job job;
    if (queue_claim(q, "gpu0", runner_id, lease_s, NULL, NULL, &job) != 0)
        return 0;
    free(job.source);
    return job.id;
}

static void test_queue(void)
{
    struct db *db;
    struct queue *q;
    struct queue_job job;
    struct auth_user alice, runner;
    char tok[AUTH_TOKEN_LEN + 1];
    uv_loop_t loop;
    uv_loop_init(&loop);
    db_open(path, 0, &db);
    auth_user_add(db, "alice2", AUTH_STUDENT, NULL, tok);
    auth_user_add(db, "r", AUTH_RUNNER, NULL, tok);
    auth_user_get(db, "alice2", &alice);
    auth_user_get(db, "r", &runner);
    ok(queue_new(&loop, db, 0, &q) == 0, "queue created");

    ok(queue_claim(q, "gpu0", runner.id, 60, rv_cb, NULL, &job) == -ENOENT,
       "claim on an empty queue: -ENOENT");
    long long a = submit(q, alice.id, "int a;"), b = submit_to(q, alice.id, "reduction", "int b;", NULL);
    ok(a > 0 && b > a, "two submissions enqueued (%lld, %lld)", a, b);
    ok(queue_depth(q) == 2 && queue_position(q, a) == 1 && queue_position(q, b) == 2,
       "depth 2, positions 1 and 2");
    sqlite3_stmt *st = db_stmt(db, "SELECT sha256, size, source FROM submissions WHERE id = ?1");
    sqlite3_bind_int64(st, 1, a);
    char want[65];
    auth_sha256_hex("int a;", 6, want);
    ok(sqlite3_step(st) == SQLITE_ROW && strcmp(db_col_text(st, 0), want) == 0 &&
           sqlite3_column_int(st, 1) == 6 && memcmp(sqlite3_column_blob(st, 2), "int a;", 6) == 0,
       "source, size and SHA-256 stored with the row");
    sqlite3_reset(st);

    ok(queue_claim(q, "gpu0", runner.id, 60, rv_cb, NULL, &job) == 0 && job.id == a &&
           job.attempt == 1 && strcmp(job.source, "int a;") == 0,
       "the oldest job is claimed first, attempt 1, with its source");
    free(job.source);
    ok(strcmp(status_of(db, a, NULL), "compiling") == 0 && queue_position(q, b) == 1,
       "claimed job is compiling; the other moves to position 1");
    st = db_stmt(db, "SELECT rubric_version FROM submissions WHERE id = ?1");
    sqlite3_bind_int64(st, 1, a);
    ok(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 7,
       "the claim recorded the rubric version");
    sqlite3_reset(st);

    ok(queue_progress(q, a, runner.id, NULL, 0, "checking", "3/6", 60) == 0 &&
           strcmp(status_of(db, a, NULL), "checking") == 0,
       "progress moves the job to checking");
    ok(queue_progress(q, a, runner.id + 100, NULL, 0, "timing", "", 60) == -ESTALE,
       "progress from another runner account: -ESTALE");
    ok(queue_progress(q, a, runner.id, "gpu9", 0, "timing", "", 60) == -ESTALE,
       "progress naming another runner: -ESTALE");
    ok(queue_progress(q, a, runner.id, NULL, 2, "timing", "", 60) == -ESTALE,
       "progress for an older attempt: -ESTALE");
    ok(queue_progress(q, 999999, runner.id, NULL, 0, "timing", "", 60) == -ENOENT,
       "progress on no job: -ENOENT");

    /* lease expiry: nothing expires now, everything at now + 61 */
    ok(queue_sweep(q, db_now()) == 0, "a live lease is not swept");
    ok(queue_sweep(q, db_now() + 61) == 1 && strcmp(status_of(db, a, NULL), "queued") == 0,
       "an expired lease goes back to the queue");
    ok(queue_progress(q, a, runner.id, NULL, 0, "timing", "", 60) == -ESTALE,
       "the old holder's progress is refused after expiry (409)");
    ok(queue_position(q, a) == 1, "the requeued job keeps its place (oldest first)");

    /* attempts: claim + expire until max_attempts (3) */
    int attempts = 0;
    for (int i = 2; i <= 3; i++) {
        ok(queue_claim(q, "gpu0", runner.id, 60, rv_cb, NULL, &job) == 0 && job.id == a &&
               job.attempt == i,
           "claim again: attempt %d", i);
        free(job.source);
        queue_sweep(q, db_now() + 61);
    }
    ok(strcmp(status_of(db, a, &attempts), "system_error") == 0 && attempts == 3,
       "after 3 expired leases the job is system_error");

    /* results */
    ok(queue_claim(q, "gpu0", runner.id, 60, rv_cb, NULL, &job) == 0 && job.id == b,
       "claim the second job");
    free(job.source);
    struct queue_result se = {.status = "system_error", .result_json = "{}"};
    const char *fin;
    ok(queue_result(q, b, runner.id, NULL, 0, &se, &fin) == 0 && strcmp(fin, "queued") == 0 &&
           strcmp(status_of(db, b, NULL), "queued") == 0,
       "a system_error result requeues while attempts remain");
    ok(queue_claim(q, "gpu0", runner.id, 60, rv_cb, NULL, &job) == 0 && job.id == b &&
           job.attempt == 2,
       "claimed again as attempt 2");
    free(job.source);
    struct queue_result g = {.status = "graded",
                             .result_json = "{\"score\":5}",
                             .has_score = 1,
                             .score = 5,
                             .max_score = 10,
                             .has_speedup = 1,
                             .speedup = 1.5};
    ok(queue_result(q, b, runner.id, NULL, 0, &g, &fin) == 0 && strcmp(fin, "graded") == 0 &&
           strcmp(status_of(db, b, NULL), "graded") == 0,
       "a graded result is stored");
    ok(queue_result(q, b, runner.id, NULL, 0, &g, &fin) == -ESTALE,
       "a second result for the same job: -ESTALE");
    st = db_stmt(db, "SELECT score, max_score, speedup, result FROM submissions WHERE id = ?1");
    sqlite3_bind_int64(st, 1, b);
    ok(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_double(st, 0) == 5 &&
           sqlite3_column_double(st, 1) == 10 && sqlite3_column_double(st, 2) == 1.5 &&
           strcmp(db_col_text(st, 3), "{\"score\":5}") == 0,
       "score, max_score, speedup and the document are stored");
    sqlite3_reset(st);
    ok(queue_regrade(q, b) == 0 && strcmp(status_of(db, b, &attempts), "queued") == 0 &&
           attempts == 0,
       "regrade requeues with attempts reset");
    ok(queue_regrade(q, 424242) == -ENOENT, "regrade of no submission: -ENOENT");

    queue_close(q);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    db_close(db);
}

/* Several processes claim from one file at once: every job exactly once. */
static void test_claim_race(void)
{
    struct db *db;
    struct queue *q;
    struct auth_user alice, runner;
    uv_loop_t loop;
    enum { JOBS = 200, PROCS = 4 };
    uv_loop_init(&loop);
    db_open(path, 0, &db);
    auth_user_get(db, "alice2", &alice);
    auth_user_get(db, "r", &runner);
    queue_new(&loop, db, 0, &q);
    db_exec(db, "UPDATE submissions SET status = 'graded'");
    for (int i = 0; i < JOBS; i++) {
        char lab[16];
        snprintf(lab, sizeof(lab), "lab%d", i); /* one lab each: nothing superseded */
        submit_to(q, alice.id, lab, "int x;", NULL);
    }
    queue_close(q);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    db_close(db);

    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            close(fds[0]);
            uv_loop_t l;
            uv_loop_init(&l);
            struct db *d;
            struct queue *cq;
            struct queue_job job;
            if (db_open(path, 0, &d) || queue_new(&l, d, 0, &cq))
                _exit(2);
            int rc;
            char name[16];
            snprintf(name, sizeof(name), "gpu%d", p);
            while ((rc = queue_claim(cq, name, runner.id, 60, NULL, NULL, &job)) != -ENOENT) {
                if (rc == 0) {
                    if (write(fds[1], &job.id, sizeof(job.id)) != sizeof(job.id))
                        _exit(3);
                    free(job.source);
                } else if (rc != -EBUSY) {
                    _exit(4);
                }
            }
            _exit(0);
        }
    }
    close(fds[1]);
    static int seen[100000];
    long long id;
    int total = 0, dup = 0;
    while (read(fds[0], &id, sizeof(id)) == sizeof(id)) {
        total++;
        if (id > 0 && id < 100000 && seen[id]++)
            dup++;
    }
    close(fds[0]);
    int clean = 1;
    for (int p = 0; p < PROCS; p++) {
        int stt;
        waitpid(pids[p], &stt, 0);
        if (!WIFEXITED(stt) || WEXITSTATUS(stt) != 0)
            clean = 0;
    }
    ok(clean, "%d processes claimed without errors", PROCS);
    ok(total == JOBS && dup == 0,
       "every one of %d jobs claimed exactly once (%d claims, %d duplicates)", JOBS, total, dup);
}


/* Students in turn; a newer submission supersedes the queued one; the
 * server's restart does not cost an attempt; the service rate. */
static void test_fair_queue(void)
{
    struct db *db;
    struct queue *q;
    struct auth_user s1, s2, s3, runner;
    char tok[AUTH_TOKEN_LEN + 1];
    uv_loop_t loop;
    uv_loop_init(&loop);
    db_open(path, 0, &db);
    auth_user_add(db, "fair1", AUTH_STUDENT, NULL, tok);
    auth_user_add(db, "fair2", AUTH_STUDENT, NULL, tok);
    auth_user_add(db, "fair3", AUTH_STUDENT, NULL, tok);
    auth_user_get(db, "fair1", &s1);
    auth_user_get(db, "fair2", &s2);
    auth_user_get(db, "fair3", &s3);
    auth_user_get(db, "r", &runner);
    queue_new(&loop, db, 0, &q);
    db_exec(db, "UPDATE submissions SET status = 'graded'");

    /* s1 floods three labs first, then s2 and s3 submit one each. */
    long long a1 = submit_to(q, s1.id, "A", "1a", NULL), b1 = submit_to(q, s1.id, "B", "1b", NULL),
              c1 = submit_to(q, s1.id, "C", "1c", NULL), a2 = submit_to(q, s2.id, "A", "2a", NULL),
              a3 = submit_to(q, s3.id, "A", "3a", NULL);
    ok(queue_position(q, a1) == 1 && queue_position(q, a2) == 2 && queue_position(q, a3) == 3 &&
           queue_position(q, b1) == 4 && queue_position(q, c1) == 5,
       "positions follow the turns: s1, s2, s3, then s1's second and third (%lld %lld %lld %lld "
       "%lld)",
       queue_position(q, a1), queue_position(q, a2), queue_position(q, a3),
       queue_position(q, b1), queue_position(q, c1));
    /* A reader's view answers from the order the loop has read, without
     * reading it again (a status poll every second per queued student):
     * here with no connection at all. */
    struct queue *v = NULL;
    ok(queue_view_new(q, &v) == 0, "a view of the queue");
    queue_view_db(v, NULL);
    ok(queue_position(v, a1) == 1 && queue_position(v, a3) == 3 && queue_position(v, c1) == 5,
       "a view answers positions from the loop's fair order, reading nothing");
    queue_view_free(v);
    long long first = claim_next(q, runner.id, 60);
    ok(first == a1, "the first claim is s1's oldest");
    ok(queue_position(q, a2) == 1 && queue_position(q, a3) == 2 && queue_position(q, b1) == 3,
       "with s1's job being graded, s2 and s3 come before s1's next");
    /* s1 submits again to B while b1 waits: b1 is superseded and leaves
     * the queue; the new one comes after s1's older c1 (each student's
     * jobs in submission order). */
    int sup = -1;
    long long b1v2 = submit_to(q, s1.id, "B", "1b v2", &sup);
    ok(sup == 1 && strcmp(status_of(db, b1, NULL), "superseded") == 0,
       "a newer submission to the same lab supersedes the queued one (superseded=%d)", sup);
    ok(queue_position(q, b1) == 0 && queue_position(q, c1) == 3 && queue_position(q, b1v2) == 4,
       "the superseded job has no place; s1's c1 moves up, the new one follows it (%lld, %lld)",
       queue_position(q, c1), queue_position(q, b1v2));
    sup = -1;
    long long a1v2 = submit_to(q, s1.id, "A", "1a v2", &sup);
    ok(sup == 0 && strcmp(status_of(db, a1, NULL), "compiling") == 0,
       "a job already being graded is never superseded");
    long long order[5];
    for (int i = 0; i < 5; i++)
        order[i] = claim_next(q, runner.id, 60);
    ok(order[0] == a2 && order[1] == a3 && order[2] == c1 && order[3] == b1v2 &&
           order[4] == a1v2,
       "claims: s2, s3, then s1's jobs in submission order (%lld %lld %lld %lld %lld)", order[0],
       order[1], order[2], order[3], order[4]);
    ok(claim_next(q, runner.id, 60) == 0, "the superseded job is never claimed");

    /* The server restarts while a job is being graded. */
    db_exec(db, "UPDATE submissions SET status = 'graded' WHERE status <> 'superseded'");
    long long r = submit_to(q, s2.id, "R", "r", NULL);
    ok(claim_next(q, runner.id, 1) == r, "a job claimed with a 1 s lease");
    int max_before = 0, max_after = 0;
    sqlite3_stmt *st = db_stmt(db, "SELECT max_attempts FROM submissions WHERE id = ?1");
    sqlite3_bind_int64(st, 1, r);
    if (sqlite3_step(st) == SQLITE_ROW)
        max_before = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    ok(queue_recover(q, 60) == 1, "recover renews the one lease in progress");
    sqlite3_bind_int64(st, 1, r);
    if (sqlite3_step(st) == SQLITE_ROW)
        max_after = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    ok(max_after == max_before + 1, "the attempt cut by the restart is not charged (%d -> %d)",
       max_before, max_after);
    ok(queue_sweep(q, db_now() + 30) == 0 && strcmp(status_of(db, r, NULL), "compiling") == 0,
       "the renewed lease outlives its old 1 s expiry: the runner may come back");

    /* Service rate: nothing with fewer than 3 verdicts, then n / span. */
    db_exec(db, "UPDATE submissions SET graded_at = NULL");
    ok(queue_rate(q) == 0, "no rate from no verdicts");
    char sql[200];
    snprintf(sql, sizeof(sql),
             "UPDATE submissions SET graded_at = %.3f - 10.0 * (id %% 4) WHERE status = 'graded'"
             " AND user_id IN (%lld, %lld, %lld)",
             db_now(), s1.id, s2.id, s3.id);
    db_exec(db, sql);
    usleep(1100 * 1000); /* past the 1 s cache */
    double rate = queue_rate(q);
    ok(rate > 0.05 && rate < 2, "a rate from the verdicts of the last minutes (%.3f/s)", rate);

    queue_close(q);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    db_close(db);
}

/* A damaged page: DB_CHECK refuses the file before anything writes to it,
 * and a connection that meets the page later counts it (for /healthz). */
static void test_damage(void)
{
    char bad[300];
    struct db *db;
    snprintf(bad, sizeof(bad), "%s/damaged.db", dir);
    ok(db_open(bad, DB_CREATE, &db) == 0 &&
           db_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1), (2), (3);") == 0,
       "damage: a database with a table");
    sqlite3_stmt *st = db_stmt(db, "SELECT rootpage FROM sqlite_master WHERE name = 't'");
    int root = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_reset(st);
    st = db_stmt(db, "PRAGMA page_size");
    long page = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 4096;
    sqlite3_reset(st);
    db_close(db);
    FILE *f = fopen(bad, "r+b");
    unsigned char junk[64];
    memset(junk, 0xff, sizeof(junk));
    ok(root > 1 && f && fseek(f, (long)(root - 1) * page, SEEK_SET) == 0 &&
           fwrite(junk, 1, sizeof(junk), f) == sizeof(junk),
       "damage: page %d overwritten", root);
    if (f)
        fclose(f);
    ok(db_open(bad, DB_CHECK, &db) == -EBADMSG, "DB_CHECK refuses a damaged file: -EBADMSG");
    long before = db_corruption_count();
    ok(db_open(bad, 0, &db) == 0, "without DB_CHECK it opens");
    int rc = db_exec(db, "SELECT * FROM t");
    ok(rc == -EBADMSG && db_corruption_count() > before,
       "reading the damaged page: -EBADMSG, and the damage is counted (%ld)",
       db_corruption_count());
    db_close(db);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/cugrade-unit-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("not ok - mkdtemp\n");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/test.db", dir);
    test_db_and_auth();
    test_queue();
    test_claim_race();
    test_fair_queue();
    test_damage();
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
