/*
 * staff_write.h - the course staff's small changes (a score override, a
 * regrade, an extension, the scoreboard opt-in, a token revocation, a new
 * token): their
 * reads and writes run on the writer thread (server/writer.h), so that a
 * stalled disk stalls the change, not the loop (docs/server.md, "The loop
 * never waits for the disk").
 *
 * A change is checked in two steps: what needs no database (the viewer's
 * role, the reason and score typed, the lab's name) on the loop when it is
 * started; what does (the submission or user exists) on the writer, inside
 * the batch's transaction with the write itself. After the commit, the loop
 * drops what the change made stale (cached answers, scoreboards, the token
 * cache, the queue's order) and only then answers the client.
 */
#ifndef CUGRADE_STAFF_WRITE_H
#define CUGRADE_STAFF_WRITE_H

#include "server/app.h"

enum staff_change {
    STAFF_OVERRIDE,  /* id, score, reason: a new score for a submission */
    STAFF_REGRADE,   /* id: the submission back in the queue */
    STAFF_EXTENSION, /* user, lab, due, hard: a student's own deadlines */
    STAFF_SHOW_NAME, /* show: the viewer's own name on the scoreboards */
    STAFF_REVOKE,    /* user: every token and session of the user ends */
    STAFF_TOKEN,     /* user: as STAFF_REVOKE, then one new token (token, role) */
};

struct staff_write {
    enum staff_change kind;
    struct auth_user viewer; /* who changes it (copied) */
    long long id;            /* the submission (override, regrade) */
    double score;            /* override */
    const char *reason;      /* override (copied by staff_write_start) */
    char user[65];           /* extension, revoke: the user's name */
    char lab[65];            /* extension: the lab; override, regrade: set to the submission's */
    double due, hard;        /* extension: epoch seconds (0: none) */
    int show;                /* show_name */
    int tokens, sessions;    /* revoke, token: how many ended (set when written) */
    char token[AUTH_TOKEN_LEN + 1]; /* token: the new one, shown once (set when written) */
    enum auth_role role;     /* token: the user's (set when written) */
    struct api_error e;      /* a refusal found on the writer (e.status != 0) */
};

/* On the loop, once the change is committed (rc 0) or refused or failed
 * (rc -errno, w->e says why: api_internal when nothing else did), if the
 * client is still there: answer req, return HTTP_DONE (or HTTP_DEFERRED
 * when it calls http_request_finish itself later). */
typedef int staff_write_answer(struct app *app, struct http_request *req,
                               const struct staff_write *w, int rc);

/* Check w (loop, no database), queue it on the writer and defer req.
 * Returns 0 (answer is called later), or -errno with e (nothing queued:
 * answer req now). */
int staff_write_start(struct app *app, struct http_request *req, const struct staff_write *w,
                      staff_write_answer *answer, struct api_error *e);

/* The same change at once on app->db, on the loop (the rubric page's
 * regrade of a lab, which runs in the loop's own transaction). w is updated
 * as the writer would. 0 or -errno with e. */
int staff_write_now(struct app *app, struct staff_write *w, struct api_error *e);

/* The three steps of staff_write_start, for a write job of another module
 * that makes the change with its own (a regrade request's answer, which may
 * regrade or override: server/regrade.c). Loop: the checks that need no
 * database (0 or -errno with e). Writer (db its connection, inside its
 * job): the change's checks that read and its writes (w->id set; 0 or
 * -errno with e). Loop, once committed: drop what the change made stale. */
int staff_write_check(struct app *app, const struct staff_write *w, struct api_error *e);
int staff_write_on(struct db *db, struct staff_write *w, struct api_error *e);
void staff_write_after(struct app *app, const struct staff_write *w);

#endif
