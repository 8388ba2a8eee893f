/*
 * page.h - what the web pages (server/<noun>_page.c) share: one page being
 * rendered (struct page), the layout, formatting, status words, forms and
 * CSRF checks, and the page runner.
 *
 * Every page is server-rendered HTML over the nouns (submission.h,
 * scoreboard.h, course.h, ...), so a page and the JSON API can never
 * disagree about who may see what. Every page:
 *   - is built in an html_buf where user-controlled text goes through the
 *     escaping conversions of html.h (stored XSS via file names, source,
 *     compiler output, display names);
 *   - carries a strict Content-Security-Policy with no 'unsafe-inline': the
 *     only script is /static/app.js, and no element has an on* attribute,
 *     so even a missed escape cannot run code;
 *   - is sent with X-Content-Type-Options, frame-ancestors 'none' /
 *     X-Frame-Options (clickjacking) and Referrer-Policy no-referrer.
 * Every form that changes something is a POST carrying the session's CSRF
 * token in a hidden field; the sign-in form uses a double-submit cookie
 * (login CSRF). Everything works without JavaScript; app.js only adds live
 * updates and client-side sorting (docs/web.md).
 *
 * Each page file owns a route table (server/views.h); router.c matches it
 * like the API's, counts it in the per-route metrics, and runs a page
 * route's handler through pages_run(): a session is required (else the
 * sign-in page), /admin/... pages need staff, and a handler returning -1
 * becomes the 404 page.
 */
#ifndef CUGRADE_PAGE_H
#define CUGRADE_PAGE_H

#include <jansson.h>
#include <stddef.h>

#include "server/app.h"
#include "server/html.h"
#include "server/http.h"
#include "server/multipart.h"
#include "server/router.h"

/* Body cap for page requests: a submitted source is at most 256 KiB, plus
 * multipart framing and the other fields; a roster CSV pasted by an admin
 * may be larger. */
#define PAGES_BODY_MAX (1024 * 1024)
#define FORM_FIELDS_MAX 32

/* A route table entry for a page: handler fn(struct page *). */
#define PAGE_ROUTE(method, pattern, fn) {(method), (pattern), NULL, PAGES_BODY_MAX, NULL, (fn), 0}

/* The same for a GET page whose handler only reads the database: it runs
 * off the loop (page_job_start), against a view of the app
 * (server/appview.h), never the loop's state: no writer, no cache of the
 * loop's, no reader job of its own. */
#define PAGE_ROUTE_READ(method, pattern, fn)                                                      \
    {(method), (pattern), NULL, PAGES_BODY_MAX, NULL, (fn), 1}

struct form_field {
    char *name;
    const char *value;          /* NUL-terminated */
    size_t len;
};

struct page {
    struct app *app;
    struct http_request *req;
    struct auth_user user;
    int authed;                 /* 1: user is valid */
    struct html_buf b;
    int refresh;                /* <noscript> meta refresh seconds, 0: none */
    /* a parsed POST body */
    struct form_field fields[FORM_FIELDS_MAX];
    size_t nfields;
    char *form_mem;             /* decoded form-urlencoded values */
    struct multipart_part parts[MULTIPART_MAX_PARTS];
    size_t nparts;
    char *part_mem;             /* NUL-terminated copies of text parts */
};

/* Start page p for req: zeroed, an empty buffer, the viewer authenticated
 * from the token or session (p->authed). Free with page_free. */
void page_open(struct page *p, struct app *app, struct http_request *req);

/* The router's page runner (router_init): run page route rt's handler for
 * req as described above; a GET of a PAGE_ROUTE_READ route on the reader
 * (page_job_start); and an API route marked off_loop (a GET that only
 * reads and never defers) there too. Returns HTTP_DONE or HTTP_DEFERRED. */
int pages_run(struct app *app, struct http_request *req, const struct route *rt);

/* The same, here and now, on app (the loop's, or a reader job's view).
 * Returns HTTP_DONE, or HTTP_DEFERRED from a handler that deferred. */
int pages_run_here(struct app *app, struct http_request *req, const struct route *rt);

/* Loop thread: build what pages share lazily (the static files' version
 * tags, the client wheel's name) before a reader job renders a page. */
void pages_warm(void);

/* What a page job runs on the reader: fn(view, copy of the request, rt),
 * filling the copy's response; HTTP_DONE (never HTTP_DEFERRED). */
typedef int (*page_job_fn)(struct app *view, struct http_request *req, const struct route *rt);

/* Run fn on the reader (server/page_job.c): req's request copied, with the
 * credential admission found; fn's response becomes req's on the loop,
 * then req is finished. Returns HTTP_DEFERRED; HTTP_DONE when fn ran here
 * on the loop (a database in memory: reader_sync) or the job could not be
 * queued (a 503 page). */
int page_job_start(struct app *app, struct http_request *req, const struct route *rt,
                   page_job_fn fn);

/* What a POST handler's page rendered again gets (page_again): a status,
 * a number and strings (NULL: none), as the handler's renderer takes them. */
#define PAGE_AGAIN_STRS 6
struct page_view;
struct page_again {
    int status;
    long long n;
    const char *s[PAGE_AGAIN_STRS];
    int (*view)(struct page_view *v, const struct page_again *a); /* page_view_again's */
};

/* A page rendered again from a: HTTP_DONE, or -1 for the 404 page. */
typedef int (*page_again_fn)(struct page *p, const struct page_again *a);

/* Loop thread, in a POST handler whose writes are done: the page fn
 * renders from a (the form again with what went wrong, or with what was
 * saved: it reads the database) is rendered on the reader, as a GET page
 * is (page_job_start), from copies of a's strings and of p's request, on a
 * page of its own (its form parsed again from the copy's body).
 * Returns HTTP_DEFERRED; or fn(p, a) here when reads cannot leave the loop
 * (reader_sync); or HTTP_DONE with a 503 page when the job could not be
 * queued. */
int page_again(struct page *p, page_again_fn fn, const struct page_again *a);

/* The router's fallback for paths no route matches: a static file's 405,
 * the 405 page, the sign-in redirect, the staff-only 403, or the 404 page.
 * Returns HTTP_DONE. */
int pages_handle(struct app *app, struct http_request *req);

/* The sign-in cookie of the login form (a double-submit CSRF token). */
#define LOGIN_COOKIE "cugrade_login"

/* The sign-in page with a sentence (problem, NULL: none) and status; it
 * sets a fresh LOGIN_COOKIE. Returns HTTP_DONE. */
int page_login(struct page *p, const char *problem, int status);

/* The sign-in page for a POST whose session ended (401), saying so. */
int page_login_again(struct page *p);

/* A positive decimal id spelled as api_parse_id accepts it (no leading
 * zero or sign, at most 18 digits), or 0. */
long long page_parse_id(const char *s);

int page_is_staff(const struct page *p);

int page_is_admin(const struct page *p);

/* Security headers for every answer of the web interface. */
void page_security_headers(struct http_request *req);

void page_set_cookie(struct http_request *req, const char *name, const char *value, long max_age);

void page_free(struct page *p);

/* Send the rendered buffer as the response with status. */
int page_send(struct page *p, int status);

int page_redirect(struct page *p, const char *location);

/* ISO string from the API to Unix seconds (0 when absent or bad). */
double page_iso_to_time(const char *s);

void put_when(struct html_buf *b, double t);

void put_when_iso(struct html_buf *b, const char *iso);

/* A score: "72.5 / 100" with at most 2 decimals. */
void put_score(struct html_buf *b, json_t *score, json_t *max);

const char *page_jstr(const json_t *o, const char *key);

double page_jnum(const json_t *o, const char *key, double dflt);

const char *page_status_words(const char *st);

void put_status(struct html_buf *b, const char *st);

/* Every data table sits in a box that scrolls sideways on its own on a
 * narrow screen (the page itself never does), which a keyboard can focus
 * and scroll, named for screen readers; "</table></div>" closes it. */
#define TABLE_BOX(label) "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"" label "\">"

void page_begin(struct page *p, const char *title);

int page_end(struct page *p, int status);

void page_csrf_field(struct page *p);

/* An error page with a sentence that says what happened and what to do. */
int page_error(struct page *p, int status, const char *what, const char *todo);

int page_api_error(struct page *p, const struct api_error *e);

/* Parse the POST body (urlencoded or multipart) into fields. Text parts of
 * a multipart body become fields too (copied, NUL-terminated); file parts
 * stay in p->parts. Returns 0 or -errno. */
int page_form_parse(struct page *p);

const char *page_field(const struct page *p, const char *name);

const struct form_field *page_field_get(const struct page *p, const char *name);

/* Check a POST: parse the body, then demand the session's CSRF token.
 * A request authenticated by a Bearer token is not exposed to CSRF (a
 * browser never adds that header by itself) and needs none. Returns 0 to go
 * on, or -EPERM after rendering the refusal (400/403/500): the caller then
 * returns HTTP_DONE without touching the response. */
int page_post_check(struct page *p);

/* The student's scoreboard name and the toggle between pseudonym and real
 * name; the form returns to lab's scoreboard (or to /labs when lab is ""). */
void put_show_name(struct page *p, const char *lab);

/* A small table of submissions (history, lab page, TA list). */
void put_submissions_table(struct page *p, json_t *subs, int show_user, int show_lab);

#endif
