/*
 * regrade.h - regrade requests (docs/api-course.md, docs/staff.md): a
 * student asks, with a reason, about one of their graded submissions; the
 * course staff answer, and may requeue the submission or override its score
 * in the same step. Everything is audit-logged.
 *
 * Who may do what:
 *   - a student: ask about their own graded submission (one open request per
 *     submission), read their own requests and the answers;
 *   - a TA or admin: read every request, answer open ones;
 *   - anyone else (another student, no credentials, a runner): nothing. A
 *     student asking for another student's request gets the same 404 as for
 *     a request that does not exist.
 *
 * Owns the table regrade_requests (schema step in migrate.c, SQL here).
 */
#ifndef CUGRADE_REGRADE_H
#define CUGRADE_REGRADE_H

#include <jansson.h>

#include "server/staff_write.h"

#define REGRADE_REASON_MAX 2000 /* characters (UTF-8 code points) */
#define REGRADE_ANSWER_MAX 2000

extern const char regrade_schema[];

/* A request or an answer, read and written on the writer thread
 * (server/writer.h), so that a stalled disk stalls it, not the loop: the
 * checks that need no database (the viewer's role, the text, the action
 * and its score) run on the loop when it is started, those that read (the
 * submission is the student's and graded; the request is open) on the
 * writer, in the batch's transaction with the write and its audit row; an
 * answer's regrade or override is the staff's change (staff_write.h) made
 * in the same job. */
struct regrade_write {
    int answering;           /* 0: a student asks about submission id; 1: staff answer request id */
    struct auth_user viewer; /* copied */
    long long id;
    const char *text;   /* the reason, or the answer (copied by the start) */
    const char *action; /* an answer's: "none", "regrade" or "override" */
    double score;       /* an override's */
    /* set on the writer */
    long long rid, sid;     /* the request and its submission */
    json_t *out;            /* the request as stored (freed after the callback) */
    struct staff_write act; /* an answer's regrade or override */
    struct api_error e;     /* a refusal found on the writer (e.status != 0) */
};

/* On the loop, once the write is committed (rc 0) or refused or failed (rc
 * -errno, w->e says why), if the client is still there: answer req, return
 * HTTP_DONE (or HTTP_DEFERRED when it finishes req itself later). */
typedef int regrade_write_answer(struct app *app, struct http_request *req,
                                 const struct regrade_write *w, int rc);

/* Student: open a request about submission id (the request object
 * {"id","submission","lab","user","reason","status":"open",...} in w->out
 * when stored). 0 (answer is called later) or -errno with e (nothing
 * queued: answer req now). */
int regrade_open_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                       long long id, const char *reason, regrade_write_answer *answer,
                       struct api_error *e);

/* Staff: answer request rid. action: "none" (NULL), "regrade" (requeue)
 * or "override" (score required). w->out is the answered request. Returns
 * as regrade_open_start. */
int regrade_answer_start(struct app *app, struct http_request *req,
                         const struct auth_user *viewer, long long rid, const char *text,
                         const char *action, double score, regrade_write_answer *answer,
                         struct api_error *e);

/* One request as the viewer may see it (404 for another student's). */
int regrade_request_get(struct app *app, const struct auth_user *viewer, long long rid,
                        json_t **out, struct api_error *e);

/* {"requests":[...]}: open first, then newest. A student sees only their
 * own. status ("open", "answered" or NULL), lab, user, submission (0: any)
 * filter. */
int regrade_request_list(struct app *app, const struct auth_user *viewer, const char *status,
                         const char *lab, const char *user, long long submission, json_t **out,
                         struct api_error *e);

/* Number of open requests (the staff's navigation shows it). */
int regrade_open_count(struct app *app);


#endif
