/*
 * course.h - the course's tables besides submissions: the labs as a viewer
 * sees them, rubric versions, users (roster, tokens, the scoreboard name
 * choice) and extensions. Changes are audit-logged.
 */
#ifndef CUGRADE_COURSE_H
#define CUGRADE_COURSE_H

#include "server/app.h"

/* {"labs":[{"lab","title","due","hard_deadline","open"}]} for every lab. */
int api_labs_list(struct app *app, const struct auth_user *viewer, json_t **out,
                  struct api_error *e);

/* {"lab","title","due","hard_deadline","interface","handout",...}. */
int api_lab_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                struct api_error *e);

/* Admin: {"version":N,"rubric":{...}}. */
int api_rubric_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e);

/* Admin: validate and store doc as the lab's next rubric version. */
/* The checks of a new rubric for lab (admin only, a valid rubric of this
 * lab); on success *lp, *r (free with rubric_free), *text (free) and *copy
 * (a new reference) are set. 0 or -errno with e. */
int course_rubric_prepare(struct app *app, const struct auth_user *viewer, const char *lab,
                          const json_t *doc, struct app_lab **lp, struct rubric *r, char **text,
                          json_t **copy, struct api_error *e);

/* The rows of lab's next rubric version (text, by actor) on db, inside the
 * caller's transaction (the writer's job); *version is set. 0 or -errno. */
int course_rubric_store(struct db *db, long long actor, const char *lab, const char *text,
                        int *version);

/* Loop thread, once version v is stored: it becomes l's rubric (r and copy
 * are taken over); caches that show the old one are dropped. */
void course_rubric_install(struct app *app, struct app_lab *l, struct rubric *r, json_t *copy,
                           int v, const char *by);

/* lab's rubric versions, newest first (at most 50): a new array of
 * {"version","created_at" (Unix seconds),"by" (null: the rubrics/ file)}. */
int course_rubric_versions(struct app *app, const char *lab, json_t **out);

/* The users import's rows on db, inside the caller's transaction (the
 * writer's job): users is [{"name","role","display_name"?}...] (json) or
 * a roster CSV (csv). On success *out is {"users":[{name,role,token}]}
 * (a new reference). 0 or -errno with e. A name that exists is a 409 for
 * json; the CSV (a roster, run again each term) updates or keeps it and
 * reports each row (user_admin_import: *out has "rows" too). */
int course_users_add_json(struct db *db, const struct auth_user *viewer, const json_t *users,
                          json_t **out, struct api_error *e);
int course_users_add_csv(struct db *db, const struct auth_user *viewer, const char *csv,
                         size_t len, json_t **out, struct api_error *e);

/* On the loop, once a users import or a rubric change started below is
 * stored (rc 0, out: its answer's JSON, borrowed) or refused or failed (rc
 * -errno, e says why), if the client is still there: answer req, return
 * HTTP_DONE (or HTTP_DEFERRED when it calls http_request_finish itself). */
typedef int course_write_answer(struct app *app, struct http_request *req, json_t *out, int rc,
                                const struct api_error *e);

/* Admin: create users on the writer thread (parsed and checked there too,
 * course_users_add_json/csv, in one transaction): body (taken over; NULL: req's body is taken) is a roster CSV
 * when csv, else {"users":[...]}. out is {"users":[...]}. 0 (req deferred:
 * answer is called) or -errno with e. */
int course_users_add_start(struct app *app, struct http_request *req,
                           const struct auth_user *viewer, int csv, char *body, size_t len,
                           course_write_answer *answer, struct api_error *e);

/* Admin: lab's next rubric, doc, stored by the writer thread (checked
 * here, on the loop, course_rubric_prepare: the labs are the loop's), then
 * installed (course_rubric_install); regrade: the
 * submissions the change affects (submission_ids_affected, at most 2000)
 * are requeued in the same transaction. out is {"lab", "version",
 * "affected", "regraded"} ({"lab"} when refused: a route's parameters are
 * gone once its handler returned). 0 (req deferred: answer is called)
 * or -errno with e. */
int course_rubric_put_start(struct app *app, const struct auth_user *viewer, const char *lab,
                            const json_t *doc, int regrade, struct http_request *req,
                            course_write_answer *answer, struct api_error *e);

/* Staff: {"users":[{"id","name","role","display_name","pseudonym","show_name"}]}. */
int api_users_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e);

/* Every extension: a new array of {"user","lab","due","hard_deadline"}
 * (Unix seconds, 0: the rubric's), by lab and user. 0 or -errno. */
int course_extensions_list(struct app *app, json_t **out);

/* A student chooses whether their name shows on the scoreboard, at once
 * on the loop's connection (staff_write_now; the routes use
 * staff_write_start). */
int api_show_name_set(struct app *app, const struct auth_user *viewer, int show,
                      struct api_error *e);

#endif
