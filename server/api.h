/*
 * api.h - the application: labs and rubrics in memory, the JSON API of
 * docs/api.md, and the query helpers the web pages (server/pages.c) reuse so
 * that no SQL is written twice.
 *
 * Helpers take the viewer (the authenticated user) and enforce the same
 * rules as the API: a student sees only their own submissions and the
 * filtered result; ta/admin see everything; only admins change things.
 * They return 0 or -errno and fill a struct api_error with the HTTP status,
 * the error code and a sentence for the user (the same ones the API sends).
 * JSON they return is a new reference (caller json_decref's it).
 */
#ifndef CUGRADE_API_H
#define CUGRADE_API_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "lab.h"
#include "rubric.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/http.h"
#include "server/queue.h"
#include "server/router.h"

#define API_SOURCE_MAX (256 * 1024)
/* Stored submissions per lab and hour, superseded ones included, as a
 * multiple of the rubric's max_per_hour (superseded ones are free, not
 * unbounded). */
#define API_SUPERSEDE_FACTOR 4

struct api_error {
    int status;       /* 400, 403, 404, 409, 413, 429, 500 ... */
    const char *code; /* "bad_request", "rate_limited", ... */
    char message[400];
    int retry_after; /* seconds, for 429 */
};

/* A lab with its current rubric. */
struct app_lab {
    struct lab lab;
    int has_rubric;
    struct rubric rubric; /* current version, parsed */
    json_t *rubric_doc;   /* current version, as stored */
    int rubric_version;
    struct http_buf sb_cache[4]; /* rendered scoreboards: json/csv x staff/student */
    int sb_valid[4];
};

struct app_config {
    const char *db_path;     /* var/cugrade.db */
    const char *labs_dir;    /* labs */
    const char *rubrics_dir; /* rubrics */
    double lease_s;          /* runner lease (60) */
    double sweep_s;          /* how often expired leases are swept (1) */
    double max_wait_s;       /* cap on a claim's long poll (30) */
    double header_timeout_s; /* request line + headers must arrive within (10); the body 3x */
    double idle_timeout_s;   /* keep-alive connections idle longer are closed (60) */
    double min_free_mb;      /* /healthz fails below this much free space by the db (512) */
    size_t max_conns;            /* open connections in all (10000) */
    size_t max_conns_per_client; /* per client address or IPv6 /64 (64); SIZE_MAX: no cap */
    unsigned auth_fail_limit;    /* failed credential checks per client and window (30); */
    double auth_fail_window_s;   /* ...then 429 until the window ends (60). limit 0: off */
    const char *trusted_proxies[HTTP_TRUSTED_PROXIES_MAX]; /* see struct http_limits */
};

/* Requests an anonymous client may send a body with (the sign-in form, an
 * unknown API path) get at most this much. */
#define APP_ANON_BODY_MAX (4 * 1024)

struct app_subcache;

struct app {
    uv_loop_t *loop;
    struct db *db;
    struct queue *queue;
    struct router router;
    struct http_server *http;
    struct app_lab *labs;
    size_t nlabs;
    struct app_config cfg;
    double started_at;
    struct app_subcache *subcache;
    struct auth_throttle *throttle; /* failed credential checks per client */
    uint64_t admit_refused[3];      /* at admission: 401, 403, 429 */
};

/* Open the database (must be initialized), load labs/ and rubrics/, start
 * the queue. Returns 0, or -errno with a sentence in err. */
int app_open(struct app *app, uv_loop_t *loop, const struct app_config *cfg, char *err,
             size_t errlen);

/* Install the routes and start serving on host:port. 0 or -errno. */
int app_listen(struct app *app, const char *host, int port);

/* Graceful stop: stop accepting, answer parked claims, let requests finish,
 * then close the database and call done(arg). */
void app_shutdown(struct app *app, void (*done)(void *arg), void *arg);

/* Free what app_open made (after app_shutdown's callback, or on an error). */
void app_close(struct app *app);

/* The lab called name, or NULL. */
struct app_lab *app_lab_find(struct app *app, const char *name);

/* Append the server's own Prometheus lines (connections refused, requests
 * refused at admission) to out. 0 or -ENOMEM. */
int app_metrics_write(struct app *app, struct http_buf *out);

/* Authenticate req (Bearer token, else the cugrade_session cookie). Returns
 * 0 and fills user; -ENOENT no credentials; -EACCES bad credentials. */
int app_auth(struct app *app, const struct http_request *req, struct auth_user *user);

/* Parse a request body that must be a JSON object (duplicate keys refused).
 * allow_empty: an empty body is {}. Returns 0 and a new reference in *out,
 * or -EINVAL with e = 400 malformed_json naming line and column. */
int api_json_parse(const char *body, size_t len, int allow_empty, json_t **out,
                   struct api_error *e);

/* One line to stderr: "2026-11-21T08:00:00Z cugrade-server: <message>". */
void app_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Fill req with the API's JSON error for e. */
void api_error_send(struct http_request *req, const struct api_error *e);

/* Deadlines for user in lab (an extension replaces the rubric's). */
void api_deadlines(struct app *app, const struct app_lab *l, long long user_id, double *due,
                   double *hard_deadline);

/* ISO 8601 UTC "2026-11-21T08:00:00Z" of t into buf (>= 24 bytes); "" for 0. */
void api_time_iso(double t, char *buf, size_t len);

/* {"lab","title","due","hard_deadline","open"} for every lab. */
int api_labs_list(struct app *app, const struct auth_user *viewer, json_t **out,
                  struct api_error *e);

/* {"lab","title","due","hard_deadline","interface","handout"}. */
int api_lab_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                struct api_error *e);

/* Submit a source file (the checks of POST /api/labs/{lab}/submissions:
 * role, lab open, deadlines, size, UTF-8, rate limits). On success *out is
 * {"id","status","url","late"}. */
int api_submit(struct app *app, const struct auth_user *viewer, const char *lab,
               const char *filename, const char *source, size_t len, json_t **out,
               struct api_error *e);

/* The submission object of docs/api.md (result filtered for students). */
int api_submission_get(struct app *app, const struct auth_user *viewer, long long id, json_t **out,
                       struct api_error *e);

/* The stored source; *src is malloc'd (caller frees), *filename copied. */
int api_submission_source(struct app *app, const struct auth_user *viewer, long long id, char **src,
                          size_t *len, char filename[72], struct api_error *e);

/* {"submissions":[...]} newest first. lab, user, status may be NULL;
 * limit <= 500. Items are submission objects without "result". */
int api_submissions_list(struct app *app, const struct auth_user *viewer, const char *lab,
                         const char *user, const char *status, int limit, int offset, json_t **out,
                         struct api_error *e);

/* {"lab","rows":[...]} as the viewer may see it: for students, per-lab
 * pseudonyms (unless a student opted in) and the day of the submission,
 * with no submission ids or times; for staff, names, ids and times. */
int api_scoreboard(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e);

/* The viewer's own row on lab's scoreboard: its rank and submission id
 * (a student's view of the board carries neither ids nor their name).
 * 0, -ENOENT when the viewer has no row, -errno. */
int api_scoreboard_mine(struct app *app, const struct auth_user *viewer, const char *lab, int *rank,
                        long long *submission);

/* Admin: requeue a submission. */
int api_regrade(struct app *app, const struct auth_user *viewer, long long id, struct api_error *e);

/* Admin: {"version":N,"rubric":{...}}. */
int api_rubric_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e);

/* Admin: validate and store doc as the lab's next rubric version. */
int api_rubric_put(struct app *app, const struct auth_user *viewer, const char *lab,
                   const json_t *doc, int *version, struct api_error *e);

/* Admin: create users from [{"name","role","display_name"?}] in one
 * transaction; *out is {"users":[{"name","role","token"}]}. */
int api_users_add(struct app *app, const struct auth_user *viewer, const json_t *users,
                  json_t **out, struct api_error *e);

/* Admin: the same from a roster CSV. */
int api_users_add_csv(struct app *app, const struct auth_user *viewer, const char *csv, size_t len,
                      json_t **out, struct api_error *e);

/* Staff: {"users":[{"id","name","role","display_name","pseudonym","show_name"}]}. */
int api_users_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e);

/* Admin: revoke every token of the user called name and end their web
 * sessions at once (auth_token_revoke_all); audit-logged. *out is
 * {"user","tokens_revoked","sessions_ended"}. */
int api_user_revoke(struct app *app, const struct auth_user *viewer, const char *name, json_t **out,
                    struct api_error *e);

/* Staff: override a submission's score (reason required); audit-logged. */
int api_override_add(struct app *app, const struct auth_user *viewer, long long id, double score,
                     const char *reason, struct api_error *e);

/* Admin: give user an extension in lab (0 keeps the rubric's deadline). */
int api_extension_set(struct app *app, const struct auth_user *viewer, const char *user,
                      const char *lab, double due, double hard_deadline, struct api_error *e);

/* A student chooses whether their name shows on the scoreboard. */
int api_show_name_set(struct app *app, const struct auth_user *viewer, int show,
                      struct api_error *e);

/* Staff: the jobs an admin should look at: system_error, in progress,
 * queued. {"queue":[submission objects without result]}. */
int api_queue_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e);

/* The grades CSV of GET /api/admin/export/grades.csv into out. */
int api_grades_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e);

/* The scoreboard as CSV (rank,user,display_name,...) into out. */
int api_scoreboard_csv(struct app *app, const struct auth_user *viewer, const char *lab,
                       struct http_buf *out, struct api_error *e);

/* Free space (MiB, for an unprivileged writer) on the filesystem of the
 * database's directory, into *free_mb. 0 or -errno (statvfs). */
int api_disk_free(struct app *app, double *free_mb);

/* ---- for the modules that own their routes (lateday, regrade, similarity) ---- */

#define API_ROLE(r) (1u << (r))

/* Fill e (status, code, sentence) and return the matching -errno. */
int api_fail(struct api_error *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* e = 500/503 internal for rc; returns -EIO-ish. */
int api_internal(struct api_error *e, int rc);

/* Authenticate req, check the CSRF header of cookie-signed writes and that
 * the role is in roles (API_ROLE bits). 0, or -1 with the error sent. */
int api_need(struct app *app, struct http_request *req, struct auth_user *u, unsigned roles);

/* Send j (a new reference, stolen; NULL: 500) with status. HTTP_DONE. */
int api_send_json(struct http_request *req, int status, json_t *j);

/* ---- between app.c and api.c ---- */

/* The API's route table (api.c), installed by app_listen. */
extern const struct route api_routes[];
extern const size_t api_nroutes;

/* Forget the cached rendering of submission id (0: of every submission).
 * Called whenever a submissions row changes. */
void api_cache_invalidate(struct app *app, long long id);

#endif
