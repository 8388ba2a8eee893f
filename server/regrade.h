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


struct app;
struct api_error;
struct auth_user;

#define REGRADE_REASON_MAX 2000 /* characters (UTF-8 code points) */
#define REGRADE_ANSWER_MAX 2000

extern const char regrade_schema[];

/* Student: open a request about submission id. *out is the request object
 * {"id","submission","lab","user","reason","status":"open",...}. */
int regrade_request_open(struct app *app, const struct auth_user *viewer, long long id,
                         const char *reason, json_t **out, struct api_error *e);

/* Staff: answer request rid. action: "none", "regrade" (requeue) or
 * "override" (score required). *out is the answered request. */
int regrade_request_answer(struct app *app, const struct auth_user *viewer, long long rid,
                           const char *answer, const char *action, double score, json_t **out,
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
