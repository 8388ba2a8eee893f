/*
 * pages.c - the web interface (see pages.h and docs/web.md).
 *
 * Server-rendered HTML over the query helpers of api.h, so a page and the
 * JSON API can never disagree about who may see what. Every page:
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
 * updates and client-side sorting.
 */
#include "server/pages.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/html.h"
#include "server/markdown.h"
#include "server/multipart.h"
#include "server/queue.h"

#define LOGIN_COOKIE "cugrade_login"
#define FORM_FIELDS_MAX 32

/* ---- static files, embedded in the binary ------------------------------
 * The stylesheet and script are linked in with .incbin, so the server
 * needs no files at run time and a deployment can never serve a stylesheet
 * from another version. (The Makefile makes pages.o depend on
 * server/static/, since make cannot see an .incbin.) */
#define PAGES_EMBED(sym, file)                                                                     \
    __asm__(".section .rodata\n"                                                                   \
            ".balign 16\n"                                                                         \
            ".hidden " #sym "\n.globl " #sym "\n" #sym ":\n"                                       \
            ".incbin \"" file "\"\n"                                                               \
            ".hidden " #sym "_end\n.globl " #sym "_end\n" #sym "_end:\n"                           \
            ".byte 0\n"                                                                            \
            ".previous\n")

PAGES_EMBED(pages__style_css, "server/static/style.css");
PAGES_EMBED(pages__app_js, "server/static/app.js");
extern const char pages__style_css[], pages__style_css_end[];
extern const char pages__app_js[], pages__app_js_end[];

struct static_file {
    const char *path;
    const char *type;
    const char *data;
    const char *end;
    char etag[20];              /* "\"" + 16 hex + "\"" */
};

static struct static_file static_files[] = {
    {"/static/style.css", "text/css; charset=utf-8", pages__style_css, pages__style_css_end, ""},
    {"/static/app.js", "text/javascript; charset=utf-8", pages__app_js, pages__app_js_end, ""},
};

/* The version tag of a static file (a hash of its bytes), used both as the
 * ETag and as ?v= in the page's links so browsers may cache it for a year. */
static const char *static_etag(struct static_file *f)
{
    if (f->etag[0] == '\0') {
        char hex[65];
        auth_sha256_hex(f->data, (size_t)(f->end - f->data), hex);
        snprintf(f->etag, sizeof(f->etag), "\"%.16s\"", hex);
    }
    return f->etag;
}

/* The link to a static file with its version: /static/app.js?v=0123abcd... */
static void static_link(struct html_buf *b, int idx)
{
    char v[17];

    memcpy(v, static_etag(&static_files[idx]) + 1, 16); /* the hex between the quotes */
    v[16] = '\0';
    html_fmt(b, "%s?v=%s", static_files[idx].path, v);
}

/* ---- one page being rendered -------------------------------------------- */

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

static int is_staff(const struct page *p)
{
    return p->authed && auth_role_staff(p->user.role);
}

static int is_admin(const struct page *p)
{
    return p->authed && p->user.role == AUTH_ADMIN;
}

/* Security headers for every answer of the web interface. */
static void security_headers(struct http_request *req)
{
    /* No inline script or style at all: an injected <script> or on*=
     * attribute that slipped past escaping still does not run. */
    http_response_header(req, "Content-Security-Policy",
                         "default-src 'self'; script-src 'self'; style-src 'self'; "
                         "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                         "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    /* A source file served as text must never be sniffed into HTML. */
    http_response_header(req, "X-Content-Type-Options", "nosniff");
    /* Clickjacking, for browsers that ignore frame-ancestors. */
    http_response_header(req, "X-Frame-Options", "DENY");
    /* Submission ids in URLs are nobody else's business. */
    http_response_header(req, "Referrer-Policy", "no-referrer");
}

/* 1 when the request came over TLS (directly or through a proxy that says
 * so): then cookies get the Secure flag. */
static int request_is_https(const struct http_request *req)
{
    const char *xf = http_request_header(req, "X-Forwarded-Proto");
    return xf && strncasecmp(xf, "https", 5) == 0;
}

static void set_cookie(struct http_request *req, const char *name, const char *value, long max_age)
{
    char line[256];

    /* HttpOnly: script (an XSS) cannot read the session. SameSite=Strict:
     * no other site can make the browser send it (CSRF, cross-site leaks). */
    snprintf(line, sizeof(line), "%s=%s; Path=/; Max-Age=%ld; HttpOnly; SameSite=Strict%s", name,
             value, max_age, request_is_https(req) ? "; Secure" : "");
    http_response_header(req, "Set-Cookie", line);
}

static void page_free(struct page *p)
{
    html_buf_free(&p->b);
    for (size_t i = 0; i < p->nfields; i++)
        free(p->fields[i].name);
    free(p->form_mem);
    free(p->part_mem);
}

/* Send the rendered buffer as the response with status. */
static int page_send(struct page *p, int status)
{
    size_t len = 0;
    char *html = html_buf_take(&p->b, &len);

    security_headers(p->req);
    /* Pages show grades, tokens and sources: never store them in caches. */
    http_response_header(p->req, "Cache-Control", "no-store");
    if (html == NULL) {
        http_response_body(p->req, 500, "text/plain; charset=utf-8",
                           "The server ran out of memory; try again.\n", 41);
    } else {
        http_response_body(p->req, status, "text/html; charset=utf-8", html, len);
        free(html);
    }
    return HTTP_DONE;
}

static int redirect(struct page *p, const char *location)
{
    security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    http_response_redirect(p->req, 303, location);
    return HTTP_DONE;
}

/* ---- time and number formatting ------------------------------------------ */

static void fmt_time(char *buf, size_t len, double t)
{
    time_t s = (time_t)t;
    struct tm tm;

    if (t <= 0 || !gmtime_r(&s, &tm)) {
        snprintf(buf, len, "-");
        return;
    }
    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

/* "in 3 days", "2 hours ago": what a person reads first. */
static void fmt_relative(char *buf, size_t len, double t, double now)
{
    double d = t - now, a = fabs(d);
    const char *unit;
    long n;

    if (a < 60) {
        snprintf(buf, len, d >= 0 ? "in under a minute" : "just now");
        return;
    }
    if (a < 3600) {
        n = (long)(a / 60); unit = "minute";
    } else if (a < 86400 * 2) {
        n = (long)(a / 3600); unit = "hour";
    } else {
        n = (long)(a / 86400); unit = "day";
    }
    snprintf(buf, len, d >= 0 ? "in %ld %s%s" : "%ld %s%s ago", n, unit, n == 1 ? "" : "s");
}

/* ISO string from the API to Unix seconds (0 when absent or bad). */
static double iso_to_time(const char *s)
{
    double t = 0;

    if (s == NULL || *s == '\0' || rubric_time_parse(s, &t) != 0)
        return 0;
    return t;
}

static void put_when(struct html_buf *b, double t)
{
    char abs_[40], rel[40];

    if (t <= 0) {
        html_raw(b, "<span class=\"muted\">-</span>");
        return;
    }
    fmt_time(abs_, sizeof(abs_), t);
    fmt_relative(rel, sizeof(rel), t, db_now());
    html_fmt(b, "<time datetime=\"%s\" title=\"%s\">%s</time> <span class=\"muted small\">(%s)</span>",
             abs_, abs_, abs_, rel);
}

static void put_when_iso(struct html_buf *b, const char *iso)
{
    put_when(b, iso_to_time(iso));
}

/* A score: "72.5 / 100" with at most 2 decimals. */
static void put_score(struct html_buf *b, json_t *score, json_t *max)
{
    char s[32], m[32];

    if (!json_is_number(score)) {
        html_raw(b, "<span class=\"muted\">-</span>");
        return;
    }
    snprintf(s, sizeof(s), "%.2f", json_number_value(score));
    /* 72.50 -> 72.5, 100.00 -> 100 */
    for (char *e = s + strlen(s) - 1; strchr(s, '.') && (*e == '0' || *e == '.'); e--) {
        int dot = *e == '.';
        *e = '\0';
        if (dot)
            break;
    }
    if (json_is_number(max)) {
        snprintf(m, sizeof(m), "%g", json_number_value(max));
        html_fmt(b, "%s / %s", s, m);
    } else {
        html_fmt(b, "%s", s);
    }
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double jnum(const json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* ---- status words a student understands ----------------------------------- */

static const char *status_class(const char *st)
{
    if (strcmp(st, "graded") == 0)
        return "good";
    if (strcmp(st, "queued") == 0 || queue_status_in_progress(st))
        return "busy";
    if (strcmp(st, "system_error") == 0)
        return "warn";
    if (strcmp(st, "superseded") == 0)
        return ""; /* nobody's failure */
    return "bad";
}

static const char *status_words(const char *st)
{
    static const struct { const char *st, *words; } w[] = {
        {"queued", "waiting in the queue"},
        {"compiling", "compiling"},
        {"checking", "checking correctness"},
        {"running", "running the sanitizers"},
        {"timing", "timing"},
        {"graded", "graded"},
        {"compile_error", "did not compile"},
        {"rejected", "rejected"},
        {"runtime_error", "crashed while running"},
        {"timeout", "ran out of time"},
        {"system_error", "grading failed (our fault)"},
        {"superseded", "replaced by a newer submission"},
    };
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        if (strcmp(w[i].st, st) == 0)
            return w[i].words;
    return st;
}

static void put_status(struct html_buf *b, const char *st)
{
    html_fmt(b, "<span class=\"badge %R\" data-status=\"%s\">%s</span>", status_class(st), st,
             status_words(st));
}

/* ---- layout ------------------------------------------------------------------ */

/* Every data table sits in a box that scrolls sideways on its own on a
 * narrow screen (the page itself never does), which a keyboard can focus
 * and scroll, named for screen readers; "</table></div>" closes it. */
#define TABLE_BOX(label) "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"" label "\">"

static void page_begin(struct page *p, const char *title)
{
    struct html_buf *b = &p->b;

    html_raw(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html_fmt(b, "<title>%s - cugrade</title>\n<link rel=\"stylesheet\" href=\"", title);
    static_link(b, 0);
    html_raw(b, "\">\n<script src=\"");
    static_link(b, 1);
    html_raw(b, "\" defer></script>\n");
    if (p->refresh > 0)
        html_fmt(b, "<noscript><meta http-equiv=\"refresh\" content=\"%d\"></noscript>\n",
                 p->refresh);
    html_raw(b, "</head>\n<body>\n<header class=\"top\"><a class=\"brand\" href=\"/\">cugrade</a>\n");
    if (p->authed) {
        html_raw(b, "<nav aria-label=\"main\"><a href=\"/labs\">Labs</a>");
        if (is_staff(p))
            html_raw(b, "<a href=\"/submissions\">Submissions</a><a href=\"/audit\">Audit log</a>");
        else
            html_raw(b, "<a href=\"/submissions\">My submissions</a>");
        if (is_admin(p))
            html_raw(b, "<a href=\"/admin/users\">Users</a><a href=\"/admin/deadlines\">Deadlines</a>"
                        "<a href=\"/admin/queue\">Queue</a><a href=\"/admin/exports\">Exports</a>");
        html_raw(b, "</nav>\n<div class=\"who\">");
        html_fmt(b, "<span>%s</span> <span class=\"role\">%s</span>",
                 p->user.display_name[0] ? p->user.display_name : p->user.name,
                 auth_role_name(p->user.role));
        if (p->user.via_session)
            html_fmt(b, "<form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" "
                        "value=\"%s\"><button type=\"submit\">Sign out</button></form>",
                     p->user.csrf);
        html_raw(b, "</div>");
    }
    html_raw(b, "</header>\n<main>\n");
}

static int page_end(struct page *p, int status)
{
    html_raw(&p->b, "</main>\n<footer>cugrade &middot; times are UTC &middot; "
                    "<a href=\"/help\">help</a></footer>\n</body></html>\n");
    return page_send(p, status);
}

static void csrf_field(struct page *p)
{
    html_fmt(&p->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", p->user.csrf);
}

/* An error page with a sentence that says what happened and what to do. */
static int page_error(struct page *p, int status, const char *what, const char *todo)
{
    html_buf_free(&p->b);
    p->refresh = 0;
    page_begin(p, what);
    html_fmt(&p->b, "<h1>%s</h1>\n<div class=\"notice bad\"><p>%s</p></div>\n", what, todo);
    html_raw(&p->b, "<p><a href=\"/labs\">Back to the labs</a></p>\n");
    return page_end(p, status);
}

static int page_api_error(struct page *p, const struct api_error *e)
{
    const char *what = e->status == 404   ? "Not found"
                       : e->status == 403 ? "Not allowed"
                       : e->status == 429 ? "Slow down"
                       : e->status >= 500 ? "Something broke on our side"
                                          : "That did not work";
    return page_error(p, e->status ? e->status : 500, what, e->message);
}

/* ---- forms ------------------------------------------------------------------ */

/* Parse an application/x-www-form-urlencoded body into p->fields. Returns 0
 * or -EINVAL (a bad escape) / -ENOMEM. */
static int form_parse_urlencoded(struct page *p, const char *body, size_t len)
{
    const char *s = body, *end = body + len;
    char *mem;
    size_t used = 0;

    mem = malloc(len + FORM_FIELDS_MAX + 1);
    if (mem == NULL)
        return -ENOMEM;
    p->form_mem = mem;
    while (s < end && p->nfields < FORM_FIELDS_MAX) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(s, '=', (size_t)(stop - s));
        const char *kend = eq ? eq : stop;
        char name[64];
        long n;

        if (kend > s) {
            if ((size_t)(kend - s) >= sizeof(name))
                goto next;
            n = http_url_decode(s, (size_t)(kend - s), name, 1);
            if (n < 0)
                return -EINVAL;
            n = eq ? http_url_decode(eq + 1, (size_t)(stop - eq - 1), mem + used, 1) : 0;
            if (n < 0)
                return -EINVAL;
            mem[used + (size_t)n] = '\0';
            p->fields[p->nfields].name = strdup(name);
            if (p->fields[p->nfields].name == NULL)
                return -ENOMEM;
            p->fields[p->nfields].value = mem + used;
            p->fields[p->nfields].len = (size_t)n;
            p->nfields++;
            used += (size_t)n + 1;
        }
    next:
        s = stop + 1;
    }
    return 0;
}

/* Parse the POST body (urlencoded or multipart) into fields. Text parts of
 * a multipart body become fields too (copied, NUL-terminated); file parts
 * stay in p->parts. Returns 0 or -errno. */
static int form_parse(struct page *p)
{
    const char *ct = http_request_header(p->req, "Content-Type");
    char boundary[128], err[160];
    size_t total = 0, used = 0;

    if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
        if (multipart_boundary(ct, boundary, sizeof(boundary)) != 0)
            return -EINVAL;
        if (multipart_parse(p->req->body, p->req->body_len, boundary, p->parts,
                            MULTIPART_MAX_PARTS, &p->nparts, err, sizeof(err)) != 0)
            return -EINVAL;
        for (size_t i = 0; i < p->nparts; i++)
            total += p->parts[i].len + 1;
        p->part_mem = malloc(total + 1);
        if (p->part_mem == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < p->nparts && p->nfields < FORM_FIELDS_MAX; i++) {
            if (p->parts[i].has_filename)
                continue;
            memcpy(p->part_mem + used, p->parts[i].data, p->parts[i].len);
            p->part_mem[used + p->parts[i].len] = '\0';
            p->fields[p->nfields].name = strdup(p->parts[i].name);
            if (p->fields[p->nfields].name == NULL)
                return -ENOMEM;
            p->fields[p->nfields].value = p->part_mem + used;
            p->fields[p->nfields].len = p->parts[i].len;
            p->nfields++;
            used += p->parts[i].len + 1;
        }
        return 0;
    }
    return form_parse_urlencoded(p, p->req->body ? p->req->body : "", p->req->body_len);
}

static const char *field(const struct page *p, const char *name)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (strcmp(p->fields[i].name, name) == 0)
            return p->fields[i].value;
    return NULL;
}

static const struct form_field *field_get(const struct page *p, const char *name)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (strcmp(p->fields[i].name, name) == 0)
            return &p->fields[i];
    return NULL;
}

/* Check a POST: parse the body, then demand the session's CSRF token.
 * A request authenticated by a Bearer token is not exposed to CSRF (a
 * browser never adds that header by itself) and needs none. Returns 0 to go
 * on, or -EPERM after rendering the refusal (400/403/500): the caller then
 * returns HTTP_DONE without touching the response. */
static int post_check(struct page *p)
{
    const char *csrf;
    int rc = form_parse(p);

    if (rc == -ENOMEM) {
        page_error(p, 500, "Out of memory", "The server ran out of memory; try again in a minute.");
        return -EPERM;
    }
    if (rc < 0) {
        page_error(p, 400, "That form did not arrive intact",
                   "The browser sent a form the server could not read. Reload the page and send it again.");
        return -EPERM;
    }
    if (!p->user.via_session)
        return 0;
    csrf = field(p, "csrf");
    /* Cross-site request forgery: another site can make the browser post a
     * form here, but it cannot read the token that is in our pages. */
    if (csrf == NULL || !auth_equal(csrf, p->user.csrf)) {
        page_error(p, 403, "This form has expired",
                   "The form was missing its security token, or it came from an old page. "
                   "Go back, reload the page, and send it again.");
        return -EPERM;
    }
    return 0;
}

/* ---- sign in / sign out --------------------------------------------------------- */

static int page_login(struct page *p, const char *problem, int status)
{
    char token[65];

    /* Login CSRF: a double-submit cookie, since there is no session yet
     * (otherwise another site could sign a student in as the attacker and
     * collect what they submit). */
    if (auth_random_hex(32, token) != 0)
        return page_error(p, 500, "Something broke on our side", "No randomness; try again.");
    set_cookie(p->req, LOGIN_COOKIE, token, 3600);
    page_begin(p, "Sign in");
    html_raw(&p->b, "<div class=\"login\"><h1>Sign in</h1>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    if (http_request_query(p->req, "bye"))
        html_raw(&p->b, "<div class=\"notice good\"><p>You are signed out.</p></div>\n");
    html_raw(&p->b,
             "<form id=\"login\" class=\"stack\" method=\"post\" action=\"/login\">\n");
    html_fmt(&p->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">\n", token);
    html_raw(&p->b,
             "<label for=\"token\">Your course token</label>\n"
             "<input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"current-password\" "
             "required placeholder=\"cgs_...\" spellcheck=\"false\">\n"
             "<button type=\"submit\">Sign in</button>\n</form>\n"
             "<p class=\"muted small\">Your token came from the course staff (it starts with "
             "<code>cgs_</code> for students). The same token works with <code>curl</code>: "
             "<code>curl -H 'Authorization: Bearer cgs_...' -F file=@kernel.cu "
             "http://this-server/api/labs/LAB/submissions</code>.</p></div>\n");
    return page_end(p, status);
}

static int post_login(struct page *p)
{
    char cookie[96], session[65], csrf[65];
    const char *token, *form_csrf;
    struct auth_user u;
    int rc;

    if (form_parse(p) != 0)
        return page_login(p, "The form did not arrive intact. Try again.", 400);
    form_csrf = field(p, "csrf");
    if (http_request_cookie(p->req, LOGIN_COOKIE, cookie, sizeof(cookie)) != 0 || form_csrf == NULL ||
        !auth_equal(cookie, form_csrf))
        return page_login(p, "The sign-in form expired (or your browser blocks cookies). "
                             "Enter your token again; cookies must be enabled for this site.", 403);
    token = field(p, "token");
    if (token == NULL || *token == '\0')
        return page_login(p, "Enter your course token.", 400);
    while (*token == ' ' || *token == '\t')
        token++;
    char trimmed[AUTH_TOKEN_LEN + 8];
    snprintf(trimmed, sizeof(trimmed), "%s", token);
    for (size_t n = strlen(trimmed); n > 0 && strchr(" \t\r\n", trimmed[n - 1]); n--)
        trimmed[n - 1] = '\0';
    rc = auth_token_check(p->app->db, trimmed, &u);
    if (rc == -ENOENT || (rc == 0 && !auth_role_human(u.role)))
        return page_login(p, "That token is not valid. Check that you copied all of it "
                             "(68 characters, starting with cgs_, cgt_ or cga_); if it still "
                             "fails, ask the course staff for a new one.", 401);
    if (rc == 0)
        rc = auth_session_create(p->app->db, u.id, u.token_id, session, csrf);
    if (rc == -EINVAL) /* revoked after a cached lookup said it was fine */
        return page_login(p, "That token is not valid (it was revoked); ask the course staff "
                             "for a new one.", 401);
    if (rc != 0)
        return page_login(p, "The server could not start a session. Try again in a minute.", 500);
    set_cookie(p->req, AUTH_SESSION_COOKIE, session, (long)AUTH_SESSION_TTL_S);
    set_cookie(p->req, LOGIN_COOKIE, "", 0);
    return redirect(p, "/labs");
}

static int post_logout(struct page *p)
{
    char cookie[96];

    if (post_check(p) != 0)
        return HTTP_DONE;
    if (http_request_cookie(p->req, AUTH_SESSION_COOKIE, cookie, sizeof(cookie)) == 0)
        auth_session_destroy(p->app->db, cookie);
    set_cookie(p->req, AUTH_SESSION_COOKIE, "", 0);
    return redirect(p, "/login?bye=1");
}

/* ---- labs -------------------------------------------------------------------------- */

static void put_show_name(struct page *p, const char *lab);

/* The best score per lab among the viewer's own submissions. */
static json_t *best_scores(struct page *p)
{
    struct api_error e;
    json_t *list = NULL, *best = json_object(), *s;
    size_t i;

    if (best == NULL)
        return NULL;
    if (api_submissions_list(p->app, &p->user, NULL, p->user.name, NULL, 500, 0, &list, &e) != 0)
        return best;
    json_array_foreach(json_object_get(list, "submissions"), i, s) {
        const char *lab = jstr(s, "lab");
        json_t *sc = json_object_get(s, "score");
        json_t *cur = json_object_get(best, lab);
        if (!json_is_number(sc))
            continue;
        if (cur == NULL || json_number_value(sc) > jnum(cur, "score", -1))
            json_object_set(best, lab, s);
    }
    json_decref(list);
    return best;
}

static int page_labs(struct page *p)
{
    struct api_error e;
    json_t *labs = NULL, *best = NULL, *l;
    size_t i;
    double now = db_now();

    if (api_labs_list(p->app, &p->user, &labs, &e) != 0)
        return page_api_error(p, &e);
    best = best_scores(p);
    page_begin(p, "Labs");
    html_raw(&p->b, "<h1>Labs</h1>\n");
    if (json_array_size(json_object_get(labs, "labs")) == 0)
        html_raw(&p->b, "<p class=\"muted\">No labs are set up yet.</p>\n");
    else
        html_fmt(&p->b, TABLE_BOX("Labs") "<table class=\"labs\"><thead><tr><th>Lab</th><th>Due</th>"
                        "<th>Hard deadline</th><th>Status</th><th class=\"num\">%R</th>"
                        "</tr></thead><tbody>\n",
                 is_staff(p) ? "Students with a score" : "Your best score");
    json_array_foreach(json_object_get(labs, "labs"), i, l) {
        const char *lab = jstr(l, "lab");
        struct app_lab *al = app_lab_find(p->app, lab);
        double due = iso_to_time(jstr(l, "due")), hard = iso_to_time(jstr(l, "hard_deadline"));
        json_t *mine = json_object_get(best, lab);

        if (al && p->user.role == AUTH_STUDENT) /* with the student's extension */
            api_deadlines(p->app, al, p->user.id, &due, &hard);
        html_fmt(&p->b, "<tr><td><a href=\"/labs/%u\">%s</a><div class=\"muted small\">%s</div></td><td>",
                 lab, jstr(l, "title"), lab);
        put_when(&p->b, due);
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, hard);
        html_raw(&p->b, "</td><td>");
        if (!json_is_true(json_object_get(l, "open")))
            html_raw(&p->b, "<span class=\"badge\">closed</span>");
        else if (due > 0 && now > due)
            html_raw(&p->b, "<span class=\"badge warn\">late submissions only</span>");
        else
            html_raw(&p->b, "<span class=\"badge good\">open</span>");
        html_raw(&p->b, "</td><td class=\"num\">");
        if (is_staff(p)) {
            json_t *sb = NULL;
            struct api_error e2;
            if (api_scoreboard(p->app, &p->user, lab, &sb, &e2) == 0)
                html_fmt(&p->b, "<a href=\"/labs/%u/scoreboard\">%zu</a> &middot; "
                                "<a href=\"/labs/%u/stats\">charts</a>",
                         lab, json_array_size(json_object_get(sb, "rows")), lab);
            if (is_admin(p))
                html_fmt(&p->b, " &middot; <a href=\"/admin/labs/%u/rubric\">rubric</a>", lab);
            json_decref(sb);
            html_raw(&p->b, "</td></tr>\n");
            continue;
        }
        if (mine)
            html_fmt(&p->b, "<a href=\"/submissions/%lld\">", (long long)jnum(mine, "id", 0));
        put_score(&p->b, json_object_get(mine, "score"), json_object_get(mine, "max_score"));
        if (mine)
            html_raw(&p->b, "</a>");
        html_raw(&p->b, "</td></tr>\n");
    }
    if (json_array_size(json_object_get(labs, "labs")) > 0)
        html_raw(&p->b, "</tbody></table></div>\n");
    if (p->user.role == AUTH_STUDENT)
        put_show_name(p, "");
    json_decref(labs);
    json_decref(best);
    return page_end(p, 200);
}

/* A small table of submissions (history, lab page, TA list). */
static void put_submissions_table(struct page *p, json_t *subs, int show_user, int show_lab)
{
    json_t *s;
    size_t i;

    html_raw(&p->b, TABLE_BOX("Submissions") "<table class=\"subs sortable\"><thead><tr><th data-sort=\"num\">#</th>");
    if (show_lab)
        html_raw(&p->b, "<th data-sort=\"text\">Lab</th>");
    if (show_user)
        html_raw(&p->b, "<th data-sort=\"text\">Student</th>");
    html_raw(&p->b, "<th data-sort=\"text\">File</th><th data-sort=\"text\">Status</th>"
                    "<th class=\"num\" data-sort=\"num\">Score</th><th data-sort=\"num\">Submitted</th>"
                    "</tr></thead><tbody>\n");
    json_array_foreach(subs, i, s) {
        long long id = (long long)jnum(s, "id", 0);
        double created = iso_to_time(jstr(s, "created_at"));

        html_fmt(&p->b, "<tr><td data-value=\"%lld\"><a href=\"/submissions/%lld\">#%lld</a></td>",
                 id, id, id);
        if (show_lab)
            html_fmt(&p->b, "<td><a href=\"/labs/%u\">%s</a></td>", jstr(s, "lab"), jstr(s, "lab"));
        if (show_user)
            html_fmt(&p->b, "<td>%s</td>", jstr(s, "user"));
        html_fmt(&p->b, "<td><code>%s</code>%R</td><td>", jstr(s, "filename"),
                 json_is_true(json_object_get(s, "late")) ? " <span class=\"badge warn\">late</span>" : "");
        put_status(&p->b, jstr(s, "status"));
        html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", jnum(s, "score", -1));
        put_score(&p->b, json_object_get(s, "score"), json_object_get(s, "max_score"));
        html_fmt(&p->b, "</td><td data-value=\"%.0f\">", created);
        put_when(&p->b, created);
        html_raw(&p->b, "</td></tr>\n");
    }
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* Read labs/<lab>/starter.cu (at most 64 KiB); caller frees; NULL if none. */
static char *read_starter(const struct app_lab *l)
{
    char path[512];
    FILE *f;
    char *buf;
    size_t n;

    snprintf(path, sizeof(path), "%s/starter.cu", l->lab.dir);
    f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    buf = malloc(65536 + 1);
    if (buf) {
        n = fread(buf, 1, 65536, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

/* The lab page; problem (may be NULL) is shown above the form with the
 * source the student pasted, so nothing they typed is lost. */
static int page_lab(struct page *p, const char *lab, const char *problem, int status,
                    const char *pasted, const char *pasted_name)
{
    struct api_error e;
    json_t *doc = NULL, *subs = NULL;
    struct app_lab *al = app_lab_find(p->app, lab);
    double due = 0, hard = 0, now = db_now();
    char *starter;

    if (api_lab_get(p->app, &p->user, lab, &doc, &e) != 0)
        return page_api_error(p, &e);
    if (al)
        api_deadlines(p->app, al, p->user.id, &due, &hard);
    page_begin(p, jstr(doc, "title"));
    html_fmt(&p->b, "<h1>%s</h1>\n<p class=\"muted\">Lab <code>%s</code> &middot; due ", jstr(doc, "title"), lab);
    put_when(&p->b, due);
    if (hard > 0 && hard != due) {
        html_raw(&p->b, " &middot; hard deadline ");
        put_when(&p->b, hard);
    }
    html_fmt(&p->b, "</p>\n<p><a href=\"/labs/%u/scoreboard\">Scoreboard</a>", lab);
    if (is_staff(p))
        html_fmt(&p->b, " &middot; <a href=\"/labs/%u/stats\">Score and speedup charts</a>"
                        " &middot; <a href=\"/submissions?lab=%u\">All submissions</a>", lab, lab);
    if (is_admin(p))
        html_fmt(&p->b, " &middot; <a href=\"/admin/labs/%u/rubric\">Edit the rubric</a>", lab);
    html_raw(&p->b, "</p>\n");

    html_raw(&p->b, "<div class=\"grid2\"><section class=\"handout\" aria-label=\"handout\"><h2>Handout</h2>\n");
    markdown_render(&p->b, jstr(doc, "handout"));
    html_raw(&p->b, "</section>\n<section aria-label=\"submit\">\n<h2>The interface you implement</h2>\n");
    html_fmt(&p->b, "<pre><code>%s</code></pre>\n", jstr(doc, "interface"));

    html_raw(&p->b, "<h2 id=\"submit\">Submit</h2>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>%s</p></div>\n", problem);
    if (hard > 0 && now > hard)
        html_raw(&p->b, "<div class=\"notice warn\"><p>The hard deadline has passed: the server no "
                        "longer accepts submissions for this lab. If you have an extension, ask the "
                        "staff to record it.</p></div>\n");
    else if (due > 0 && now > due)
        html_raw(&p->b, "<div class=\"notice warn\"><p>The due date has passed: a submission now "
                        "is marked late and the late penalty applies.</p></div>\n");
    html_fmt(&p->b, "<form id=\"submit-form\" class=\"stack\" method=\"post\" action=\"/labs/%u/submit\" "
                    "enctype=\"multipart/form-data\">\n", lab);
    csrf_field(p);
    html_raw(&p->b, "\n<label for=\"file\">Upload your <code>.cu</code> file</label>\n"
                    "<input type=\"file\" id=\"file\" name=\"file\" accept=\".cu\">\n"
                    "<p id=\"file-note\" class=\"muted small\" aria-live=\"polite\"></p>\n"
                    "<label for=\"source\">&hellip;or paste your source here</label>\n"
                    "<textarea id=\"source\" name=\"source\" class=\"code\" spellcheck=\"false\" "
                    "placeholder=\"Paste the whole .cu file here (used only when no file is chosen).\">");
    html_text(&p->b, pasted);
    html_fmt(&p->b, "</textarea>\n<label for=\"filename\">File name for pasted source</label>\n"
                    "<input type=\"text\" id=\"filename\" name=\"filename\" value=\"%s\" "
                    "pattern=\"[A-Za-z0-9_.\\-]{1,61}\\.cu\">\n"
                    "<p><button type=\"submit\">Submit for grading</button></p>\n</form>\n",
             pasted_name && *pasted_name ? pasted_name : "kernel.cu");
    starter = al ? read_starter(al) : NULL;
    if (starter) {
        html_raw(&p->b, "<details><summary>Starter file</summary>\n<pre><code>");
        html_text(&p->b, starter);
        html_raw(&p->b, "</code></pre></details>\n");
        free(starter);
    }
    html_raw(&p->b, "</section></div>\n");

    if (api_submissions_list(p->app, &p->user, lab, p->user.name, NULL, 50, 0, &subs, &e) == 0 &&
        json_array_size(json_object_get(subs, "submissions")) > 0) {
        html_raw(&p->b, "<h2>Your submissions</h2>\n");
        put_submissions_table(p, json_object_get(subs, "submissions"), 0, 0);
    }
    json_decref(subs);
    json_decref(doc);
    return page_end(p, status);
}

static int post_submit(struct page *p, const char *lab)
{
    const struct multipart_part *file;
    const struct form_field *src;
    const char *filename, *source;
    size_t len;
    struct api_error e;
    json_t *out = NULL;
    char msg[700], loc[64];

    if (post_check(p) != 0)
        return HTTP_DONE;
    if (p->nparts == 0)
        return page_lab(p, lab, "The form was not sent as a file upload. Reload the page and try again.",
                        400, NULL, NULL);
    file = multipart_find(p->parts, p->nparts, "file");
    src = field_get(p, "source");
    if (file && file->has_filename && file->filename[0] && file->len > 0) {
        filename = file->filename;
        source = file->data;
        len = file->len;
    } else if (src && src->len > 0) {
        filename = field(p, "filename");
        if (filename == NULL || *filename == '\0')
            filename = "kernel.cu";
        source = src->value;
        len = src->len;
    } else if (file && file->has_filename && file->filename[0]) {
        snprintf(msg, sizeof(msg), "The file \xe2\x80\x9c%s\xe2\x80\x9d is empty. Save your work in the "
                 "editor, then choose the file again.", file->filename);
        return page_lab(p, lab, msg, 400, NULL, NULL);
    } else {
        return page_lab(p, lab, "Nothing was sent: choose your .cu file, or paste your source "
                                "into the box, then press Submit.", 400, NULL, NULL);
    }
    /* File names are checked here too so the message can name the file;
     * the name is shown escaped (it is attacker-controlled text). */
    if (!multipart_filename_valid(filename)) {
        snprintf(msg, sizeof(msg), "The file name \xe2\x80\x9c%.200s\xe2\x80\x9d cannot be used. Rename the "
                 "file to letters, digits, '_', '-' or '.', ending in .cu (for example kernel.cu), "
                 "and submit again.", filename);
        return page_lab(p, lab, msg, 400, src ? src->value : NULL, NULL);
    }
    if (api_submit(p->app, &p->user, lab, filename, source, len, &out, &e) != 0) {
        if (e.status == 429 && e.retry_after > 0)
            snprintf(msg, sizeof(msg), "%s (You can submit again in about %d second%s.)", e.message,
                     e.retry_after, e.retry_after == 1 ? "" : "s");
        else
            snprintf(msg, sizeof(msg), "%s", e.message);
        return page_lab(p, lab, msg, e.status ? e.status : 500,
                        source == (src ? src->value : NULL) ? source : NULL, filename);
    }
    snprintf(loc, sizeof(loc), "/submissions/%lld", (long long)jnum(out, "id", 0));
    json_decref(out);
    return redirect(p, loc);
}

/* ---- a submission --------------------------------------------------------------- */

/* The phases of grading in order; the live section marks where a job is. */
static const char *const phases[] = {"queued", "compiling", "checking", "running", "timing"};

static int phase_index(const char *st)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(phases[i], st) == 0)
            return i;
    return 5;
}

/* Minutes since the last runner claimed or reported, or -1 if none ever. */
static double runner_idle_s(struct page *p)
{
    sqlite3_stmt *st = db_stmt(p->app->db, "SELECT MAX(last_seen) FROM runners");
    double t = -1;

    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        t = db_now() - sqlite3_column_double(st, 0);
    if (st)
        sqlite3_reset(st);
    return t;
}

/* A compiler log with each "file(LINE): ..." turned into a link to that
 * line of the source listing. Everything else is escaped text. */
static void put_compile_log(struct page *p, const char *log, long long id)
{
    const char *s = log, *nl;

    html_raw(&p->b, "<pre class=\"log\" tabindex=\"0\" aria-label=\"Compiler output\">");
    while (*s) {
        size_t n;
        const char *paren, *close;
        long line = 0;

        nl = strchr(s, '\n');
        n = nl ? (size_t)(nl - s) : strlen(s);
        paren = memchr(s, '(', n);
        close = paren ? memchr(paren, ')', n - (size_t)(paren - s)) : NULL;
        if (paren && close && close > paren + 1 && close - paren < 9) {
            char *endp;
            line = strtol(paren + 1, &endp, 10);
            if (endp != close || line <= 0)
                line = 0;
        }
        html_fmt(&p->b, "<span class=\"%R\">",
                 memmem(s, n, "error", 5) ? "err" : memmem(s, n, "warning", 7) ? "warn" : "");
        if (line > 0) {
            html_textn(&p->b, s, (size_t)(paren - s));
            html_fmt(&p->b, "(<a href=\"/submissions/%lld/source#L%ld\">%ld</a>)", id, line, line);
            html_textn(&p->b, close + 1, n - (size_t)(close + 1 - s));
        } else {
            html_textn(&p->b, s, n);
        }
        html_raw(&p->b, "</span>\n");
        s = nl ? nl + 1 : s + n;
    }
    html_raw(&p->b, "</pre>\n");
}

static void put_timing(struct page *p, json_t *t)
{
    json_t *ref = json_object_get(t, "reference_ms");
    struct html_bar bars[6];
    size_t n = 0;
    const char *key;
    json_t *v;

    bars[n++] = (struct html_bar){"your kernel", jnum(t, "student_ms", NAN), 1};
    json_object_foreach(ref, key, v) {
        static char labels[3][40];
        if (n >= 4 || !json_is_number(v))
            continue;
        snprintf(labels[n - 1], sizeof(labels[0]), "reference (%.24s)", key);
        bars[n] = (struct html_bar){labels[n - 1], json_number_value(v), 0};
        n++;
    }
    bars[n++] = (struct html_bar){"cuBLAS", jnum(t, "cublas_ms", NAN), 0};
    if (json_is_number(json_object_get(t, "cpu_ms")))
        bars[n++] = (struct html_bar){"CPU", jnum(t, "cpu_ms", NAN), 0};
    html_raw(&p->b, "<h2>Time (lower is better)</h2>\n");
    html_svg_bars(&p->b, "Kernel time in milliseconds: yours, the reference kernels and cuBLAS", bars,
                  n, "ms");
    html_raw(&p->b, "<p class=\"small\">");
    if (json_is_number(json_object_get(t, "speedup")))
        html_fmt(&p->b, "Speedup used for ranking: <strong>%.2f</strong>. ", jnum(t, "speedup", 0));
    if (json_is_number(json_object_get(t, "metric_value")))
        html_fmt(&p->b, "Rubric metric <code>%s</code> = %.3f. ", jstr(t, "metric"),
                 jnum(t, "metric_value", 0));
    if (json_is_number(json_object_get(t, "gflops")))
        html_fmt(&p->b, "%.1f GFLOP/s. ", jnum(t, "gflops", 0));
    if (json_is_number(json_object_get(t, "bandwidth_gbs")))
        html_fmt(&p->b, "%.1f GB/s. ", jnum(t, "bandwidth_gbs", 0));
    if (json_is_number(json_object_get(t, "samples")))
        html_fmt(&p->b, "Median of %d samples (relative error %.2f%%).", (int)jnum(t, "samples", 0),
                 100 * jnum(t, "rel_err", 0));
    html_raw(&p->b, "</p>\n");
    if (json_is_true(json_object_get(t, "flagged")))
        html_fmt(&p->b, "<div class=\"notice warn\"><p>This timing was flagged and earns no speed "
                        "points: %s</p></div>\n",
                 jstr(t, "flag_reason")[0] ? jstr(t, "flag_reason")
                                           : "it is faster than the hardware allows.");
}

static void put_result(struct page *p, json_t *sub)
{
    json_t *r = json_object_get(sub, "result"), *cg = json_object_get(r, "cugrade");
    json_t *tests = json_object_get(r, "tests"), *cases = json_object_get(cg, "cases");
    json_t *san = json_object_get(cg, "sanitizer"), *hints = json_object_get(cg, "hints");
    json_t *rej = json_object_get(cg, "rejection"), *t, *f;
    const char *log = jstr(cg, "compile_log");
    long long id = (long long)jnum(sub, "id", 0);
    size_t i, j;

    if (!json_is_object(r))
        return;
    if (jstr(r, "output")[0])
        html_fmt(&p->b, "<p class=\"summary\">%s</p>\n", jstr(r, "output"));
    if (json_is_object(rej))
        html_fmt(&p->b, "<div class=\"notice bad\"><p><strong>Rejected:</strong> your code uses "
                        "<code>%s</code>. %s</p></div>\n",
                 jstr(rej, "symbol"), jstr(rej, "reason"));
    if (*log) {
        html_raw(&p->b, "<h2>Compiler output</h2>\n");
        put_compile_log(p, log, id);
    }
    if (json_array_size(tests) > 0) {
        html_raw(&p->b, "<h2>Tests</h2>\n" TABLE_BOX("Tests") "<table class=\"tests\"><thead><tr><th>Test</th><th>Result</th>"
                        "<th class=\"num\">Points</th><th>Details</th></tr></thead><tbody>\n");
        json_array_foreach(tests, i, t) {
            int passed = strcmp(jstr(t, "status"), "passed") == 0;
            html_fmt(&p->b, "<tr><td>%s</td><td><span class=\"badge %R\">%s</span></td><td class=\"num\">",
                     jstr(t, "name"), passed ? "good" : "bad", jstr(t, "status"));
            put_score(&p->b, json_object_get(t, "score"), json_object_get(t, "max_score"));
            html_fmt(&p->b, "</td><td><code class=\"small\">%s</code></td></tr>\n", jstr(t, "output"));
        }
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    if (json_array_size(cases) > 0) {
        html_raw(&p->b, "<h2>Correctness cases</h2>\n" TABLE_BOX("Correctness cases") "<table class=\"cases\"><thead><tr><th>Case</th>"
                        "<th>Result</th><th class=\"num\">Max abs error</th><th class=\"num\">Max rel error</th>"
                        "<th>First wrong element</th><th>Message</th></tr></thead><tbody>\n");
        json_array_foreach(cases, i, t) {
            int passed = json_is_true(json_object_get(t, "passed"));
            char ae[32] = "-", re[32] = "-", bad[32] = "-";
            if (json_is_number(json_object_get(t, "max_abs_err")))
                snprintf(ae, sizeof(ae), "%.3g", jnum(t, "max_abs_err", 0));
            if (json_is_number(json_object_get(t, "max_rel_err")))
                snprintf(re, sizeof(re), "%.3g", jnum(t, "max_rel_err", 0));
            if (json_is_number(json_object_get(t, "first_bad_index")))
                snprintf(bad, sizeof(bad), "index %.0f", jnum(t, "first_bad_index", 0));
            html_fmt(&p->b, "<tr><td>%s</td><td><span class=\"badge %R\">%R</span></td>"
                            "<td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td></tr>\n",
                     jstr(t, "name"), passed ? "good" : "bad", passed ? "passed" : "failed", ae, re,
                     bad, jstr(t, "message"));
        }
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    if (json_array_size(san) > 0) {
        html_raw(&p->b, "<h2>Sanitizers</h2>\n<ul class=\"sanitizer\">\n");
        json_array_foreach(san, i, t) {
            json_t *finds = json_object_get(t, "findings");
            int clean = json_is_true(json_object_get(t, "clean"));
            html_fmt(&p->b, "<li><strong>%s</strong>: <span class=\"badge %R\">%R</span>", jstr(t, "tool"),
                     clean ? "good" : "bad", clean ? "clean" : "problems found");
            if (json_array_size(finds) > 0) {
                html_raw(&p->b, "<ul>\n");
                json_array_foreach(finds, j, f) {
                    long line = (long)jnum(f, "line", 0);
                    html_raw(&p->b, "<li>");
                    if (line > 0)
                        html_fmt(&p->b, "<a href=\"/submissions/%lld/source#L%ld\">%s line %ld</a>: ",
                                 id, line, jstr(f, "file"), line);
                    html_fmt(&p->b, "%s", jstr(f, "message"));
                    if (jstr(f, "hint")[0]) {
                        html_raw(&p->b, "<div class=\"muted\">Hint: ");
                        markdown_render_inline(&p->b, jstr(f, "hint"));
                        html_raw(&p->b, "</div>");
                    }
                    html_raw(&p->b, "</li>\n");
                }
                html_raw(&p->b, "</ul>");
            }
            html_raw(&p->b, "</li>\n");
        }
        html_raw(&p->b, "</ul>\n");
    }
    if (json_is_object(json_object_get(cg, "timing")))
        put_timing(p, json_object_get(cg, "timing"));
    if (json_array_size(hints) > 0) {
        html_raw(&p->b, "<h2>Hints</h2>\n<ul class=\"hints\">\n");
        json_array_foreach(hints, i, t) {
            html_raw(&p->b, "<li>");
            markdown_render_inline(&p->b, json_string_value(t));
            html_raw(&p->b, "</li>\n");
        }
        html_raw(&p->b, "</ul>\n");
    }
    if (jstr(cg, "gpu")[0])
        html_fmt(&p->b, "<p class=\"muted small\">Graded on %s with rubric version %d.</p>\n",
                 jstr(cg, "gpu"), (int)jnum(sub, "rubric_version", 0));
}

/* The live part of a submission page: the part app.js swaps in place. */
static void put_live(struct page *p, json_t *sub)
{
    const char *st = jstr(sub, "status");
    long long id = (long long)jnum(sub, "id", 0);
    int final = queue_status_final(st);
    int pi = phase_index(st);
    char title[96];

    snprintf(title, sizeof(title), "#%lld %s - cugrade", id, status_words(st));
    html_fmt(&p->b, "<section id=\"live\" data-final=\"%d\" data-src=\"/submissions/%lld?part=live\" "
                    "data-title=\"%s\" aria-live=\"polite\">\n",
             final, id, title);
    html_raw(&p->b, "<p>Status: ");
    put_status(&p->b, st);
    if (json_is_number(json_object_get(sub, "score"))) {
        html_raw(&p->b, " &middot; <span class=\"score-big\" id=\"score\">");
        put_score(&p->b, json_object_get(sub, "score"), json_object_get(sub, "max_score"));
        html_raw(&p->b, "</span>");
    }
    html_raw(&p->b, "</p>\n");
    long long newer = 0;
    if (strcmp(st, "superseded") == 0 &&
        sscanf(jstr(sub, "detail"), "replaced by submission %lld", &newer) == 1)
        html_fmt(&p->b, "<div class=\"notice\" id=\"superseded\"><p>You submitted again to this lab "
                        "while this one was still waiting, so <a href=\"/submissions/%lld\">submission "
                        "%lld</a> took its place in the queue. This one was never graded and does "
                        "not count against your hourly limit.</p></div>\n",
                 newer, newer);
    if (!final) {
        double idle = runner_idle_s(p);
        long long eta = (long long)jnum(sub, "eta_seconds", 0);
        long long pos = (long long)jnum(sub, "queue_position", 0);

        html_fmt(&p->b, "<div class=\"progress p%d\" role=\"progressbar\" aria-valuemin=\"0\" "
                        "aria-valuemax=\"5\" aria-valuenow=\"%d\"><div></div></div>\n", pi, pi);
        html_raw(&p->b, "<ol class=\"phases\">");
        for (int i = 0; i < 5; i++)
            html_fmt(&p->b, "<li class=\"%R\">%s</li>", i < pi ? "done" : i == pi ? "now" : "",
                     status_words(phases[i]));
        html_raw(&p->b, "</ol>\n");
        if (strcmp(st, "queued") == 0) {
            if (pos > 1)
                html_fmt(&p->b, "<p id=\"queue-position\">Position in the queue: <strong>%lld</strong> "
                                "(%lld job%R ahead of yours).</p>\n",
                         pos, pos - 1, pos - 1 == 1 ? "" : "s");
            else
                html_raw(&p->b, "<p id=\"queue-position\">Position in the queue: <strong>1</strong> "
                                "(yours is next).</p>\n");
            if (eta > 0)
                html_fmt(&p->b, "<p id=\"queue-eta\">Expected to start in about <strong>%lld "
                                "%s</strong> (at the rate submissions were graded in the last "
                                "minutes).</p>\n",
                         eta < 90 ? eta : (eta + 59) / 60, eta < 90 ? "s" : "min");
            if (idle < 0 || idle > 120)
                html_raw(&p->b, "<div class=\"notice warn\"><p>No GPU runner is connected right now. "
                                "Your submission is saved and keeps its place; it will be graded as "
                                "soon as a runner comes back. You do not need to submit again.</p></div>\n");
        } else {
            html_fmt(&p->b, "<p>Now: <strong>%s</strong>%R%s%R</p>\n", status_words(st),
                     jstr(sub, "detail")[0] ? " (" : "", jstr(sub, "detail"),
                     jstr(sub, "detail")[0] ? ")" : "");
        }
        if ((int)jnum(sub, "attempts", 0) > 1)
            html_fmt(&p->b, "<p class=\"muted small\">Attempt %d: an earlier attempt failed on our "
                            "side and does not count against you.</p>\n",
                     (int)jnum(sub, "attempts", 0));
        html_fmt(&p->b, "<p class=\"small muted\"><span id=\"live-status\">This page updates by itself.</span> "
                        "<noscript>It reloads every few seconds.</noscript> "
                        "<a href=\"/submissions/%lld\">Reload now</a></p>\n", id);
    } else {
        if (strcmp(st, "system_error") == 0)
            html_raw(&p->b, "<div class=\"notice warn\"><p>Grading failed on our side several times. "
                            "This does not count against you; the staff can see it and will regrade "
                            "it. You may also submit again.</p></div>\n");
        else if (strcmp(st, "compile_error") == 0)
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your file did not compile. The compiler "
                            "output below links each error to its line in your source.</p></div>\n");
        else if (strcmp(st, "timeout") == 0)
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your program ran past the time limit. Look "
                            "for a loop that never ends or a kernel launched with far too many "
                            "threads.</p></div>\n");
        else if (strcmp(st, "runtime_error") == 0)
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your program crashed or a kernel failed to "
                            "launch. The cases and sanitizer findings below say where.</p></div>\n");
        put_result(p, sub);
    }
    html_raw(&p->b, "</section>\n");
}

/* Staff: overrides of a submission, newest first. */
static void put_overrides(struct page *p, long long id)
{
    sqlite3_stmt *st = db_stmt(p->app->db,
                               "SELECT o.score, o.reason, o.created_at, u.name FROM overrides o "
                               "LEFT JOIN users u ON u.id = o.by_user WHERE o.submission_id = ?1 "
                               "ORDER BY o.id DESC LIMIT 50");
    int any = 0;

    if (st == NULL)
        return;
    sqlite3_bind_int64(st, 1, id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Score overrides") "<table class=\"overrides\"><thead><tr><th class=\"num\">Score</th>"
                            "<th>Reason</th><th>By</th><th>When</th></tr></thead><tbody>\n");
        any = 1;
        html_fmt(&p->b, "<tr><td class=\"num\">%.2f</td><td>%s</td><td>%s</td><td>",
                 sqlite3_column_double(st, 0), db_col_text(st, 1), db_col_text(st, 3));
        put_when(&p->b, sqlite3_column_double(st, 2));
        html_raw(&p->b, "</td></tr>\n");
    }
    sqlite3_reset(st);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<p class=\"muted\">No overrides.</p>\n");
}

static int page_submission(struct page *p, long long id)
{
    struct api_error e;
    json_t *sub = NULL;
    const char *part = http_request_query(p->req, "part");
    const char *done = http_request_query(p->req, "done");
    char title[48];

    if (api_submission_get(p->app, &p->user, id, &sub, &e) != 0)
        return page_api_error(p, &e);
    if (part && strcmp(part, "live") == 0) {
        /* Just the live section, for app.js: same escaping, same headers. */
        html_raw(&p->b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>live</title></head><body>\n");
        put_live(p, sub);
        html_raw(&p->b, "</body></html>\n");
        json_decref(sub);
        return page_send(p, 200);
    }
    if (!queue_status_final(jstr(sub, "status")))
        p->refresh = 3;
    snprintf(title, sizeof(title), "Submission #%lld", id);
    page_begin(p, title);
    html_fmt(&p->b, "<h1>Submission #%lld <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n",
             id, jstr(sub, "lab"), jstr(sub, "lab"));
    if (done && strcmp(done, "override") == 0)
        html_raw(&p->b, "<div class=\"notice good\"><p>The override is saved and recorded in the audit log.</p></div>\n");
    else if (done && strcmp(done, "regrade") == 0)
        html_raw(&p->b, "<div class=\"notice good\"><p>The submission is back in the queue for regrading.</p></div>\n");
    html_fmt(&p->b, "<p class=\"meta\">File <code id=\"filename\">%s</code> (%d bytes) &middot; submitted ",
             jstr(sub, "filename"), (int)jnum(sub, "size", 0));
    put_when_iso(&p->b, jstr(sub, "created_at"));
    if (is_staff(p))
        html_fmt(&p->b, " by <strong>%s</strong>", jstr(sub, "user"));
    if (json_is_true(json_object_get(sub, "late")))
        html_raw(&p->b, " &middot; <span class=\"badge warn\">late</span>");
    html_fmt(&p->b, " &middot; <a href=\"/submissions/%lld/source\">View source</a></p>\n", id);
    put_live(p, sub);

    if (is_staff(p)) {
        html_raw(&p->b, "<h2>Staff</h2>\n<div class=\"grid2\"><div class=\"panel\"><h3>Override the score</h3>\n");
        html_fmt(&p->b, "<form class=\"stack\" method=\"post\" action=\"/submissions/%lld/override\">", id);
        csrf_field(p);
        html_fmt(&p->b, "<label for=\"ov-score\">New score (out of %.0f)</label>"
                        "<input type=\"number\" id=\"ov-score\" name=\"score\" step=\"any\" min=\"0\" required>"
                        "<label for=\"ov-reason\">Reason (students see the new score; staff see the reason)</label>"
                        "<input type=\"text\" id=\"ov-reason\" name=\"reason\" required maxlength=\"500\">"
                        "<p><button type=\"submit\">Save override</button></p></form>\n",
                 jnum(sub, "max_score", 100));
        put_overrides(p, id);
        html_raw(&p->b, "</div><div class=\"panel\"><h3>Regrade</h3>\n<p class=\"small\">Puts the "
                        "submission back in the queue with the current rubric. The old result stays "
                        "until the new one arrives.</p>\n");
        html_fmt(&p->b, "<form method=\"post\" action=\"/submissions/%lld/regrade\">", id);
        csrf_field(p);
        html_raw(&p->b, "<button type=\"submit\" class=\"secondary\">Regrade</button></form></div></div>\n");
    }
    json_decref(sub);
    return page_end(p, 200);
}

/* Line numbers to mark in a source listing: compile errors and sanitizer
 * findings of the submission's result. */
static size_t collect_marks(json_t *sub, int *marks, size_t max)
{
    json_t *cg = json_object_get(json_object_get(sub, "result"), "cugrade"), *t, *f;
    const char *log = jstr(cg, "compile_log");
    size_t n = 0, i, j;

    for (const char *s = log; *s && n < max; s++) {
        if (*s == '(' && s[1] >= '1' && s[1] <= '9') {
            char *endp;
            long line = strtol(s + 1, &endp, 10);
            if (*endp == ')' && line > 0 && line < 1000000 && strstr(endp, "error") &&
                (strchr(endp, '\n') == NULL || strstr(endp, "error") < strchr(endp, '\n')))
                marks[n++] = (int)line;
        }
    }
    json_array_foreach(json_object_get(cg, "sanitizer"), i, t)
        json_array_foreach(json_object_get(t, "findings"), j, f)
            if (n < max && jnum(f, "line", 0) > 0)
                marks[n++] = (int)jnum(f, "line", 0);
    return n;
}

static int page_source(struct page *p, long long id)
{
    struct api_error e;
    char *src = NULL, filename[72];
    size_t len = 0, nmarks = 0;
    json_t *sub = NULL;
    int marks[256];

    if (api_submission_source(p->app, &p->user, id, &src, &len, filename, &e) != 0)
        return page_api_error(p, &e);
    if (api_submission_get(p->app, &p->user, id, &sub, &e) == 0)
        nmarks = collect_marks(sub, marks, 256);
    page_begin(p, "Source");
    html_fmt(&p->b, "<h1>Source of <a href=\"/submissions/%lld\">submission #%lld</a></h1>\n"
                    "<p class=\"meta\"><code>%s</code> &middot; %zu bytes &middot; lab %s%R%s</p>\n",
             id, id, filename, len, jstr(sub, "lab"), is_staff(p) ? " &middot; by " : "",
             is_staff(p) ? jstr(sub, "user") : "");
    if (nmarks)
        html_raw(&p->b, "<p class=\"small\">Highlighted lines have a compiler error or a sanitizer finding.</p>\n");
    html_source(&p->b, src, marks, nmarks);
    free(src);
    json_decref(sub);
    return page_end(p, 200);
}

static int post_override(struct page *p, long long id)
{
    struct api_error e;
    const char *score_s, *reason;
    char *endp, loc[80];
    double score;

    if (post_check(p) != 0)
        return HTTP_DONE;
    score_s = field(p, "score");
    reason = field(p, "reason");
    score = score_s ? strtod(score_s, &endp) : NAN;
    if (score_s == NULL || endp == score_s || *endp != '\0' || !isfinite(score) || score < 0)
        return page_error(p, 400, "The override needs a score",
                          "Enter the new score as a number (for example 85 or 92.5), then save again.");
    if (reason == NULL || reason[strspn(reason, " \t\r\n")] == '\0')
        return page_error(p, 400, "The override needs a reason",
                          "Write why the score changes (it goes into the audit log), then save again.");
    if (api_override_add(p->app, &p->user, id, score, reason, &e) != 0)
        return page_api_error(p, &e);
    snprintf(loc, sizeof(loc), "/submissions/%lld?done=override", id);
    return redirect(p, loc);
}

static int post_regrade(struct page *p, long long id)
{
    struct api_error e;
    char loc[80];

    if (post_check(p) != 0)
        return HTTP_DONE;
    if (api_regrade(p->app, &p->user, id, &e) != 0)
        return page_api_error(p, &e);
    snprintf(loc, sizeof(loc), "/submissions/%lld?done=regrade", id);
    return redirect(p, loc);
}

/* ---- lists ---------------------------------------------------------------------------- */

static const char *const all_statuses[] = {"queued", "compiling", "checking", "running", "timing",
                                           "graded", "compile_error", "rejected", "runtime_error",
                                           "timeout", "system_error", "superseded"};

static int page_submissions(struct page *p)
{
    struct api_error e;
    json_t *subs = NULL;
    const char *lab = http_request_query(p->req, "lab");
    const char *user = http_request_query(p->req, "user");
    const char *status = http_request_query(p->req, "status");
    const char *off_s = http_request_query(p->req, "offset");
    int offset = off_s ? atoi(off_s) : 0, limit = 100;

    if (lab && !*lab) lab = NULL;
    if (user && !*user) user = NULL;
    if (status && !*status) status = NULL;
    if (offset < 0) offset = 0;
    if (!is_staff(p))
        user = p->user.name;
    if (api_submissions_list(p->app, &p->user, lab, user, status, limit, offset, &subs, &e) != 0)
        return page_api_error(p, &e);
    page_begin(p, is_staff(p) ? "Submissions" : "My submissions");
    html_fmt(&p->b, "<h1>%R</h1>\n", is_staff(p) ? "All submissions" : "My submissions");
    html_raw(&p->b, "<form class=\"filters\" method=\"get\" action=\"/submissions\">");
    html_raw(&p->b, "<label>Lab<select name=\"lab\"><option value=\"\">all labs</option>");
    for (size_t i = 0; i < p->app->nlabs; i++) {
        const char *n = p->app->labs[i].lab.name;
        html_fmt(&p->b, "<option value=\"%s\"%R>%s</option>", n, lab && strcmp(lab, n) == 0 ? " selected" : "", n);
    }
    html_raw(&p->b, "</select></label>");
    if (is_staff(p))
        html_fmt(&p->b, "<label>Student<input type=\"text\" name=\"user\" value=\"%s\" placeholder=\"user name\"></label>",
                 user);
    html_raw(&p->b, "<label>Status<select name=\"status\"><option value=\"\">any status</option>");
    for (size_t i = 0; i < sizeof(all_statuses) / sizeof(all_statuses[0]); i++)
        html_fmt(&p->b, "<option value=\"%s\"%R>%s</option>", all_statuses[i],
                 status && strcmp(status, all_statuses[i]) == 0 ? " selected" : "", status_words(all_statuses[i]));
    html_raw(&p->b, "</select></label><button type=\"submit\">Filter</button></form>\n");
    if (json_array_size(json_object_get(subs, "submissions")) == 0)
        html_raw(&p->b, "<p class=\"muted\">No submissions match.</p>\n");
    else
        put_submissions_table(p, json_object_get(subs, "submissions"), is_staff(p), 1);
    if (json_array_size(json_object_get(subs, "submissions")) == (size_t)limit) {
        html_raw(&p->b, "<p><a href=\"/submissions?");
        if (lab) html_fmt(&p->b, "lab=%u&amp;", lab);
        if (user && is_staff(p)) html_fmt(&p->b, "user=%u&amp;", user);
        if (status) html_fmt(&p->b, "status=%u&amp;", status);
        html_fmt(&p->b, "offset=%d\">Older submissions</a></p>\n", offset + limit);
    }
    json_decref(subs);
    return page_end(p, 200);
}

/* ---- scoreboard and charts -------------------------------------------------------- */

struct sb_row {
    json_t *row;
    double score, speedup;
    long long submission;
};

static int sb_by_speedup(const void *a, const void *b)
{
    const struct sb_row *x = a, *y = b;
    if (x->speedup != y->speedup)
        return x->speedup < y->speedup ? 1 : -1;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* The latest override of a submission (staff see its reason). 1 if any. */
static int override_of(struct page *p, long long sub, char *reason, size_t len)
{
    sqlite3_stmt *st = db_stmt(p->app->db, "SELECT reason FROM overrides WHERE submission_id = ?1 "
                                           "ORDER BY id DESC LIMIT 1");
    int found = 0;

    if (st == NULL)
        return 0;
    sqlite3_bind_int64(st, 1, sub);
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(reason, len, "%s", db_col_text(st, 0));
        found = 1;
    }
    sqlite3_reset(st);
    return found;
}

/* The student's scoreboard name and the toggle between pseudonym and real
 * name; the form returns to lab's scoreboard (or to /labs when lab is ""). */
static void put_show_name(struct page *p, const char *lab)
{
    char pseudo[65];

    if (p->user.show_name)
        html_fmt(&p->b, "<div class=\"notice\"><p>On scoreboards other students see you as "
                        "<strong>%s</strong> (your real name).</p>", p->user.display_name);
    else if (lab[0] && auth_pseudonym(p->app->db, p->user.id, lab, 0, pseudo) == 0)
        html_fmt(&p->b, "<div class=\"notice\"><p>On this scoreboard other students see you as "
                        "<strong>%s</strong> (a pseudonym; you have a different one in each lab).</p>",
                 pseudo);
    else
        html_raw(&p->b, "<div class=\"notice\"><p>On scoreboards other students see you under a "
                        "pseudonym, a different one in each lab.</p>");
    html_raw(&p->b, "<form class=\"inline\" method=\"post\" action=\"/me/show-name\">");
    csrf_field(p);
    html_fmt(&p->b, "<input type=\"hidden\" name=\"show\" value=\"%R\"><input type=\"hidden\" name=\"lab\" value=\"%s\">"
                    "<button type=\"submit\" class=\"secondary\" id=\"show-name\">%R</button></form></div>\n",
             p->user.show_name ? "0" : "1", lab,
             p->user.show_name ? "Hide my name (use my pseudonym)" : "Show my real name instead");
}

static int page_scoreboard(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *sb = NULL, *rows, *r;
    const char *sort = http_request_query(p->req, "sort");
    int by_speed = sort && strcmp(sort, "speedup") == 0;
    struct sb_row *v = NULL;
    size_t n, i;
    struct app_lab *al = app_lab_find(p->app, lab);
    int my_rank = 0;
    long long my_sub = 0;

    if (api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return page_api_error(p, &e);
    /* A student's rows carry no ids: their own row is found by rank. */
    if (!is_staff(p))
        api_scoreboard_mine(p->app, &p->user, lab, &my_rank, &my_sub);
    rows = json_object_get(sb, "rows");
    n = json_array_size(rows);
    v = calloc(n + 1, sizeof(*v));
    if (v == NULL) {
        json_decref(sb);
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    }
    json_array_foreach(rows, i, r) {
        v[i].row = r;
        v[i].score = jnum(r, "score", -1);
        v[i].speedup = jnum(r, "speedup", -1);
        v[i].submission = (long long)jnum(r, "submission", 0);
    }
    if (by_speed)
        qsort(v, n, sizeof(*v), sb_by_speedup);
    page_begin(p, "Scoreboard");
    html_fmt(&p->b, "<h1>Scoreboard <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n",
             lab, al ? al->lab.title : lab);
    if (p->user.role == AUTH_STUDENT) {
        put_show_name(p, lab);
    } else {
        html_raw(&p->b, "<p class=\"muted small\">Staff view: real names. Students see pseudonyms "
                        "unless they chose to show their name.</p>\n");
    }
    html_fmt(&p->b, "<p class=\"small\">Sort by: <a href=\"/labs/%u/scoreboard\"%R>score</a> &middot; "
                    "<a href=\"/labs/%u/scoreboard?sort=speedup\"%R>speedup</a>",
             lab, by_speed ? "" : " aria-current=\"true\"", lab, by_speed ? " aria-current=\"true\"" : "");
    if (is_staff(p))
        html_fmt(&p->b, " &middot; <a href=\"/labs/%u/scoreboard.csv\">CSV</a> &middot; "
                        "<a href=\"/labs/%u/stats\">charts</a>", lab, lab);
    html_raw(&p->b, "</p>\n");
    if (n == 0) {
        html_raw(&p->b, "<p class=\"muted\">Nobody has a graded submission yet.</p>\n");
    } else {
        html_fmt(&p->b, TABLE_BOX("Scoreboard") "<table id=\"scoreboard\" class=\"scoreboard sortable\"><thead><tr>"
                        "<th class=\"num\" data-sort=\"num\">Rank</th><th data-sort=\"text\">%R</th>"
                        "<th class=\"num\" data-sort=\"num\"%R>Score</th>"
                        "<th class=\"num\" data-sort=\"num\"%R>Speedup</th><th>Submitted</th></tr></thead><tbody>\n",
                 is_staff(p) ? "Student" : "Name",
                 by_speed ? "" : " aria-sort=\"descending\"", by_speed ? " aria-sort=\"descending\"" : "");
        for (i = 0; i < n; i++) {
            json_t *row = v[i].row;
            const char *name = jstr(row, "display_name");
            int me = my_rank > 0 && (int)jnum(row, "rank", 0) == my_rank;
            long long sub = is_staff(p) ? v[i].submission : me ? my_sub : 0;
            char reason[520];
            int ov = sub > 0 && override_of(p, sub, reason, sizeof(reason));

            html_fmt(&p->b, "<tr%R><td class=\"num\" data-value=\"%d\">%d</td><td>", me ? " class=\"me\"" : "",
                     (int)jnum(row, "rank", 0), (int)jnum(row, "rank", 0));
            if (is_staff(p))
                html_fmt(&p->b, "<a href=\"/submissions?user=%u&amp;lab=%u\">%s</a> <span class=\"muted small\">%s</span>",
                         jstr(row, "user"), lab, name[0] ? name : jstr(row, "user"), jstr(row, "user"));
            else
                html_fmt(&p->b, "%s%R", name[0] ? name : jstr(row, "user"), me ? " <span class=\"muted\">(you)</span>" : "");
            html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", v[i].score);
            if (sub > 0)
                html_fmt(&p->b, "<a href=\"/submissions/%lld\">", sub);
            put_score(&p->b, json_object_get(row, "score"), json_object_get(row, "max_score"));
            if (sub > 0)
                html_raw(&p->b, "</a>");
            if (ov && is_staff(p))
                html_fmt(&p->b, " <span class=\"badge warn\" title=\"%s\">override: %s</span>", reason, reason);
            else if (ov && me) /* others' adjustments are their business */
                html_raw(&p->b, " <span class=\"badge warn\">adjusted by staff</span>");
            html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", v[i].speedup);
            if (v[i].speedup >= 0)
                html_fmt(&p->b, "%.2f&times;", v[i].speedup);
            else
                html_raw(&p->b, "<span class=\"muted\">-</span>");
            html_raw(&p->b, "</td><td>");
            if (is_staff(p))
                put_when_iso(&p->b, jstr(row, "submitted_at"));
            else /* students see the day only */
                html_fmt(&p->b, "<time datetime=\"%s\">%s</time>", jstr(row, "submitted_on"),
                         jstr(row, "submitted_on"));
            html_raw(&p->b, "</td></tr>\n");
        }
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    free(v);
    json_decref(sb);
    return page_end(p, 200);
}

static int post_show_name(struct page *p)
{
    struct api_error e;
    const char *show, *lab;
    char loc[160];

    if (post_check(p) != 0)
        return HTTP_DONE;
    show = field(p, "show");
    lab = field(p, "lab");
    if (api_show_name_set(p->app, &p->user, show && strcmp(show, "1") == 0, &e) != 0)
        return page_api_error(p, &e);
    if (lab && app_lab_find(p->app, lab))
        snprintf(loc, sizeof(loc), "/labs/%s/scoreboard", lab);
    else
        snprintf(loc, sizeof(loc), "/labs");
    return redirect(p, loc);
}

static int page_stats(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *sb = NULL, *r;
    double *scores, *speedups;
    size_t n, i, ns = 0;
    double maxs = 0;

    if (!is_staff(p))
        return page_error(p, 403, "Not allowed", "The charts are for course staff.");
    if (api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return page_api_error(p, &e);
    n = json_array_size(json_object_get(sb, "rows"));
    scores = calloc(n + 1, sizeof(double));
    speedups = calloc(n + 1, sizeof(double));
    if (!scores || !speedups) {
        free(scores);
        free(speedups);
        json_decref(sb);
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    }
    json_array_foreach(json_object_get(sb, "rows"), i, r) {
        scores[i] = jnum(r, "score", NAN);
        if (jnum(r, "max_score", 0) > maxs)
            maxs = jnum(r, "max_score", 0);
        if (json_is_number(json_object_get(r, "speedup")))
            speedups[ns++] = jnum(r, "speedup", 0);
    }
    page_begin(p, "Charts");
    html_fmt(&p->b, "<h1>Charts <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n", lab, lab);
    html_fmt(&p->b, "<p>Each student's best submission: %zu students, %zu with a timing.</p>\n", n, ns);
    html_raw(&p->b, "<div class=\"grid2\"><div><h2>Scores</h2>\n");
    html_svg_histogram(&p->b, "Distribution of best scores", scores, n, 10, 0, maxs > 0 ? maxs : 100, "score");
    html_raw(&p->b, "</div><div><h2>Speedups</h2>\n");
    html_svg_histogram(&p->b, "Distribution of speedups", speedups, ns, 10, 0, 0, "speedup (higher is faster)");
    html_raw(&p->b, "</div></div>\n");
    free(scores);
    free(speedups);
    json_decref(sb);
    return page_end(p, 200);
}

static int page_scoreboard_csv(struct page *p, const char *lab)
{
    struct api_error e;
    struct http_buf out = {0};

    if (api_scoreboard_csv(p->app, &p->user, lab, &out, &e) != 0) {
        http_buf_free(&out);
        return page_api_error(p, &e);
    }
    security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    http_response_header(p->req, "Content-Disposition", "attachment; filename=\"scoreboard.csv\"");
    http_response_body(p->req, 200, "text/csv; charset=utf-8", out.data ? out.data : "", out.len);
    http_buf_free(&out);
    return HTTP_DONE;
}

/* ---- audit log (SQL here: api.h has no helper for it) ------------------------------ */

static int page_audit(struct page *p)
{
    const char *action = http_request_query(p->req, "action");
    sqlite3_stmt *st;
    int any = 0;

    if (!is_staff(p))
        return page_error(p, 403, "Not allowed", "The audit log is for course staff.");
    if (action && !*action)
        action = NULL;
    st = db_stmt(p->app->db, "SELECT a.at, u.name, a.action, a.target, a.detail FROM audit_log a "
                             "LEFT JOIN users u ON u.id = a.actor_user_id "
                             "WHERE ?1 IS NULL OR a.action = ?1 ORDER BY a.id DESC LIMIT 500");
    if (st == NULL)
        return page_error(p, 500, "Something broke on our side", "The audit log could not be read.");
    if (action)
        sqlite3_bind_text(st, 1, action, -1, SQLITE_TRANSIENT);
    page_begin(p, "Audit log");
    html_raw(&p->b, "<h1>Audit log</h1>\n<p class=\"muted small\">Every regrade, score override, "
                    "rubric change, new user and extension, newest first.</p>\n");
    html_raw(&p->b, "<form class=\"filters\" method=\"get\" action=\"/audit\"><label>Action"
                    "<input type=\"text\" name=\"action\" placeholder=\"e.g. override\"");
    if (action)
        html_fmt(&p->b, " value=\"%s\"", action);
    html_raw(&p->b, "></label><button type=\"submit\">Filter</button></form>\n");
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Audit log") "<table id=\"audit\"><thead><tr><th>When</th><th>Who</th><th>Action</th>"
                            "<th>Target</th><th>Detail</th></tr></thead><tbody>\n");
        any = 1;
        html_raw(&p->b, "<tr><td>");
        put_when(&p->b, sqlite3_column_double(st, 0));
        html_fmt(&p->b, "</td><td>%s</td><td><span class=\"badge\">%s</span></td><td>%s</td><td>%s</td></tr>\n",
                 sqlite3_column_type(st, 1) == SQLITE_NULL ? "system" : db_col_text(st, 1),
                 db_col_text(st, 2), db_col_text(st, 3), db_col_text(st, 4));
    }
    sqlite3_reset(st);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<p class=\"muted\">Nothing recorded yet.</p>\n");
    return page_end(p, 200);
}

/* ---- admin: users ------------------------------------------------------------------ */

static int page_users(struct page *p, json_t *created, const char *problem, int status)
{
    struct api_error e;
    json_t *users = NULL, *u;
    size_t i;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (api_users_list(p->app, &p->user, &users, &e) != 0)
        return page_api_error(p, &e);
    page_begin(p, "Users");
    html_raw(&p->b, "<h1>Users</h1>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    if (created) {
        html_raw(&p->b, "<div class=\"notice good\"><p><strong>New tokens: copy them now.</strong> "
                        "They are stored only as hashes and cannot be shown again.</p>\n"
                        TABLE_BOX("New tokens") "<table id=\"new-tokens\"><thead><tr><th>Name</th><th>Role</th><th>Token</th></tr></thead><tbody>\n");
        json_array_foreach(json_object_get(created, "users"), i, u)
            html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td><span class=\"token\">%s</span></td></tr>\n",
                     jstr(u, "name"), jstr(u, "role"), jstr(u, "token"));
        html_raw(&p->b, "</tbody></table></div></div>\n");
    }
    html_raw(&p->b, "<div class=\"grid2\"><div class=\"panel\"><h2>Add one user</h2>\n"
                    "<form class=\"stack\" method=\"post\" action=\"/admin/users\">");
    csrf_field(p);
    html_raw(&p->b, "<label for=\"u-name\">User name</label><input type=\"text\" id=\"u-name\" name=\"name\" "
                    "required pattern=\"[A-Za-z0-9_.@\\-]{1,64}\">"
                    "<label for=\"u-display\">Display name</label><input type=\"text\" id=\"u-display\" name=\"display_name\">"
                    "<label for=\"u-role\">Role</label><select id=\"u-role\" name=\"role\">"
                    "<option>student</option><option>ta</option><option>admin</option><option>runner</option></select>"
                    "<p><button type=\"submit\">Add user</button></p></form></div>\n"
                    "<div class=\"panel\"><h2>Import a roster</h2>\n"
                    "<form class=\"stack\" method=\"post\" action=\"/admin/users\" enctype=\"multipart/form-data\">");
    csrf_field(p);
    html_raw(&p->b, "<label for=\"roster\">CSV: <code>name,role,display_name</code>, one user per line "
                    "(header optional)</label><textarea id=\"roster\" name=\"roster\" class=\"code\" "
                    "placeholder=\"name,role,display_name&#10;ada,student,Ada Lovelace\"></textarea>"
                    "<label for=\"roster-file\">&hellip;or upload the CSV file</label>"
                    "<input type=\"file\" id=\"roster-file\" name=\"roster_file\" accept=\".csv,text/csv\">"
                    "<p><button type=\"submit\">Import</button></p></form></div></div>\n");
    html_fmt(&p->b, "<h2>All users (%zu)</h2>\n" TABLE_BOX("All users") "<table class=\"sortable\"><thead><tr><th data-sort=\"text\">Name</th>"
                    "<th data-sort=\"text\">Display name</th><th data-sort=\"text\">Role</th>"
                    "<th data-sort=\"text\">Pseudonym</th><th>Name on scoreboard</th></tr></thead><tbody>\n",
             json_array_size(json_object_get(users, "users")));
    json_array_foreach(json_object_get(users, "users"), i, u)
        html_fmt(&p->b, "<tr><td><a href=\"/submissions?user=%u\">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%R</td></tr>\n",
                 jstr(u, "name"), jstr(u, "name"), jstr(u, "display_name"), jstr(u, "role"),
                 jstr(u, "pseudonym"), json_is_true(json_object_get(u, "show_name")) ? "shown" : "pseudonym");
    html_raw(&p->b, "</tbody></table></div>\n");
    json_decref(users);
    return page_end(p, status);
}

static int post_users(struct page *p)
{
    struct api_error e;
    const struct form_field *roster;
    const struct multipart_part *file;
    const char *name;
    json_t *out = NULL, *list;
    int rc;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (post_check(p) != 0)
        return HTTP_DONE;
    roster = field_get(p, "roster");
    name = field(p, "name");
    file = multipart_find(p->parts, p->nparts, "roster_file");
    if (roster && roster->len > 0) {
        rc = api_users_add_csv(p->app, &p->user, roster->value, roster->len, &out, &e);
    } else if (file && file->has_filename && file->len > 0) {
        rc = api_users_add_csv(p->app, &p->user, file->data, file->len, &out, &e);
    } else if (name && *name) {
        const char *dn = field(p, "display_name");
        list = json_pack("[{s:s,s:s,s:s}]", "name", name, "role", field(p, "role") ? field(p, "role") : "student",
                         "display_name", dn && *dn ? dn : name);
        if (list == NULL)
            return page_error(p, 500, "Out of memory", "Try again in a minute.");
        rc = api_users_add(p->app, &p->user, list, &out, &e);
        json_decref(list);
    } else {
        return page_users(p, NULL, "Fill in a user name, or paste or upload a roster.", 400);
    }
    if (rc != 0)
        return page_users(p, NULL, e.message, e.status ? e.status : 400);
    rc = page_users(p, out, NULL, 201);
    json_decref(out);
    return rc;
}

/* ---- admin: rubric editor ----------------------------------------------------------- */

/* Split text into lines (pointers into a copy). Returns the count; *lines
 * and *mem are malloc'd (caller frees both). */
static size_t split_lines(const char *text, char ***lines, char **mem)
{
    size_t n = 1, i = 0;
    char *s;

    *mem = strdup(text ? text : "");
    if (*mem == NULL)
        return 0;
    for (s = *mem; *s; s++)
        n += *s == '\n';
    *lines = calloc(n + 1, sizeof(char *));
    if (*lines == NULL)
        return 0;
    s = *mem;
    while (*s) {
        char *nl = strchr(s, '\n');
        (*lines)[i++] = s;
        if (!nl)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    return i;
}

/* A line diff (longest common subsequence) of two pretty-printed rubric
 * versions, as + / - / context lines. Rubrics are a few hundred lines, so
 * the O(n*m) table is small; past 1500 lines it says so instead. */
static void put_diff(struct html_buf *b, const char *old_text, const char *new_text)
{
    char **a = NULL, **c = NULL, *am = NULL, *cm = NULL;
    size_t n = split_lines(old_text, &a, &am), m = split_lines(new_text, &c, &cm);
    unsigned short *t = NULL;
    char *ops = NULL;
    size_t i, j, k = 0, changes = 0;

    if (!a || !c || n > 1500 || m > 1500 ||
        (t = calloc((n + 1) * (m + 1), sizeof(*t))) == NULL) {
        html_raw(b, "<p class=\"muted\">The rubric is too long to show a diff.</p>\n");
        goto out;
    }
#define T(x, y) t[(x) * (m + 1) + (y)]
    for (i = n; i-- > 0;)
        for (j = m; j-- > 0;)
            T(i, j) = strcmp(a[i], c[j]) == 0 ? T(i + 1, j + 1) + 1
                      : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
    /* Walk the table once into ops (' ' same, '-' old only, '+' new
     * only), deletions first as diff(1) prints them. */
    ops = malloc(n + m + 1);
    if (ops == NULL) {
        html_raw(b, "<p class=\"muted\">The rubric is too long to show a diff.</p>\n");
        goto out;
    }
    i = j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && strcmp(a[i], c[j]) == 0) {
            ops[k++] = ' '; i++; j++;
        } else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
            ops[k++] = '-'; i++; changes++;
        } else {
            ops[k++] = '+'; j++; changes++;
        }
    }
    /* Print changed lines with 3 lines of context; fold the rest. */
    html_raw(b, "<div class=\"diff\" id=\"diff\">\n");
    i = j = 0;
    for (size_t x = 0, folded = 0; x < k; x++) {
        int near = 0;
        for (size_t y = x >= 3 ? x - 3 : 0; y <= x + 3 && y < k; y++)
            near |= ops[y] != ' ';
        if (ops[x] == ' ') {
            if (near) {
                html_fmt(b, "<div class=\"ctx\">  %s</div>\n", a[i]);
                folded = 0;
            } else if (!folded) {
                html_raw(b, "<div class=\"ctx\">&hellip;</div>\n");
                folded = 1;
            }
            i++; j++;
        } else if (ops[x] == '-') {
            html_fmt(b, "<div class=\"del\">- %s</div>\n", a[i++]);
            folded = 0;
        } else {
            html_fmt(b, "<div class=\"add\">+ %s</div>\n", c[j++]);
            folded = 0;
        }
    }
#undef T
    html_raw(b, "</div>\n");
    if (changes == 0)
        html_raw(b, "<p class=\"muted\">No changes: this is the same as the current version.</p>\n");
out:
    free(ops);
    free(t);
    free(a);
    free(c);
    free(am);
    free(cm);
}

static char *rubric_pretty(const json_t *doc)
{
    return json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

/* Submission ids a rubric change affects: each student's best and latest
 * final submission in the lab (what their grade rests on). Stores at most
 * max ids and returns how many there are in all. */
static size_t affected_ids(struct page *p, const char *lab, long long *ids, size_t max)
{
    sqlite3_stmt *st = db_stmt(p->app->db,
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY id DESC) AS rl, "
        " ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY COALESCE(score, -1) DESC, id) AS rb "
        " FROM submissions WHERE lab = ?1 AND status IN ('graded','compile_error','rejected',"
        " 'runtime_error','timeout')) WHERE rl = 1 OR rb = 1 ORDER BY id");
    size_t n = 0;

    if (st == NULL)
        return 0;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n < max)
            ids[n] = sqlite3_column_int64(st, 0);
        n++;
    }
    sqlite3_reset(st);
    return n;
}

static void put_rubric_versions(struct page *p, const char *lab)
{
    sqlite3_stmt *st = db_stmt(p->app->db, "SELECT r.version, r.created_at, u.name FROM rubrics r "
                                           "LEFT JOIN users u ON u.id = r.created_by WHERE r.lab = ?1 "
                                           "ORDER BY r.version DESC LIMIT 50");
    if (st == NULL)
        return;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_TRANSIENT);
    html_raw(&p->b, "<h2>Versions</h2>\n" TABLE_BOX("Rubric versions") "<table id=\"versions\"><thead><tr><th class=\"num\">Version</th>"
                    "<th>Created</th><th>By</th></tr></thead><tbody>\n");
    while (sqlite3_step(st) == SQLITE_ROW) {
        html_fmt(&p->b, "<tr><td class=\"num\">%d</td><td>", sqlite3_column_int(st, 0));
        put_when(&p->b, sqlite3_column_double(st, 1));
        html_fmt(&p->b, "</td><td>%s</td></tr>\n",
                 sqlite3_column_type(st, 2) == SQLITE_NULL ? "rubrics/ file" : db_col_text(st, 2));
    }
    sqlite3_reset(st);
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* The editor; text is what goes in the textarea (NULL: the current
 * version), problem an error to show, preview the diff to show. */
static int page_rubric(struct page *p, const char *lab, const char *text, const char *problem,
                       int preview, const char *done, int status)
{
    struct api_error e;
    json_t *cur = NULL;
    char *cur_text = NULL;
    long long ids[1];
    int version;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins edit rubrics.");
    if (api_rubric_get(p->app, &p->user, lab, &cur, &e) != 0)
        return page_api_error(p, &e);
    version = (int)jnum(cur, "version", 0);
    cur_text = rubric_pretty(json_object_get(cur, "rubric"));
    page_begin(p, "Rubric editor");
    html_fmt(&p->b, "<h1>Rubric <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n", lab, lab);
    html_fmt(&p->b, "<p>Current version: <strong id=\"rubric-version\">%d</strong>. Changes are "
                    "validated, shown as a diff, and stored as version %d; submissions keep the version "
                    "they were graded with.</p>\n", version, version + 1);
    if (done)
        html_fmt(&p->b, "<div class=\"notice good\" role=\"status\"><p>%s</p></div>\n", done);
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>%s</p></div>\n", problem);
    if (preview && text) {
        html_raw(&p->b, "<h2>What changes</h2>\n");
        put_diff(&p->b, cur_text, text);
    }
    html_fmt(&p->b, "<form class=\"stack wide\" method=\"post\" action=\"/admin/labs/%u/rubric\">", lab);
    csrf_field(p);
    html_raw(&p->b, "<label for=\"rubric\">Rubric JSON (see docs/formats.md)</label>"
                    "<textarea id=\"rubric\" name=\"rubric\" class=\"code rubric\" spellcheck=\"false\">");
    html_text(&p->b, text ? text : cur_text);
    html_fmt(&p->b, "</textarea><label class=\"check\"><input type=\"checkbox\" name=\"regrade\" value=\"1\"> "
                    "Regrade affected submissions (each student's best and latest: %zu now)</label>"
                    "<p><button type=\"submit\" name=\"action\" value=\"preview\" class=\"secondary\">Check and "
                    "show changes</button> <button type=\"submit\" name=\"action\" value=\"apply\" id=\"apply\">"
                    "Apply as version %d</button></p></form>\n",
             affected_ids(p, lab, ids, 0), version + 1);
    put_rubric_versions(p, lab);
    free(cur_text);
    json_decref(cur);
    return page_end(p, status);
}

static int post_rubric(struct page *p, const char *lab)
{
    struct api_error e;
    const char *text, *action;
    json_t *doc;
    json_error_t jerr;
    char msg[600], *pretty;
    struct app_lab *al = app_lab_find(p->app, lab);
    struct rubric r;
    int version = 0, rc;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins edit rubrics.");
    if (post_check(p) != 0)
        return HTTP_DONE;
    if (al == NULL)
        return page_error(p, 404, "Not found", "There is no such lab.");
    text = field(p, "rubric");
    action = field(p, "action");
    if (text == NULL || *text == '\0')
        return page_rubric(p, lab, NULL, "The rubric box was empty; nothing changed.", 0, NULL, 400);
    doc = json_loads(text, 0, &jerr);
    if (doc == NULL) {
        snprintf(msg, sizeof(msg), "That is not valid JSON (line %d, column %d): %s. Nothing changed.",
                 jerr.line, jerr.column, jerr.text);
        return page_rubric(p, lab, text, msg, 0, NULL, 400);
    }
    if (rubric_parse(doc, &al->lab, &r, msg, sizeof(msg)) != 0) {
        char full[700];
        snprintf(full, sizeof(full), "The rubric is not valid: %s. Nothing changed.", msg);
        json_decref(doc);
        return page_rubric(p, lab, text, full, 0, NULL, 400);
    }
    rubric_free(&r);
    pretty = rubric_pretty(doc);
    if (action == NULL || strcmp(action, "apply") != 0) {
        rc = page_rubric(p, lab, pretty ? pretty : text, NULL, 1, "The rubric is valid. Review the changes below, then apply.", 200);
        free(pretty);
        json_decref(doc);
        return rc;
    }
    free(pretty);
    rc = api_rubric_put(p->app, &p->user, lab, doc, &version, &e);
    json_decref(doc);
    if (rc != 0)
        return page_rubric(p, lab, text, e.message, 0, NULL, e.status ? e.status : 400);
    if (field(p, "regrade") && strcmp(field(p, "regrade"), "1") == 0) {
        long long ids[2000];
        size_t n = affected_ids(p, lab, ids, 2000), ok = 0;
        if (n > 2000)
            n = 2000;
        for (size_t i = 0; i < n; i++)
            ok += api_regrade(p->app, &p->user, ids[i], &e) == 0;
        snprintf(msg, sizeof(msg), "Saved as version %d; %zu of %zu affected submissions are back in the queue.",
                 version, ok, n);
    } else {
        snprintf(msg, sizeof(msg), "Saved as version %d. New submissions are graded with it; earlier "
                 "ones keep their version until regraded.", version);
    }
    return page_rubric(p, lab, NULL, NULL, 0, msg, 200);
}

/* ---- admin: deadlines and extensions ---------------------------------------------- */

/* "2026-12-04T23:59" (datetime-local, taken as UTC) or full ISO -> seconds. */
static double parse_local_time(const char *s)
{
    char buf[40];
    double t = 0;

    if (s == NULL || *s == '\0')
        return 0;
    if (strlen(s) == 16)
        snprintf(buf, sizeof(buf), "%s:00Z", s);
    else if (strlen(s) == 19)
        snprintf(buf, sizeof(buf), "%sZ", s);
    else
        snprintf(buf, sizeof(buf), "%s", s);
    if (rubric_time_parse(buf, &t) != 0)
        return -1;
    return t;
}

static void fmt_local(char *buf, size_t len, double t)
{
    time_t s = (time_t)t;
    struct tm tm;

    buf[0] = '\0';
    if (t > 0 && gmtime_r(&s, &tm))
        strftime(buf, len, "%Y-%m-%dT%H:%M", &tm);
}

static int page_deadlines(struct page *p, const char *problem, const char *done, int status)
{
    sqlite3_stmt *st;
    char a[32], h[32];
    int any = 0;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    page_begin(p, "Deadlines");
    html_raw(&p->b, "<h1>Deadlines and extensions</h1>\n");
    if (done)
        html_fmt(&p->b, "<div class=\"notice good\" role=\"status\"><p>%s</p></div>\n", done);
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    html_raw(&p->b, "<p class=\"small muted\">Times are UTC. Changing a lab's deadline stores a new "
                    "rubric version.</p>\n" TABLE_BOX("Lab deadlines") "<table><thead><tr><th>Lab</th><th>Due</th><th>Hard deadline</th>"
                    "<th>Change</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < p->app->nlabs; i++) {
        struct app_lab *l = &p->app->labs[i];
        double due = l->has_rubric ? l->rubric.due : 0, hard = l->has_rubric ? l->rubric.hard_deadline : 0;

        fmt_local(a, sizeof(a), due);
        fmt_local(h, sizeof(h), hard);
        html_fmt(&p->b, "<tr><td><a href=\"/labs/%u\">%s</a></td><td>", l->lab.name, l->lab.name);
        put_when(&p->b, due);
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, hard);
        html_fmt(&p->b, "</td><td><form class=\"inline\" method=\"post\" action=\"/admin/labs/%u/deadline\">",
                 l->lab.name);
        csrf_field(p);
        html_fmt(&p->b, "<label class=\"sr-only\" for=\"due-%s\">Due</label><input type=\"datetime-local\" id=\"due-%s\" name=\"due\" value=\"%s\">"
                        "<label class=\"sr-only\" for=\"hard-%s\">Hard deadline</label><input type=\"datetime-local\" id=\"hard-%s\" name=\"hard_deadline\" value=\"%s\">"
                        "<button type=\"submit\">Save</button></form></td></tr>\n",
                 l->lab.name, l->lab.name, a, l->lab.name, l->lab.name, h);
    }
    html_raw(&p->b, "</tbody></table></div>\n<h2>Extensions</h2>\n");
    st = db_stmt(p->app->db, "SELECT u.name, e.lab, e.due, e.hard_deadline FROM extensions e "
                             "JOIN users u ON u.id = e.user_id ORDER BY e.lab, u.name");
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Extensions") "<table id=\"extensions\"><thead><tr><th>Student</th><th>Lab</th><th>Due</th>"
                            "<th>Hard deadline</th></tr></thead><tbody>\n");
        any = 1;
        html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td>", db_col_text(st, 0), db_col_text(st, 1));
        put_when(&p->b, sqlite3_column_double(st, 2));
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, sqlite3_column_double(st, 3));
        html_raw(&p->b, "</td></tr>\n");
    }
    if (st)
        sqlite3_reset(st);
    html_raw(&p->b, any ? "</tbody></table></div>\n" : "<p class=\"muted\">No extensions.</p>\n");
    html_raw(&p->b, "<h3>Give an extension</h3>\n<form class=\"filters\" method=\"post\" action=\"/admin/extensions\">");
    csrf_field(p);
    html_raw(&p->b, "<label>Student<input type=\"text\" name=\"user\" required></label><label>Lab<select name=\"lab\">");
    for (size_t i = 0; i < p->app->nlabs; i++)
        html_fmt(&p->b, "<option>%s</option>", p->app->labs[i].lab.name);
    html_raw(&p->b, "</select></label><label>Due (UTC)<input type=\"datetime-local\" name=\"due\" required></label>"
                    "<label>Hard deadline (UTC, optional)<input type=\"datetime-local\" name=\"hard_deadline\"></label>"
                    "<button type=\"submit\">Save extension</button></form>\n");
    return page_end(p, status);
}

static int post_extension(struct page *p)
{
    struct api_error e;
    const char *user, *lab;
    double due, hard;
    char msg[300];

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    if (post_check(p) != 0)
        return HTTP_DONE;
    user = field(p, "user");
    lab = field(p, "lab");
    due = parse_local_time(field(p, "due"));
    hard = parse_local_time(field(p, "hard_deadline"));
    if (!user || !*user || !lab || due <= 0 || hard < 0)
        return page_deadlines(p, "Give the student's user name, the lab and a due date (UTC).", NULL, 400);
    if (api_extension_set(p->app, &p->user, user, lab, due, hard, &e) != 0)
        return page_deadlines(p, e.message, NULL, e.status ? e.status : 400);
    snprintf(msg, sizeof(msg), "Extension saved for %.64s in %.64s.", user, lab);
    return page_deadlines(p, NULL, msg, 200);
}

static int post_deadline(struct page *p, const char *lab)
{
    struct api_error e;
    struct app_lab *al = app_lab_find(p->app, lab);
    json_t *doc, *late;
    double due, hard;
    char iso[40], msg[200];
    int version = 0;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    if (post_check(p) != 0)
        return HTTP_DONE;
    if (al == NULL || al->rubric_doc == NULL)
        return page_deadlines(p, "That lab has no rubric to change.", NULL, 404);
    due = parse_local_time(field(p, "due"));
    hard = parse_local_time(field(p, "hard_deadline"));
    if (due <= 0 || hard < 0)
        return page_deadlines(p, "Enter the due date as a date and time (UTC).", NULL, 400);
    doc = json_deep_copy(al->rubric_doc);
    if (doc == NULL)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    api_time_iso(due, iso, sizeof(iso));
    json_object_set_new(doc, "due", json_string(iso));
    if (hard > 0) {
        late = json_object_get(doc, "late");
        if (!json_is_object(late)) {
            late = json_object();
            json_object_set_new(late, "policy", json_string("accept"));
            json_object_set_new(doc, "late", late);
        }
        api_time_iso(hard, iso, sizeof(iso));
        json_object_set_new(late, "hard_deadline", json_string(iso));
    }
    if (api_rubric_put(p->app, &p->user, lab, doc, &version, &e) != 0) {
        json_decref(doc);
        return page_deadlines(p, e.message, NULL, e.status ? e.status : 400);
    }
    json_decref(doc);
    snprintf(msg, sizeof(msg), "Deadlines of %.64s saved (rubric version %d).", lab, version);
    return page_deadlines(p, NULL, msg, 200);
}

/* ---- admin: queue and runners ------------------------------------------------------ */

static int page_queue(struct page *p)
{
    struct api_error e;
    json_t *q = NULL, *s;
    sqlite3_stmt *st;
    size_t i;
    int any = 0;

    if (!is_staff(p))
        return page_error(p, 403, "Not allowed", "The queue page is for course staff.");
    if (api_queue_list(p->app, &p->user, &q, &e) != 0)
        return page_api_error(p, &e);
    p->refresh = 10;
    page_begin(p, "Queue");
    html_fmt(&p->b, "<h1>Runners and queue</h1>\n<p id=\"queue-depth\">Queued jobs: <strong>%lld</strong>"
                    " &middot; runners waiting for work: <strong>%zu</strong></p>\n",
             queue_depth(p->app->queue), queue_waiting(p->app->queue));
    html_raw(&p->b, "<h2>Runners</h2>\n");
    st = db_stmt(p->app->db, "SELECT name, gpu, last_seen, jobs_done FROM runners ORDER BY last_seen DESC");
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        double seen = sqlite3_column_double(st, 2);
        if (!any)
            html_raw(&p->b, TABLE_BOX("Runners") "<table id=\"runners\"><thead><tr><th>Runner</th><th>GPU</th><th>Last seen</th>"
                            "<th class=\"num\">Jobs done</th><th>State</th></tr></thead><tbody>\n");
        any = 1;
        html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td>", db_col_text(st, 0), db_col_text(st, 1));
        put_when(&p->b, seen);
        html_fmt(&p->b, "</td><td class=\"num\">%d</td><td>%R</td></tr>\n", sqlite3_column_int(st, 3),
                 db_now() - seen < 90 ? "<span class=\"badge good\">online</span>"
                                      : "<span class=\"badge warn\">not seen lately</span>");
    }
    if (st)
        sqlite3_reset(st);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<div class=\"notice warn\"><p>No runner has ever connected. Jobs wait in the "
                        "queue until one does: start <code>cugrade-runner</code> on a GPU host with a "
                        "runner token.</p></div>\n");
    html_raw(&p->b, "<h2>Jobs needing attention</h2>\n");
    if (json_array_size(json_object_get(q, "queue")) == 0) {
        html_raw(&p->b, "<p class=\"muted\">Nothing queued, running or failed.</p>\n");
    } else {
        html_raw(&p->b, TABLE_BOX("Jobs") "<table id=\"jobs\"><thead><tr><th>#</th><th>Lab</th><th>Student</th><th>Status</th>"
                        "<th>Phase</th><th class=\"num\">Attempts</th><th>Submitted</th><th></th></tr></thead><tbody>\n");
        json_array_foreach(json_object_get(q, "queue"), i, s) {
            long long id = (long long)jnum(s, "id", 0);
            html_fmt(&p->b, "<tr><td><a href=\"/submissions/%lld\">#%lld</a></td><td>%s</td><td>%s</td><td>",
                     id, id, jstr(s, "lab"), jstr(s, "user"));
            put_status(&p->b, jstr(s, "status"));
            html_fmt(&p->b, "</td><td>%s %s</td><td class=\"num\">%d</td><td>", jstr(s, "phase"),
                     jstr(s, "detail"), (int)jnum(s, "attempts", 0));
            put_when_iso(&p->b, jstr(s, "created_at"));
            html_raw(&p->b, "</td><td>");
            if (strcmp(jstr(s, "status"), "system_error") == 0) {
                html_fmt(&p->b, "<form class=\"inline\" method=\"post\" action=\"/submissions/%lld/regrade\">", id);
                csrf_field(p);
                html_raw(&p->b, "<button type=\"submit\" class=\"secondary\">Regrade</button></form>");
            }
            html_raw(&p->b, "</td></tr>\n");
        }
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    json_decref(q);
    return page_end(p, 200);
}

/* ---- admin: exports --------------------------------------------------------------------- */

static int page_exports(struct page *p)
{
    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    page_begin(p, "Exports");
    html_raw(&p->b, "<h1>Exports</h1>\n<ul>\n<li><a href=\"/admin/export/grades.csv\">Grades CSV</a> for the "
                    "LMS: <code>user,display_name,lab,score,max_score,late,submission</code>, each student's "
                    "best score per lab with overrides applied.</li>\n");
    for (size_t i = 0; i < p->app->nlabs; i++)
        html_fmt(&p->b, "<li><a href=\"/admin/export/results.json?lab=%u\">%s: Gradescope-style results</a> "
                        "(one <code>results.json</code> per student: their best submission) &middot; "
                        "<a href=\"/labs/%u/scoreboard.csv\">scoreboard CSV</a></li>\n",
                 p->app->labs[i].lab.name, p->app->labs[i].lab.name, p->app->labs[i].lab.name);
    html_raw(&p->b, "</ul>\n");
    return page_end(p, 200);
}

static int send_download(struct page *p, const char *type, const char *filename, const char *data, size_t len)
{
    char cd[160];

    security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    snprintf(cd, sizeof(cd), "attachment; filename=\"%s\"", filename);
    http_response_header(p->req, "Content-Disposition", cd);
    http_response_body(p->req, 200, type, data ? data : "", len);
    return HTTP_DONE;
}

static int export_grades(struct page *p)
{
    struct api_error e;
    struct http_buf out = {0};
    int rc;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    if (api_grades_csv(p->app, &p->user, &out, &e) != 0) {
        http_buf_free(&out);
        return page_api_error(p, &e);
    }
    rc = send_download(p, "text/csv; charset=utf-8", "grades.csv", out.data, out.len);
    http_buf_free(&out);
    return rc;
}

/* Gradescope-style: [{"user","display_name","submission","results":{score,
 * max_score,output,tests,...}}] with each student's best submission, the
 * score replaced by the override when there is one. */
static int export_results(struct page *p)
{
    struct api_error e;
    const char *lab = http_request_query(p->req, "lab");
    json_t *sb = NULL, *r, *out, *students;
    char *text, fname[96];
    size_t i;
    int rc;

    if (!is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    if (lab == NULL || api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return lab ? page_api_error(p, &e) : page_error(p, 400, "Which lab?", "Pick a lab on the exports page.");
    out = json_pack("{s:s,s:[]}", "lab", lab, "students");
    students = json_object_get(out, "students");
    json_array_foreach(json_object_get(sb, "rows"), i, r) {
        json_t *sub = NULL, *res;
        long long id = (long long)jnum(r, "submission", 0);
        if (api_submission_get(p->app, &p->user, id, &sub, &e) != 0)
            continue;
        res = json_object_get(sub, "result");
        res = json_is_object(res) ? json_deep_copy(res) : json_object();
        json_object_set(res, "score", json_object_get(r, "score"));
        json_object_set(res, "max_score", json_object_get(r, "max_score"));
        json_array_append_new(students, json_pack("{s:s,s:s,s:I,s:o}", "user", jstr(r, "user"), "display_name",
                                                  jstr(r, "display_name"), "submission", id, "results", res));
        json_decref(sub);
    }
    json_decref(sb);
    text = json_dumps(out, JSON_INDENT(1));
    json_decref(out);
    if (text == NULL)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    snprintf(fname, sizeof(fname), "%.64s-results.json", lab);
    rc = send_download(p, "application/json", fname, text, strlen(text));
    free(text);
    return rc;
}

/* ---- help ------------------------------------------------------------------------------- */

static int page_help(struct page *p)
{
    page_begin(p, "Help");
    html_raw(&p->b, "<h1>Help</h1>\n<div class=\"handout\">\n"
        "<h2>Submitting</h2><p>Open a lab, choose your <code>.cu</code> file (or paste it) and press "
        "<em>Submit for grading</em>. You land on the submission's page, which updates by itself "
        "(or every few seconds without JavaScript). Your best score counts.</p>\n"
        "<h2>From a terminal</h2><pre><code>curl -H 'Authorization: Bearer YOUR_TOKEN' -F file=@kernel.cu \\\n"
        "     http://THIS_SERVER/api/labs/LAB/submissions</code></pre>\n"
        "<h2>Statuses</h2><ul>"
        "<li><strong>waiting in the queue</strong>: a GPU will pick it up; you do not need to resubmit.</li>"
        "<li><strong>did not compile</strong>: the compiler output links each error to its line.</li>"
        "<li><strong>rejected</strong>: your code uses something the lab forbids; the reason says what.</li>"
        "<li><strong>crashed while running</strong> / <strong>ran out of time</strong>: see the cases and sanitizer findings.</li>"
        "<li><strong>grading failed (our fault)</strong>: not counted against you; staff will regrade.</li></ul>\n"
        "<h2>Scoreboard</h2><p>Other students see a pseudonym for you unless you choose to show your name "
        "(a button on the scoreboard page).</p></div>\n");
    return page_end(p, 200);
}

/* ---- static files ----------------------------------------------------------------------- */

static int serve_static(struct http_request *req, struct static_file *f)
{
    const char *inm = http_request_header(req, "If-None-Match");
    const char *v = http_request_query(req, "v");
    const char *tag = static_etag(f);

    http_response_header(req, "X-Content-Type-Options", "nosniff");
    http_response_header(req, "ETag", tag);
    /* A versioned link (?v=hash of these bytes) never changes: cache it for
     * a year. Any other URL is revalidated with the ETag. */
    if (v && strlen(v) == 16 && strncmp(v, tag + 1, 16) == 0)
        http_response_header(req, "Cache-Control", "public, max-age=31536000, immutable");
    else
        http_response_header(req, "Cache-Control", "no-cache");
    if (inm && strstr(inm, tag)) {
        http_response_status(req, 304);
        return HTTP_DONE;
    }
    http_response_body(req, 200, f->type, f->data, (size_t)(f->end - f->data));
    return HTTP_DONE;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

/* Split "/a/b/c" into at most max segments (pointers into buf). */
static size_t path_split(const char *path, char *buf, size_t len, char **seg, size_t max)
{
    size_t n = 0;
    char *s, *save = NULL;

    snprintf(buf, len, "%s", path);
    for (s = strtok_r(buf, "/", &save); s && n < max; s = strtok_r(NULL, "/", &save))
        seg[n++] = s;
    if (s)
        return max + 1; /* too deep */
    return n;
}

static long long parse_id(const char *s)
{
    char *end;
    long long v;

    if (s == NULL || *s < '1' || *s > '9')
        return 0;
    v = strtoll(s, &end, 10);
    return *end == '\0' && v > 0 ? v : 0;
}

static int dispatch(struct page *p, char **seg, size_t n)
{
    int get = p->req->method == HTTP_GET || p->req->method == HTTP_HEAD;
    int post = p->req->method == HTTP_POST;
    long long id;

    if (n == 0)
        return get ? redirect(p, "/labs") : -1;
    if (strcmp(seg[0], "labs") == 0) {
        if (n == 1 && get)
            return page_labs(p);
        if (n == 2 && get)
            return page_lab(p, seg[1], NULL, 200, NULL, NULL);
        if (n == 3 && post && strcmp(seg[2], "submit") == 0)
            return post_submit(p, seg[1]);
        if (n == 3 && get && strcmp(seg[2], "scoreboard") == 0)
            return page_scoreboard(p, seg[1]);
        if (n == 3 && get && strcmp(seg[2], "scoreboard.csv") == 0)
            return page_scoreboard_csv(p, seg[1]);
        if (n == 3 && get && strcmp(seg[2], "stats") == 0)
            return page_stats(p, seg[1]);
        return -1;
    }
    if (strcmp(seg[0], "submissions") == 0) {
        if (n == 1 && get)
            return page_submissions(p);
        if ((id = parse_id(n >= 2 ? seg[1] : NULL)) == 0)
            return -1;
        if (n == 2 && get)
            return page_submission(p, id);
        if (n == 3 && get && strcmp(seg[2], "source") == 0)
            return page_source(p, id);
        if (n == 3 && post && strcmp(seg[2], "override") == 0)
            return is_staff(p) ? post_override(p, id)
                               : page_error(p, 403, "Not allowed", "Only course staff override scores.");
        if (n == 3 && post && strcmp(seg[2], "regrade") == 0)
            return is_staff(p) ? post_regrade(p, id)
                               : page_error(p, 403, "Not allowed", "Only course staff regrade; submit again instead.");
        return -1;
    }
    if (n == 2 && post && strcmp(seg[0], "me") == 0 && strcmp(seg[1], "show-name") == 0)
        return post_show_name(p);
    if (n == 1 && get && strcmp(seg[0], "audit") == 0)
        return page_audit(p);
    if (n == 1 && get && strcmp(seg[0], "help") == 0)
        return page_help(p);
    if (strcmp(seg[0], "admin") == 0 && n >= 2) {
        if (!is_staff(p))
            return page_error(p, 403, "Not allowed", "These pages are for course staff.");
        if (n == 2 && strcmp(seg[1], "users") == 0)
            return get ? page_users(p, NULL, NULL, 200) : post ? post_users(p) : -1;
        if (n == 2 && strcmp(seg[1], "deadlines") == 0 && get)
            return page_deadlines(p, NULL, NULL, 200);
        if (n == 2 && strcmp(seg[1], "extensions") == 0 && post)
            return post_extension(p);
        if (n == 2 && strcmp(seg[1], "queue") == 0 && get)
            return page_queue(p);
        if (n == 2 && strcmp(seg[1], "exports") == 0 && get)
            return page_exports(p);
        if (n == 3 && strcmp(seg[1], "export") == 0 && get && strcmp(seg[2], "grades.csv") == 0)
            return export_grades(p);
        if (n == 3 && strcmp(seg[1], "export") == 0 && get && strcmp(seg[2], "results.json") == 0)
            return export_results(p);
        if (n == 4 && strcmp(seg[1], "labs") == 0 && strcmp(seg[3], "rubric") == 0)
            return get ? page_rubric(p, seg[2], NULL, NULL, 0, NULL, 200) : post ? post_rubric(p, seg[2]) : -1;
        if (n == 4 && strcmp(seg[1], "labs") == 0 && strcmp(seg[3], "deadline") == 0 && post)
            return post_deadline(p, seg[2]);
    }
    return -1;
}

int pages_handle(struct app *app, struct http_request *req)
{
    struct page p;
    char buf[512], *seg[6];
    size_t n;
    int rc, get = req->method == HTTP_GET || req->method == HTTP_HEAD;

    for (size_t i = 0; i < sizeof(static_files) / sizeof(static_files[0]); i++)
        if (strcmp(req->path, static_files[i].path) == 0)
            return get ? serve_static(req, &static_files[i])
                       : (http_response_body(req, 405, "text/plain; charset=utf-8", "GET only\n", 9), HTTP_DONE);

    memset(&p, 0, sizeof(p));
    p.app = app;
    p.req = req;
    html_buf_init(&p.b);
    if (!get && req->method != HTTP_POST) {
        http_response_header(req, "Allow", "GET, HEAD, POST");
        rc = page_error(&p, 405, "Method not allowed", "Pages take GET and POST only.");
        goto out;
    }
    rc = app_auth(app, req, &p.user);
    p.authed = rc == 0 && auth_role_human(p.user.role);

    if (strcmp(req->path, "/login") == 0) {
        if (get)
            rc = p.authed ? redirect(&p, "/labs") : page_login(&p, NULL, 200);
        else
            rc = post_login(&p);
        goto out;
    }
    if (strcmp(req->path, "/logout") == 0 && !get) {
        rc = p.authed ? post_logout(&p) : redirect(&p, "/login");
        goto out;
    }
    if (!p.authed) {
        /* Not signed in (or the session expired): to the sign-in page. A
         * POST from an expired session says so instead of losing the form
         * silently. */
        if (get && strcmp(req->path, "/") != 0 && strncmp(req->path, "/labs", 5) != 0 &&
            strncmp(req->path, "/submissions", 12) != 0 && strncmp(req->path, "/admin", 6) != 0 &&
            strcmp(req->path, "/audit") != 0 && strncmp(req->path, "/me", 3) != 0 &&
            strcmp(req->path, "/help") != 0) {
            rc = page_error(&p, 404, "Page not found", "There is no page at this address. Start from the sign-in page.");
            goto out;
        }
        rc = get ? redirect(&p, "/login")
                 : page_login(&p, "Your session ended (sessions last 12 hours, and end at once "
                                  "when your token is revoked). Sign in again, then send the "
                                  "form again.", 401);
        goto out;
    }
    n = path_split(req->path, buf, sizeof(buf), seg, 5);
    rc = n <= 5 ? dispatch(&p, seg, n) : -1;
    if (rc < 0)
        rc = page_error(&p, 404, "Page not found",
                        "There is no page at this address. Use the links at the top of the page.");
out:
    page_free(&p);
    (void)rc;
    return HTTP_DONE;
}
