/*
 * submission.h - the submissions table: a student's source and its life
 * (queued ... graded), what each viewer may see of it, the rules of
 * accepting one (role, lab open, size, text, rate limits), regrades and
 * score overrides, and the cache of rendered submissions.
 *
 * The one rule "who may see a submission" is submission_visible(): a
 * student sees only their own, the staff see all.
 */
#ifndef CUGRADE_SUBMISSION_H
#define CUGRADE_SUBMISSION_H

#include "server/app.h"

#define API_SOURCE_MAX (256 * 1024)
/* Stored submissions per lab and hour, superseded ones included, as a
 * multiple of the rubric's max_per_hour (superseded ones are free, not
 * unbounded). */
#define API_SUPERSEDE_FACTOR 4

/* 1 when viewer may see a submission of the user with id owner. */
int submission_visible(const struct auth_user *viewer, long long owner);

/* The languages lab l takes (docs/python.md): Python when it has a Python
 * interface or starter (lab.py, starter.py) or lab.json says "language":
 * "python"; CUDA C when it has a harness or a CUDA starter, or nothing of
 * Python's, and lab.json does not say Python only. l NULL: CUDA C. */
void submission_lab_languages(const struct app_lab *l, int *cuda, int *python);

/* A student's deadlines as submission_check copies them from the lab (the
 * rubric may change meanwhile): checked on the writer, where the student's
 * extension is read (submission_deadline_in). */
struct submission_deadlines {
    int student;     /* 0: none apply (staff) */
    int has_rubric;
    int late_refuse; /* the rubric refuses late work */
    double opens, due, hard;
};

/* The checks of a submission that need no database (role, lab, file name,
 * size, text); sets *lp and *dl (the deadlines, for
 * submission_deadline_in). text_ok: whether the source is text when the
 * caller checked already, else -1. 0 or -errno with e. */
int submission_check(struct app *app, const struct auth_user *viewer, const char *lab,
                     const char *filename, const char *source, size_t len, int text_ok,
                     struct app_lab **lp, struct submission_deadlines *dl, struct api_error *e);

/* The deadlines dl of student uid's submission to lab at now, with their
 * extension read on db (the writer's, inside its transaction): 0 with
 * *late and *late_days (whole days, 0 on time) set when it may go in, or
 * -errno with e (403: not open yet, closed, late work refused). */
int submission_deadline_in(struct db *db, const struct submission_deadlines *dl, long long uid,
                           const char *lab, double now, int *late, double *late_days,
                           struct api_error *e);

/* A student's rate limits (uid's submissions to lab) at now, read on db:
 * inside the writer's transaction, so that two submissions at once cannot
 * both pass. 0, or -EAGAIN with e = 429, or -errno. */
int submission_rate_check(struct db *db, long long uid, const char *lab, int max_in_flight,
                          int max_per_hour, double now, struct api_error *e);

/* Start req's submission to lab with the body's file (boundary: multipart,
 * or NULL for a raw body named filename, NULL: kernel.cu): parsed on
 * libuv's pool when big, written by the writer thread, answered 202 once
 * on disk (server/submission_job.c). 0: req is deferred; -errno with e to
 * answer now. */
int submission_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                     const char *lab, const char *boundary, const char *filename,
                     struct api_error *e);

/* The web form's answer once the writer is done: id > 0 and e NULL when the
 * submission is on disk, else e says why. req is still open; the callback
 * answers it: HTTP_DONE (the caller finishes it), or HTTP_DEFERRED (it
 * finishes it later). */
typedef int submission_form_done(struct app *app, struct http_request *req, const char *lab,
                                 const char *filename, long long id, const struct api_error *e);

/* The web form's submission of source (copied: the page's body may go) to
 * lab as filename: checked now (-errno with e to answer now, as
 * submission_check), then written by the writer thread like
 * submission_start's; done answers req. keep: the viewer's queued
 * submission the form showed, whose "replace" box was not ticked (0:
 * none): if it is still queued, the writer refuses (409, code
 * "replace_unticked") instead of superseding it. 0: req is deferred. */
int submission_start_form(struct app *app, struct http_request *req,
                          const struct auth_user *viewer, const char *lab, const char *filename,
                          const char *source, size_t len, long long keep,
                          submission_form_done *done, struct api_error *e);

/* The submission object of docs/api.md (result filtered for students). */
int api_submission_get(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                       struct api_error *e);

/* What submission_read tells besides the object. */
struct submission_meta {
    long long owner; /* the submitter's user id */
    int final;       /* its status is final (status_final) */
    char lab[65];
};

/* api_submission_get, and m (NULL: not wanted) filled on 0. */
int submission_read(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                    struct submission_meta *m, struct api_error *e);

/* GET /api/submissions/{id} (submission_poll.c): answered from the
 * rendered-submission cache on the loop; a miss is read on the reader
 * (server/reader.h) and, when final, cached. HTTP_DONE with the response
 * of req filled (200 and the JSON), HTTP_DEFERRED (req answered later), or
 * -errno with e saying why and nothing sent. */
int submission_get_cached(struct app *app, struct http_request *req, const struct auth_user *u,
                          long long id, struct api_error *e);

/* The stored source; *src is malloc'd (caller frees), *filename copied. */
int api_submission_source(struct app *app, const struct auth_user *viewer, long long id, char **src,
                          size_t *len, char filename[72], struct api_error *e);

/* {"submissions":[...]} newest first. lab, user, status may be NULL;
 * limit <= 500. Items are submission objects without "result". */
int api_submissions_list(struct app *app, const struct auth_user *viewer, const char *lab,
                         const char *user, const char *status, int limit, int offset, json_t **out,
                         struct api_error *e);

/* Staff: the jobs an admin should look at: system_error, in progress,
 * queued. {"queue":[submission objects without result]}. */
int api_queue_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e);

/* The reason of the latest override of submission id into reason (""
 * when none). 1 when there is one, 0 when not. */
int submission_override_reason(struct app *app, long long id, char *reason, size_t len);

/* Submission id's overrides, newest first (at most 50): a new array of
 * {"score","reason","created_at" (Unix seconds),"by"}. 0 or -errno. */
int submission_overrides(struct app *app, long long id, json_t **out);

/* Where a runner's result lands: the submission's lab (into lab, "" when
 * there is no such submission) and its late days (0 when on time). */
void submission_late_days(struct app *app, long long id, char lab[65], double *late_days);

/* The submissions of lab a rubric change would regrade: each student's
 * latest and best finished one. Their ids (at most max) into ids; returns
 * how many there are. */
size_t submission_ids_affected(struct app *app, const char *lab, long long *ids, size_t max);
/* The same on db (the writer's connection, inside its transaction). */
size_t submission_ids_affected_on(struct db *db, const char *lab, long long *ids, size_t max);

/* Count submissions by status into counts[STATUS_COUNT]. 0 or -errno. */
int submission_count_by_status(struct app *app, long long *counts);

/* Forget the cached rendering of submission id (0: of every submission).
 * Called whenever a submissions row changes. */
void api_cache_invalidate(struct app *app, long long id);

/* Free the cache (app_close). */
void submission_cache_free(struct app *app);

#endif
