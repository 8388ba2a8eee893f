/*
 * app.h - the course state at the bottom of the server: struct app (the
 * database, the queue, the labs with their current rubrics and the
 * configuration), the course's rules about time (deadlines with extensions,
 * "is this lab open", the late penalty), and the error every noun returns.
 *
 * Everything above (the nouns: submission, scoreboard, course, runner,
 * audit; the views: *_api.c, *_page.c; server.c) includes this; this
 * includes nothing of theirs.
 *
 * Helpers return 0 or -errno and fill a struct api_error with the HTTP
 * status, the error code and a sentence for the user (the same ones the
 * API sends). JSON they return is a new reference (caller json_decref's it).
 */
#ifndef CUGRADE_APP_H
#define CUGRADE_APP_H

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
    unsigned sb_gen; /* bumped by every scoreboard_invalidate of the lab */
    void *sb_job[4]; /* a miss being ranked on the reader (scoreboard_api.c) */
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
    size_t max_buffered;         /* bytes of unsent answers in all (64 MiB); bodies 4x */
    unsigned auth_fail_limit;    /* failed checks of one credential per window (30); */
    double auth_fail_window_s;   /* ...then 429 until the window ends (60). limit 0: off */
    const char *trusted_proxies[HTTP_TRUSTED_PROXIES_MAX]; /* see struct http_limits */
};

/* Requests an anonymous client may send a body with (the sign-in form, an
 * unknown API path) get at most this much. */
#define APP_ANON_BODY_MAX (4 * 1024)

struct app_subcache;
struct app_stop;

/* A rubric replaced while a reader job's view of the app (server/appview.h)
 * may still read it: kept until the last view ends. */
struct app_retired {
    struct rubric rubric;
    int has_rubric;
    json_t *doc;
    struct app_retired *next;
};

struct app {
    uv_loop_t *loop;
    struct db *db;         /* the loop thread's connection: reads, small writes */
    struct writer *writer; /* durable writes off the loop (server/writer.h) */
    struct reader *reader; /* reads off the loop (server/reader.h) */
    struct queue *queue;
    struct router router;
    struct http_server *http;
    struct app_lab *labs;
    size_t nlabs;
    struct app_config cfg;
    double started_at;
    struct app_subcache *subcache;  /* server/submission.c */
    struct auth_throttle *throttle; /* failed credential checks per client */
    uint64_t admit_refused[3];      /* at admission: 401, 403, 429 */
    unsigned works;                 /* uv_queue_work items not yet back on the loop */
    struct app_stop *stopping;      /* app_shutdown waits for them */
    unsigned views;                 /* reader jobs' views alive (server/appview.h) */
    struct app_retired *retired;    /* rubrics replaced while views were alive */
};

/* A handler queued work on libuv's pool (app_work_begin) or got it back
 * (app_work_end, first thing in the after-work callback): a stop waits for
 * every such item, whose request may be gone (the client hung up) but
 * whose callback still uses the app. Defined in server/server.c. */
void app_work_begin(struct app *app);
void app_work_end(struct app *app);

/* ---- errors ---- */

/* Fill e and return the -errno that goes with status (400 -EINVAL, 401
 * -EACCES, 403 -EPERM, 404 -ENOENT, 409 -EEXIST, 413 -EFBIG, 415 -ENOTSUP,
 * 429 -EAGAIN, else -EIO). */
int api_fail(struct api_error *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* e = our own failure rc (-errno): 503 for a busy database or a full disk,
 * else 500. Returns rc's -errno equivalent as api_fail does. */
int api_internal(struct api_error *e, int rc);

/* The user called name, read on db into *u: 0, or -errno with e (404 when
 * there is none, else api_internal's). */
int api_user_get(struct db *db, const char *name, struct auth_user *u, struct api_error *e);

/* Parse a request body that must be a JSON object (duplicate keys refused).
 * allow_empty: an empty body is {}. Returns 0 and a new reference in *out,
 * or -EINVAL with e = 400 malformed_json naming line and column. */
int api_json_parse(const char *body, size_t len, int allow_empty, json_t **out,
                   struct api_error *e);

/* ---- labs and time ---- */

/* Load labs/ and rubrics/ into app->labs (the database open, in one
 * transaction: the labs table and new rubric versions). 0, or -errno with
 * a sentence in err. */
int app_labs_load(struct app *app, char *err, size_t errlen);

/* Free app->labs (their rubrics and cached scoreboards) and the rubrics
 * kept for views (app->retired). */
void app_labs_free(struct app *app);

/* The lab called name, or NULL. */
struct app_lab *app_lab_find(struct app *app, const char *name);

/* A request's credential as admission resolved it (server.c), kept in
 * req->user (freed by the HTTP server): the answer app_auth gives the
 * handler, so that no handler looks it up again on the loop. */
struct app_cred {
    int rc;      /* app_auth's; -EINPROGRESS while the reader looks it up */
    int counted; /* a failure counted by the throttle */
    struct auth_user u;
};

/* Authenticate req (Bearer token, else the cugrade_session cookie): the
 * answer admission found (req->user), else a lookup now. Returns 0 and
 * fills user; -ENOENT no credentials; -EACCES bad credentials; -errno. */
int app_auth(struct app *app, const struct http_request *req, struct auth_user *user);

/* One line to stderr: "2026-11-21T08:00:00Z cugrade-server: <message>". */
void app_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Deadlines for user in lab (an extension replaces the rubric's). */
void api_deadlines(struct app *app, const struct app_lab *l, long long user_id, double *due,
                   double *hard_deadline);
/* The same read on db (the writer's, inside its job). */
void api_deadlines_on(struct db *db, const struct app_lab *l, long long user_id, double *due,
                      double *hard_deadline);

/* Where a lab stands for a student at now, given their deadlines. */
enum app_lab_state {
    APP_LAB_OPEN,         /* on time */
    APP_LAB_LATE,         /* past due, accepted late */
    APP_LAB_NO_RUBRIC,    /* not open: no rubric yet */
    APP_LAB_NOT_YET,      /* before the rubric's opens */
    APP_LAB_LATE_REFUSED, /* past due and the late policy refuses */
    APP_LAB_CLOSED,       /* past the hard deadline */
};

/* The one rule for "may a student submit now": opens, due, late policy,
 * hard deadline. */
enum app_lab_state app_lab_state(const struct app_lab *l, double due, double hard, double now);

/* 1 when a student may submit to l now (APP_LAB_OPEN or APP_LAB_LATE). */
int app_lab_open_now(const struct app_lab *l, double due, double hard, double now);

/* The late penalty in percent (0..100) for a submission late_days late. */
double app_late_penalty_percent(const struct app_lab *l, double late_days);

/* ISO 8601 UTC "2026-11-21T08:00:00Z" of t into buf (>= 24 bytes); "" for 0. */
void api_time_iso(double t, char *buf, size_t len);

/* t as a JSON ISO string, or null for 0. A new reference. */
json_t *app_json_time(double t);

/* 1 when the database answers a trivial query. */
int app_db_ok(struct app *app);

/* Free space (MiB, for an unprivileged writer) on the filesystem of the
 * database's directory, into *free_mb. 0 or -errno (statvfs). */
int api_disk_free(struct app *app, double *free_mb);

#endif
